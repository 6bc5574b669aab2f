"""Attention. One function, ``attention``, does the math for every kind used in the book:
causal self-attention (decoder), bidirectional self-attention (encoder) and
cross-attention (decoder reads encoder). ``Attention`` is the multi-head / grouped-query
module around it: projections, head split, RoPE, KV cache, head merge, W_o."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Optional

import torch
from torch import nn

from .config import TinyConfig
from .errors import TinyTFInputError
from .hooks import Hook
from .norms import make_norm
from .positions import NoRotary, make_rotary


def causal_mask(n_queries: int, n_keys: int, offset: int = 0, device=None) -> torch.Tensor:
    """Boolean [T, S], True where query i (absolute position offset + i) may read key j:
    j <= offset + i. With a KV cache, offset = number of cached positions."""
    q = torch.arange(offset, offset + n_queries, device=device)[:, None]  # [T, 1]
    k = torch.arange(n_keys, device=device)[None, :]  # [1, S]
    return k <= q


def sliding_window_mask(n_queries: int, n_keys: int, offset: int = 0, device=None, *, window: int) -> torch.Tensor:
    """Boolean [T, S] for a local (sliding-window) layer: query at absolute position p = offset + i may read
    key position j when p - window < j <= p (``window`` keys, itself included). The S keys are the *last* S
    positions (a sliding-window cache keeps only the newest window - 1), so key j sits at offset + T - S + j."""
    q = torch.arange(offset, offset + n_queries, device=device)[:, None]  # [T, 1]
    k = torch.arange(offset + n_queries - n_keys, offset + n_queries, device=device)[None, :]  # [1, S]
    return (k <= q) & (k > q - window)


def check_padding_mask(padding_mask, batch: int, length: int, what: str = "key_padding_mask") -> torch.Tensor:
    """Validate a key-padding mask: bool [B, L], True = padded (PyTorch's convention). Returns it as a tensor."""
    if not isinstance(padding_mask, torch.Tensor):
        try:
            padding_mask = torch.as_tensor(padding_mask)
        except Exception as e:  # noqa: BLE001
            raise TinyTFInputError(f"{what}: could not turn {type(padding_mask).__name__} into a tensor ({e})")
    if padding_mask.dtype != torch.bool:
        raise TinyTFInputError(f"{what}: got dtype {padding_mask.dtype}, expected torch.bool (True = padded position)")
    if tuple(padding_mask.shape) != (batch, length):
        raise TinyTFInputError(f"{what}: got shape {list(padding_mask.shape)}, expected [{batch}, {length}] "
                               "(batch, positions of the sequence it masks)")
    return padding_mask


def with_key_padding(mask: Optional[torch.Tensor], key_padding_mask: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """Combine an attention mask (bool [T, S], True = may attend, or None) with a key-padding mask
    (bool [B, S], True = padded): the result, True = may attend, is [B, 1, T, S] or [B, 1, 1, S]."""
    if key_padding_mask is None:
        return mask
    keep = ~key_padding_mask[:, None, None, :]  # [B, S] -> [B, 1, 1, S], broadcast over heads and queries
    return keep if mask is None else mask & keep  # [T, S] & [B, 1, 1, S] -> [B, 1, T, S]


def attention(q, k, v, mask: Optional[torch.Tensor] = None, module: Optional[nn.Module] = None, dropout: float = 0.0,
              scale: Optional[float] = None):
    """Scaled dot-product attention, returning (output, weights).

    q: [B, H, T, D], k and v: [B, H, S, D], mask: bool, True = may attend, of a shape that broadcasts to
    [B, H, T, S] ([T, S] causal; [B, 1, T, S] or [B, 1, 1, S] with padding), or None.
    output: [B, H, T, D], weights: [B, H, T, S]. A query row that may read no key at all (possible only with
    padding: an all-padded sequence, or a left-padded one under a causal mask) gets weights 0 and output 0,
    where softmax over -inf alone would give NaN; the NaN would otherwise reach real positions in the next
    layer, since 0 * NaN = NaN in weights @ v. ``module`` supplies hook points
    (hook_scores, hook_masked_scores, hook_weights) when called from ``Attention``.
    ``scale`` multiplies q . k instead of 1 / sqrt(D) (Gemma's query_pre_attn_scalar, MLA's head size).
    """
    hook = (lambda name, x: getattr(module, name)(x)) if module is not None else (lambda name, x: x)
    if scale is None:
        scores = hook("hook_scores", q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]))  # [B, H, T, S]
    else:
        scores = hook("hook_scores", (q @ k.transpose(-2, -1)) * scale)  # [B, H, T, S]
    if mask is not None:
        scores = torch.where(mask, scores, float("-inf"))  # = masked_fill(~mask, -inf), one pass fewer
    scores = hook("hook_masked_scores", scores)
    weights = torch.softmax(scores, dim=-1)  # [B, H, T, S], rows sum to 1
    if mask is not None and mask.dim() == 4:  # a padding mask can leave a query no key: weights 0, not NaN
        weights = torch.where(mask.any(dim=-1, keepdim=True), weights, 0.0)
    weights = hook("hook_weights", weights)
    if dropout and (module is None or module.training):
        weights = nn.functional.dropout(weights, p=dropout)
    return weights @ v, weights  # [B, H, T, D], [B, H, T, S]


@dataclass
class LayerCache:
    """Keys and values of the positions already processed, for one attention layer."""

    k: Optional[torch.Tensor] = None  # [B, H_kv, S, D] (after RoPE)
    v: Optional[torch.Tensor] = None  # [B, H_kv, S, D]

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.shape[-2]

    def append(self, k, v):
        self.k = k if self.k is None else torch.cat((self.k, k), dim=-2)
        self.v = v if self.v is None else torch.cat((self.v, v), dim=-2)
        return self.k, self.v

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.k, self.v) if t is not None)

    def held(self) -> list:
        """The positions whose keys and values the cache holds (all seen so far)."""
        return list(range(self.length))

    def parts(self) -> dict:
        """What the cache stores, by name: tensors [..., S, D], one row per held position along dim -2."""
        return {"K": self.k, "V": self.v}


@dataclass
class WindowLayerCache(LayerCache):
    """The cache of a local (sliding-window) layer: after each step it keeps only the newest window - 1
    positions, all that the next query can still read (as Hugging Face's sliding-window cache does).
    ``length`` counts every position seen, so positions (RoPE, masks) stay absolute."""

    window: int = 1
    seen: int = 0

    @property
    def length(self) -> int:
        return self.seen

    def append(self, k, v):
        self.seen += k.shape[-2]
        k, v = super().append(k, v)  # everything the new queries may read: the kept positions + the new ones
        keep = min(max(self.window - 1, 0), k.shape[-2])
        self.k, self.v = k[..., k.shape[-2] - keep:, :], v[..., v.shape[-2] - keep:, :]
        return k, v

    def held(self) -> list:
        """The newest positions only: those the next query can still read."""
        kept = 0 if self.k is None else self.k.shape[-2]
        return list(range(self.seen - kept, self.seen))


@dataclass
class KVCache:
    """One LayerCache per block. Only past K/V are kept: each new token still runs through every block."""

    layers: list = field(default_factory=list)

    @classmethod
    def for_model(cls, n_layers: int) -> "KVCache":
        return cls([LayerCache() for _ in range(n_layers)])

    @property
    def length(self) -> int:
        return self.layers[0].length if self.layers else 0

    def nbytes(self) -> int:
        return sum(c.nbytes() for c in self.layers)  # each layer's kind of cache counts its own tensors

    def held(self) -> list:
        """Per layer, the positions that layer's cache holds (a sliding-window layer keeps only the newest)."""
        return [c.held() for c in self.layers]


class Attention(nn.Module):
    """Multi-head attention with optional grouped-query K/V heads.

    causal=True: decoder self-attention; causal=False: encoder self-attention;
    cross=True: queries from x, keys/values from ``context`` (the encoder output), no causal mask, no RoPE.
    ``key_padding_mask`` (bool [B, S], True = padded key, as in PyTorch) hides padded keys from every query.
    """

    def __init__(self, cfg: TinyConfig, causal: bool = True, cross: bool = False, layer: int = 0):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.d_head = cfg.n_heads, cfg.kv_heads, cfg.d_head
        self.causal, self.cross, self.dropout = causal and not cross, cross, cfg.dropout
        qkv_bias = cfg.bias or cfg.qkv_bias
        self.q_proj = nn.Linear(cfg.d_model, self.n_heads * self.d_head, bias=qkv_bias)
        self.k_proj = nn.Linear(cfg.d_model, self.n_kv_heads * self.d_head, bias=qkv_bias)
        self.v_proj = nn.Linear(cfg.d_model, self.n_kv_heads * self.d_head, bias=qkv_bias)
        self.o_proj = nn.Linear(self.n_heads * self.d_head, cfg.d_model, bias=cfg.bias)
        self.rotary = NoRotary() if cross else make_rotary(cfg, layer)
        self.mask_fn = causal_mask  # swapped only by tinytf.causality.broken_mask, to show a bug being caught
        self.scale = cfg.attn_scale  # None: 1 / sqrt(d_head)
        self.window = cfg.sliding_window.size if cfg.layer_type(layer) == "local" and not cross else None
        if self.window is not None:  # a local layer: each query sees only the last `window` positions
            self.mask_fn = functools.partial(sliding_window_mask, window=self.window)
        self.norm_qk = _no_qk_norm
        if cfg.qk_norm != "none" and not cross:  # QK-norm: RMSNorm on queries and keys before RoPE
            per_head = cfg.qk_norm == "head"
            self.q_norm = make_norm(cfg, self.d_head if per_head else self.n_heads * self.d_head)
            self.k_norm = make_norm(cfg, self.d_head if per_head else self.n_kv_heads * self.d_head)
            self.norm_qk = self._norm_qk_per_head if per_head else self._norm_qk_over_heads
        for name in ("q", "k", "v", "q_rot", "k_rot", "scores", "masked_scores", "weights", "z", "merged", "out"):
            setattr(self, "hook_" + name, Hook())

    def split_heads(self, x, n_heads):  # [B, T, n_heads * D] -> [B, n_heads, T, D]
        B, T, _ = x.shape
        return x.view(B, T, n_heads, self.d_head).transpose(1, 2)

    def forward(self, x, context=None, cache: Optional[LayerCache] = None, key_padding_mask=None):
        """x: [B, T, C]; context: [B, S, C] for cross-attention; key_padding_mask: bool [B, S] (True = padded),
        S counting every key (with a cache: the cached positions too). Returns [B, T, C]."""
        B, T, _ = x.shape
        source = context if self.cross else x
        offset = cache.length if cache is not None else 0
        if key_padding_mask is not None:  # checked before the cache grows: every key this call reads
            key_padding_mask = check_padding_mask(key_padding_mask, B, offset + source.shape[1])
        q = self.hook_q(self.split_heads(self.q_proj(x), self.n_heads))  # [B, H, T, D]
        k = self.hook_k(self.split_heads(self.k_proj(source), self.n_kv_heads))  # [B, H_kv, S, D]
        v = self.hook_v(self.split_heads(self.v_proj(source), self.n_kv_heads))  # [B, H_kv, S, D]
        q, k = self.norm_qk(q, k)
        q, k = self.rotary(q, k, offset)
        q, k = self.hook_q_rot(q), self.hook_k_rot(k)
        if cache is not None:
            k, v = cache.append(k, v)  # [B, H_kv, offset + T, D]
        group = self.n_heads // self.n_kv_heads  # query heads per K/V head (1 = plain multi-head)
        if group > 1:  # grouped-query attention: share each K/V head across its group
            k = k.repeat_interleave(group, dim=1)  # [B, H_kv, S, D] -> [B, H, S, D]
            v = v.repeat_interleave(group, dim=1)  # [B, H_kv, S, D] -> [B, H, S, D]
        mask = self.mask_fn(T, k.shape[-2], offset, device=x.device) if self.causal else None  # [T, S]
        mask = with_key_padding(mask, key_padding_mask)  # [T, S], [B, 1, T, S], [B, 1, 1, S] or None
        z, _ = attention(q, k, v, mask, module=self, dropout=self.dropout, scale=self.scale)  # [B, H, T, D]
        z = self.hook_z(z)
        merged = self.hook_merged(z.transpose(1, 2).reshape(B, T, self.n_heads * self.d_head))  # [B, T, H*D]
        return self.hook_out(self.o_proj(merged))  # [B, T, C]

    def _norm_qk_per_head(self, q, k):  # Qwen3, Gemma 3: RMSNorm over each head's D features
        return self.q_norm(q), self.k_norm(k)

    def _norm_qk_over_heads(self, q, k):  # OLMo 2: RMSNorm over all heads' features of a position together
        return _over_heads(self.q_norm, q), _over_heads(self.k_norm, k)

    def new_cache(self) -> LayerCache:
        """An empty cache for this layer: a sliding-window cache for a local layer, else the full one."""
        return LayerCache() if self.window is None else WindowLayerCache(window=self.window)


def _no_qk_norm(q, k):
    return q, k


def _over_heads(norm, x):  # x: [B, H, T, D] -> normalised over H * D, same shape
    B, H, T, D = x.shape
    return norm(x.transpose(1, 2).reshape(B, T, H * D)).view(B, T, H, D).transpose(1, 2)
