"""What sharing key/value heads saves: grouped-query attention (GQA) and multi-query attention (MQA), counted.

An attention layer with H query heads of size D and G key/value heads (G divides H; G = H is plain multi-head
attention, G = 1 is multi-query attention) has, without biases,

    parameters  = C*H*D (W_q) + 2*C*G*D (W_k, W_v) + H*D*C (W_o)
    cache bytes = 2 * G * D * bytes per value, per position and per layer (a key and a value per K/V head).

``kv_sharing`` counts both from tinytf's own ``Attention`` module: the parameters of its four projections
(built on the meta device, so Llama 3 8B's layer costs no memory) and the cache bytes per position of a real
``LayerCache`` filled by a forward pass (tests/tinytf/test_kv_sharing.py checks both against the formulas above).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..attention import Attention, LayerCache
from ..config import TinyConfig
from ..errors import TinyTFInputError

__all__ = ["KVSharing", "kv_sharing", "projection_parameters", "cache_bytes_per_position", "kv_sharing_table"]

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")


def _check(cfg: TinyConfig, n_kv_heads):
    if not isinstance(cfg, TinyConfig):
        raise TinyTFInputError(f"cfg: expected a tinytf.TinyConfig, got {type(cfg).__name__}")
    if cfg.mla:
        raise TinyTFInputError("kv_sharing: multi-head latent attention (mla) caches a latent, not K/V heads")
    if n_kv_heads is not None:
        if isinstance(n_kv_heads, bool) or not isinstance(n_kv_heads, int) or n_kv_heads <= 0 \
                or cfg.n_heads % n_kv_heads:
            raise TinyTFInputError(f"n_kv_heads: expected a positive divisor of n_heads={cfg.n_heads} "
                                   f"(each K/V head serves a whole group of query heads), got {n_kv_heads!r}")
        cfg = cfg.replace(n_kv_heads=n_kv_heads)
    return cfg


def projection_parameters(cfg: TinyConfig, n_kv_heads: int | None = None) -> int:
    """Parameters of W_q, W_k, W_v and W_o of one attention layer (biases included if the config has them;
    QK-norm weights not), counted on tinytf's Attention built on the meta device."""
    cfg = _check(cfg, n_kv_heads)
    with torch.device("meta"):
        attn = Attention(cfg, causal=True)
    return sum(p.numel() for name in PROJECTIONS for p in getattr(attn, name).parameters())


def cache_bytes_per_position(cfg: TinyConfig, n_kv_heads: int | None = None, dtype=torch.float32,
                             seq_len: int = 5) -> int:
    """Bytes one position adds to one layer's KV cache, measured: a real Attention (random weights, ``dtype``)
    runs ``seq_len`` positions with a LayerCache, and the cache's bytes are divided by ``seq_len``."""
    cfg = _check(cfg, n_kv_heads)
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len <= 0:
        raise TinyTFInputError(f"seq_len: expected a positive integer, got {seq_len!r}")
    attn = Attention(cfg, causal=True).to(dtype).eval()
    cache = LayerCache()
    with torch.no_grad():
        attn(torch.randn(1, seq_len, cfg.d_model, dtype=dtype), cache=cache)
    return cache.nbytes() // seq_len


@dataclass(frozen=True)
class KVSharing:
    """One attention layer's sizes with G K/V heads, next to the same layer with one K/V head per query head."""

    n_heads: int  # H
    n_kv_heads: int  # G
    d_model: int  # C
    d_head: int  # D
    n_layers: int
    bytes_per_value: int
    params: int  # W_q, W_k, W_v, W_o of one layer
    params_mha: int  # the same layer with G = H
    cache_per_position: int  # bytes one position adds to one layer's cache

    @property
    def group(self) -> int:
        """Query heads that share one K/V head: H / G."""
        return self.n_heads // self.n_kv_heads

    @property
    def cache_per_position_mha(self) -> int:
        return self.cache_per_position * self.group

    @property
    def cache_per_token(self) -> int:
        """Bytes one more token adds to the whole model's cache (all layers, batch 1)."""
        return self.cache_per_position * self.n_layers


def kv_sharing(cfg: TinyConfig, n_kv_heads: int | None = None, dtype=torch.bfloat16) -> KVSharing:
    """Counts for ``cfg`` (optionally with ``n_kv_heads`` changed). The cache bytes come from the formula
    2 * G * D * bytes; ``cache_bytes_per_position`` measures the same number on a real cache (small configs)."""
    cfg = _check(cfg, n_kv_heads)
    b = torch.empty((), dtype=dtype).element_size() if isinstance(dtype, torch.dtype) else None
    if b is None:
        raise TinyTFInputError(f"dtype: expected a torch dtype (e.g. torch.bfloat16), got {dtype!r}")
    return KVSharing(cfg.n_heads, cfg.kv_heads, cfg.d_model, cfg.d_head, cfg.n_layers, b,
                     projection_parameters(cfg), projection_parameters(cfg, cfg.n_heads),
                     2 * cfg.kv_heads * cfg.d_head * b)


def kv_sharing_table(rows: dict) -> str:
    """Plain text, one row per ``{name: KVSharing}``: heads, group size, one layer's projection parameters and
    the cache one token adds to the whole model, each next to the multi-head (G = H) value."""
    head = (f"{'model':<14} {'H':>3} {'G':>3} {'H/G':>4} {'D':>4} {'layers':>6}  {'params/layer':>12} "
            f"{'if G = H':>11}  {'cache bytes/token':>17} {'if G = H':>9}")
    lines = [head, "-" * len(head)]
    for name, r in rows.items():
        if not isinstance(r, KVSharing):
            raise TinyTFInputError(f"{name}: expected a KVSharing (from kv_sharing(cfg)), got {type(r).__name__}")
        lines.append(f"{name:<14} {r.n_heads:>3} {r.n_kv_heads:>3} {r.group:>4} {r.d_head:>4} {r.n_layers:>6}  "
                     f"{r.params:>12,} {r.params_mha:>11,}  {r.cache_per_token:>17,} {r.cache_per_token * r.group:>9,}")
    return "\n".join(lines)
