"""The block reviewer (seed 001's reusable artefact): compare a Transformer block's design with the
2026 defaults and list every gap, each with one line of why it matters and the chapter that shows it.

    >>> gaps = review(PUBLISHED["GPT-2 small"])
    >>> print(format_review(gaps, "GPT-2 small"))

The 2026 block (Llama 3, Qwen, Mistral): pre-norm, RMSNorm, RoPE, grouped-query attention,
a gated FFN (SwiGLU) with expansion ratio between 8/3 and 3.5, and no biases in the linear layers.

``review`` takes a :class:`~tinytf.config.TinyConfig`, a dict of block fields, or the name of one of the
published presets in :data:`PUBLISHED`. A dict describes a block with these keys:

``norm``
    ``"layer"`` (LayerNorm) or ``"rms"`` (RMSNorm; T5's scale-only norm counts as RMSNorm).
``norm_position``
    ``"pre"`` or ``"post"``.
``ffn``
    ``"relu"``, ``"gelu"`` (two-matrix MLP), ``"swiglu"`` or ``"geglu"`` (gated, three matrices).
``pos``
    ``"rope"``, ``"sinusoidal"``, ``"learned"``, ``"relative"`` (T5's bucketed bias), ``"alibi"`` or ``"none"``.
``d_model``, ``d_ff``, ``n_heads``
    positive integers.
``n_kv_heads``
    key/value heads (``None`` = ``n_heads``, plain multi-head attention).
``bias``
    ``True`` when the linear layers have biases.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from .config import TinyConfig
from .errors import TinyTFInputError

__all__ = ["Gap", "review", "format_review", "review_table", "block_fields", "PUBLISHED", "GATED_FFNS", "RATIO_RANGE"]

GATED_FFNS = ("swiglu", "geglu")
#: expansion ratios d_ff / d_model of 2026 gated FFNs: 8/3 (same parameters as a 4x two-matrix MLP) up to
#: Llama 3's 3.5. A small tolerance admits the rounding real models apply (e.g. 11008 / 4096 = 2.6875).
RATIO_RANGE = (2.5, 3.6)

_CHOICES = {
    "norm": ("rms", "layer"),
    "norm_position": ("pre", "post"),
    "ffn": ("swiglu", "geglu", "relu", "gelu"),
    "pos": ("rope", "sinusoidal", "learned", "relative", "alibi", "none"),
}
_REQUIRED = ("norm", "norm_position", "ffn", "pos", "d_model", "d_ff", "n_heads", "bias")

#: Published block hyper-parameters (from each model's paper and released configuration).
PUBLISHED = {
    "Transformer-base (2017)": dict(  # Vaswani et al. 2017, base model
        norm="layer", norm_position="post", ffn="relu", pos="sinusoidal",
        d_model=512, d_ff=2048, n_heads=8, n_kv_heads=8, bias=True, n_layers=6, n_encoder_layers=6),
    "BERT-base": dict(  # Devlin et al. 2018; bert-base-uncased config.json
        norm="layer", norm_position="post", ffn="gelu", pos="learned",
        d_model=768, d_ff=3072, n_heads=12, n_kv_heads=12, bias=True, n_layers=12, vocab_size=30522),
    "GPT-2 small": dict(  # Radford et al. 2019; gpt2 config.json (LayerNorm moved to each sub-block's input)
        norm="layer", norm_position="pre", ffn="gelu", pos="learned",
        d_model=768, d_ff=3072, n_heads=12, n_kv_heads=12, bias=True, n_layers=12, vocab_size=50257),
    "T5-base": dict(  # Raffel et al. 2020; t5-base config.json (scale-only norm, relative position bias)
        norm="rms", norm_position="pre", ffn="relu", pos="relative",
        d_model=768, d_ff=3072, n_heads=12, n_kv_heads=12, bias=False, n_layers=12, n_encoder_layers=12,
        vocab_size=32128),
    "Llama 3 8B": dict(  # Meta-Llama-3-8B config.json
        norm="rms", norm_position="pre", ffn="swiglu", pos="rope",
        d_model=4096, d_ff=14336, n_heads=32, n_kv_heads=8, bias=False, n_layers=32, vocab_size=128256),
}


@dataclass(frozen=True)
class Gap:
    """One difference from the 2026 block."""

    aspect: str  # what is reviewed, e.g. "norm placement"
    found: str  # what the block has
    expected: str  # what the 2026 block has
    why: str  # one line: why it matters
    chapter: str  # where the book shows it


def block_fields(block) -> dict:
    """Normalise a TinyConfig, a dict of block fields or a preset name to a validated dict."""
    if isinstance(block, str):
        if block not in PUBLISHED:
            raise TinyTFInputError(f"unknown preset {block!r}; choose one of {', '.join(map(repr, PUBLISHED))}")
        block = PUBLISHED[block]
    if isinstance(block, TinyConfig):
        return {f.name: getattr(block, f.name) for f in fields(block)} | {"n_kv_heads": block.kv_heads}
    if not isinstance(block, dict):
        raise TinyTFInputError(
            f"review() takes a TinyConfig, a dict of block fields or a preset name, got {type(block).__name__}")
    missing = [k for k in _REQUIRED if k not in block]
    if missing:
        raise TinyTFInputError(f"block fields are missing {', '.join(missing)}; required: {', '.join(_REQUIRED)}")
    for key, allowed in _CHOICES.items():
        if block[key] not in allowed:
            raise TinyTFInputError(f"{key}={block[key]!r} is not one of {', '.join(map(repr, allowed))}")
    for key in ("d_model", "d_ff", "n_heads"):
        value = block[key]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise TinyTFInputError(f"{key} must be a positive integer, got {value!r}")
    out = dict(block)
    kv = out.get("n_kv_heads")
    out["n_kv_heads"] = out["n_heads"] if kv is None else kv
    if isinstance(out["n_kv_heads"], bool) or not isinstance(out["n_kv_heads"], int) or out["n_kv_heads"] <= 0 \
            or out["n_heads"] % out["n_kv_heads"]:
        raise TinyTFInputError(
            f"n_kv_heads must be a positive integer dividing n_heads={out['n_heads']}, got {kv!r}")
    return out


def _ratio(x: float) -> str:
    return f"{x:.3g}"


def review(block) -> list:
    """List the gaps between ``block`` and the 2026 defaults, in the order of the block's data flow
    (norm placement, norm type, positions, attention heads, FFN gating, FFN expansion ratio, biases).
    An empty list means the block already is a 2026 block."""
    b = block_fields(block)
    gaps = []
    if b["norm_position"] != "pre":
        gaps.append(Gap("norm placement", "post-norm: Norm(x + F(x))", "pre-norm: x + F(Norm(x))",
                        "post-norm renormalises the residual stream after every add, so gradients to early layers "
                        "pass through every norm and deep stacks need learning-rate warm-up; pre-norm leaves the "
                        "stream untouched", "chapter 5"))
    if b["norm"] != "rms":
        gaps.append(Gap("norm type", "LayerNorm (mean, variance, gamma, beta)", "RMSNorm (root mean square, gamma)",
                        "RMSNorm skips the centring and the beta vector: less work per token, and the scaling it keeps "
                        "is what stabilises training", "chapter 3"))
    if b["pos"] != "rope":
        gaps.append(Gap("positions", f"{b['pos']} positions", "RoPE (rotate Q and K)",
                        "RoPE makes every attention score depend on the relative distance between query and key, "
                        "in every layer; added vectors enter once at the input (a learned table also ends at its "
                        "last trained position)", "chapter 1"))
    if b["n_kv_heads"] == b["n_heads"]:
        gaps.append(Gap("key/value heads", f"{b['n_heads']} query heads, {b['n_kv_heads']} K/V heads (multi-head)",
                        "grouped-query attention: fewer K/V heads than query heads",
                        "the KV cache grows with the number of K/V heads; sharing each K/V head among a group of "
                        "query heads divides cache memory (and K/V projection weights) by the group size",
                        "chapter 10"))
    if b["ffn"] not in GATED_FFNS:
        gaps.append(Gap("FFN gating", f"two-matrix {b['ffn'].upper()} MLP", "gated FFN (SwiGLU)",
                        "a gate SiLU(x W_gate) decides per input which hidden units pass; gated FFNs reached lower "
                        "perplexity than ReLU/GELU FFNs at the same parameter count (Llama, PaLM)", "chapter 4"))
    r = b["d_ff"] / b["d_model"]
    lo, hi = RATIO_RANGE
    if not lo <= r <= hi:
        matrices = 3 if b["ffn"] in GATED_FFNS else 2
        gaps.append(Gap("FFN expansion ratio", f"d_ff / d_model = {_ratio(r)} ({matrices} matrices: "
                                              f"{_ratio(matrices * r)} d² per layer)",
                        "8/3 to 3.5 with a gated FFN (8/3 gives 8 d², the 2017 block's FFN size)",
                        "a gated FFN has three matrices, 3 r d² parameters; r = 8/3 matches a 4x two-matrix MLP, "
                        "a larger r spends parameters on the FFN rather than on depth or width", "chapter 9"))
    if b["bias"]:
        gaps.append(Gap("biases", "biases in the linear layers", "no biases (a Q/K/V bias alone is allowed)",
                        "biases add parameters and memory traffic, and 2026 models train well without them "
                        "(Qwen keeps only a Q/K/V bias)", "chapter 9"))
    return gaps


def format_review(gaps, name: str | None = None) -> str:
    """Plain-text report: one numbered gap per paragraph (found, expected, why, where)."""
    title = f"Block review: {name}" if name else "Block review"
    if not gaps:
        return f"{title}\nno gaps: this is a 2026 block ✅"
    lines = [f"{title}\n{len(gaps)} gap{'s' if len(gaps) != 1 else ''} from the 2026 block"]
    for i, g in enumerate(gaps, 1):
        lines += [f"{i}. {g.aspect}: {g.found}", f"   2026: {g.expected}", f"   why:  {g.why}",
                  f"   see:  {g.chapter}"]
    return "\n".join(lines)


def review_table(blocks: dict) -> str:
    """One row per block, one column per reviewed aspect: '-' for a gap, 'ok' otherwise."""
    aspects = ["norm placement", "norm type", "positions", "key/value heads", "FFN gating", "FFN expansion ratio",
               "biases"]
    short = ["placement", "norm", "positions", "kv heads", "gating", "ratio", "biases"]
    width = max(len(n) for n in blocks)
    head = f"{'block':<{width}}  " + "  ".join(f"{s:>9}" for s in short) + "  gaps"
    lines = [head, "-" * len(head)]
    for name, block in blocks.items():
        found = {g.aspect for g in review(block)}
        cells = ["GAP" if a in found else "ok" for a in aspects]
        lines.append(f"{name:<{width}}  " + "  ".join(f"{c:>9}" for c in cells) + f"  {len(found):>4}")
    return "\n".join(lines)
