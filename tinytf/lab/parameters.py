"""Parameter counting: a table by component for any tinytf model, and exact counts for real
model sizes (Llama 3 8B, GPT-2 small) built on the meta device, so no memory is allocated."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from ..blocks import DecoderBlock
from ..config import TinyConfig
from ..models import EncoderDecoder, TinyTransformer
from ..moe import Experts
from .hf import config_from_hf

LLAMA3_8B = TinyConfig(vocab_size=128256, d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_ff=14336,
                       norm="rms", ffn="swiglu", pos="rope", bias=False, tie_embeddings=False, max_seq_len=8192,
                       rope_theta=500_000.0)
GPT2_SMALL = TinyConfig(vocab_size=50257, d_model=768, n_layers=12, n_heads=12, d_ff=3072, norm="layer",
                        ffn="gelu", pos="learned", max_seq_len=1024, bias=True, tie_embeddings=True)

_SUBLAYER = {"attn": "attention (Q/K/V/O)", "cross_attn": "cross-attention (Q/K/V/O)", "ffn": "FFN",
             "norm1": "norms", "norm2": "norms", "norm_cross": "norms"}
_TOP = {"embed": "embedding", "pos": "positions (learned)", "final_norm": "final norm", "lm_head": "LM head"}


@dataclass
class ParamRow:
    label: str
    count: int


def _key(name: str):
    """'blocks.0.attn.q_proj.weight' -> ('', 'layer', 'attention (Q/K/V/O)');
    'encoder.embed.weight' -> ('encoder', 'top', 'embedding')."""
    parts = name.split(".")
    stack = parts.pop(0) if parts[0] in ("encoder", "decoder") else ""
    if parts[0] == "blocks":
        return stack, "layer", _SUBLAYER[parts[2]]
    return stack, "top", _TOP[parts[0]]


def parameter_table(model: nn.Module) -> list:
    """Rows by component, in forward order. A tied tensor (LM head = embedding) is counted once,
    at the embedding, and the head's row says so."""
    counts = {}
    for name, p in model.named_parameters():  # named_parameters() skips the second name of a tied tensor
        counts[_key(name)] = counts.get(_key(name), 0) + p.numel()
    cfg = getattr(model, "config", None)
    rows = []
    for stack in ("encoder", "decoder", ""):
        owner = getattr(model, stack, None) if stack else model
        blocks = getattr(owner, "blocks", None)
        if blocks is None:
            continue
        pre = stack + " " if stack else ""
        for part in ("embedding", "positions (learned)"):
            if (stack, "top", part) in counts:
                rows.append(ParamRow(pre + part, counts[(stack, "top", part)]))
        n = len(blocks)
        per_block = [sum(p.numel() for p in b.parameters()) for b in blocks]
        if len(set(per_block)) > 1:  # e.g. DeepSeek-V3: dense first layers, MoE after: sums over all layers
            for part in ("attention (Q/K/V/O)", "cross-attention (Q/K/V/O)", "FFN", "norms"):
                c = counts.get((stack, "layer", part))
                if c is not None:
                    rows.append(ParamRow(f"{pre}all {n} layers: {part}", c))
            rows.append(ParamRow(f"{pre}x {n} layers", sum(per_block)))
        else:
            total = 0
            for part in ("attention (Q/K/V/O)", "cross-attention (Q/K/V/O)", "FFN", "norms"):
                c = counts.get((stack, "layer", part))
                if c is not None:
                    rows.append(ParamRow(f"{pre}per layer: {part}", c // n))
                    total += c // n
            rows.append(ParamRow(f"{pre}per layer total", total))
            rows.append(ParamRow(f"{pre}x {n} layers", total * n))
        if (stack, "top", "final norm") in counts:
            rows.append(ParamRow(pre + "final norm", counts[(stack, "top", "final norm")]))
    tied = cfg is not None and cfg.tie_embeddings
    rows.append(ParamRow("LM head (tied: shares the embedding)" if tied else "LM head",
                         0 if tied else counts.get(("", "top", "LM head"), 0)))
    rows.append(ParamRow("total", sum(p.numel() for p in model.parameters())))
    return rows


def format_table(rows, title: str | None = None) -> str:
    """Plain-text table (compared exactly by nbval)."""
    width = max(len(r.label) for r in rows)
    rule = "-" * (width + 15)
    lines = ([title] if title else []) + [f"{'component':<{width}}  {'parameters':>13}", rule]
    for r in rows:
        if r.label == "total":
            lines.append(rule)
        lines.append(f"{r.label:<{width}}  {r.count:>13,}")
    return "\n".join(lines)


def _side_label(label: str) -> str:
    """'encoder per layer: FFN' -> 'per layer: FFN'; 'x 4 layers' -> 'all layers'; 'LM head (tied: ...)' -> 'LM head'."""
    for pre in ("encoder ", "decoder "):
        if label.startswith(pre):
            label = label[len(pre):]
    if label.startswith("x ") and label.endswith(" layers"):
        return "all layers"
    return "LM head" if label.startswith("LM head") else label.replace(" (Q/K/V/O)", "")


def format_side_by_side(models: dict) -> str:
    """One plain-text table of ``parameter_table`` for several models, a column per model, rows matched by
    component ("-" where a model has none). An encoder-decoder gets two columns, its encoder and its decoder
    stack (the LM head counted with the decoder), under one title, and its total is centred below both.
    ``models`` maps a column title (1 to 12 characters; up to 25 for an encoder-decoder) to a model."""
    if not isinstance(models, dict) or not models:
        raise ValueError("format_side_by_side: models must be a non-empty dict {title: model}")
    for title, model in models.items():
        if not isinstance(model, nn.Module):
            raise ValueError(f"format_side_by_side: {title!r} is not a model")
        limit = 25 if isinstance(model, EncoderDecoder) else 12
        if not isinstance(title, str) or not 0 < len(title) <= limit:
            raise ValueError(f"format_side_by_side: column title {title!r} must be a string of 1 to {limit} "
                             "characters")
    w = 13  # width of one number column
    order = ["embedding", "positions (learned)", "per layer: attention", "per layer: cross-attention",
             "per layer: FFN", "per layer: norms", "per layer total", "all layers", "final norm", "LM head"]
    cols, top, sub, bottom = [], [], [], []  # {label: count} per column; title, subtitle and total cells
    for title, model in models.items():
        rows = parameter_table(model)
        if not hasattr(model, "lm_head"):  # an encoder alone has no LM head: its column shows "-", not 0
            rows = [r for r in rows if not r.label.startswith("LM head")]
        encdec = isinstance(model, EncoderDecoder)
        for stack in (("encoder", "decoder") if encdec else ("",)):
            col = {}
            for r in rows[:-1]:
                if not stack or r.label.startswith(stack + " ") or (stack == "decoder" and r.label.startswith("LM head")):
                    col[_side_label(r.label)] = r.count
            cols.append(col)
            sub.append(f"{stack:>{w}}")
        span = w * (2 if encdec else 1)
        top.append(title.center(span - 2).rstrip().rjust(span - 2) + "  " if encdec else f"{title:>{w}}")
        bottom.append(f"{rows[-1].count:,}".center(span - 2) + "  " if encdec else f"{rows[-1].count:>{w},}")
    # the known components in book order, then any other component in the order the columns meet it
    labels = list(dict.fromkeys([x for x in order if any(x in c for c in cols)] + [x for c in cols for x in c]))
    width = max(len(x) for x in labels + ["component"])
    rule = "-" * (width + w * len(cols))
    lines = [(" " * width + "".join(top)).rstrip(), (f"{'component':<{width}}" + "".join(sub)).rstrip(), rule]
    for label in labels:
        lines.append(f"{label:<{width}}" + "".join(f"{c[label]:>{w},}" if label in c else f"{'-':>{w}}"
                                                   for c in cols))
    lines.append(rule)
    lines.append((f"{'total':<{width}}" + "".join(bottom)).rstrip())
    return "\n".join(lines)


_INIT_FUNCTIONS = ("normal_", "uniform_", "kaiming_uniform_", "xavier_uniform_", "trunc_normal_", "zeros_", "ones_")


@contextmanager
def _skip_init():
    """Make torch.nn.init's in-place initialisers no-ops: on the meta device they draw nothing, but each call
    still runs through torch's reference implementations (most of the cost of building a large meta model)."""
    saved = {name: getattr(nn.init, name) for name in _INIT_FUNCTIONS}
    for name in _INIT_FUNCTIONS:
        setattr(nn.init, name, lambda tensor, *args, **kwargs: tensor)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(nn.init, name, fn)


def meta_model(cfg: TinyConfig, kind: str = "decoder"):
    """Build a model on the meta device: shapes only, no memory, no initialisation cost."""
    with torch.device("meta"), _skip_init():
        return (TinyTransformer if kind == "decoder" else EncoderDecoder)(cfg)


def _as_config(cfg) -> TinyConfig:
    if isinstance(cfg, TinyConfig):
        return cfg
    if isinstance(cfg, dict) and "model_type" in cfg:  # a Hugging Face config.json
        # RoPE scaling and fp8 storage change no parameter count
        return config_from_hf(cfg, ignore=("rope_scaling", "rope_parameters", "quantization_config"))
    raise TypeError(f"expected a TinyConfig or a Hugging Face config dict, got {type(cfg).__name__}")


def count_parameters(cfg: TinyConfig, kind: str = "decoder") -> int:
    """Exact parameter count of the model a config describes (a TinyConfig, or a Hugging Face config.json
    dict), without allocating it. Tied tensors count once; buffers (e.g. DeepSeek's router bias) not at all."""
    return sum(p.numel() for p in meta_model(_as_config(cfg), kind).parameters())


def active_parameters(cfg: TinyConfig) -> int:
    """Parameters one token goes through: the total minus, in every MoE layer, the routed experts the router
    did not choose ((moe.n_experts - moe.experts_per_token) experts). Equals count_parameters for a dense model.
    (Like the published figures, it counts the whole embedding matrix and LM head.)"""
    cfg = _as_config(cfg)
    model = meta_model(cfg)
    total = sum(p.numel() for p in model.parameters())
    for m in model.modules():
        if isinstance(m, Experts):
            per_expert = sum(p.numel() for p in m.parameters()) // cfg.moe.n_experts
            total -= (cfg.moe.n_experts - cfg.moe.experts_per_token) * per_expert
    return total


def approx_layer_params(d_model: int, r: float) -> float:
    """A common quick estimate for one block: 4 d^2 (Q, K, V, O) + 3 r d^2 (SwiGLU with d_ff = r d).
    It assumes full-size K/V (no GQA) and ignores norms and biases."""
    return 4 * d_model**2 + 3 * r * d_model**2


def exact_layer_params(cfg: TinyConfig) -> dict:
    """Exact per-layer counts by sublayer, from a meta-device block."""
    with torch.device("meta"), _skip_init():
        block = DecoderBlock(cfg)
    parts = {"attention": block.attn, "ffn": block.ffn, "norms": nn.ModuleList([block.norm1, block.norm2])}
    out = {k: sum(p.numel() for p in m.parameters()) for k, m in parts.items()}
    out["total"] = sum(out.values())
    return out
