"""A forest plot of paired comparisons (chapter 9, section 9.3): one row per comparison, a point at its mean paired
difference, a bar for its interval, a vertical line at 0. It draws ``tinytf.lab.block_comparison.Paired`` results as
they are (the objects ``paired_stats`` returned for the chapter's tables); nothing is recomputed here.

    forest_figure(panels, post_hoc=(), ...)    panels of rows (label, Paired[, Paired corrected]), stacked
"""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..errors import TinyTFInputError
from .common import FONT, OKABE_ITO

__all__ = ["forest_figure"]

PLAIN, FOCUS, POST_HOC = OKABE_ITO[0], OKABE_ITO[5], OKABE_ITO[1]  # blue; vermillion, orange: interval excludes 0
CORRECTED = "#999999"  # grey: the page's line colour in light and dark mode
ROW_PX = 30  # height of one row
HOVER = "%{y}: %{text}<br>mean %{x:+.2f}, 95% interval %{customdata[0]:+.2f} to %{customdata[1]:+.2f}<extra></extra>"


def _check_row(row, where: str):
    if not isinstance(row, (tuple, list)) or len(row) not in (2, 3):
        raise TinyTFInputError(f"forest_figure: {where}: expected (label, Paired) or (label, Paired, Paired "
                               f"corrected), got {row!r}")
    for p in row[1:]:
        if p is not None and not all(hasattr(p, k) for k in ("mean", "lo", "hi", "a", "b", "n_intervals")):
            raise TinyTFInputError(f"forest_figure: {where}: expected a Paired of tinytf.lab.block_comparison "
                                   f"(paired_stats), got {p!r}")
    if row[1] is None:
        raise TinyTFInputError(f"forest_figure: {where}: the row's 95% comparison is missing")
    return str(row[0]), row[1], row[2] if len(row) == 3 else None


def _segments(rows, pick):
    """x and y of one line trace: a segment lo..hi per row (gaps between them)."""
    xs, ys = [], []
    for label, p in rows:
        q = pick(p)
        if q is None:
            continue
        xs += [q.lo, q.hi, None]
        ys += [label, label, None]
    return xs, ys


def _excludes_zero(p) -> bool:
    return p.lo > 0 or p.hi < 0


def _check_panels(panels, post_hoc) -> tuple:
    """forest_figure's inputs, checked: ([(title, rows)], {(panel title, label)} of the post-hoc rows)."""
    panels = [tuple(p) for p in panels] if isinstance(panels, (list, tuple)) else None
    if not panels or any(len(p) != 2 or not isinstance(p[1], (list, tuple)) or not p[1] for p in panels):
        raise TinyTFInputError("forest_figure: panels: expected a non-empty sequence of (title, rows) with rows a "
                               "non-empty list of (label, Paired[, Paired corrected])")
    later = {tuple(h) for h in post_hoc}
    checked = [(str(t), [_check_row(r, f"panel {t!r}, row {i}") for i, r in enumerate(rows)]) for t, rows in panels]
    for t, rows in checked:
        labels = [r[0] for r in rows]
        if len(set(labels)) != len(labels):
            raise TinyTFInputError(f"forest_figure: panel {t!r}: each row needs its own label, got {labels}")
    unknown = later - {(t, r[0]) for t, rows in checked for r in rows}
    if unknown:
        raise TinyTFInputError(f"forest_figure: post_hoc: no such (panel, label): {sorted(unknown)}")
    return checked, later


def forest_figure(panels, post_hoc=(), title: str | None = None,
                  x_title: str = "newer block's advantage<br>(older block's loss − newer's)",
                  names: dict | None = None) -> go.Figure:
    """One row per paired comparison: a point at its mean difference, a thick bar for its interval, a thin grey
    bar for its corrected interval when one is given, a dotted line at 0. ``panels``: a sequence of
    (panel title, rows), stacked in order with a shared x axis; each row is (label, Paired) or (label, Paired,
    Paired corrected or None), the ``Paired`` of ``tinytf.lab.block_comparison.paired_stats`` (its mean, lo, hi).
    A row whose 95% interval excludes 0 is marked (a bold label): in vermillion if its question was planned, in
    orange with an open point if it is one of ``post_hoc``, (panel title, label) pairs of questions chosen after
    seeing the same data; the other rows are blue. The marks follow the intervals, so none can be asked for.
    ``names``: the traces' names, keys "interval", "focus", "post hoc", "corrected" (the legend's) and "mean"
    (the points'; the text alternative reads it); defaults below."""
    checked, later = _check_panels(panels, post_hoc)
    names = {"interval": "95% interval", "focus": "95% interval excludes 0 (planned)",
             "post hoc": "95% interval excludes 0 (post hoc)",
             "corrected": "corrected interval (Bonferroni)", "mean": "mean", **(names or {})}

    def kind(t, label, p):
        return "interval" if not _excludes_zero(p) else "post hoc" if (t, label) in later else "focus"

    counts = [len(rows) for _, rows in checked]
    fig = make_subplots(rows=len(checked), cols=1, shared_xaxes=True, row_heights=[n + 1.2 for n in counts],
                        vertical_spacing=0.22 / len(checked), subplot_titles=[t for t, _ in checked])
    shown = set()
    for k, (t, rows) in enumerate(checked, start=1):
        kinds = {lab: kind(t, lab, p) for lab, p, _ in rows}

        def shown_label(label):
            return f"<b>{label}</b>" if kinds[label] != "interval" else label

        # the corrected bars stay out of the text alternative (which reads 16 values a trace): the table has them
        corr = [(shown_label(lab), c) for lab, _, c in rows if c is not None]
        if corr:
            xs, ys = _segments(corr, lambda c: c)
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=CORRECTED, width=2),
                                     name=names["corrected"], legendgroup="corrected",
                                     showlegend="corrected" not in shown, hoverinfo="skip"), row=k, col=1)
            shown.add("corrected")
        for key, color in (("interval", PLAIN), ("focus", FOCUS), ("post hoc", POST_HOC)):
            part = [(lab, p) for lab, p, _ in rows if kinds[lab] == key]
            if not part:
                continue
            xs, ys = _segments([(shown_label(lab), p) for lab, p in part], lambda p: p)
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=4),
                                     name=names[key], legendgroup=key, showlegend=key not in shown,
                                     hoverinfo="none"), row=k, col=1)
            fig.add_trace(go.Scatter(
                x=[p.mean for _, p in part], y=[shown_label(lab) for lab, _ in part], mode="markers",
                marker=dict(color=color, size=10, symbol="circle-open" if key == "post hoc" else "circle",
                            line=dict(width=2)), name=names["mean"],
                legendgroup=key, showlegend=False,
                text=[f"{p.a} vs {p.b}" for _, p in part], customdata=[[p.lo, p.hi] for _, p in part],
                hovertemplate=HOVER), row=k, col=1)
            shown.add(key)
        fig.update_yaxes(categoryorder="array", categoryarray=[shown_label(r[0]) for r in rows],
                         autorange="reversed", row=k, col=1)
    fig.add_vline(x=0, line=dict(color="#888888", width=1.5, dash="dot"))
    height = ROW_PX * sum(counts) + 70 * len(checked) + 190
    fig.update_layout(template="plotly_white", font=FONT, height=height,
                      title=title, margin=dict(l=10, r=20, t=90 if title else 40, b=60),
                      legend=dict(orientation="h", x=0, xanchor="left", y=-0.08, yanchor="top"),
                      hovermode="closest")
    ends = [v for _, rows in checked for _, p, c in rows for q in (p, c) if q is not None for v in (q.lo, q.hi)]
    lo, hi = min(ends + [0.0]), max(ends + [0.0])
    pad = 0.05 * (hi - lo or 1.0)
    fig.update_xaxes(zeroline=False, range=[lo - pad, hi + pad])
    fig.update_xaxes(title=x_title, row=len(checked), col=1)
    fig.update_yaxes(automargin=True)
    return fig

