"""Loss curves of repeated training runs: the mean over seeds as a line and the spread
(min to max over seeds) as a shaded band, one colour per variant. Every number drawn comes
from the runs' recorded losses (e.g. ``tinytf.block_comparison.load_results()``); this module
only arranges them. And the learning-rate schedule of a run (``lr_schedule_figure``), read from
``tinytf.train.lr_at``, the function the training loops call at every step.
"""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from ..lab.block_comparison import curve_band
from ..lab.train import lr_at  # the schedule the training loops use; drawn, not re-derived
from ..errors import TinyTFInputError
from .common import FONT, OKABE_ITO


def _rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def loss_curves(runs_by_variant: dict, window: int = 10, show_seeds: bool = True, log_y: bool = False,
                title: str = "Training loss: mean over seeds (line) and min-max spread (band)") -> go.Figure:
    """``runs_by_variant``: {name: [{"seed": s, "losses": [...]}, ...]} (the "runs" of a comparison).

    Each curve is first smoothed by a trailing moving average of ``window`` steps; the band spans
    the lowest and highest smoothed seed at every step. Clicking a variant's band or mean in the legend
    hides both; its seeds are drawn as thin dotted lines, hidden until their one legend entry
    ("<name>: each seed") is clicked (``show_seeds=False`` leaves them out)."""
    if not runs_by_variant:
        raise TinyTFInputError("loss_curves: no runs given")
    fig = go.Figure()
    for i, (name, runs) in enumerate(runs_by_variant.items()):
        if not runs:
            raise TinyTFInputError(f"loss_curves: variant {name!r} has no runs")
        colour = OKABE_ITO[i % len(OKABE_ITO)]
        band = curve_band(runs, window)
        steps = band["step"]
        fig.add_trace(go.Scatter(x=steps + steps[::-1], y=band["max"] + band["min"][::-1], fill="toself",
                                 fillcolor=_rgba(colour, 0.22), line=dict(width=0), hoverinfo="skip",
                                 name=f"{name}: min-max over {len(runs)} seeds", legendgroup=name,
                                 showlegend=False))  # the title names the band; the mean's entry toggles both
        fig.add_trace(go.Scatter(x=steps, y=band["mean"], mode="lines", line=dict(color=colour, width=2.5),
                                 name=f"{name}: mean", legendgroup=name,
                                 hovertemplate=f"{name}<br>step %{{x}}<br>mean loss %{{y:.3f}}<extra></extra>"))
        if show_seeds:  # one legend entry per variant switches all its seeds on or off
            for j, (seed, curve) in enumerate(zip(band["seeds"], band["curves"])):
                fig.add_trace(go.Scatter(x=steps, y=curve, mode="lines", visible="legendonly",
                                         line=dict(color=colour, width=1, dash="dot"),
                                         name=f"{name}: each seed", legendgroup=f"{name} seeds", showlegend=j == 0,
                                         hovertemplate=f"{name}, seed {seed}<br>step %{{x}}<br>loss %{{y:.3f}}"
                                                       "<extra></extra>"))
    fig.update_layout(template="plotly_white", font=FONT, height=520, title=title,
                      margin=dict(l=60, r=20, t=60, b=50),
                      legend=dict(orientation="h", yanchor="top", y=-0.18, xanchor="left", x=0,
                                  groupclick="togglegroup"))
    fig.update_xaxes(title="training step")
    fig.update_yaxes(title=f"cross-entropy (moving average of {window} steps)", type="log" if log_y else "linear")
    return fig


def lr_schedule_figure(steps: int, lr: float, warmup_steps: int, schedule: str = "cosine",
                       title: str = "Learning rate at each training step") -> go.Figure:
    """The learning rate of each of ``steps`` steps, read from ``tinytf.train.lr_at`` (the function the
    training loops call at every step): a linear warm-up over ``warmup_steps``, then ``schedule``
    ('cosine': decay to 10% of ``lr``; 'constant'). A dotted line marks 10% of the peak (cosine only),
    and a note the last warm-up step (0-based; the first at the peak)."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise TinyTFInputError(f"lr_schedule_figure: steps: expected a positive number of steps, got {steps!r}")
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
        raise TinyTFInputError(f"lr_schedule_figure: lr: expected a positive learning rate, got {lr!r}")
    if schedule not in ("cosine", "constant"):
        raise TinyTFInputError(f"lr_schedule_figure: schedule: expected 'cosine' or 'constant', got {schedule!r}")
    x = np.arange(steps, dtype=np.float64)  # numpy: stored as a compact typed array
    rates = np.array([lr_at(s, steps, lr, warmup_steps, schedule) for s in range(steps)])
    fig = go.Figure(go.Scatter(x=x, y=rates, mode="lines", line=dict(color=OKABE_ITO[0], width=2.5),
                               name="learning rate",
                               hovertemplate="step %{x}<br>learning rate %{y:.2e}<extra></extra>"))
    if schedule == "cosine":
        fig.add_hline(y=0.1 * lr, line_dash="dot", line_color="grey", annotation_text="10% of the peak",
                      annotation_position="bottom right")
    if warmup_steps:  # steps are 0-based: warm-up step k has rate lr * (k + 1) / warmup_steps
        last = warmup_steps - 1  # the last warm-up step, the first at the peak
        fig.add_annotation(x=last, y=lr, text=f"warm-up ends: step {last}", showarrow=False,
                           xref="x", yref="y", xanchor="left", yanchor="bottom")  # data coordinates
    fig.update_layout(template="plotly_white", font=FONT, height=320, title=title, showlegend=False,
                      margin=dict(l=70, r=20, t=60, b=50))
    fig.update_xaxes(title="training step")
    # ticks above 0 only: a "0" on each axis would meet in the corner
    step = 10 ** math.floor(math.log10(lr))
    step = step / 2 if 2 * step > 1.2 * lr else step  # at least two ticks
    ticks = [k * step for k in range(1, int(1.2 * lr / step + 1e-9) + 1)]
    fig.update_yaxes(title="learning rate", range=[0, 1.2 * lr], tickvals=ticks, tickformat=".4~f")
    return fig
