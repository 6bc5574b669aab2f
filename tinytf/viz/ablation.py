"""Figures of chapter 12: what removing a sublayer costs a trained model, and what the logit lens reads
at each depth. Both draw measured results as they are: the ablation figure reads the per-window bits that
``tinytf.lab.ablation`` measured (summarised by ``ablation.summarise``), the lens figure the dicts that
``tinytf.lab.lens.lens_agreement`` returned; nothing is recomputed here."""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..errors import TinyTFInputError
from ..lab.ablation import SUBLAYERS, summarise
from .common import FONT, OKABE_ITO

SUBLAYER_NAMES = {"attn": "attention", "ffn": "FFN"}
MODE_NAMES = {"zero": "zeroed", "mean": "mean-ablated"}


def _title(main: str, detail: str) -> str:
    return f"<b>{main}</b><br><span style='font-size:12px'>{detail}</span>"


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
                   "the final norm and LM head applied to the stream after each block; one line per group of passages")
    fig.update_layout(template="plotly_white", font=FONT, height=420, title=title,
                      margin=dict(l=60, r=20, t=110, b=40), legend=dict(orientation="h", y=-0.18))
    return fig


__all__ = ["ablation_figure", "lens_figure", "SUBLAYERS"]
