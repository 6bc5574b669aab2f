"""Configuration: one dataclass drives every shape in tinytf.

The defaults reproduce the TinyTransformer of the source page (seed 000):
a 2-layer, pre-norm decoder with RMSNorm, SwiGLU and RoPE, d_model 128,
4 heads, d_ff 512, byte vocabulary of 256 -> 590,464 parameters.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

NORMS = ("rms", "layer")
NORM_POSITIONS = ("pre", "post")
FFNS = ("swiglu", "relu", "gelu")
POSITIONS = ("rope", "sinusoidal", "learned", "none")


@dataclass(frozen=True)
class TinyConfig:
    vocab_size: int = 256
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: Optional[int] = None  # None = n_heads (multi-head); fewer = grouped-query attention
    d_ff: int = 512
    norm: str = "rms"  # "rms" | "layer"
    norm_position: str = "pre"  # "pre" | "post"
    ffn: str = "swiglu"  # "swiglu" | "relu" | "gelu"
    pos: str = "rope"  # "rope" | "sinusoidal" | "learned" | "none"
    max_seq_len: int = 512
    bias: bool = False  # bias in every Linear and in LayerNorm
    qkv_bias: bool = False  # bias on the Q/K/V projections only (Qwen-style)
    tie_embeddings: bool = False  # LM head shares the token-embedding matrix
    residual: bool = True  # False removes both skip connections (for experiments)
    dropout: float = 0.0
    eps: float = 1e-5
    rope_theta: float = 10000.0
    n_encoder_layers: Optional[int] = None  # EncoderDecoder only; None = n_layers

    def __post_init__(self):
        def positive(name):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"TinyConfig.{name} must be a positive integer, got {value!r}")

        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_seq_len"):
            positive(name)
        for name, allowed in (("norm", NORMS), ("norm_position", NORM_POSITIONS), ("ffn", FFNS), ("pos", POSITIONS)):
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"TinyConfig.{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
        if self.n_kv_heads is not None:
            positive("n_kv_heads")
            if self.n_heads % self.n_kv_heads:
                raise ValueError(
                    f"TinyConfig.n_heads ({self.n_heads}) must be divisible by n_kv_heads ({self.n_kv_heads}): "
                    "each key/value head serves a whole group of query heads"
                )
        if self.n_encoder_layers is not None:
            positive("n_encoder_layers")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"TinyConfig.d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}) "
                "so that every head gets d_model / n_heads dimensions"
            )
        if self.pos == "rope" and self.d_head % 2:
            raise ValueError(f"TinyConfig.pos='rope' needs an even head size; d_model/n_heads = {self.d_head}")
        for name in ("bias", "qkv_bias", "tie_embeddings", "residual"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise ValueError(f"TinyConfig.{name} must be True or False, got {value!r}")
        for name in ("dropout", "eps", "rope_theta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"TinyConfig.{name} must be a number, got {value!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"TinyConfig.dropout must be in [0, 1), got {self.dropout!r}")
        if not self.eps > 0:
            raise ValueError(f"TinyConfig.eps must be positive, got {self.eps!r}")
        if not self.rope_theta > 0:
            raise ValueError(f"TinyConfig.rope_theta must be positive, got {self.rope_theta!r}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def encoder_layers(self) -> int:
        return self.n_layers if self.n_encoder_layers is None else self.n_encoder_layers

    def replace(self, **changes) -> "TinyConfig":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def diff(self, other: "TinyConfig") -> dict:
        """Fields whose values differ: {name: (self's value, other's value)}."""
        return {
            f.name: (getattr(self, f.name), getattr(other, f.name))
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != getattr(other, f.name)
        }


def config_2017(**changes) -> TinyConfig:
    """The block of 'Attention Is All You Need': post-norm LayerNorm, ReLU MLP with 4x expansion,
    sinusoidal positions, biases everywhere. Same sizes as the default TinyConfig."""
    base = dict(norm="layer", norm_position="post", ffn="relu", pos="sinusoidal", bias=True, d_ff=4 * 128)
    base.update(changes)
    if "d_model" in changes and "d_ff" not in changes:
        base["d_ff"] = 4 * changes["d_model"]
    return TinyConfig(**base)


def config_2026(**changes) -> TinyConfig:
    """The modern block (Llama, Qwen, Mistral): pre-norm RMSNorm, SwiGLU, RoPE, no biases.
    Identical to TinyConfig() unless changed."""
    return TinyConfig(**changes)
