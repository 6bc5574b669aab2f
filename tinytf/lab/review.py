"""The block reviewer: compare a Transformer block's design with the
Llama-3-style block (the 2023-24 design of Llama 3, Qwen2 and Mistral, built by ``tinytf.config_2026()``) and
list every difference ("gap"), each with one line of why it matters and the chapter that shows it.

    >>> gaps = review(PUBLISHED["GPT-2 small"])
    >>> print(format_review(gaps, "GPT-2 small"))

The Llama-3-style block: pre-norm, RMSNorm, RoPE, grouped-query attention, a gated FFN (SwiGLU) with
expansion ratio between 8/3 and 3.5, and no biases in the linear layers.

``frontier_review`` answers a different question, without a verdict: which features of the chapter "The
frontier block" (QK-norm, an MLA or sliding-window cache, a mixture of experts) a block does not use. Those
are design choices with costs of their own, not defects: a released model that lacks one is not behind.

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

from ..config import GROUPS, TinyConfig, as_group, nest_flat
from ..errors import TinyTFInputError
from .hf import config_from_hf, published_config

__all__ = ["Gap", "review", "format_review", "review_table", "block_fields", "PUBLISHED", "GATED_FFNS", "RATIO_RANGE",
           "FRONTIER", "FRONTIER_CHAPTER", "FRONTIER_FEATURES", "FrontierFeature", "frontier_review",
           "frontier_review_table"]

GATED_FFNS = ("swiglu", "geglu")
#: expansion ratios d_ff / d_model of Llama-3-style gated FFNs: 8/3 (same parameters as a 4x two-matrix MLP) up to
#: Llama 3's 3.5. The margin admits the sizes released Llama-style models chose: Llama 1 7B 11008 / 4096 = 2.69,
#: DeepSeek-V3's dense layers 18432 / 7168 = 2.57 (so the lower edge is 2.5, not 2.6).
RATIO_RANGE = (2.5, 3.6)

_CHOICES = {
    "norm": ("rms", "layer", "rms_offset"),
    "norm_position": ("pre", "post", "sandwich", "post_sublayer"),
    "ffn": ("swiglu", "geglu", "relu", "gelu", "gelu_tanh"),
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
    """One difference from the Llama-3-style block."""

    aspect: str  # what is reviewed, e.g. "norm placement"
    found: str  # what the block has
    expected: str  # what the Llama-3-style block has
    why: str  # one line: why it matters
    chapter: str  # where the book shows it


def block_fields(block) -> dict:
    """Normalise a TinyConfig, a dict of block fields or a preset name to a validated dict."""
    if isinstance(block, str):
        if block in FRONTIER:
            block = FRONTIER[block]
        elif block not in PUBLISHED:
            raise TinyTFInputError(f"unknown preset {block!r}; choose one of "
                                   f"{', '.join(map(repr, list(PUBLISHED) + list(FRONTIER)))}")
        else:
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
    out = nest_flat(block)  # older flat keys (n_experts, mla_kv_rank, ...) into their option groups
    for name, cls in GROUPS.items():
        out[name] = as_group(name, cls, out.get(name))
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
    """List the differences ("gaps") between ``block`` and the Llama-3-style recipe, in the order of the block's
    data flow (norm placement, norm type, positions, attention heads, FFN gating, FFN expansion ratio, biases).
    The expansion ratio is reviewed only for a gated FFN (an ungated MLP's difference is its gating). A
    difference is a design choice that departs from the recipe, not necessarily a fault. An empty list means
    the block already is a Llama-3-style block."""
    b = block_fields(block)
    gaps = []
    if b["norm_position"] == "post":
        gaps.append(Gap("norm placement", "post-norm: Norm(x + F(x))", "pre-norm: x + F(Norm(x))",
                        "post-norm renormalises the residual stream after every add, so gradients to early layers "
                        "pass through every norm and deep stacks need learning-rate warm-up; pre-norm leaves the "
                        "stream untouched", "chapter 5"))
    if b["norm"] not in ("rms", "rms_offset"):
        gaps.append(Gap("norm type", "LayerNorm (mean, variance, gamma, beta)", "RMSNorm (root mean square, gamma)",
                        "RMSNorm skips the centring and the beta vector: less work per token, and it keeps the scaling, "
                        "which Zhang and Sennrich argue is what stabilises training", "chapter 3"))
    if b["pos"] != "rope":
        gaps.append(Gap("positions", f"{b['pos']} positions", "RoPE (rotate Q and K)",
                        "RoPE makes the positional part of every attention score depend only on the relative distance "
                        "between query and key, in every layer; added vectors enter once at the input (a learned "
                        "table also ends at its last trained position)", "chapter 1"))
    if b["n_kv_heads"] == b["n_heads"] and b.get("mla") is None:
        gaps.append(Gap("key/value heads", f"{b['n_heads']} query heads, {b['n_kv_heads']} K/V heads (multi-head)",
                        "grouped-query attention: fewer K/V heads than query heads",
                        "the KV cache grows with the number of K/V heads; sharing each K/V head among a group of "
                        "query heads divides cache memory (and K/V projection weights) by the group size",
                        "chapter 10"))
    if b["ffn"] not in GATED_FFNS:
        gaps.append(Gap("FFN gating", f"two-matrix {b['ffn'].upper()} MLP", "gated FFN (SwiGLU)",
                        "a gate SiLU(x W_gate) scales each hidden unit per input, up, down or to near zero; gated FFNs reached lower "
                        "perplexity than ReLU/GELU FFNs at the same parameter count (Shazeer 2020; adopted by Llama, PaLM)", "chapter 4"))
    r = b["d_ff"] / b["d_model"]
    lo, hi = RATIO_RANGE
    # the ratio range is that of a gated FFN: an ungated MLP's r = 4 is right for its two matrices, and the
    # resizing that adding a gate needs is part of the gating difference, not counted a second time
    if b["ffn"] in GATED_FFNS and not lo <= r <= hi:
        gaps.append(Gap("FFN expansion ratio", f"d_ff / d_model = {_ratio(r)} (3 matrices: "
                                              f"{_ratio(3 * r)} d² per layer)",
                        "8/3 to 3.5 with a gated FFN (8/3 gives 8 d², the 2017 block's FFN size)",
                        "a sizing choice, not a fault: a gated FFN has three matrices, 3 r d² parameters; "
                        "r = 8/3 keeps the 2017 FFN budget (a 4x two-matrix MLP), Llama 3 uses 3.5, and other "
                        "released models go to 4 or more", "chapter 9"))
    if b["bias"]:
        gaps.append(Gap("biases", "biases in the linear layers", "no biases (a Q/K/V bias alone is allowed)",
                        "PaLM dropped every bias for training stability at scale (Chowdhery et al. 2023); biases are "
                        "a tiny share of the parameters, and Llama-3-style models train well without them (Qwen2 keeps "
                        "only a Q/K/V bias)", "chapter 9"))
    return gaps


def format_review(gaps, name: str | None = None, target: str = "Llama-3-style") -> str:
    """Plain-text report: one numbered gap per paragraph (found, expected, why, where). ``target`` names the
    block the gaps are measured from: "Llama-3-style" (review) or "frontier" (frontier_review, whose entries are
    reported as the frontier features the block does not use, without a verdict)."""
    title = f"Block review: {name}" if name else "Block review"
    if target == "frontier" or any(isinstance(g, FrontierFeature) for g in gaps):
        return _format_frontier(gaps, title)
    if not gaps:
        return f"{title}\nno differences: this is a {target} block ✅"
    lines = [f"{title}\n{len(gaps)} difference{'s' if len(gaps) != 1 else ''} from the {target} recipe"]
    for i, g in enumerate(gaps, 1):
        lines += [f"{i}. {g.aspect}: {g.found}", f"   {target}: {g.expected}", f"   why:  {g.why}",
                  f"   see:  {g.chapter}"]
    return "\n".join(lines)


def _format_frontier(absent, title: str) -> str:
    n = len(FRONTIER_FEATURES)
    if not absent:
        return f"{title}\nuses all {n} features of the chapter's frontier block"
    count = f"{len(absent)} feature{'s' if len(absent) != 1 else ''}"
    lines = [f"{title}\n{count} of the chapter's frontier block it does not use (of {n} reviewed)"]
    for i, f in enumerate(absent, 1):
        lines += [f"{i}. {f.aspect}: {f.found}", f"   the feature: {f.feature}", f"   trade-off:   {f.why}",
                  f"   see:         {f.chapter}"]
    return "\n".join(lines)


def review_table(blocks: dict) -> str:
    """One row per block, one column per reviewed aspect: 'diff' where the block departs from the
    Llama-3-style recipe, 'same' otherwise ('n/a': an ungated FFN's ratio is not reviewed); the last column
    counts the differences. Narrow enough for a page (74 characters with names of up to 23)."""
    aspects = ["norm placement", "norm type", "positions", "key/value heads", "FFN gating", "FFN expansion ratio",
               "biases"]
    short = ["place", "norm", "pos", "kv", "gate", "ratio", "bias"]
    width = max(len(n) for n in blocks)
    head = f"{'block':<{width}}  " + " ".join(f"{s:>5}" for s in short) + "  total"
    lines = [head, "-" * len(head)]
    for name, block in blocks.items():
        found = {g.aspect for g in review(block)}
        gated = block_fields(block)["ffn"] in GATED_FFNS
        cells = ["diff" if a in found else "n/a" if a == "FFN expansion ratio" and not gated else "same"
                 for a in aspects]
        lines.append(f"{name:<{width}}  " + " ".join(f"{c:>5}" for c in cells) + f"  {len(found):>5}")
    lines.append("diff: differs from the Llama-3-style recipe; n/a: no ratio to review (ungated)")
    return "\n".join(lines)


# --- the frontier block ------------------------------------------------------------------------------------

#: where the book teaches the frontier-block features
FRONTIER_CHAPTER = "The frontier block"


def _frontier_presets() -> dict:
    """Frontier models, each built from its published config.json (tinytf/configs) by config_from_hf."""
    names = {"Qwen3-0.6B": "Qwen3 0.6B", "Qwen3-30B-A3B": "Qwen3 30B-A3B", "Gemma-3-1B": "Gemma 3 1B",
             "OLMo-2-1124-7B": "OLMo 2 7B", "Mixtral-8x7B-v0.1": "Mixtral 8x7B", "DeepSeek-V3": "DeepSeek-V3"}
    # DeepSeek-V3's fp8 storage changes neither the block's design nor its sizes
    ignore = {"DeepSeek-V3": ("quantization_config",)}
    return {label: config_from_hf(published_config(file), ignore=ignore.get(file, ()))
            for file, label in names.items()}


#: Frontier presets (TinyConfig), from the shipped published configs. Kept apart from PUBLISHED, whose
#: blocks are the story from the 2017 block to the Llama-3-style block.
FRONTIER = _frontier_presets()


@dataclass(frozen=True)
class FrontierFeature:
    """A feature of the chapter's frontier block that a block does not use: a design choice with its own costs,
    not a defect."""

    aspect: str  # the feature: "QK-norm", "MLA or sliding window", "MoE"
    found: str  # what the block does instead
    feature: str  # what the feature is, and which models use it
    why: str  # one line: what it can buy and what it costs, with its source
    chapter: str  # where the book shows it


#: the features frontier_review looks for, in its order
FRONTIER_FEATURES = ("QK-norm", "MLA or sliding window", "MoE")


#: why an MLA block has no QK-norm: not a free choice there
_MLA_QK = ("; with MLA it is not a free choice: the per-head keys are never formed at inference (W_UK is absorbed "
           "into the query), so there is no key head to normalise, and Kimi K2 (Kimi Team 2025) bounds the logits "
           "instead with QK-Clip, rescaling the query and key weights during training")


def frontier_review(block) -> list:
    """The features of the chapter's frontier block that ``block`` does not use: QK-norm, a KV cache that
    does not grow with every layer's K/V heads (MLA or local sliding-window layers), and a sparse
    (mixture-of-experts) FFN. Each entry says what the block does instead, what the feature is, what it can buy
    and cost, and points at the chapter "The frontier block". No released model has all three (DeepSeek-V3 has no
    QK-norm, Gemma 3 no MoE): the list describes a design, it does not grade it."""
    b = block_fields(block)
    absent = []
    if b.get("qk_norm", "none") == "none":
        absent.append(FrontierFeature(
            "QK-norm", "queries and keys enter q . k unnormalised",
            "RMSNorm on each query and key head before RoPE (Qwen3, Gemma 3; OLMo 2 over all heads)",
            "growing q . k logits can saturate the softmax; Dehghani et al. (2023) and Wortsman et al. (2024) report "
            "training instabilities of this kind that normalising q and k removed; it costs two gain vectors per "
            "layer, and many models train stably without it" + (_MLA_QK if b.get("mla") is not None else ""),
            FRONTIER_CHAPTER))
    if b.get("mla") is None and b.get("sliding_window") is None:
        absent.append(FrontierFeature(
            "MLA or sliding window", f"every layer caches {b['n_kv_heads']} K/V heads for every position",
            "a compressed latent (MLA, DeepSeek-V2/V3) or local sliding-window layers (Mistral 7B v0.1, Gemma 2/3)",
            "MLA caches one small latent per position (DeepSeek-V3: 576 values per layer where 128 full K/V heads "
            "would need 32,768) and pays with computation per cached position; local layers cap their cache at the "
            "window and reach farther positions only through other layers", FRONTIER_CHAPTER))
    if b.get("moe") is None:
        absent.append(FrontierFeature(
            "MoE", "a dense FFN: every token uses every FFN weight",
            "a mixture of experts: a router sends each token to k of E expert FFNs (Mixtral, Qwen3-MoE, DeepSeek-V3)",
            "parameters grow with E while the work per token grows only with k (Mixtral 8x7B: 46.7B parameters, "
            "12.9B used per token); all E experts must still be held in memory, and the load kept balanced",
            FRONTIER_CHAPTER))
    return absent


def _frontier_has(b: dict) -> list:
    """What a block has of the chapter's frontier features (and of its norm placements)."""
    has = []
    if b.get("qk_norm", "none") != "none":
        has.append(f"QK-norm ({b['qk_norm']})")
    mla, window, moe = b.get("mla"), b.get("sliding_window"), b.get("moe")
    if mla is not None:
        has.append(f"MLA (latent {mla.kv_rank} + RoPE {mla.rope_dim})")
    if window is not None:
        types = window.layer_types
        local = types.count("local") if types else b.get("n_layers", 0)
        has.append(f"window {window.size} on {local}/{b.get('n_layers', '?')} layers")
    if moe is not None:
        has.append(f"MoE {moe.experts_per_token} of {moe.n_experts}"
                   + (f" + {moe.n_shared_experts} shared" if moe.n_shared_experts else ""))
    if b.get("norm_position") in ("sandwich", "post_sublayer"):
        has.append(f"{b['norm_position']} norms")
    return has


def _wrap_items(items: list, width: int) -> list:
    """Comma-separated items on lines of at most ``width`` characters, an item never split."""
    lines, line = [], ""
    for k, item in enumerate(items):
        piece = item + ("," if k < len(items) - 1 else "")
        if line and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = piece
        else:
            line = f"{line} {piece}" if line else piece
    return lines + [line]


def _frontier_split_table(rows: list, width: int, max_width: int | None) -> str:
    """The split layout: per block a "has" line and a "does not use" line, each list wrapped at its commas."""
    label_width = len("does not use")
    room = None if max_width is None else max_width - width - label_width - 4  # for one list
    longest = max(len(item) + 1 for _, has, absent in rows for item in has + absent)
    if room is not None and longest > room:
        raise TinyTFInputError(f"frontier_review_table: max_width={max_width} is too narrow: the name and label "
                               f"columns take {width + label_width + 4} characters and the longest item needs "
                               f"{longest}")
    lines = [f"{'block':<{width}}  {'':<{label_width}}  features", "-" * (max_width or 80)]
    for name, has, absent in rows:
        for k, (label, items) in enumerate((("has", has), ("does not use", absent))):
            wrapped = [", ".join(items)] if room is None else _wrap_items(items, room)
            for j, text in enumerate(wrapped):
                cells = (name if k == 0 and j == 0 else "", label if j == 0 else "", text)
                lines.append(f"{cells[0]:<{width}}  {cells[1]:<{label_width}}  {cells[2]}".rstrip())
    return "\n".join(lines)


def frontier_review_table(blocks: dict, max_width: int | None = None, layout: str = "columns") -> str:
    """One row per block: which features of the chapter's frontier block it has (with their settings, and the
    norm placements of the chapter where a block uses them), and which of the three reviewed features it does
    not use. A description, not a grade. With ``max_width`` (e.g. 80) the two lists wrap at their commas onto
    continuation lines so that no line is longer; a single item that cannot fit raises TinyTFInputError.
    ``layout="split"`` prints the two lists on separate labelled lines ("has" and "does not use") instead of
    side by side, so that a wrapped line never holds items of both lists."""
    if layout not in ("columns", "split"):
        raise TinyTFInputError(f"frontier_review_table: layout={layout!r}; use 'columns' or 'split'")
    if not blocks:
        raise TinyTFInputError("frontier_review_table: no blocks given")
    rows = []
    for name, block in blocks.items():
        has = _frontier_has(block_fields(block)) or ["-"]
        rows.append((name, has, [f.aspect for f in frontier_review(block)] or ["-"]))
    width = max(len(n) for n in blocks)
    if layout == "split":
        return _frontier_split_table(rows, width, max_width)
    if max_width is None:
        rows = [(name, ", ".join(has), ", ".join(absent)) for name, has, absent in rows]
        has_width = max(len("has"), *(len(r[1]) for r in rows))
        head = f"{'block':<{width}}  {'has':<{has_width}}  does not use"
        lines = [head, "-" * (width + has_width + 4 + max(len("does not use"), *(len(r[2]) for r in rows)))]
        lines += [f"{name:<{width}}  {has:<{has_width}}  {absent}" for name, has, absent in rows]
        return "\n".join(lines)
    has_min = max(len("has"), *(len(h) + 1 for _, items, _ in rows for h in items))
    absent_min = max(len("does not use"), *(len(a) + 1 for _, _, items in rows for a in items))
    room = max_width - width - 4  # for the two lists
    if has_min + absent_min > room:
        raise TinyTFInputError(f"frontier_review_table: max_width={max_width} is too narrow: the name column takes "
                               f"{width + 4} characters and the longest items need {has_min} + {absent_min}")

    def n_lines(has_width):
        return sum(max(len(_wrap_items(h, has_width)), len(_wrap_items(a, room - has_width))) for _, h, a in rows)

    # the split of the room between the two lists that needs the fewest lines (the widest 'has' column of those)
    has_width = min(range(has_min, room - absent_min + 1), key=lambda w: (n_lines(w), -w))
    absent_width = room - has_width
    lines = [f"{'block':<{width}}  {'has':<{has_width}}  does not use", "-" * max_width]
    for name, has, absent in rows:
        left, right = _wrap_items(has, has_width), _wrap_items(absent, absent_width)
        for k in range(max(len(left), len(right))):
            cells = (name if k == 0 else "", left[k] if k < len(left) else "", right[k] if k < len(right) else "")
            lines.append(f"{cells[0]:<{width}}  {cells[1]:<{has_width}}  {cells[2]}".rstrip())
    return "\n".join(lines)
