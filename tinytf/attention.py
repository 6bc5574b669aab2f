"""Attention. One function, ``attention``, does the math for every kind used in the book:
causal self-attention (decoder), bidirectional self-attention (encoder) and
cross-attention (decoder reads encoder). ``Attention`` is the multi-head / grouped-query
module around it: projections, head split, RoPE, KV cache, head merge, W_o."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import torch
from torch import nn

from .config import TinyConfig
from .hooks import Hook
from .positions import NoRotary, make_rotary


def causal_mask(n_queries: int, n_keys: int, offset: int = 0, device=None) -> torch.Tensor:
    """Boolean [T, S], True where query i (absolute position offset + i) may read key j:
    j <= offset + i. With a KV cache, offset = number of cached positions."""
    q = torch.arange(offset, offset + n_queries, device=device)[:, None]  # [T, 1]
    k = torch.arange(n_keys, device=device)[None, :]  # [1, S]
    return k <= q


def attention(q, k, v, mask: Optional[torch.Tensor] = None, module: Optional[nn.Module] = None, dropout: float = 0.0):
    """Scaled dot-product attention, returning (output, weights).

    q: [B, H, T, D], k and v: [B, H, S, D], mask: bool [T, S] (True = may attend) or None.
    output: [B, H, T, D], weights: [B, H, T, S]. ``module`` supplies hook points
    (hook_scores, hook_masked_scores, hook_weights) when called from ``Attention``.
    """
    hook = (lambda name, x: getattr(module, name)(x)) if module is not None else (lambda name, x: x)
    scores = hook("hook_scores", q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]))  # [B, H, T, S]
    if mask is not None:
        scores = torch.where(mask, scores, float("-inf"))  # = masked_fill(~mask, -inf), one pass fewer
    scores = hook("hook_masked_scores", scores)
    weights = hook("hook_weights", torch.softmax(scores, dim=-1))  # [B, H, T, S], rows sum to 1
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
        return sum(t.numel() * t.element_size() for c in self.layers for t in (c.k, c.v) if t is not None)


class Attention(nn.Module):
    """Multi-head attention with optional grouped-query K/V heads.

    causal=True: decoder self-attention; causal=False: encoder self-attention;
    cross=True: queries from x, keys/values from ``context`` (the encoder output), no mask, no RoPE.
    """

    def __init__(self, cfg: TinyConfig, causal: bool = True, cross: bool = False):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.d_head = cfg.n_heads, cfg.kv_heads, cfg.d_head
        self.causal, self.cross, self.dropout = causal and not cross, cross, cfg.dropout
        qkv_bias = cfg.bias or cfg.qkv_bias
        self.q_proj = nn.Linear(cfg.d_model, self.n_heads * self.d_head, bias=qkv_bias)
        self.k_proj = nn.Linear(cfg.d_model, self.n_kv_heads * self.d_head, bias=qkv_bias)
        self.v_proj = nn.Linear(cfg.d_model, self.n_kv_heads * self.d_head, bias=qkv_bias)
        self.o_proj = nn.Linear(self.n_heads * self.d_head, cfg.d_model, bias=cfg.bias)
        self.rotary = NoRotary() if cross else make_rotary(cfg)
        self.mask_fn = causal_mask  # swapped only by tinytf.causality.broken_mask, to show a bug being caught
        for name in ("q", "k", "v", "q_rot", "k_rot", "scores", "masked_scores", "weights", "z", "merged", "out"):
            setattr(self, "hook_" + name, Hook())

    def split_heads(self, x, n_heads):  # [B, T, n_heads * D] -> [B, n_heads, T, D]
        B, T, _ = x.shape
        return x.view(B, T, n_heads, self.d_head).transpose(1, 2)

    def forward(self, x, context=None, cache: Optional[LayerCache] = None):
        """x: [B, T, C]; context: [B, S, C] for cross-attention. Returns [B, T, C]."""
        B, T, _ = x.shape
        source = context if self.cross else x
        q = self.hook_q(self.split_heads(self.q_proj(x), self.n_heads))  # [B, H, T, D]
        k = self.hook_k(self.split_heads(self.k_proj(source), self.n_kv_heads))  # [B, H_kv, S, D]
        v = self.hook_v(self.split_heads(self.v_proj(source), self.n_kv_heads))  # [B, H_kv, S, D]
        offset = cache.length if cache is not None else 0
        q, k = self.rotary(q, k, offset)
        q, k = self.hook_q_rot(q), self.hook_k_rot(k)
        if cache is not None:
            k, v = cache.append(k, v)  # [B, H_kv, offset + T, D]
        group = self.n_heads // self.n_kv_heads  # query heads per K/V head (1 = plain multi-head)
        if group > 1:  # grouped-query attention: share each K/V head across its group
            k = k.repeat_interleave(group, dim=1)  # [B, H_kv, S, D] -> [B, H, S, D]
            v = v.repeat_interleave(group, dim=1)  # [B, H_kv, S, D] -> [B, H, S, D]
        mask = self.mask_fn(T, k.shape[-2], offset, device=x.device) if self.causal else None
        z, _ = attention(q, k, v, mask, module=self, dropout=self.dropout)  # [B, H, T, D]
        z = self.hook_z(z)
        merged = self.hook_merged(z.transpose(1, 2).reshape(B, T, self.n_heads * self.d_head))  # [B, T, H*D]
        return self.hook_out(self.o_proj(merged))  # [B, T, C]
