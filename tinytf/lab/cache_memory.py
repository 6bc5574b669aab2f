"""How much memory a KV cache needs, from the config alone.

Every layer keeps one key and one value vector per cached position and per key/value head:

    bytes = 2 (K and V) * n_layers * batch * T * n_kv_heads * d_head * bytes_per_value

Grouped-query attention shrinks only ``n_kv_heads``; the query heads are not cached at all.
``kv_cache_bytes`` gives the number; ``KVCache.nbytes()`` of a real cache must agree (the chapter
and tests/tinytf/test_cache_memory.py check it).

The frontier block changes what one layer keeps (``layer_cache_values``, ``cache_by_layer``):

- a local (sliding-window) layer keeps at most ``sliding_window.size - 1`` positions, whatever the length;
- multi-head latent attention (MLA) keeps one latent of ``mla.kv_rank`` values plus the shared RoPE key
  part of ``mla.rope_dim`` values per position, instead of 2 x n_kv_heads x d_head.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..config import TinyConfig
from ..errors import TinyTFInputError

__all__ = ["kv_cache_bytes", "CacheMemory", "cache_memory", "format_bytes", "cache_memory_table",
           "layer_cache_values", "layer_cache_positions", "cache_by_layer", "cache_bytes_per_token", "LayerCacheMemory"]


def _bytes_per_value(dtype) -> int:
    if isinstance(dtype, int) and not isinstance(dtype, bool) and dtype > 0:
        return dtype
    if isinstance(dtype, torch.dtype):
        return torch.empty((), dtype=dtype).element_size()
    raise TinyTFInputError(f"dtype: expected a torch dtype (e.g. torch.bfloat16) or a byte count, got {dtype!r}")


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TinyTFInputError(f"{name}: expected a non-negative integer, got {value!r}")


def kv_cache_bytes(cfg: TinyConfig, seq_len: int, batch: int = 1, dtype=torch.float32) -> int:
    """2 * n_layers * batch * seq_len * n_kv_heads * d_head * bytes per value (the decoder's self-attention cache).
    With local layers or MLA: the sum over layers of batch * kept positions * values per position * bytes."""
    _positive("seq_len", seq_len)
    _positive("batch", batch)
    if not (cfg.mla or cfg.sliding_window is not None):
        return 2 * cfg.n_layers * batch * seq_len * cfg.kv_heads * cfg.d_head * _bytes_per_value(dtype)
    return sum(m.nbytes for m in cache_by_layer(cfg, seq_len, batch, dtype))


def layer_cache_values(cfg: TinyConfig, layer: int = 0) -> int:
    """Values one position adds to layer ``layer``'s cache: 2 x n_kv_heads x d_head (a key and a value per
    K/V head), or for MLA mla.kv_rank + mla.rope_dim (the latent and the shared RoPE key part)."""
    if cfg.mla:
        return cfg.mla.kv_rank + cfg.mla.rope_dim
    return 2 * cfg.kv_heads * cfg.d_head


def layer_cache_positions(cfg: TinyConfig, layer: int, seq_len: int) -> int:
    """Positions layer ``layer`` keeps after ``seq_len`` tokens: all of them, or for a local layer the newest
    sliding_window.size - 1 (all the next query can read besides itself)."""
    if cfg.layer_type(layer) == "local":
        return min(seq_len, cfg.sliding_window.size - 1)
    return seq_len


@dataclass(frozen=True)
class LayerCacheMemory:
    """One layer's cache: kind ('global', 'local' or 'mla'), kept positions, values per position, bytes."""

    layer: int
    kind: str
    positions: int
    values_per_position: int
    batch: int
    bytes_per_value: int

    @property
    def nbytes(self) -> int:
        return self.batch * self.positions * self.values_per_position * self.bytes_per_value


def cache_by_layer(cfg: TinyConfig, seq_len: int, batch: int = 1, dtype=torch.float32) -> list:
    """A LayerCacheMemory per layer; their nbytes add up to kv_cache_bytes."""
    _positive("seq_len", seq_len)
    _positive("batch", batch)
    b = _bytes_per_value(dtype)
    return [LayerCacheMemory(i, "mla" if cfg.mla else cfg.layer_type(i), layer_cache_positions(cfg, i, seq_len),
                             layer_cache_values(cfg, i), batch, b) for i in range(cfg.n_layers)]


def cache_bytes_per_token(cfg: TinyConfig, dtype=torch.float32, seq_len: int | None = None) -> int:
    """Bytes one more position adds to the whole cache (batch 1). Without ``seq_len``: while every layer still
    grows (short contexts). With ``seq_len``: the position after ``seq_len`` tokens, where a local layer whose
    window is full adds nothing (it drops its oldest position)."""
    b = _bytes_per_value(dtype)
    if seq_len is None:
        return sum(layer_cache_values(cfg, i) for i in range(cfg.n_layers)) * b
    _positive("seq_len", seq_len)
    return kv_cache_bytes(cfg, seq_len + 1, 1, dtype) - kv_cache_bytes(cfg, seq_len, 1, dtype)


@dataclass(frozen=True)
class CacheMemory:
    """The factors of the formula, and the result, for one config and length."""

    n_layers: int
    batch: int
    seq_len: int
    n_kv_heads: int
    n_heads: int
    d_head: int
    bytes_per_value: int

    @property
    def nbytes(self) -> int:
        return 2 * self.n_layers * self.batch * self.seq_len * self.n_kv_heads * self.d_head * self.bytes_per_value

    @property
    def without_gqa(self) -> int:
        """The same cache if every query head had its own K/V head (plain multi-head attention)."""
        return self.nbytes // self.n_kv_heads * self.n_heads

    @property
    def per_token(self) -> int:
        """Bytes added to the cache by one more position (batch 1)."""
        return 2 * self.n_layers * self.n_kv_heads * self.d_head * self.bytes_per_value

    def formula(self) -> str:
        """Two lines (each under 88 characters): the factors, then ``= bytes (binary units)``."""
        return (f"2 x {self.n_layers} layers x {self.batch} batch x {self.seq_len} positions x {self.n_kv_heads} "
                f"K/V heads x {self.d_head} d_head x {self.bytes_per_value} bytes\n"
                f"  = {self.nbytes:,} bytes ({format_bytes(self.nbytes)})")


def cache_memory(cfg: TinyConfig, seq_len: int, batch: int = 1, dtype=torch.float32) -> CacheMemory:
    """The formula's factors for ``cfg`` (see ``CacheMemory.formula()``)."""
    if cfg.mla or cfg.sliding_window is not None:
        raise TinyTFInputError("cache_memory: the 2 x layers x K/V heads x d_head formula does not hold for a config "
                               "with MLA (mla) or local layers (sliding_window); use kv_cache_bytes or "
                               "cache_by_layer")
    _positive("seq_len", seq_len)
    _positive("batch", batch)
    return CacheMemory(cfg.n_layers, batch, seq_len, cfg.kv_heads, cfg.n_heads, cfg.d_head, _bytes_per_value(dtype))


def format_bytes(n: int) -> str:
    """Binary units: 1,536 -> '1.50 KiB'."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n} bytes" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError  # unreachable


def cache_memory_table(rows: dict) -> str:
    """Plain text, two tables of one row per ``{name: CacheMemory}`` (each line under 88 characters): the factors
    of the formula; then bytes per token, the cache, the same cache without GQA (one K/V head per query head)
    and the saving."""
    for name, m in rows.items():
        if not isinstance(m, CacheMemory):
            raise TinyTFInputError(f"{name}: expected a CacheMemory (from cache_memory(cfg, T)), got {type(m).__name__}")
    w = max([len("model")] + [len(str(name)) for name in rows])
    head = (f"{'model':<{w}} {'layers':>6} {'heads':>5} {'K/V heads':>9} {'d_head':>6} {'bytes':>5} {'batch':>5} "
            f"{'S':>6}")
    lines = [head, "-" * len(head)]
    lines += [f"{name:<{w}} {m.n_layers:>6} {m.n_heads:>5} {m.n_kv_heads:>9} {m.d_head:>6} {m.bytes_per_value:>5} "
              f"{m.batch:>5} {m.seq_len:>6}" for name, m in rows.items()]
    head = f"{'model':<{w}} {'per token':>10} {'KV cache':>10} {'if MHA':>10} {'GQA saves':>9}"
    lines += ["", head, "-" * len(head)]
    lines += [f"{name:<{w}} {format_bytes(m.per_token):>10} {format_bytes(m.nbytes):>10} "
              f"{format_bytes(m.without_gqa):>10} {m.without_gqa / m.nbytes:>8.0f}x" for name, m in rows.items()]
    return "\n".join(lines)
