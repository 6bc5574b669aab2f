"""Configuration: one dataclass drives every shape in tinytf.

The defaults are the book's TinyTransformer:
a 2-layer, pre-norm decoder with RMSNorm, SwiGLU and RoPE, d_model 128,
4 heads, d_ff 512, byte vocabulary of 256 -> 590,464 parameters.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

NORMS = ("rms", "layer", "rms_offset")  # rms_offset: Gemma's RMSNorm, x / rms * (1 + weight)
#: pre: x + F(Norm(x)); post: Norm(x + F(x)); sandwich (Gemma 2/3): x + Norm_post(F(Norm_pre(x)));
#: post_sublayer (OLMo 2): x + Norm(F(x)), the stream itself is never normalised
NORM_POSITIONS = ("pre", "post", "sandwich", "post_sublayer")
FFNS = ("swiglu", "relu", "gelu", "geglu", "gelu_tanh")  # geglu: GeLU(tanh)-gated (Gemma); gelu_tanh: GPT-2's MLP
POSITIONS = ("rope", "sinusoidal", "learned", "none")
QK_NORMS = ("none", "head", "proj")  # head: RMSNorm per head (Qwen3, Gemma 3); proj: over all heads (OLMo 2)
LAYER_TYPES = ("global", "local")  # global: full causal attention; local: sliding window
ROPE_PAIRINGS = ("half", "interleaved")  # half: (x_i, x_{i+D/2}) as HF; interleaved: (x_2i, x_2i+1) as RoFormer
ROUTERS = ("softmax", "softmax_renorm", "sigmoid", "sigmoid_renorm")
ROPE_SCALINGS = ("linear", "llama3", "yarn")


@dataclass(frozen=True)
class RopeScaling:
    """RoPE frequency scaling of the global layers. ``linear``: every frequency / factor (positions
    interpolated). ``llama3`` (Llama 3.1+): long wavelengths / factor, short ones kept, a smooth ramp between.
    ``yarn`` (DeepSeek-V3, Qwen): the same idea with the ramp set by rotation counts (beta_fast, beta_slow),
    plus an attention factor on cos/sin (and, with mscale_all_dim, on MLA's softmax scale)."""

    kind: str
    factor: float
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_seq_len: int = 8192
    beta_fast: float = 32.0  # yarn only, from here on
    beta_slow: float = 1.0
    mscale: Optional[float] = None
    mscale_all_dim: Optional[float] = None
    attention_factor: Optional[float] = None
    truncate: bool = True

    def __post_init__(self):
        if self.kind not in ROPE_SCALINGS:
            raise ValueError(f"TinyConfig.rope_scaling.kind must be one of {', '.join(map(repr, ROPE_SCALINGS))}; "
                             f"got {self.kind!r}")
        if isinstance(self.factor, bool) or not isinstance(self.factor, (int, float)) or not self.factor > 0:
            raise ValueError(f"TinyConfig.rope_scaling.factor must be a positive number, got {self.factor!r}")
        if self.kind == "llama3" and not self.high_freq_factor > self.low_freq_factor > 0:
            raise ValueError("TinyConfig.rope_scaling: llama3 needs high_freq_factor > low_freq_factor > 0, got "
                             f"{self.high_freq_factor!r} and {self.low_freq_factor!r}")


def _choice(cfg, name, allowed):
    value = getattr(cfg, name)
    if value not in allowed:
        raise ValueError(f"TinyConfig.{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")


def _number(cfg, name, optional=True, low=0.0):
    value = getattr(cfg, name)
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > low:
        raise ValueError(f"TinyConfig.{name} must be a positive number{' or None' if optional else ''}, "
                         f"got {value!r}")


def _count(cfg, name):
    value = getattr(cfg, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"TinyConfig.{name} must be a non-negative integer, got {value!r}")


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
    # --- frontier-block fields (chapter "The frontier block"); the defaults change nothing above ---
    head_dim: Optional[int] = None  # None = d_model / n_heads; Qwen3 and Gemma 3 set their own head size
    qk_norm: str = "none"  # "none" | "head" | "proj": RMSNorm on queries and keys before RoPE
    sliding_window: Optional[int] = None  # keys a local layer's query sees (itself included); None = no local layers
    layer_types: Optional[tuple] = None  # per layer "global" | "local"; None = all local if sliding_window else global
    rope_theta_local: Optional[float] = None  # RoPE base of the local layers (Gemma 3: 10k); None = rope_theta
    rope_scaling: Optional[RopeScaling] = None  # frequency scaling of the global layers (Llama 3.1: "llama3")
    rope_pairing: str = "half"  # "half" | "interleaved": which dimensions RoPE rotates together
    scale_embeddings: bool = False  # multiply the token embeddings by sqrt(d_model) (Gemma)
    attn_scale: Optional[float] = None  # multiplier of q . k; None = 1 / sqrt(d_head) (Gemma: query_pre_attn_scalar^-1/2)
    logit_softcap: Optional[float] = None  # final logits -> c * tanh(logits / c)
    n_experts: int = 0  # routed experts per MoE FFN; 0 = dense FFN everywhere
    experts_per_token: int = 0  # k of the top-k router
    n_shared_experts: int = 0  # experts every token goes through (DeepSeek), as one FFN n_shared * d_expert wide
    d_expert: Optional[int] = None  # hidden width of one expert; None = d_ff
    n_dense_layers: int = 0  # the first layers keep a dense FFN of width d_ff (DeepSeek-V3: 3)
    router: str = "softmax_renorm"  # "softmax" | "softmax_renorm" | "sigmoid" | "sigmoid_renorm"
    router_groups: int = 1  # experts split into groups; only the best router_topk_groups groups compete (DeepSeek-V3)
    router_topk_groups: int = 1
    router_scale: float = 1.0  # routed output scaled by this (DeepSeek-V3: 2.5)
    mla_kv_rank: Optional[int] = None  # multi-head latent attention: size of the cached K/V latent; None = no MLA
    mla_q_rank: Optional[int] = None  # MLA: low-rank query size; None = a full-rank query projection
    mla_rope_dim: int = 0  # MLA: decoupled RoPE part of each query/key head (shared by all heads for keys)
    mla_v_dim: Optional[int] = None  # MLA: value head size; None = d_head

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
        if self.head_dim is not None:
            positive("head_dim")
        elif self.d_model % self.n_heads:
            raise ValueError(
                f"TinyConfig.d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}) "
                "so that every head gets d_model / n_heads dimensions"
            )
        if self.pos == "rope" and self.rope_dim % 2:
            raise ValueError(f"TinyConfig.pos='rope' needs an even head size; d_model/n_heads = {self.rope_dim}")
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
        self._check_frontier(positive)

    def _check_frontier(self, positive):
        """Validate the frontier-block fields (each error names its field)."""
        if not self.residual and self.norm_position not in ("pre", "post"):
            raise ValueError(f"TinyConfig.residual=False is only implemented with norm_position 'pre' or 'post', "
                             f"not {self.norm_position!r}")
        if self.mla_kv_rank is not None and self.sliding_window is not None:
            raise ValueError("TinyConfig.sliding_window is not implemented together with mla_kv_rank")
        _choice(self, "qk_norm", QK_NORMS)
        _choice(self, "rope_pairing", ROPE_PAIRINGS)
        _choice(self, "router", ROUTERS)
        if not isinstance(self.scale_embeddings, bool):
            raise ValueError(f"TinyConfig.scale_embeddings must be True or False, got {self.scale_embeddings!r}")
        for name in ("rope_theta_local", "attn_scale", "logit_softcap"):
            _number(self, name)
        _number(self, "router_scale", optional=False)
        if self.sliding_window is not None:
            positive("sliding_window")
        self._check_layer_types(positive)
        if isinstance(self.rope_scaling, dict):  # from JSON / dataclasses.asdict
            object.__setattr__(self, "rope_scaling", RopeScaling(**self.rope_scaling))
        if self.rope_scaling is not None and not isinstance(self.rope_scaling, RopeScaling):
            raise ValueError(f"TinyConfig.rope_scaling must be a RopeScaling, a dict of its fields or None, "
                             f"got {self.rope_scaling!r}")
        self._check_moe(positive)
        self._check_mla(positive)

    def _check_layer_types(self, positive):
        """Sliding windows: the window and which layers are local."""
        if isinstance(self.layer_types, list):  # from JSON
            object.__setattr__(self, "layer_types", tuple(self.layer_types))
        if self.layer_types is not None:
            if not isinstance(self.layer_types, tuple) or len(self.layer_types) != self.n_layers:
                raise ValueError(f"TinyConfig.layer_types must be a tuple of n_layers={self.n_layers} entries "
                                 f"('global' or 'local'), got {self.layer_types!r}")
            bad = [t for t in self.layer_types if t not in LAYER_TYPES]
            if bad:
                raise ValueError(f"TinyConfig.layer_types entries must be one of {', '.join(map(repr, LAYER_TYPES))}; "
                                 f"got {bad[0]!r}")
            if "local" in self.layer_types and self.sliding_window is None:
                raise ValueError("TinyConfig.layer_types has 'local' layers but TinyConfig.sliding_window is None")

    def _check_moe(self, positive):
        """Mixture of experts: counts, the router's groups, dense first layers."""
        for name in ("n_experts", "experts_per_token", "n_shared_experts", "n_dense_layers", "mla_rope_dim"):
            _count(self, name)
        for name in ("router_groups", "router_topk_groups"):
            positive(name)
        if self.n_experts:
            if not 1 <= self.experts_per_token <= self.n_experts:
                raise ValueError(f"TinyConfig.experts_per_token must be in [1, n_experts={self.n_experts}], "
                                 f"got {self.experts_per_token!r}")
            if self.n_experts % self.router_groups:
                raise ValueError(f"TinyConfig.router_groups ({self.router_groups}) must divide n_experts "
                                 f"({self.n_experts})")
            if self.router_topk_groups > self.router_groups:
                raise ValueError(f"TinyConfig.router_topk_groups ({self.router_topk_groups}) must be at most "
                                 f"router_groups ({self.router_groups})")
            if self.router_groups > 1 and self.n_experts // self.router_groups < 2:
                raise ValueError("TinyConfig.router_groups: each group needs at least 2 experts (a group's score is "
                                 "the sum of its best two)")
            if self.router_topk_groups * self.n_experts // self.router_groups < self.experts_per_token:
                raise ValueError(f"TinyConfig.router_topk_groups ({self.router_topk_groups}) leaves fewer experts "
                                 f"than experts_per_token ({self.experts_per_token})")
        else:
            for name in ("experts_per_token", "n_shared_experts", "n_dense_layers"):
                if getattr(self, name):
                    raise ValueError(f"TinyConfig.{name} needs n_experts > 0 (a mixture-of-experts FFN)")
        if self.n_dense_layers > self.n_layers:
            raise ValueError(f"TinyConfig.n_dense_layers ({self.n_dense_layers}) exceeds n_layers ({self.n_layers})")
        if self.d_expert is not None:
            positive("d_expert")
        if self.n_experts and self.ffn not in ("swiglu", "geglu"):
            raise ValueError(f"TinyConfig.ffn={self.ffn!r}: mixture-of-experts FFNs are gated ('swiglu' or 'geglu')")

    def _check_mla(self, positive):
        """Multi-head latent attention: its fields need mla_kv_rank, and it excludes GQA and QK-norm."""
        if self.mla_kv_rank is None:
            for name in ("mla_q_rank", "mla_v_dim"):
                if getattr(self, name) is not None:
                    raise ValueError(f"TinyConfig.{name} needs mla_kv_rank (multi-head latent attention)")
            if self.mla_rope_dim:
                raise ValueError("TinyConfig.mla_rope_dim needs mla_kv_rank (multi-head latent attention)")
        else:
            positive("mla_kv_rank")
            for name in ("mla_q_rank", "mla_v_dim"):
                if getattr(self, name) is not None:
                    positive(name)
            if self.pos == "rope" and not 0 < self.mla_rope_dim < self.d_head:
                raise ValueError(f"TinyConfig.mla_rope_dim must be in (0, d_head={self.d_head}) with pos='rope' "
                                 f"(the decoupled RoPE part of each head), got {self.mla_rope_dim!r}")
            if self.n_kv_heads is not None and self.n_kv_heads != self.n_heads:
                raise ValueError("TinyConfig.n_kv_heads: multi-head latent attention has one K/V head per query head "
                                 "(the latent is what is shared); leave n_kv_heads None")
            if self.qk_norm != "none":
                raise ValueError("TinyConfig.qk_norm is not implemented together with mla_kv_rank")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads if self.head_dim is None else self.head_dim

    @property
    def rope_dim(self) -> int:
        """Dimensions of each query/key head that RoPE rotates (MLA: only the decoupled part)."""
        return self.mla_rope_dim if self.mla_kv_rank is not None else self.d_head

    @property
    def v_head(self) -> int:
        return self.d_head if self.mla_v_dim is None else self.mla_v_dim

    @property
    def mla(self) -> bool:
        return self.mla_kv_rank is not None

    @property
    def moe(self) -> bool:
        return self.n_experts > 0

    @property
    def expert_width(self) -> int:
        return self.d_ff if self.d_expert is None else self.d_expert

    def layer_type(self, i: int) -> str:
        """'global' or 'local' (sliding window) for layer i."""
        if self.layer_types is not None:
            return self.layer_types[i]
        return "local" if self.sliding_window is not None else "global"

    def is_moe_layer(self, i: int) -> bool:
        return self.n_experts > 0 and i >= self.n_dense_layers

    def __repr__(self):
        """The dataclass repr of the original fields, then only the frontier fields that are not at their default
        (so the repr of every pre-frontier config is unchanged)."""
        parts = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in _FRONTIER_FIELDS and value == f.default:
                continue
            parts.append(f"{f.name}={value!r}")
        return f"TinyConfig({', '.join(parts)})"

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


_NAMES = [f.name for f in dataclasses.fields(TinyConfig)]
_FRONTIER_FIELDS = frozenset(_NAMES[_NAMES.index("n_encoder_layers") + 1:])  # fields added after the core ones


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
