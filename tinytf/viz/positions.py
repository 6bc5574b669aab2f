"""Figures for position information (chapter 1): sinusoidal position vectors and RoPE.

Every number drawn here comes from tinytf.positions (``sinusoidal_table``, ``RoPE.rotate``);
this module only arranges them into plotly figures.
"""
from __future__ import annotations

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..positions import RoPE, sinusoidal_table
from .common import DIVERGING, FONT, OKABE_ITO, SEQUENTIAL, two_line_title

_LAYOUT = dict(template="plotly_white", font=FONT)


_title = two_line_title


def sinusoidal_figure(n_positions: int = 64, d_model: int = 128, dims=(0, 8, 24, 48)) -> go.Figure:
    """Top: heatmap of the sinusoidal table P[t, j] (position t down, dimension j across).
    Bottom: a few columns of the same table as curves over position."""
    table = sinusoidal_table(n_positions, d_model)  # [T, C]
    fig = make_subplots(rows=2, cols=1, row_heights=[0.62, 0.38], vertical_spacing=0.2, subplot_titles=[
        f"the table P: one row per position ({n_positions} positions x {d_model} dimensions)",
        "a few columns of P over position: each dimension is a wave of its own wavelength"])
    fig.add_trace(go.Heatmap(
        z=table.tolist(), x=list(range(d_model)), y=list(range(n_positions)),
        colorscale=DIVERGING, zmin=-1, zmax=1, colorbar=dict(title="value", len=0.6, y=0.72),
        hovertemplate="position %{y}<br>dimension %{x}<br>value %{z:.3f}<extra></extra>"), row=1, col=1)
    for n, j in enumerate(dims):
        fig.add_trace(go.Scatter(
            x=list(range(n_positions)), y=table[:, j].tolist(), mode="lines+markers", marker=dict(size=4),
            line=dict(color=OKABE_ITO[n % len(OKABE_ITO)]), name=f"dimension {j}",
            hovertemplate=f"dimension {j}<br>position %{{x}}<br>value %{{y:.3f}}<extra></extra>"), row=2, col=1)
    title = _title("Sinusoidal positions: one fixed vector per position",
                   "added to the token embeddings before the first block")
    fig.update_layout(**_LAYOUT, margin=dict(l=60, r=20, t=110, b=50), height=700, title=title,
                      legend=dict(orientation="h", y=-0.12))
    fig.update_xaxes(title="dimension j (even j: sin, odd j: cos; left: fast waves, right: slow)", row=1, col=1)
    fig.update_yaxes(title="position t", autorange="reversed", row=1, col=1)
    fig.update_xaxes(title="position t", row=2, col=1)
    fig.update_yaxes(title="P[t, j]", range=[-1.1, 1.1], row=2, col=1)
    return fig


def rope_pair_paths(d_head: int = 32, n_positions: int = 16, pairs=(0, 4, 15), theta: float = 10000.0):
    """Where RoPE moves pair i of a vector whose every pair starts at (1, 0), for positions 0..n-1.

    Returns {pair: tensor [n_positions, 2]}: the coordinates (x_i, x_{i + D/2}) after ``RoPE.rotate``."""
    half = d_head // 2
    x = torch.zeros(1, 1, n_positions, d_head)
    x[..., :half] = 1.0  # every pair (x_i, x_{i+D/2}) = (1, 0) before rotation
    rotated = RoPE(d_head, theta).rotate(x)[0, 0]  # [T, D]
    return {i: torch.stack((rotated[:, i], rotated[:, i + half]), dim=-1) for i in pairs}


def rope_rotation_figure(d_head: int = 32, n_positions: int = 16, pairs=(0, 4, 15),
                         theta: float = 10000.0) -> go.Figure:
    """One panel per pair: the same 2-D vector rotated by RoPE at positions 0..n-1."""
    paths = rope_pair_paths(d_head, n_positions, pairs, theta)
    fig = make_subplots(rows=1, cols=len(pairs), horizontal_spacing=0.08, subplot_titles=[
        f"pair {i}: (x[{i}], x[{i + d_head // 2}])<br>{theta ** (-2 * i / d_head):.3g} rad per position"
        for i in pairs])
    for col, (i, xy) in enumerate(paths.items(), start=1):
        fig.add_trace(go.Scatter(
            x=xy[:, 0].tolist(), y=xy[:, 1].tolist(), mode="markers+text+lines",
            text=_spaced_labels(xy, (0, 1, 2, n_positions - 1)),
            textposition="top right", line=dict(color="#bbbbbb", width=1),
            marker=dict(color=list(range(n_positions)), colorscale=SEQUENTIAL, size=9,
                        showscale=col == len(pairs), colorbar=dict(title="position")),
            customdata=list(range(n_positions)), showlegend=False,
            hovertemplate="position %{customdata}<br>(%{x:.3f}, %{y:.3f})<extra></extra>"), row=1, col=col)
        fig.update_xaxes(range=[-1.3, 1.3], scaleanchor=f"y{col if col > 1 else ''}", row=1, col=col)
        fig.update_yaxes(range=[-1.3, 1.3], row=1, col=col)
    title = _title("RoPE: one pair of a query or key, rotated to each position",
                   "the angle grows with the position: fast pairs turn quickly, slow pairs barely move")
    fig.update_layout(**_LAYOUT, margin=dict(l=40, r=20, t=140, b=40), height=420, title=title)
    return fig


def _spaced_labels(xy, wanted, min_dist: float = 0.3) -> list:
    """Position labels for the points in ``wanted``, leaving out a label whose point lies within
    ``min_dist`` of one already labelled (a slow pair's positions 0, 1, 2 sit on top of each other)."""
    labels, placed = [""] * len(xy), []
    for t in wanted:
        p = (float(xy[t, 0]), float(xy[t, 1]))
        if all((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2 >= min_dist ** 2 for q in placed):
            labels[t] = str(t)
            placed.append(p)
    return labels


def offset_figure(panels: dict, head: int = 0) -> go.Figure:
    """Side-by-side heatmaps of attention scores [T, S] (query position m down, key position n across),
    one per entry of ``panels`` ({title: scores}). Pass scores straight from a trace
    (``trace["blocks.0.attn.scores"][0, head]``) of a sequence that repeats one token, so that any
    pattern is due to position alone: with RoPE every diagonal (fixed m - n) is constant."""
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=list(panels), horizontal_spacing=0.12)
    for col, (title, scores) in enumerate(panels.items(), start=1):
        s = scores.detach().to(torch.float64)
        T, S = s.shape
        fig.add_trace(go.Heatmap(
            z=s.tolist(), x=list(range(S)), y=list(range(T)), coloraxis="coloraxis",
            hovertemplate="query position m=%{y}<br>key position n=%{x}<br>score %{z:.4f}<extra></extra>"),
            row=1, col=col)
        fig.update_xaxes(title="key position n", row=1, col=col)
        fig.update_yaxes(title="query position m", autorange="reversed", scaleanchor=f"x{col if col > 1 else ''}",
                         row=1, col=col)
    top = max(float(p.abs().max()) for p in panels.values()) or 1.0
    title = _title(f"Head {head} scores for one token repeated", "with RoPE every diagonal (fixed m − n) is constant")
    fig.update_layout(**_LAYOUT, margin=dict(l=60, r=20, t=110, b=50), height=480, title=title,
                      coloraxis=dict(colorscale=DIVERGING, cmin=-top, cmax=top, colorbar=dict(title="score")))
    return fig


def rope_turns_figure(angles, offset: int, name: str = "text-4l", height: int = 320) -> go.Figure:
    """One bar per RoPE pair, its height the turns it made at ``offset`` (log y), with a dashed line at one
    full turn. ``angles``: ``tinytf.lab.context_length.rope_angle_table(cfg, [offset])``. The pairs below the
    line never completed a turn over the offsets 0 to ``offset`` seen in training.

    The line's label is placed with ``add_annotation``: on a log axis plotly puts an ``add_hline`` label at
    10^y instead of y, so it would float near 10 turns instead of on the line."""
    pairs = [i for i, _, _ in angles]
    turns = [t[0] for _, _, t in angles]
    slow = [i for i, t in zip(pairs, turns) if t < 1]
    fig = go.Figure(go.Bar(x=pairs, y=turns, marker=dict(color=OKABE_ITO[0])))
    fig.add_hline(y=1, line_dash="dash", line_color="#444444")  # grey: the page theme recolours it in dark mode
    # a log axis takes annotation y in log10 units: 0 is one turn; the label sits just above the line
    fig.add_annotation(x=pairs[-1], y=0, xref="x", yref="y", text="one full turn", showarrow=False,
                       xanchor="right", yanchor="bottom")
    look = f"look for: pairs {slow[0]}-{slow[-1]} stay below one turn" if slow else "every pair turned"
    title = _title(f"{name}: how far each RoPE pair turned over the offsets seen in training (0 to {offset})",
                   look)
    fig.update_layout(**_LAYOUT, title=title, height=height, xaxis_title="pair (0 = fastest)",
                      yaxis_title=f"turns at offset {offset}", yaxis_type="log")
    return fig
