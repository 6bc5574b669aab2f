"""Figures for normalisation (chapter 3): what LayerNorm and RMSNorm do to one token's vector.

The outputs drawn are computed by the norm modules passed in (tinytf.LayerNorm, tinytf.RMSNorm);
this module only calls them and arranges the numbers."""
from __future__ import annotations

import math

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from .common import FONT, OKABE_ITO, two_line_title


_title = two_line_title


def norm_scatter_figure(inputs: dict, norms: dict) -> go.Figure:
    """One panel per input vector (``inputs``: {title: tensor [C]}): each feature's input value (x axis)
    against its output value (y axis) under each norm (``norms``: {name: module}). A norm is a
    per-token affine map, so each norm's points lie on a line: RMSNorm's passes through the origin
    (it only rescales), LayerNorm's crosses zero at the token's mean (it shifts, then rescales). Each line is
    extended, dotted, to input 0 when the token's values do not reach it, so the origin can be checked.
    The first norm's markers are large open rings under the others' small solid ones, so points where
    the norms agree show both."""
    fig = make_subplots(rows=1, cols=len(inputs), subplot_titles=list(inputs), horizontal_spacing=0.1)
    with torch.no_grad():
        for col, (title, x) in enumerate(inputs.items(), start=1):
            x = x.detach().flatten()
            order = torch.argsort(x)  # draw each norm's points left to right, joined by a line
            for n, (name, norm) in enumerate(norms.items()):
                y = norm(x[None, None, :])[0, 0]  # the module itself computes the output
                fig.add_trace(go.Scatter(
                    x=x[order].tolist(), y=y[order].tolist(), mode="lines+markers", name=name,
                    line=dict(color=OKABE_ITO[n % len(OKABE_ITO)], width=1),
                    legendgroup=name, showlegend=col == 1,
                    # the first norm as large open rings, the others as smaller solid markers
                    # drawn over them: where two norms give the same output both stay visible
                    marker=dict(color=OKABE_ITO[n % len(OKABE_ITO)], size=13 if n == 0 else 7,
                                line=dict(width=2 if n == 0 else 0, color=OKABE_ITO[n % len(OKABE_ITO)]),
                                symbol=["circle-open", "diamond", "square", "triangle-up"][n % 4]),
                    customdata=order.tolist(),
                    hovertemplate=(f"{name}<br>feature %{{customdata}}<br>"
                                   "in %{x:.3f} → out %{y:.3f}<extra></extra>")),
                    row=1, col=col)
            for n, (name, norm) in enumerate(norms.items()):  # each line extended, dotted, to input 0
                lo, hi = float(x.min()), float(x.max())
                if lo <= 0 <= hi:
                    continue
                y = norm(x[None, None, :])[0, 0]
                # the line through the two end points, drawn from the end nearest 0 to input 0
                slope = float((y[order[-1]] - y[order[0]]) / (x[order[-1]] - x[order[0]]))
                near = lo if lo > 0 else hi
                y_near = float(y[order[0]] if lo > 0 else y[order[-1]])
                fig.add_trace(go.Scatter(
                    x=[0.0, near], y=[y_near - slope * near, y_near], mode="lines", showlegend=False,
                    line=dict(color=OKABE_ITO[n % len(OKABE_ITO)], width=1, dash="dot"), hoverinfo="skip"),
                    row=1, col=col)
            mean = round(float(x.mean()), 2) + 0.0  # + 0.0: no "-0.00" label
            fig.add_vline(x=mean, line=dict(color="#777777", dash="dot", width=1), row=1, col=col,
                          annotation_text=f"token mean {mean:.2f}", annotation_position="top left",
                          annotation_font_size=11)
            fig.update_xaxes(title="input feature value", zeroline=True, zerolinecolor="#444444", row=1, col=col)
            fig.update_yaxes(title="output feature value" if col == 1 else None, zeroline=True,
                             zerolinecolor="#444444", row=1, col=col)
    title = _title("One token, every feature: input value → output value",
                   "RMSNorm only rescales; LayerNorm also removes the mean")
    fig.update_layout(template="plotly_white", font=FONT, height=430, margin=dict(l=60, r=20, t=110, b=50),
                      legend=dict(orientation="h", y=-0.2), title=title)
    return fig


NORM_NAMES = {"none": "no norm", "layer": "LayerNorm", "rms": "RMSNorm"}


def depth_rms_figure(profiles, title: str = "", height: int = 460, same: float = 1.1) -> go.Figure:
    """Stream RMS after each block (the median over seeds of ``DepthProfile.activation_rms``) against the
    block number, on a log y axis, one line per profile (``tinytf.lab.norm_experiments.depth_profile``):
    colour and marker from the profile's norm, solid for the largest ``init_std`` and dashed for the
    others. A block whose median is not finite (an overflow) is left out, so a line ends at the last
    finite block.

    Curves that lie on top of each other (the same finite blocks, and every value within a factor ``same``
    of the other curve's) would hide all but one: such a group of k curves takes turns, each curve showing
    its markers at every k-th block only (the first curve at blocks 0, k, 2k ..., the second at 1, k + 1 ...);
    the data and the hover text are unchanged. The subtitle says where the curves without a norm end."""
    profiles = list(profiles)
    widest = max(p.init_std for p in profiles)
    norms = list(dict.fromkeys(p.norm for p in profiles))
    values = [[v if v == v and abs(v) != float("inf") else None for v in p.median("activation_rms")]
              for p in profiles]
    lasts = [max(i for i, v in enumerate(vs) if v is not None) for vs in values]

    def close(i, j):  # two curves drawn on top of each other
        return lasts[i] == lasts[j] and all(
            max(a, b) <= same * min(a, b) for a, b in zip(values[i][:lasts[i] + 1], values[j][:lasts[j] + 1]))

    groups = []  # indices of curves that coincide, in the order given
    for i in range(len(profiles)):
        group = next((g for g in groups if close(g[0], i)), None)
        if group is None:
            groups.append([i])
        else:
            group.append(i)
    fig = go.Figure()
    for i, p in enumerate(profiles):
        n = norms.index(p.norm)
        group = next(g for g in groups if i in g)
        turn, k = group.index(i), len(group)
        std = "1/8" if abs(p.init_std - 0.125) < 1e-12 else f"{p.init_std:g}"
        name = f"{NORM_NAMES.get(p.norm, p.norm)}, init std {std}"
        fig.add_trace(go.Scatter(
            x=list(range(lasts[i] + 1)), y=values[i][:lasts[i] + 1], mode="lines+markers", name=name,
            line=dict(color=OKABE_ITO[n % len(OKABE_ITO)], width=2,
                      dash="solid" if p.init_std == widest else "dash"),
            marker=dict(color=OKABE_ITO[n % len(OKABE_ITO)],
                        size=[7 if b % k == turn else 0 for b in range(lasts[i] + 1)],
                        symbol=["circle", "diamond", "square", "triangle-up"][n % 4]),
            hovertemplate=f"{name}<br>after block %{{x}}: RMS %{{y:.3g}}<extra></extra>"))
    fig.update_xaxes(title="block (0 = nearest the input)")
    fig.update_yaxes(title="stream RMS after the block (median of seeds)", type="log", exponentformat="power")
    ends = [f"{fig.data[i].name}: block {lasts[i] + 1} overflows; " for i in range(len(profiles))
            if lasts[i] + 1 < len(values[i])]  # the curves that stop before the last block
    title = title or _title(f"Stream RMS after each block of a {profiles[0].n_layers}-block stack, with and without norms",
                            "".join(ends) + "curves on top of each other take turns showing their markers")
    fig.update_layout(template="plotly_white", font=FONT, height=height, title=title,
                      margin=dict(l=70, r=20, t=110, b=50), legend=dict(font=dict(size=11)))
    return fig


def ms_fit(profile) -> tuple[float, float]:
    """(slope, intercept) of the least-squares straight line through the squared stream RMS after each block
    (the square of the median over seeds) against the block number."""
    y = torch.tensor(profile.median("activation_rms"), dtype=torch.float64).pow(2)
    x = torch.arange(len(y), dtype=torch.float64)
    slope = ((x - x.mean()) * (y - y.mean())).sum() / (x - x.mean()).pow(2).sum()
    return float(slope), float(y.mean() - slope * x.mean())


def depth_ms_figure(profiles, height: int = 420) -> go.Figure:
    """The squared stream RMS after each block (square of the median over seeds) against the block number, on a
    linear axis, one line of markers per profile, each with its least-squares straight line (dashed; its slope,
    ``ms_fit``, in the legend). A straight line means the mean square grows by a fixed amount per block, so the
    RMS grows like the square root of the depth."""
    fig = go.Figure()
    for n, p in enumerate(profiles):
        y = [v * v for v in p.median("activation_rms")]
        x = list(range(len(y)))
        slope, icpt = ms_fit(p)
        name = NORM_NAMES.get(p.norm, p.norm)
        color = OKABE_ITO[(n + 1) % len(OKABE_ITO)]
        fig.add_trace(go.Scatter(x=x, y=y, mode="markers", name=name,
                                 marker=dict(color=color, size=6, symbol=["diamond", "square"][n % 2]),
                                 hovertemplate=f"{name}<br>after block %{{x}}: RMS² %{{y:.3g}}<extra></extra>"))
        fig.add_trace(go.Scatter(x=[0, x[-1]], y=[icpt, icpt + slope * x[-1]], mode="lines",
                                 name=f"{name}: straight line, +{slope:.1f} per block",
                                 line=dict(color=color, width=1.5, dash="dash"), hoverinfo="skip"))
    fig.update_xaxes(title="block (0 = nearest the input)")
    fig.update_yaxes(title="squared stream RMS after the block", rangemode="tozero")
    fig.update_layout(template="plotly_white", font=FONT, height=height,
                      title=_title("Squared stream RMS after each block, with a norm (init std 1/8)",
                                   "on a linear axis the points lie on a straight line: the RMS grows like √depth"),
                      margin=dict(l=70, r=20, t=110, b=50),
                      legend=dict(font=dict(size=11), x=0.01, y=0.99, xanchor="left", yanchor="top"))
    return fig


def _symlog(v: float, lin: float) -> float:
    """A signed logarithmic position: 0 at 0, ±1 at ±lin, one more unit per factor 10 beyond."""
    return math.copysign(math.log10(1 + abs(v) / lin), v)


def paired_strip_figure(diffs: dict, lin: float = 0.01, height: int = 420) -> go.Figure:
    """One row of points per variant (``diffs``: {name: [n] paired differences}), each point one window's
    change, on a signed logarithmic axis (linear within ±``lin``, logarithmic beyond, so that changes from a
    hundredth to a thousand share one axis), with zero marked. Points are jittered vertically by a fixed
    pattern (no randomness); hovering gives the exact change."""
    fig = go.Figure()
    names = list(diffs)
    for n, name in enumerate(names):
        d = [float(v) for v in diffs[name]]
        y = [len(names) - 1 - n + 0.25 * ((i * 7919) % 13 / 12 - 0.5) for i in range(len(d))]
        fig.add_trace(go.Scatter(
            x=[_symlog(v, lin) for v in d], y=y, mode="markers", name=name, customdata=d,
            marker=dict(color=OKABE_ITO[n % len(OKABE_ITO)], size=7, opacity=0.8,
                        symbol=["circle", "diamond", "square", "triangle-up"][n % 4]),
            hovertemplate=f"{name}<br>change %{{customdata:+.3g}} bits per byte<extra></extra>"))
    lo = min(min(map(float, v)) for v in diffs.values())
    left = min(-0.02, 2 * lo)  # room left of the lowest point, so no point touches the row labels
    # a tick at ±0.01 or ±0.1 only a full unit or more from 0 (at least 10 lin), so that its label clears 0's
    small = [t for t in (-0.1, -0.01, 0.01, 0.1) if t >= left and abs(t) >= 10 * lin - 1e-12]
    ticks = sorted(small + [0]) + [1, 10, 100, 1000]
    fig.add_vline(x=0, line=dict(color="#444444", width=1.5))
    fig.update_xaxes(title="change in bits per byte (signed log axis)",
                     tickvals=[_symlog(t, lin) for t in ticks], ticktext=[f"{t:+g}" if t else "0" for t in ticks],
                     range=[_symlog(left, lin), _symlog(2 * max(max(map(float, v)) for v in diffs.values()), lin)])
    fig.update_yaxes(tickvals=list(range(len(names))), ticktext=names[::-1], range=[-0.6, len(names) - 0.4])
    fig.update_layout(template="plotly_white", font=FONT, height=height, showlegend=False,
                      title=_title("Change per text window after each surgery (one point per window)",
                                   "right of 0: worse than the trained model; away from 0, each tick is ten times the last"),
                      margin=dict(l=150, r=20, t=100, b=70))
    return fig
