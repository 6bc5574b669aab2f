"""Configuration: one dataclass drives every shape in tinytf.

The defaults are the book's TinyTransformer:
a 2-layer, pre-norm decoder with RMSNorm, SwiGLU and RoPE, d_model 128,
4 heads, d_ff 512, byte vocabulary of 256 -> 590,464 parameters.

The options of the frontier variants (chapter 11) sit in small groups of their own: ``SlidingWindow``,
``MoEOptions``, ``MLAOptions`` and ``RopeScaling``; a config without them is a plain dense decoder.
"""
from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass
from typing import Optional

from .errors import TinyTFInputError

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


def _fail(message):
    raise TinyTFInputError(message)


def _choice(where, value, allowed):
    if value not in allowed:
        _fail(f"{where} must be one of {', '.join(map(repr, allowed))}; got {value!r}")


def _positive(where, value, optional=False):
    """A positive integer (or None when optional)."""
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        _fail(f"{where} must be a positive integer, got {value!r}")


def _number(where, value, optional=True):
    """A positive number (or None when optional)."""
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        _fail(f"{where} must be a positive number{' or None' if optional else ''}, got {value!r}")


def _count(where, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        _fail(f"{where} must be a non-negative integer, got {value!r}")


def _flag(where, value):
    if not isinstance(value, bool):
        _fail(f"{where} must be True or False, got {value!r}")


@dataclass(frozen=True)
class RopeScaling:
    """RoPE frequency scaling of the global layers (chapter 11, "The frontier block": long context).
    ``linear``: every frequency / factor (positions interpolated). ``llama3`` (Llama 3.1+): long wavelengths /
    factor, short ones kept, a smooth ramp between. ``yarn`` (DeepSeek-V3, Qwen): the same idea with the ramp set by
    rotation counts (beta_fast, beta_slow), plus an attention factor on cos/sin (and, with mscale_all_dim, on MLA's
    softmax scale)."""

    kind: str  # "linear" | "llama3" | "yarn"
    factor: float  # how many times longer the context gets
    low_freq_factor: float = 1.0  # llama3: wavelengths longer than original_max_seq_len / low_freq_factor are scaled
    high_freq_factor: float = 4.0  # llama3: wavelengths shorter than original_max_seq_len / high_freq_factor are kept
    original_max_seq_len: int = 8192  # the context length the model was trained for
    beta_fast: float = 32.0  # yarn only, from here on: ramp ends (rotations over the original context)
    beta_slow: float = 1.0
    mscale: Optional[float] = None
    mscale_all_dim: Optional[float] = None
    attention_factor: Optional[float] = None
    truncate: bool = True

    def __post_init__(self):
        _choice("TinyConfig.rope_scaling.kind", self.kind, ROPE_SCALINGS)
        _number("TinyConfig.rope_scaling.factor", self.factor, optional=False)
        if self.kind == "llama3" and not self.high_freq_factor > self.low_freq_factor > 0:
            _fail("TinyConfig.rope_scaling: llama3 needs high_freq_factor > low_freq_factor > 0, got "
                  f"{self.high_freq_factor!r} and {self.low_freq_factor!r}")


def _short_repr(group) -> str:
    """Class(required fields, then only the optional fields that are not at their default)."""
    parts = [f"{f.name}={getattr(group, f.name)!r}" for f in dataclasses.fields(group)
             if f.default is dataclasses.MISSING or getattr(group, f.name) != f.default]
    return f"{type(group).__name__}({', '.join(parts)})"


def _replace(group, **changes):
    """A copy with some entries changed (validated again): ``cfg.replace(moe=cfg.moe.replace(experts_per_token=1))``."""
    return dataclasses.replace(group, **changes)


@dataclass(frozen=True, repr=False)
class SlidingWindow:
    """Local attention (chapter 11, "The frontier block": sliding windows; Mistral 7B v0.1, Gemma 2/3): a local
    layer's query sees only the last ``size`` keys (itself included), so its KV cache stops growing at the window.
    ``layer_types`` says which layers are local (None: all of them); Gemma 3 gives the local layers their own RoPE
    base ``rope_theta_local``."""

    size: int  # keys a local layer's query sees, itself included
    layer_types: Optional[tuple] = None  # per layer "global" | "local"; None = every layer local
    rope_theta_local: Optional[float] = None  # RoPE base of the local layers (Gemma 3: 10k); None = rope_theta

    __repr__ = _short_repr
    replace = _replace

    def __post_init__(self):
        _positive("TinyConfig.sliding_window.size", self.size)
        if isinstance(self.layer_types, list):  # from JSON
            object.__setattr__(self, "layer_types", tuple(self.layer_types))
        if self.layer_types is not None:
            if not isinstance(self.layer_types, tuple):
                _fail(f"TinyConfig.sliding_window.layer_types must be a tuple of 'global'/'local' (one per layer) "
                      f"or None, got {self.layer_types!r}")
            bad = [t for t in self.layer_types if t not in LAYER_TYPES]
            if bad:
                _fail(f"TinyConfig.sliding_window.layer_types entries must be one of "
                      f"{', '.join(map(repr, LAYER_TYPES))}; got {bad[0]!r}")
        _number("TinyConfig.sliding_window.rope_theta_local", self.rope_theta_local)


@dataclass(frozen=True, repr=False)
class MoEOptions:
    """Mixture of experts (chapter 11, "The frontier block": sparse FFNs; Mixtral, Qwen3-MoE, DeepSeek-V3): the FFN of
    a layer becomes ``n_experts`` gated FFNs of width ``d_expert`` and a router that sends each token to
    ``experts_per_token`` of them. DeepSeek-V3 adds shared experts, dense first layers and grouped, scaled routing."""

    n_experts: int  # routed experts per MoE FFN
    experts_per_token: int  # k of the top-k router
    d_expert: Optional[int] = None  # hidden width of one expert; None = d_ff
    n_shared_experts: int = 0  # experts every token goes through (DeepSeek), as one FFN n_shared * d_expert wide
    n_dense_layers: int = 0  # the first layers keep a dense FFN of width d_ff (DeepSeek-V3: 3)
    router: str = "softmax_renorm"  # "softmax" | "softmax_renorm" | "sigmoid" | "sigmoid_renorm"
    router_groups: int = 1  # experts split into groups; only the best router_topk_groups groups compete (DeepSeek-V3)
    router_topk_groups: int = 1
    router_scale: float = 1.0  # routed output scaled by this (DeepSeek-V3: 2.5)

    __repr__ = _short_repr
    replace = _replace

    def __post_init__(self):
        w = "TinyConfig.moe."
        _positive(w + "n_experts", self.n_experts)
        _positive(w + "d_expert", self.d_expert, optional=True)
        for name in ("n_shared_experts", "n_dense_layers"):
            _count(w + name, getattr(self, name))
        _choice(w + "router", self.router, ROUTERS)
        _positive(w + "router_groups", self.router_groups)
        _positive(w + "router_topk_groups", self.router_topk_groups)
        _number(w + "router_scale", self.router_scale, optional=False)
        k, n, groups = self.experts_per_token, self.n_experts, self.router_groups
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
            _fail(f"{w}experts_per_token must be in [1, n_experts={n}], got {k!r}")
        if n % groups:
            _fail(f"{w}router_groups ({groups}) must divide n_experts ({n})")
        if self.router_topk_groups > groups:
            _fail(f"{w}router_topk_groups ({self.router_topk_groups}) must be at most router_groups ({groups})")
        if groups > 1 and n // groups < 2:
            _fail(f"{w}router_groups: each group needs at least 2 experts (a group's score is the sum of its best two)")
        if self.router_topk_groups * n // groups < k:
            _fail(f"{w}router_topk_groups ({self.router_topk_groups}) leaves fewer experts than experts_per_token "
                  f"({k})")


@dataclass(frozen=True, repr=False)
class MLAOptions:
    """Multi-head latent attention (chapter 11, "The frontier block": MLA; DeepSeek-V2/V3): keys and values are
    rebuilt from one cached latent of ``kv_rank`` values per position; a decoupled part of ``rope_dim`` dimensions
    per head carries RoPE (its key part shared by all heads)."""

    kv_rank: int  # size of the cached K/V latent
    rope_dim: int = 0  # decoupled RoPE part of each query/key head; needed (0 < rope_dim < d_head) with pos='rope'
    q_rank: Optional[int] = None  # low-rank query size; None = a full-rank query projection
    v_dim: Optional[int] = None  # value head size; None = d_head

    __repr__ = _short_repr
    replace = _replace

    def __post_init__(self):
        _positive("TinyConfig.mla.kv_rank", self.kv_rank)
        _count("TinyConfig.mla.rope_dim", self.rope_dim)
        _positive("TinyConfig.mla.q_rank", self.q_rank, optional=True)
        _positive("TinyConfig.mla.v_dim", self.v_dim, optional=True)


#: the option groups of TinyConfig: field name -> class
GROUPS = {"rope_scaling": RopeScaling, "sliding_window": SlidingWindow, "moe": MoEOptions, "mla": MLAOptions}

#: flat keys of older configs (JSON sidecars, saved results) -> (group field, name inside the group)
FLAT_KEYS = {
    "sliding_window": ("sliding_window", "size"), "layer_types": ("sliding_window", "layer_types"),
    "rope_theta_local": ("sliding_window", "rope_theta_local"),
    **{name: ("moe", name) for name in ("n_experts", "experts_per_token", "n_shared_experts", "d_expert",
                                        "n_dense_layers", "router", "router_groups", "router_topk_groups",
                                        "router_scale")},
    "mla_kv_rank": ("mla", "kv_rank"), "mla_q_rank": ("mla", "q_rank"), "mla_rope_dim": ("mla", "rope_dim"),
    "mla_v_dim": ("mla", "v_dim"),
}
#: the flat key whose value None / 0 meant "this group is off"
_GROUP_SWITCH = {"sliding_window": "sliding_window", "moe": "n_experts", "mla": "mla_kv_rank"}


@dataclass(frozen=True)
class TinyConfig:
    """Every shape and choice of a tinytf model; ``TinyConfig()`` is the book's TinyTransformer and a plain dense
    decoder is a one-liner: ``TinyConfig(d_model=64, n_layers=2)``. Configs are frozen: ``cfg.replace(...)`` makes
    a changed, validated copy and ``cfg.diff(other)`` lists what differs.

    The fields come in the order the book teaches them:

    - chapter 1 (tokens, embeddings, positions): ``vocab_size``, ``d_model``, ``pos``, ``max_seq_len``, ``rope_theta``
    - chapter 2 (causal self-attention): ``n_heads``, ``n_kv_heads`` (grouped-query attention)
    - chapter 3 (normalisation): ``norm``, ``eps``
    - chapter 4 (feed-forward): ``d_ff``, ``ffn``, ``bias``
    - chapter 5 (residuals, pre- and post-norm): ``norm_position``, ``residual``
    - chapter 6 (the decoder block): ``dropout``
    - chapter 7 (the tiny transformer): ``n_layers``, ``tie_embeddings``
    - chapter 8 (encoder-decoder): ``n_encoder_layers``
    - chapter 11 (the frontier block), each off by default: ``head_dim``, ``qk_norm``, ``qkv_bias``,
      ``scale_embeddings``, ``attn_scale``, ``logit_softcap``, ``rope_pairing``, and the option groups
      ``rope_scaling`` (:class:`RopeScaling`), ``sliding_window`` (:class:`SlidingWindow`), ``moe``
      (:class:`MoEOptions`) and ``mla`` (:class:`MLAOptions`), each None when the variant is off.

    Chapter 9 (2017 to 2026) compares whole configs: ``config_2017()`` and ``config_2026()``.
    ``TinyConfig.from_dict`` also reads the flat dicts of older files (``n_experts=8``, ``mla_kv_rank=...``).
    """

    # chapter 1: tokens, embeddings, positions
    vocab_size: int = 256
    d_model: int = 128
    pos: str = "rope"  # "rope" | "sinusoidal" | "learned" | "none"
    max_seq_len: int = 512
    rope_theta: float = 10000.0  # RoPE base: the longest wavelength is about 2 pi rope_theta positions
    # chapter 2: causal self-attention
    n_heads: int = 4
    n_kv_heads: Optional[int] = None  # None = n_heads (multi-head); fewer = grouped-query attention
    # chapter 3: normalisation
    norm: str = "rms"  # "rms" | "layer" | "rms_offset" (Gemma)
    eps: float = 1e-5
    # chapter 4: the feed-forward network
    d_ff: int = 512
    ffn: str = "swiglu"  # "swiglu" | "relu" | "gelu" | "geglu" (Gemma) | "gelu_tanh" (GPT-2)
    bias: bool = False  # bias in every Linear and in LayerNorm
    # chapter 5: residuals, pre- and post-norm
    norm_position: str = "pre"  # "pre" | "post" | "sandwich" (Gemma 2/3) | "post_sublayer" (OLMo 2)
    residual: bool = True  # False removes both skip connections (for experiments)
    # chapter 6: the decoder block
    dropout: float = 0.0
    # chapter 7: the tiny transformer
    n_layers: int = 2
    tie_embeddings: bool = False  # LM head shares the token-embedding matrix
    # chapter 8: encoder-decoder
    n_encoder_layers: Optional[int] = None  # EncoderDecoder only; None = n_layers
    # chapter 11: the frontier block; the defaults change nothing above
    head_dim: Optional[int] = None  # None = d_model / n_heads; Qwen3 and Gemma 3 set their own head size
    qk_norm: str = "none"  # "none" | "head" | "proj": RMSNorm on queries and keys before RoPE
    qkv_bias: bool = False  # bias on the Q/K/V projections only (Qwen2)
    scale_embeddings: bool = False  # multiply the token embeddings by sqrt(d_model) (Gemma)
    attn_scale: Optional[float] = None  # multiplier of q . k; None = 1 / sqrt(d_head) (Gemma: query_pre_attn_scalar^-1/2)
    logit_softcap: Optional[float] = None  # final logits -> c * tanh(logits / c)
    rope_pairing: str = "half"  # "half" | "interleaved": which dimensions RoPE rotates together
    rope_scaling: Optional[RopeScaling] = None  # frequency scaling of the global layers (Llama 3.1: "llama3")
    sliding_window: Optional[SlidingWindow] = None  # local layers; None = every layer attends to all earlier keys
    moe: Optional[MoEOptions] = None  # mixture-of-experts FFNs; None = a dense FFN everywhere
    mla: Optional[MLAOptions] = None  # multi-head latent attention; None = multi-head / grouped-query attention

    def __new__(cls, *args, **kwargs):
        unknown = [k for k in kwargs if k not in _NAMES]
        if unknown:
            _fail(_unknown_message(unknown[0]))
        return super().__new__(cls)

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_seq_len"):
            _positive(f"TinyConfig.{name}", getattr(self, name))
        for name, allowed in (("norm", NORMS), ("norm_position", NORM_POSITIONS), ("ffn", FFNS), ("pos", POSITIONS),
                              ("qk_norm", QK_NORMS), ("rope_pairing", ROPE_PAIRINGS)):
            _choice(f"TinyConfig.{name}", getattr(self, name), allowed)
        for name in ("bias", "qkv_bias", "tie_embeddings", "residual", "scale_embeddings"):
            _flag(f"TinyConfig.{name}", getattr(self, name))
        for name in ("dropout", "eps", "rope_theta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                _fail(f"TinyConfig.{name} must be a number, got {value!r}")
        if not 0.0 <= self.dropout < 1.0:
            _fail(f"TinyConfig.dropout must be in [0, 1), got {self.dropout!r}")
        if not self.eps > 0:
            _fail(f"TinyConfig.eps must be positive, got {self.eps!r}")
        _number("TinyConfig.rope_theta", self.rope_theta, optional=False)
        for name in ("attn_scale", "logit_softcap"):
            _number(f"TinyConfig.{name}", getattr(self, name))
        _positive("TinyConfig.n_encoder_layers", self.n_encoder_layers, optional=True)
        self._check_heads()
        if not self.residual and self.norm_position not in ("pre", "post"):
            _fail(f"TinyConfig.residual=False is only implemented with norm_position 'pre' or 'post', "
                  f"not {self.norm_position!r}")
        for name, cls in GROUPS.items():
            object.__setattr__(self, name, as_group(name, cls, getattr(self, name)))
        self._check_window()
        self._check_moe()
        self._check_mla()

    def _check_heads(self):
        _positive("TinyConfig.n_kv_heads", self.n_kv_heads, optional=True)
        if self.n_kv_heads is not None and self.n_heads % self.n_kv_heads:
            _fail(f"TinyConfig.n_heads ({self.n_heads}) must be divisible by n_kv_heads ({self.n_kv_heads}): "
                  "each key/value head serves a whole group of query heads")
        _positive("TinyConfig.head_dim", self.head_dim, optional=True)
        if self.head_dim is None and self.d_model % self.n_heads:
            _fail(f"TinyConfig.d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}) "
                  "so that every head gets d_model / n_heads dimensions")
        if self.pos == "rope" and self.mla is None and self.d_head % 2:
            _fail(f"TinyConfig.pos='rope' needs an even head size; d_model/n_heads = {self.d_head}")

    def _check_window(self):
        """Sliding windows: one layer type per layer; not with MLA."""
        w = self.sliding_window
        if w is None:
            return
        if w.layer_types is not None and len(w.layer_types) != self.n_layers:
            _fail(f"TinyConfig.sliding_window.layer_types must have n_layers={self.n_layers} entries "
                  f"('global' or 'local'), got {w.layer_types!r}")
        if self.mla is not None:
            _fail("TinyConfig.sliding_window is not implemented together with mla (multi-head latent attention)")

    def _check_moe(self):
        """Mixture of experts: the parts that depend on the rest of the config."""
        if self.moe is None:
            return
        if self.moe.n_dense_layers > self.n_layers:
            _fail(f"TinyConfig.moe.n_dense_layers ({self.moe.n_dense_layers}) exceeds n_layers ({self.n_layers})")
        if self.ffn not in ("swiglu", "geglu"):
            _fail(f"TinyConfig.ffn={self.ffn!r}: mixture-of-experts FFNs are gated ('swiglu' or 'geglu')")

    def _check_mla(self):
        """Multi-head latent attention: the RoPE part fits the head; no GQA, no QK-norm."""
        if self.mla is None:
            return
        if self.pos == "rope" and not 0 < self.mla.rope_dim < self.d_head:
            _fail(f"TinyConfig.mla.rope_dim must be in (0, d_head={self.d_head}) with pos='rope' "
                  f"(the decoupled RoPE part of each head), got {self.mla.rope_dim!r}")
        if self.pos == "rope" and self.mla.rope_dim % 2:
            _fail(f"TinyConfig.mla.rope_dim must be even with pos='rope', got {self.mla.rope_dim!r}")
        if self.n_kv_heads is not None and self.n_kv_heads != self.n_heads:
            _fail("TinyConfig.n_kv_heads: multi-head latent attention has one K/V head per query head "
                  "(the latent is what is shared); leave n_kv_heads None")
        if self.qk_norm != "none":
            _fail("TinyConfig.qk_norm is not implemented together with mla (multi-head latent attention)")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads if self.head_dim is None else self.head_dim

    @property
    def rope_dim(self) -> int:
        """Dimensions of each query/key head that RoPE rotates (MLA: only the decoupled part)."""
        return self.mla.rope_dim if self.mla is not None else self.d_head

    @property
    def v_head(self) -> int:
        return self.d_head if self.mla is None or self.mla.v_dim is None else self.mla.v_dim

    @property
    def expert_width(self) -> int:
        """Hidden width of one expert: moe.d_expert, else d_ff."""
        return self.d_ff if self.moe is None or self.moe.d_expert is None else self.moe.d_expert

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def encoder_layers(self) -> int:
        return self.n_layers if self.n_encoder_layers is None else self.n_encoder_layers

    def layer_type(self, i: int) -> str:
        """'global' or 'local' (sliding window) for layer i."""
        w = self.sliding_window
        if w is None:
            return "global"
        return "local" if w.layer_types is None else w.layer_types[i]

    def is_moe_layer(self, i: int) -> bool:
        return self.moe is not None and i >= self.moe.n_dense_layers

    def __repr__(self):
        """The fields of chapters 1-8, then only the chapter-10 fields that are not at their default."""
        parts = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in _FRONTIER_FIELDS and value == f.default:
                continue
            parts.append(f"{f.name}={value!r}")
        return f"TinyConfig({', '.join(parts)})"

    def replace(self, **changes) -> "TinyConfig":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def diff(self, other: "TinyConfig") -> dict:
        """Fields whose values differ: {name: (self's value, other's value)}. Inside an option group present in
        both configs, the differing entries are named ``group.entry`` (e.g. ``moe.n_experts``)."""
        out = {}
        for f in dataclasses.fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if a == b:
                continue
            if f.name in GROUPS and a is not None and b is not None:
                out.update({f"{f.name}.{g.name}": (getattr(a, g.name), getattr(b, g.name))
                            for g in dataclasses.fields(a) if getattr(a, g.name) != getattr(b, g.name)})
            else:
                out[f.name] = (a, b)
        return out

    def to_dict(self) -> dict:
        """The fields as plain JSON-ready values (groups as dicts or None); ``TinyConfig.from_dict`` reads it back."""
        out = dataclasses.asdict(self)
        w = out["sliding_window"]
        if w is not None and w["layer_types"] is not None:
            w["layer_types"] = list(w["layer_types"])
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "TinyConfig":
        """A config from a dict of its fields: groups as dicts (``to_dict``) or, as older files have them, flat
        (``n_experts``, ``mla_kv_rank``, ``sliding_window=4``, ...). Raises TinyTFInputError for an unknown key."""
        if not isinstance(data, dict):
            _fail(f"TinyConfig.from_dict takes a dict of config fields, got {type(data).__name__}")
        return cls(**nest_flat(data))


_NAMES = [f.name for f in dataclasses.fields(TinyConfig)]
_FRONTIER_FIELDS = frozenset(_NAMES[_NAMES.index("head_dim"):])  # chapter 11: shown only when set


def _unknown_message(key) -> str:
    if key in FLAT_KEYS:
        group, name = FLAT_KEYS[key]
        return (f"TinyConfig has no field {key!r} any more: it is {group}.{name}, e.g. TinyConfig({group}="
                f"{GROUPS[group].__name__}({name}=...)); TinyConfig.from_dict reads the old flat form")
    close = difflib.get_close_matches(key, _NAMES, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"TinyConfig has no field {key!r}{hint}; its fields are {', '.join(_NAMES)}"


def as_group(name, cls, value):
    """A group field's value as the group's class: the class itself, None, or a dict of its fields (JSON)."""
    if value is None or isinstance(value, cls):
        return value
    if isinstance(value, dict):
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = [k for k in value if k not in known]
        if unknown:
            _fail(f"TinyConfig.{name} has no entry {unknown[0]!r}; {cls.__name__}'s fields are {', '.join(known)}")
        try:
            return cls(**value)
        except TypeError as e:  # a required entry is missing
            _fail(f"TinyConfig.{name}: {cls.__name__} needs {', '.join(_required(cls))} ({e})")
    _fail(f"TinyConfig.{name} must be a {cls.__name__}, a dict of its fields or None, got {value!r}")


def _required(cls) -> list:
    return [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]


def nest_flat(data: dict) -> dict:
    """Map the flat keys of older configs into their option groups: {"n_experts": 8, "experts_per_token": 2, ...}
    -> {"moe": {"n_experts": 8, "experts_per_token": 2, ...}}. A group whose switch is off (n_experts 0,
    mla_kv_rank / sliding_window None) becomes None; its other entries must then be at their defaults."""
    out, flat = {}, {}
    for key, value in data.items():
        old_window = key == "sliding_window" and isinstance(value, int) and not isinstance(value, bool)
        if key in FLAT_KEYS and (key != "sliding_window" or old_window):
            flat[key] = value
        else:
            out[key] = value
    for group, switch in _GROUP_SWITCH.items():
        keys = [k for k, (g, _) in FLAT_KEYS.items() if g == group and k in flat]
        if not keys:
            continue
        if group in out and out[group] is not None:
            _fail(f"TinyConfig: {', '.join(keys)} and {group} both given; put them all in {group}")
        entries = {FLAT_KEYS[k][1]: flat[k] for k in keys}
        if flat.get(switch):
            out[group] = entries
            continue
        out[group] = None
        defaults = _flat_defaults(GROUPS[group])
        on = [k for k in keys if k != switch and flat[k] != defaults.get(FLAT_KEYS[k][1])
              and not (k == "layer_types" and "local" not in (flat[k] or ()))]
        if on:
            _fail(f"TinyConfig: {on[0]}={flat[on[0]]!r} needs {switch} (it belongs to {group}, which is off)")
    return out


def _flat_defaults(cls) -> dict:
    defaults = {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
    if cls is MoEOptions:
        defaults["experts_per_token"] = 0  # the old flat default
    return defaults


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
