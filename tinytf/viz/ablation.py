"""Figures of chapter 12: what removing a sublayer costs a trained model, and what the logit lens reads
at each depth. Both draw measured results as they are: the ablation figure reads the per-window bits that
``tinytf.lab.ablation`` measured (summarised by ``ablation.summarise``), the lens figure the dicts that
``tinytf.lab.lens.lens_agreement`` returned; nothing is recomputed here."""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..errors import TinyTFInputError
from ..lab.ablation import SUBLAYERS, summarise
from .common import FONT, OKABE_ITO, SEQUENTIAL, two_line_title

SUBLAYER_NAMES = {"attn": "attention", "ffn": "FFN"}
MODE_NAMES = {"zero": "zeroed", "mean": "mean-ablated"}


_title = two_line_title


def _bar(summary, label, name, color, pattern, show):
    s = summary[label]
    lo, hi = min(s["groups"]), max(s["groups"])
    return go.Bar(x=[name], y=[s["mean"]], marker=dict(color=color, pattern_shape=pattern), showlegend=show,
                  error_y=dict(type="data", symmetric=False, array=[hi - s["mean"]], arrayminus=[s["mean"] - lo],
                               color="#444444", thickness=1.2, width=4),
                  hovertemplate=f"{label}<br>%{{y:.2f}} bits/byte (quarters {lo:.2f} to {hi:.2f})<extra></extra>")


def ablation_figure(result: dict, groups: int = 4, baselines: dict | None = None) -> go.Figure:
    """Top: bits per byte with each sublayer kind removed from every block at once; bottom: with one sublayer
    of one block removed. Bars: zeroed and mean-ablated; whiskers: the lowest and highest of the ``groups``
    quarters of the windows. ``result``: the dict of scripts/measure_ablation.py (``result["bits"]``: label ->
    per-window bits). ``baselines``: optional {name: bits/byte} drawn as dotted and dashed lines; every reference line
    (the intact model's and the baselines') is named, with its value, in the legend."""
    if not isinstance(result, dict) or "bits" not in result or "intact" not in result["bits"]:
        raise TinyTFInputError("ablation_figure: expected the results dict of scripts/measure_ablation.py "
                               "(with result['bits']['intact'])")
    summary = summarise(result["bits"], groups)
    n_blocks = sum(1 for label in summary if label.startswith("block ") and label.endswith("attn zero"))
    # Two rows, each the full width: side by side, the left panel is too narrow on a laptop-width page.
    fig = make_subplots(rows=2, cols=1, row_heights=[0.42, 0.58], vertical_spacing=0.13,
                        subplot_titles=["every block at once", "one block at a time"])
    styles = {("attn", "zero"): (OKABE_ITO[0], ""), ("attn", "mean"): (OKABE_ITO[0], "/"),
              ("ffn", "zero"): (OKABE_ITO[1], ""), ("ffn", "mean"): (OKABE_ITO[1], "/")}
    for (sub, mode), (color, pattern) in styles.items():
        name = f"{SUBLAYER_NAMES[sub]} {MODE_NAMES[mode]}"
        bar = _bar(summary, f"{sub} {mode}", "all blocks", color, pattern, True)
        bar.update(name=name, legendgroup=name, offsetgroup=name)
        fig.add_trace(bar, row=1, col=1)
        for b in range(n_blocks):
            bar = _bar(summary, f"block {b} {sub} {mode}", f"block {b}", color, pattern, False)
            bar.update(name=name, legendgroup=name, offsetgroup=name)
            fig.add_trace(bar, row=2, col=1)
    # The reference lines are labelled in the legend, not beside the line, where a label would sit on the bars.
    intact = summary["intact"]["mean"]
    dashes = ["dot", "dash", "dashdot"]
    lines = [("intact model", intact, "solid")] + [(k, v, dashes[n % len(dashes)])
                                                   for n, (k, v) in enumerate((baselines or {}).items())]
    first, last = ("block 0", f"block {n_blocks - 1}")
    for label, value, dash in lines:
        text = f"{label} {value:.2f}"
        for row in (1, 2):
            fig.add_hline(y=value, line_dash=dash, line_color="#444444", line_width=1.5, row=row, col=1)
        # a legend entry for the line, drawn over the same line between the outer bar groups of the lower panel
        fig.add_trace(go.Scatter(x=[first, last], y=[value, value], mode="lines", name=text, legendgroup=text,
                                 line=dict(color="#444444", dash=dash, width=1.5),
                                 hovertemplate=f"{text} bits/byte<extra></extra>"), row=2, col=1)
    for row in (1, 2):
        fig.update_yaxes(title="bits per byte (held-out)", rangemode="tozero", row=row, col=1)
    title = _title("What removing a sublayer costs text-4l",
                   "bits per byte on held-out docstrings; whiskers: range over the four quarters of the windows")
    fig.update_layout(template="plotly_white", font=FONT, height=720, barmode="group", title=title,
                      margin=dict(l=60, r=20, t=110, b=40), legend=dict(orientation="h", y=-0.08))
    return fig


def lens_figure(readings: dict, baselines: dict | None = None) -> go.Figure:
    """The logit lens by depth, one line per passage group. ``readings``: {group label: the dict of
    ``lens_agreement`` ({'agree': [depth], 'bits': [depth]})}. Left: how often the lens's top guess equals the
    model's final one; right: the lens's bits per byte on the true next byte. ``baselines`` (optional,
    {name: bits per byte}, e.g. unigram and bigram) are drawn as grey reference lines on the right."""
    if not isinstance(readings, dict) or not readings or not all(
            isinstance(r, dict) and {"agree", "bits"} <= set(r) for r in readings.values()):
        raise TinyTFInputError("lens_figure: expected {label: lens_agreement(...) result}")
    depths = len(next(iter(readings.values()))["agree"])
    x = ["embedding"] + [f"after block {d}" for d in range(depths - 1)]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=["top guess = the final top guess", "bits per byte of the lens"])
    dashes = ["solid", "dash", "dot", "dashdot"]
    for n, (label, r) in enumerate(readings.items()):
        style = dict(color=OKABE_ITO[n % len(OKABE_ITO)], width=2.2, dash=dashes[n % len(dashes)])
        fig.add_trace(go.Scatter(x=x, y=r["agree"], mode="lines+markers", name=label, legendgroup=label, line=style,
                                 hovertemplate=f"{label}<br>%{{x}}: %{{y:.2f}}<extra></extra>"), row=1, col=1)
        fig.add_trace(go.Scatter(x=x, y=r["bits"], mode="lines+markers", name=label, legendgroup=label, line=style,
                                 showlegend=False, hovertemplate=f"{label}<br>%{{x}}: %{{y:.2f}} bits<extra></extra>"),
                      row=1, col=2)
    fig.update_yaxes(title="fraction of positions", range=[0, 1.05], row=1, col=1)
    fig.update_yaxes(title="bits per byte", rangemode="tozero", row=1, col=2)
    fig.add_hline(y=8.0, line_dash="dot", line_color="#444444", row=1, col=2, annotation_text="uniform, 8 bits",
                  annotation_position="bottom left")
    for n, (name, value) in enumerate((baselines or {}).items()):
        fig.add_hline(y=float(value), line_dash=["dash", "dashdot"][n % 2], line_color="#888888", row=1, col=2,
                      annotation_text=f"{name}, {float(value):.2f}", annotation_position="top right")
    title = _title("The logit lens on text-4l, depth by depth",
                   "look for: agreement rises and cost falls after every block, the cost most after block 0 "
                   "(after the last block the lens is the model's own output)")
    fig.update_layout(template="plotly_white", font=FONT, height=420, title=title,
                      margin=dict(l=60, r=20, t=110, b=40), legend=dict(orientation="h", y=-0.18))
    return fig


def reach_figure(distances, top_changes, top_byte_change, top_changes_se=None) -> go.Figure:
    """How far back a changed byte still moves the last position's prediction, against the distance (log x).
    ``distances``: the distances measured (ints >= 1); ``top_changes``: for each, the share of windows whose top
    guess changed (0..1); ``top_byte_change``: for each, the median change of the original top byte's
    log2-probability, in bits; ``top_changes_se`` (optional): each share's standard error, drawn as ± error bars.
    Drawn as given, two panels sharing the x-axis."""
    rows = [list(distances), list(top_changes), list(top_byte_change)]
    if not rows[0] or len({len(r) for r in rows}) != 1:
        raise TinyTFInputError("reach_figure: distances, top_changes and top_byte_change must be non-empty lists "
                               f"of the same length, got lengths {[len(r) for r in rows]}")
    if any(not isinstance(d, int) or d < 1 for d in rows[0]):
        raise TinyTFInputError(f"reach_figure: distances must be ints >= 1 (log axis), got {rows[0]}")
    if any(not 0 <= v <= 1 for v in rows[1]):
        raise TinyTFInputError(f"reach_figure: top_changes are shares between 0 and 1, got {rows[1]}")
    if top_changes_se is not None and (len(top_changes_se) != len(rows[0]) or any(v < 0 for v in top_changes_se)):
        raise TinyTFInputError("reach_figure: top_changes_se needs one standard error >= 0 per distance, got "
                               f"{list(top_changes_se)}")
    d = rows[0]
    bars = None if top_changes_se is None else dict(type="data", array=list(top_changes_se), color="#444444",
                                                     thickness=1, width=3)
    ticks = []  # label only distances at least 1.5 times apart, so that neighbours such as 127 and 128 do not overlap
    for v in sorted(d, reverse=True):
        if not ticks or v * 1.5 <= ticks[-1]:
            ticks.append(v)
    ticks.reverse()
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1,
                        subplot_titles=["top guess changes (share of windows)", "top byte: median change (bits)"])
    fig.add_trace(go.Scatter(x=d, y=rows[1], mode="lines+markers", name="top guess changes",
                             line=dict(color=OKABE_ITO[0], width=2.2), error_y=bars,
                             hovertemplate="distance %{x}: top guess changes in %{y:.0%} of windows<extra></extra>"),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=d, y=rows[2], mode="lines+markers", name="top byte: median change",
                             line=dict(color=OKABE_ITO[1], width=2.2, dash="dash"),
                             hovertemplate="distance %{x}: median change %{y:.2f} bits<extra></extra>"), row=2, col=1)
    fig.update_xaxes(type="log", tickvals=ticks, ticktext=[str(v) for v in ticks], row=1, col=1)
    fig.update_xaxes(type="log", tickvals=ticks, ticktext=[str(v) for v in ticks], title="distance before the last position (bytes, log scale)",
                     row=2, col=1)
    fig.update_yaxes(range=[0, 1.05], tickformat=".0%", row=1, col=1)
    fig.update_yaxes(rangemode="tozero", title="bits", row=2, col=1)
    title = _title("How far back a changed byte reaches the last prediction",
                   "look for: both measures near zero from about 16 bytes back")
    fig.update_layout(template="plotly_white", font=FONT, height=520, title=title, showlegend=False,
                      margin=dict(l=60, r=20, t=110, b=50))
    return fig


def induction_map_figure(weights, period: int, label: str = "", height: int = 520, marked_keys=(),
                         marked_label: str = "") -> go.Figure:
    """One head's attention on a sequence whose second part repeats its first ``period`` positions: the
    queries of the second copy (rows, positions ``period``..T-1) against every key (columns), as given, with
    the diagonal key = query - period + 1 drawn over it: the key right after the earlier occurrence of the
    query's byte, where an induction head puts its weight. ``weights``: [T, T] (rows sum to 1); ``height``: the
    figure's height in pixels (a short sequence reads well smaller); ``marked_keys`` (optional): key positions
    drawn as thin vertical lines, one legend entry ``marked_label`` (for example the passage's line breaks)."""
    w = weights.detach().cpu().double() if hasattr(weights, "detach") else None
    if w is None or w.dim() != 2 or w.shape[0] != w.shape[1]:
        raise TinyTFInputError("induction_map_figure: weights must be one head's [T, T] attention weights, got "
                               f"{getattr(weights, 'shape', type(weights).__name__)}")
    T = w.shape[0]
    if not isinstance(period, int) or not 1 <= period < T:
        raise TinyTFInputError(f"induction_map_figure: period must be an int in 1..{T - 1}, got {period!r}")
    marked = list(marked_keys)
    if any(not isinstance(k, int) or not 0 <= k < T for k in marked):
        raise TinyTFInputError(f"induction_map_figure: marked_keys must be key positions in 0..{T - 1}, got {marked}")
    queries = list(range(period, T))
    z = w[period:].float().numpy()  # [T - period, T]: the second copy's queries, every key (a typed array)
    top = max(float(w[period:].max()), 1e-6)  # the colour scale ends at the largest weight shown
    fig = go.Figure(go.Heatmap(z=z, x=list(range(T)), y=queries, coloraxis="coloraxis",
                               hovertemplate="query %{y}, key %{x}: weight %{z:.2f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[q - period + 1 for q in queries], y=queries, mode="lines",
                             line=dict(color=OKABE_ITO[5], width=2, dash="dot"),
                             name=f"key i − {period - 1}: where an induction head looks",
                             hovertemplate=f"query %{{y}}: key %{{x}} (i − {period - 1})<extra></extra>"))
    if marked:  # one trace of vertical segments, broken by None, so one legend entry
        xs, ys = [], []
        for k in marked:
            xs += [k, k, None]
            ys += [period - 0.5, T - 0.5, None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=OKABE_ITO[2], width=1, dash="dash"),
                                 name=marked_label or "marked keys",
                                 hovertemplate=f"key %{{x}}: {marked_label or 'marked'}<extra></extra>"))
    fig.update_xaxes(title="key position", range=[-0.5, T - 0.5])
    fig.update_yaxes(title="query position (second copy)", range=[T - 0.5, period - 0.5])  # reversed: the first query on top; no tick below the last row
    title = _title(f"Attention of {label} on a repeated passage" if label else "Attention on a repeated passage",
                   f"look for: an induction head would make the dotted diagonal (key i − {period - 1}) bright")
    fig.update_layout(template="plotly_white", font=FONT, height=height, title=title,
                      coloraxis=dict(colorscale=SEQUENTIAL, cmin=0, cmax=top, colorbar=dict(title="weight", len=0.7)),
                      margin=dict(l=60, r=20, t=110, b=50), legend=dict(orientation="h", y=-0.15))
    return fig


def head_scores_figure(tables: list, patterns: dict | None = None, threshold: float = 0.5) -> go.Figure:
    """Every head's attention scores over several passages: one bar per head and pattern at the mean score,
    a whisker from the lowest to the highest passage, and a dotted line at ``threshold``. ``tables``: one
    ``tinytf.heads.score_table`` result per passage (the same heads in the same order; each row a dict with
    'layer', 'head' and the pattern scores); ``patterns``: {score key: legend name}, by default the previous
    byte, the word start and the first byte. The scores are drawn as given."""
    patterns = patterns or {"previous": "previous byte", "word_start": "word start", "first": "first byte"}
    if not isinstance(tables, (list, tuple)) or not tables or len({len(t) for t in tables}) != 1 or not tables[0]:
        raise TinyTFInputError("head_scores_figure: expected a non-empty list of score tables of the same length")
    rows = tables[0]
    if any([(r["layer"], r["head"]) for r in t] != [(r["layer"], r["head"]) for r in rows] for t in tables):
        raise TinyTFInputError("head_scores_figure: every table must list the same heads in the same order")
    if any(p not in r for r in rows for p in patterns):
        raise TinyTFInputError(f"head_scores_figure: every row needs the scores {sorted(patterns)}")
    x = [f"{r['layer']}.{r['head']}" for r in rows]
    fig = go.Figure()
    for n, (key, name) in enumerate(patterns.items()):
        values = [[float(t[i][key]) for t in tables] for i in range(len(rows))]
        mean = [sum(v) / len(v) for v in values]
        fig.add_trace(go.Bar(
            x=x, y=mean, name=name, marker=dict(color=OKABE_ITO[n % len(OKABE_ITO)]),
            error_y=dict(type="data", symmetric=False, array=[max(v) - m for v, m in zip(values, mean)],
                         arrayminus=[m - min(v) for v, m in zip(values, mean)], color="#444444", thickness=1, width=2),
            customdata=[[min(v), max(v)] for v in values],
            hovertemplate=(f"block.head %{{x}}, {name}: mean %{{y:.2f}} "
                           "(passages %{customdata[0]:.2f} to %{customdata[1]:.2f})<extra></extra>")))
    fig.add_hline(y=threshold, line_dash="dot", line_color="#444444", annotation_text=f"{threshold:g}",
                  annotation_position="top left")
    # every head labelled, even on a phone: one tick per head, turned upright, in a smaller font
    fig.update_xaxes(title="head (block.head)", type="category", tickmode="linear", dtick=1, tickangle=-90,
                     tickfont=dict(size=10))
    fig.update_yaxes(title="mean share of the head's weight", range=[0, 1], automargin=True)
    title = _title(f"Where each head of text-4l puts its weight, over {len(tables)} held-out passages",
                   f"look for: only a few bars pass {threshold:g}, all of them previous-byte; "
                   "the whiskers span the lowest to the highest passage")
    fig.update_layout(template="plotly_white", font=FONT, height=440, title=title, barmode="group", bargap=0.25,
                      margin=dict(l=70, r=20, t=110, b=50), legend=dict(orientation="h", y=-0.28))
    return fig


__all__ = ["ablation_figure", "lens_figure", "reach_figure", "induction_map_figure", "head_scores_figure",
           "SUBLAYERS"]
