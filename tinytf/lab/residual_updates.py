"""How large is what each sublayer adds to the residual stream, compared with the stream it is added to?
(chapter 6)

A pre-norm block computes U = H + Attn(Norm1(H)) and H' = U + FFN(Norm2(U)). ``update_sizes`` reads the
four vectors of every block from one traced forward pass and reports, per block, the mean length (L2 norm
over the features, averaged over positions) of the stream entering it, of each update, and the ratios
|Attn(Norm1(H))| / |H| and |FFN(Norm2(U))| / |U|. A ratio well below 1 means the sublayer makes a small
correction to the stream; a ratio near or above 1 means the update is as long as the stream itself.
``update_ratio_medians`` gives the same three ratios per position, as medians over the positions.

    rows = update_sizes(model, tinytf.encode("The cat sat on the mat."))
    print(format_update_sizes(rows))
"""
from __future__ import annotations

import torch

from ..errors import TinyTFInputError
from ..tracing import run_with_trace


def _mean_length(t) -> float:
    return t.detach().norm(dim=-1).mean().item()


def _trace(model, ids, caller: str) -> dict:
    """The stream and the two updates of every block, from one traced forward pass (pre-norm wiring only)."""
    if getattr(model.config, "norm_position", "pre") != "pre":
        raise TinyTFInputError(f"{caller} reads pre-norm blocks (x + F(Norm(x))); this model's norm_position is "
                               f"{model.config.norm_position!r}, whose traced sublayer outputs are not the updates added")
    if not model.config.residual:
        raise TinyTFInputError(f"{caller} needs residual connections: without them nothing is added to a stream")
    points = ("resid_pre", "attn.out", "resid_mid", "ffn.out", "resid_post")
    names = [f"blocks.{i}.{p}" for i in range(model.config.n_layers) for p in points]
    return run_with_trace(model, ids, names=names)[1]


def update_sizes(model, ids) -> list:
    """One dict per block: ``block``, ``stream`` (|H|), ``attn`` (|Attn(Norm1(H))|), ``mid`` (|U|),
    ``ffn`` (|FFN(Norm2(U))|), ``attn_ratio`` (attn / stream), ``ffn_ratio`` (ffn / mid), ``block_update``
    (|H' - H|, the whole block's update) and ``block_ratio`` (block_update / stream). Lengths are
    per position, averaged over positions (and batch). Only the pre-norm wiring, in which these tensors are
    exactly the stream and the two updates, is accepted."""
    trace = _trace(model, ids, "update_sizes")
    rows = []
    for i in range(model.config.n_layers):
        b = f"blocks.{i}."
        stream, attn, mid, ffn = (_mean_length(trace[b + p]) for p in ("resid_pre", "attn.out", "resid_mid", "ffn.out"))
        block_update = _mean_length(trace[b + "resid_post"] - trace[b + "resid_pre"])  # H' - H
        rows.append(dict(block=i, stream=stream, attn=attn, mid=mid, ffn=ffn, attn_ratio=attn / stream, ffn_ratio=ffn / mid,
                         block_update=block_update, block_ratio=block_update / stream))
    return rows


def update_ratio_medians(model, ids) -> list:
    """One dict per block: the medians, over all positions (and batch), of the per-position ratios
    ``attn_ratio`` (|Attn(Norm1(H))| / |H|), ``ffn_ratio`` (|FFN(Norm2(U))| / |U|) and ``block_ratio``
    (|H' - H| / |H|), with ``block``. ``update_sizes`` gives the ratios of the mean lengths instead; the two
    differ when the ratio varies from position to position: in a ratio of means, positions with long vectors
    weigh more, while a median weighs every position the same and ignores a few extreme ones. The median of
    an even count is the mean of the two middle values."""
    trace = _trace(model, ids, "update_ratio_medians")

    def median(update, stream):  # per-position lengths [B, T] -> the median of their ratios
        ratios = (update.detach().norm(dim=-1) / stream.detach().norm(dim=-1)).flatten()  # [B * T]
        return torch.quantile(ratios.double(), 0.5).item()

    rows = []
    for i in range(model.config.n_layers):
        H, A, U, F, H_next = (trace[f"blocks.{i}.{p}"] for p in ("resid_pre", "attn.out", "resid_mid", "ffn.out", "resid_post"))
        rows.append(dict(block=i, attn_ratio=median(A, H), ffn_ratio=median(F, U), block_ratio=median(H_next - H, H)))
    return rows


def format_update_sizes(rows, title: str | None = None) -> str:
    """Plain-text table of ``update_sizes`` rows: lengths to 3 significant figures (trailing zeros kept:
    15.0), ratios to 2 decimals (3 significant figures from 10 up: 16.2)."""

    def ratio(v):
        return f"{v:.3g}" if abs(v) >= 10 else f"{v:.2f}"

    head = f"{'block':>5}  {'|H|':>7}  {'|attn update|':>13}  {'ratio':>5}  {'|U|':>7}  {'|FFN update|':>12}  {'ratio':>5}"
    lines = ([title] if title else []) + [head]
    for r in rows:
        lines.append(f"{r['block']:>5}  {r['stream']:>#7.3g}  {r['attn']:>#13.3g}  {ratio(r['attn_ratio']):>5}  "
                     f"{r['mid']:>#7.3g}  {r['ffn']:>#12.3g}  {ratio(r['ffn_ratio']):>5}")
    return "\n".join(lines)
