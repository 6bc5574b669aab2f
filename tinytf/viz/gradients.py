"""Figures for chapters 5 and 6: activation, gradient and update sizes block by block, read from
``tinytf.experiments.LayerProfile`` measurements (real forward and backward passes) and
``tinytf.lab.residual_updates.update_sizes`` rows (a trained model's traced updates); this module only
arranges the numbers."""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..errors import TinyTFInputError
from .common import FONT, OKABE_ITO

QUANTITIES = {  # attribute of LayerProfile: (axis title, hover format, log axis?)
    "grad_norm": ("gradient norm of the block's weights", ".3g", True),
    "activation_rms": ("RMS of the stream leaving the block", ".3g", False),
    "token_similarity": ("cosine similarity between positions", ".3f", False),
}
# the panel titles of a figure with several panels, wrapped to fit a phone's width
PANEL_TITLES = {
    "grad_norm": "gradient norm of<br>the block's weights",
    "activation_rms": "RMS of the stream<br>leaving the block",
    "token_similarity": "cosine similarity<br>between positions",
}
DASHES = ["solid", "dash", "dot", "dashdot"]
SYMBOLS = ["circle", "diamond", "square", "triangle-up"]
KEY_GREY = "#888888"  # the dash key's entries: a line style, not a colour (reads on light and dark pages)


def _attribute(profile, key: str):
    if key == "init_std":
        return profile.init_std
    return getattr(profile.config, key)


def _describe(key: str, value) -> str:
    if key == "residual":
        return "residual" if value else "no residual"
    if key == "norm_position":
        return f"{value}-norm"
    if key == "n_layers":
        return f"{value} blocks"
    if key == "init_std":
        return f"init std {value:.3g}"
    return f"{key}={value}"


def layer_profile_figure(profiles, quantities=("grad_norm",), color_key: str = "n_layers",
                         dash_key: str = "residual", title: str = "", log_y=None, height: int = 460,
                         legend: str = "lines", key_names: dict | None = None) -> go.Figure:
    """One panel per quantity in ``quantities`` (see ``QUANTITIES``), x = block number (0 = first, as in the trace
    names ``blocks.0``, ...),
    one line per profile: colour from ``color_key`` and dash from ``dash_key`` (a TinyConfig field
    or "init_std"). Gradient norms use a log axis, because they span orders of magnitude.
    ``log_y``: None (the default of each quantity), True or False for every panel.
    ``legend``: "lines" names every line (its profile's label); "keys" gives a compact legend, short enough
    for a phone: one entry per colour (the ``color_key`` value) and one grey entry per dash (the ``dash_key``
    value), named by ``key_names`` ({value: name}) where given."""
    if not profiles:
        raise TinyTFInputError("layer_profile_figure: no profiles given")
    unknown = [q for q in quantities if q not in QUANTITIES]
    if unknown:
        raise TinyTFInputError(f"unknown quantity {unknown}; choose from {list(QUANTITIES)}")
    if legend not in ("lines", "keys"):
        raise TinyTFInputError(f"layer_profile_figure: legend must be 'lines' or 'keys', not {legend!r}")
    colours, dashes = {}, {}
    for p in profiles:
        colours.setdefault(_attribute(p, color_key), OKABE_ITO[len(colours) % len(OKABE_ITO)])
        dashes.setdefault(_attribute(p, dash_key), len(dashes) % len(DASHES))
    fig = make_subplots(rows=1, cols=len(quantities), horizontal_spacing=0.12,
                        subplot_titles=[PANEL_TITLES[q] for q in quantities] if len(quantities) > 1 else None)
    for col, q in enumerate(quantities, start=1):
        axis_title, fmt, log_default = QUANTITIES[q]
        for p in profiles:
            c, d = _attribute(p, color_key), _attribute(p, dash_key)
            values = list(getattr(p, q))
            fig.add_trace(go.Scatter(
                x=list(range(len(values))), y=values, mode="lines+markers", name=p.label,
                legendgroup=p.label, showlegend=col == 1 and legend == "lines",
                line=dict(color=colours[c], dash=DASHES[dashes[d]], width=2),
                marker=dict(color=colours[c], symbol=SYMBOLS[dashes[d]], size=5),
                hovertemplate=f"{p.label}<br>block %{{x}}: %{{y:{fmt}}}<extra></extra>"), row=1, col=col)
        use_log = log_default if log_y is None else log_y
        fig.update_xaxes(title="block (0 = nearest the input)", row=1, col=col)
        fig.update_yaxes(title=axis_title if len(quantities) == 1 else None, type="log" if use_log else "linear",
                         exponentformat="power" if use_log else "none", row=1, col=col)
    if legend == "keys":  # entries without data: the colour key, then the dash key (grey, its marker)
        # each entry a legend group of its own: plotly stacks ungrouped entries of a grouped legend in one column
        names = key_names or {}
        for c, colour in colours.items():
            name = names.get(c, _describe(color_key, c))
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines+markers", name=name, legendgroup=f"key {name}",
                                     line=dict(color=colour, width=2), marker=dict(color=colour, size=5),
                                     hoverinfo="skip"), row=1, col=1)
        for d, k in dashes.items():
            name = names.get(d, _describe(dash_key, d))
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines+markers", name=name, legendgroup=f"key {name}",
                                     line=dict(color=KEY_GREY, dash=DASHES[k], width=2),
                                     marker=dict(color=KEY_GREY, symbol=SYMBOLS[k], size=5),
                                     hoverinfo="skip"), row=1, col=1)
    # room for each extra line of a title wrapped with <br>, and for the two-line panel titles
    top = 80 + 22 * title.count("<br>") + (18 if len(quantities) > 1 else 0)
    fig.update_layout(template="plotly_white", font=FONT, height=height, title=title,
                      margin=dict(l=70, r=20, t=top, b=50), legend=dict(font=dict(size=11)))
    if legend == "keys":  # a key entry stands for several lines: clicking it would hide only itself
        fig.update_layout(legend=dict(itemclick=False, itemdoubleclick=False))
    return fig


# the two panels of ``update_ratio_figure``: (key of a ``tinytf.lab.residual_updates.update_sizes`` row, title)
UPDATE_PANELS = (("attn_ratio", "attention update / |H|"), ("ffn_ratio", "FFN update / |U|"))
UPDATE_TICKS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 20]  # every tick labelled in full on the log scale


def update_ratio_figure(sizes: dict, looks: dict, title: str = "", height: int = 400) -> go.Figure:
    """Chapter 6's trained updates: per block, each update's mean length over that of the stream it is added
    to, attention (over H) in the left panel and FFN (over U) in the right, on one log scale with a dotted
    line at 1. ``sizes``: {name: ``update_sizes`` rows}; ``looks``: {name: (colour, marker symbol, dash)}.
    Both panels share one y range and each keeps its tick labels: on a phone the figure core stacks the
    panels, and a shared axis's hidden labels would leave the lower panel without a scale."""
    missing = [name for name in sizes if name not in looks]
    if missing:
        raise TinyTFInputError(f"update_ratio_figure: no look given for {missing}")
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, subplot_titles=[t for _, t in UPDATE_PANELS])
    for col, (key, _) in enumerate(UPDATE_PANELS, start=1):
        for name, rows in sizes.items():
            colour, symbol, dash = looks[name]
            fig.add_trace(go.Scatter(
                x=[r["block"] for r in rows], y=[r[key] for r in rows], mode="lines+markers", name=name,
                legendgroup=name, showlegend=col == 1, line=dict(color=colour, dash=dash, width=1),
                marker=dict(color=colour, symbol=symbol, size=10)), row=1, col=col)
        fig.add_hline(y=1, line_dash="dot", line_color="grey", row=1, col=col)
    # shared_yaxes hides the right panel's tick labels; show them (the two axes still share one range)
    fig.update_yaxes(type="log", tickvals=UPDATE_TICKS, ticktext=[f"{t:g}" for t in UPDATE_TICKS],
                     showticklabels=True)
    fig.update_yaxes(title_text="update length / stream length", col=1)
    fig.update_xaxes(title_text="block", dtick=1)
    fig.update_layout(title=title, template="plotly_white", height=height)
    return fig
