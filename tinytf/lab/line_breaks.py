"""How much of an attention head's weight lands on line breaks (chapter 12, section 12.7).

    lb = line_break_weight(trace["blocks.3.attn.weights"][0, 0], ids, first_row=64)
    lb.on_break, lb.rows     # rows whose most-weighted key is a line break, rows read
    lb.latest                # of those, rows whose top key is one of the two latest breaks
    lb.median, lb.largest    # each row's total weight on the line breaks: median, largest
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

NEWLINE = ord("\n")


@dataclass(frozen=True)
class LineBreakWeight:
    """What `line_break_weight` returns; see there."""

    breaks: list[int]  # positions of the line breaks in the input
    rows: int  # rows (queries) read
    on_break: int  # rows whose most-weighted key is a line break
    latest: int  # of those, rows whose top key is one of the two latest breaks at or before the row
    median: float  # median over the rows of the weight on all line breaks (torch.median: the lower middle)
    largest: float  # largest such weight


def line_break_weight(weights: torch.Tensor, ids, first_row: int = 0) -> LineBreakWeight:
    """Where one head's attention goes, measured against the line breaks of its input.

    `weights` is one head's attention map `[T, T]` (rows: queries, columns: keys) and `ids` the
    `T` byte ids it read. Only rows `first_row` to `T - 1` are counted. For each counted row the
    function finds its most-weighted key (argmax) and its total weight on every line-break key.
    It returns how many rows have a line break as their top key, how many of those point at one
    of the two latest breaks at or before the row (the latest blank line, when they are
    adjacent), and the median and largest of the per-row weight on line breaks. The median is
    `torch.median`'s: for an even number of rows, the lower of the two middle values.
    """
    ids = torch.as_tensor(ids).tolist()
    if weights.dim() != 2 or weights.shape[0] != weights.shape[1] or weights.shape[1] != len(ids):
        raise ValueError(f"weights must be [T, T] for {len(ids)} ids, got {list(weights.shape)}")
    breaks = [i for i, b in enumerate(ids) if b == NEWLINE]
    rows = weights[first_row:]
    top_key = rows.argmax(-1).tolist()
    on_break = [(q, k) for q, k in zip(range(first_row, len(ids)), top_key) if k in breaks]
    latest = sum(k in [b for b in breaks if b <= q][-2:] for q, k in on_break)
    on_breaks = rows[:, breaks].sum(-1)  # each row's weight on the line breaks
    return LineBreakWeight(
        breaks=breaks,
        rows=rows.shape[0],
        on_break=len(on_break),
        latest=int(latest),
        median=float(on_breaks.median()) if breaks else 0.0,
        largest=float(on_breaks.max()) if breaks else 0.0,
    )
