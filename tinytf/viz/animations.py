"""Animated figures where something evolves (issue #13): every frame is computed by tinytf itself
(a trace of a real forward pass, ``RoPE.rotate``, the parameter counter, the block reviewer); this
module only arranges the numbers into frames.

* ``rope_animation``: one query/key pair after another turned by RoPE as the position grows (chapter 1);
* ``temperature_animation``: one head's attention weights as the softmax temperature changes (chapter 2);
* ``depth_animation``: the residual stream of pre-norm and post-norm stacks, block after block (chapter 5);
* ``swap_animation``: the 2017 block turning into the 2026 block one swap at a time (chapter 9).

Each figure carries plotly's own slider and Play / Pause (JupyterLab, VS Code); the HTML book
replaces them by keyboard-operable HTML controls (``_static/tinytf-figures.js``)."""
from __future__ import annotations

import numpy as np
import torch

from ..errors import TinyTFInputError
from .common import (animation_controls, two_line_title, DIVERGING, FONT, OKABE_ITO, SEQUENTIAL, arr, axis_labels, get_traced, make_figure, need,
                     sym_range)
from ..lab.parameters import exact_layer_params
from ..lab.review import review
from .positions import rope_pair_paths


_title = two_line_title


# --------------------------------------------------------------------------- chapter 1: RoPE
def rope_animation(d_head: int = 32, n_positions: int = 16, pairs=(0, 4, 15), theta: float = 10000.0,
                   frame_ms: int = 700):
    """One frame per position t = 0 .. n-1: for each pair i, the 2-D vector (x_i, x_{i+D/2}) of a
    query or key whose every pair is (1, 0) before rotation, after ``RoPE.rotate`` at position t
    (an arrow), with the points of the earlier positions (the path so far). Fast pairs (small i)
    turn quickly, slow pairs barely move."""
    if n_positions < 2:
        raise TinyTFInputError("rope_animation needs n_positions >= 2")
    paths = {i: arr(p) for i, p in rope_pair_paths(d_head, n_positions, pairs, theta).items()}
    n = len(paths)
    gap = 0.08
    w = (1 - gap * (n - 1)) / n
    layout, annotations = {}, []
    for c, i in enumerate(paths):
        ax = "" if c == 0 else str(c + 1)
        x0 = c * (w + gap)
        layout[f"xaxis{ax}"] = dict(domain=[x0, x0 + w], range=[-1.25, 1.25], anchor=f"y{ax}", fixedrange=True,
                                    zeroline=True, title=dict(text=f"x[{i}]"), tickvals=[-1, 0, 1])
        layout[f"yaxis{ax}"] = dict(domain=[0, 1], range=[-1.25, 1.25], anchor=f"x{ax}", fixedrange=True,
                                    scaleanchor=f"x{ax}", zeroline=True, title=dict(text=f"x[{i + d_head // 2}]"),
                                    tickvals=[-1, 0, 1])
        annotations.append(dict(text=f"<b>pair {i}</b>", x=x0 + w / 2, y=1.0, xref="paper", yref="paper",
                                yanchor="bottom", showarrow=False, font=dict(size=12)))

    def traces(t):
        out = []
        for c, (i, p) in enumerate(paths.items()):
            xa, ya = ("x", "y") if c == 0 else (f"x{c + 1}", f"y{c + 1}")
            out.append(dict(type="scatter", x=p[: t + 1, 0], y=p[: t + 1, 1], mode="markers", xaxis=xa, yaxis=ya,
                            marker=dict(size=7, color=list(range(t + 1)), colorscale=SEQUENTIAL, cmin=0,
                                        cmax=n_positions - 1),
                            name=f"pair {i}: positions 0..{t}",
                            hovertemplate=f"pair {i}<br>(%{{x:.3f}}, %{{y:.3f}})<extra></extra>"))
            out.append(dict(type="scatter", x=[0.0, p[t, 0]], y=[0.0, p[t, 1]], mode="lines+markers",
                            xaxis=xa, yaxis=ya, line=dict(color=OKABE_ITO[5], width=3),
                            marker=dict(size=[0, 10], color=OKABE_ITO[5]), name=f"pair {i} at position {t}",
                            hovertemplate=f"pair {i}, position {t}<br>(%{{x:.3f}}, %{{y:.3f}})<extra></extra>"))
        return out

    names = [str(t) for t in range(n_positions)]
    frames = [dict(name=names[t], data=traces(t),
                   layout=dict(title=dict(text=_title(f"RoPE at position {t}: each pair turned by its own angle × {t}",
                                                      "arrow: this position; dots: the earlier ones. "
                                                      "Pair 0 turns fastest, the last pair slowest"))))
              for t in range(n_positions)]
    layout.update(font=FONT, height=430, showlegend=False, margin=dict(l=50, r=20, t=110, b=120),
                  title=dict(text=frames[0]["layout"]["title"]["text"], x=0.01, xanchor="left"),
                  annotations=annotations, plot_bgcolor="white",
                  **animation_controls(names, [f"t={t}" for t in range(n_positions)], frame_ms, "position "))
    return make_figure(frames[0]["data"], layout, frames)


# --------------------------------------------------------------------------- chapter 2: temperature
def temperature_animation(model, ids=None, layer: int = 0, head: int = 0, temperatures=(4.0, 2.0, 1.0, 0.5, 0.25, 0.1),
                          labels=None, frame_ms: int = 1000):
    """One frame per temperature τ: the weights softmax(scores / τ) of one head, where the scores
    are the head's masked, scaled scores read from the trace (τ = 1 gives exactly the trace's
    weights). Beside the map: each query's largest weight. High τ spreads the weight evenly over
    the visible keys; low τ puts it all on the largest score."""
    t = get_traced(model, ids, labels=labels)
    p = f"blocks.{layer}.attn." if f"blocks.{layer}.attn.masked_scores" in t.trace else f"decoder.blocks.{layer}.attn."
    scores = need(t.trace, p + "masked_scores")[t.batch]
    H, T, S = scores.shape
    if not 0 <= head < H:
        raise TinyTFInputError(f"head {head} does not exist: this layer has {H} heads (0..{H - 1})")
    if not temperatures or any(float(x) <= 0 for x in temperatures):
        raise TinyTFInputError("temperatures must be positive numbers")
    lab = axis_labels(t.labels, T)
    masked = torch.isneginf(scores[head])
    frames = []
    for tau in temperatures:
        w = torch.softmax(scores[head].double() / float(tau), dim=-1).numpy()
        w = np.where(masked.numpy(), np.nan, w)
        top = np.nanmax(w, axis=-1)
        frames.append(dict(name=f"{tau:g}", data=[
            dict(type="heatmap", z=w, x=lab, y=lab, coloraxis="coloraxis", xgap=1, ygap=1, name="weights",
                 hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>"),
            dict(type="bar", x=top, y=lab, orientation="h", xaxis="x2", yaxis="y2", name="largest weight",
                 marker=dict(color=OKABE_ITO[0]), hovertemplate="query %{y}: largest weight %{x:.3f}<extra></extra>"),
        ], layout=dict(title=dict(text=_title(
            f"Block {layer}, head {head}: softmax(scores / τ) at τ = {tau:g}",
            "τ = 1 is the model's own attention; larger τ spreads the weight, smaller τ sharpens it")))))
    cell = 30 if T <= 12 else 18
    layout = dict(
        font=FONT, height=int(200 + T * cell), showlegend=False, margin=dict(l=70, r=70, t=100, b=150),
        title=dict(text=frames[0]["layout"]["title"]["text"], x=0.01, xanchor="left"),
        xaxis=dict(domain=[0, 0.66], type="category", title=dict(text="key"), fixedrange=True),
        yaxis=dict(domain=[0, 1], type="category", autorange="reversed", title=dict(text="query"), fixedrange=True),
        xaxis2=dict(domain=[0.76, 1], anchor="y2", range=[0, 1.05], title=dict(text="largest weight"), fixedrange=True,
                    tickvals=[0, 0.5, 1]),
        yaxis2=dict(domain=[0, 1], type="category", autorange="reversed", anchor="x2", showticklabels=False,
                    fixedrange=True),
        coloraxis=dict(colorscale=SEQUENTIAL, cmin=0, cmax=1,
                       colorbar=dict(title=dict(text="weight", side="right"), x=0.68, xanchor="left", len=0.9,
                                     thickness=10)),
        plot_bgcolor="white",
        **animation_controls([f["name"] for f in frames], [f"τ={x:g}" for x in temperatures], frame_ms, ""),
    )
    return make_figure(frames[0]["data"], layout, frames)


# --------------------------------------------------------------------------- chapter 5: depth
def _token_rms(stream):
    """Each token's RMS: [T, C] -> [T]."""
    return np.sqrt((stream ** 2).mean(-1))


def _per_token_direction(stream):
    """The stream [T, C] with each token's vector divided by its own RMS: every row then has RMS 1."""
    return stream / _token_rms(stream)[:, None]  # [T, C] / [T, 1]


def depth_animation(models: dict, ids=None, labels=None, frame_ms: int = 900):
    """``models``: {name: TinyTransformer} of the same depth (e.g. a pre-norm and a post-norm
    stack). One frame per point of the residual stream: the embeddings, then after each block's
    attention add (resid_mid) and FFN add (resid_post). Per model, a heatmap of the stream [T, C] with each
    token's vector divided by its own RMS (its direction, readable whatever the stream's size), and each token's
    RMS beside it (log axis, so that a small stream and one of RMS 1 are both readable)."""
    if not models:
        raise TinyTFInputError("depth_animation: no models given")
    traced = {name: get_traced(m, ids, labels=labels) for name, m in models.items()}
    depths = {len({k.split(".")[1] for k in t.trace if k.startswith("blocks.")}) for t in traced.values()}
    if len(depths) != 1:
        raise TinyTFInputError(f"depth_animation: the models differ in depth ({sorted(depths)})")
    L = depths.pop()
    points = [("blocks.0.resid_pre", "the embeddings (stream entering block 0)")]
    for b in range(L):
        points += [(f"blocks.{b}.resid_mid", f"after block {b}'s attention add"),
                   (f"blocks.{b}.resid_post", f"after block {b}'s FFN add")]
    streams = {name: [arr(need(t.trace, nm))[t.batch] for nm, _ in points] for name, t in traced.items()}
    first = next(iter(traced.values()))
    T = streams[next(iter(streams))][0].shape[0]
    lab = axis_labels(first.labels, T)
    rms = [_token_rms(s) for ss in streams.values() for s in ss]
    m = sym_range(*[_per_token_direction(s) for ss in streams.values() for s in ss])
    rms_top = max(float(r.max()) for r in rms)
    rms_low = min(float(r.min()) for r in rms)
    rms_range = [np.log10(rms_low / 1.5), np.log10(rms_top * 1.5)]  # log axis: a stream of RMS 0.02 stays visible
    n = len(models)
    gap = 0.12
    ph = (1 - gap * (n - 1)) / n
    layout, annotations = {}, []
    for r, name in enumerate(models):
        y1 = 1 - r * (ph + gap)
        a1, a2 = ("", "2") if r == 0 else (str(2 * r + 1), str(2 * r + 2))
        layout[f"xaxis{a1}"] = dict(domain=[0, 0.62], anchor=f"y{a1}", showticklabels=False, fixedrange=True,
                                    showgrid=False, zeroline=False, title=dict(text="feature"))
        layout[f"yaxis{a1}"] = dict(domain=[y1 - ph, y1], anchor=f"x{a1}", type="category", autorange="reversed",
                                    fixedrange=True)
        layout[f"xaxis{a2}"] = dict(domain=[0.76, 1], anchor=f"y{a2}", type="log", range=rms_range,
                                    fixedrange=True, title=dict(text="RMS per token (log scale)"))
        layout[f"yaxis{a2}"] = dict(domain=[y1 - ph, y1], anchor=f"x{a2}", type="category", autorange="reversed",
                                    showticklabels=False, fixedrange=True)
        annotations.append(dict(text=f"<b>{name}</b>", x=0.31, y=y1, xref="paper", yref="paper", yanchor="bottom",
                                showarrow=False, font=dict(size=12)))

    def traces(k):
        out = []
        for r, (name, ss) in enumerate(streams.items()):
            a1, a2 = ("", "2") if r == 0 else (str(2 * r + 1), str(2 * r + 2))
            z = ss[k]
            out.append(dict(type="heatmap", z=_per_token_direction(z), y=lab, xaxis=f"x{a1}", yaxis=f"y{a1}", coloraxis="coloraxis",
                            ygap=1, name=f"{name}: stream",
                            hovertemplate=f"{name}<br>token %{{y}}<br>feature %{{x}}<br>value / RMS %{{z:.3g}}<extra></extra>"))
            out.append(dict(type="bar", x=_token_rms(z), y=lab, orientation="h", xaxis=f"x{a2}",
                            yaxis=f"y{a2}", marker=dict(color=OKABE_ITO[r % len(OKABE_ITO)]), name=f"{name}: RMS",
                            hovertemplate=f"{name}<br>token %{{y}}: RMS %{{x:.4g}}<extra></extra>"))
        return out

    names = [nm for nm, _ in points]
    frames = [dict(name=nm, data=traces(k), layout=dict(title=dict(text=_title(
        f"The residual stream, {what} ({k + 1}/{len(points)})",
        "colours: each token's vector divided by its RMS; bars: its RMS (log axis): the pre-norm stream grows, the post-norm one stays at RMS 1"))))
              for k, (nm, what) in enumerate(points)]
    layout.update(font=FONT, height=int(170 + n * (T * 26 + 90)), showlegend=False,
                  margin=dict(l=70, r=70, t=100, b=150), annotations=annotations, plot_bgcolor="white",
                  title=dict(text=frames[0]["layout"]["title"]["text"], x=0.01, xanchor="left"),
                  coloraxis=dict(colorscale=DIVERGING, cmin=-m, cmax=m,
                                 colorbar=dict(title=dict(text="value / RMS", side="right"), x=0.64, xanchor="left",
                                               thickness=10, len=0.9)),
                  **animation_controls(names, ["embed"] + [f"{b}{'a' if j == 0 else 'f'}" for b in range(L) for j in (0, 1)],
                              frame_ms, "point "))
    return make_figure(frames[0]["data"], layout, frames)


# --------------------------------------------------------------------------- chapter 9: swaps
def swap_animation(steps, frame_ms: int = 1400):
    """``steps``: [(name, TinyConfig)], each config one swap away from the one before (chapter 9's
    2017 → 2026 path). One frame per config, titled by its swap number (swap 0: the first config, the block
    before any swap; swap k: after the k-th swap): the parameters of one block by component
    (``tinytf.exact_layer_params``) and in how many aspects the block reviewer (``tinytf.review``)
    still finds it differs from the Llama-3-style recipe."""
    steps = list(steps)
    if not steps:
        raise TinyTFInputError("swap_animation: no steps given")
    parts = ("attention", "ffn", "norms")
    counts = [exact_layer_params(cfg) for _, cfg in steps]
    gaps = [len(review(cfg)) for _, cfg in steps]
    top = max(c["total"] for c in counts)
    names = [str(k) for k in range(len(steps))]
    labels = [name for name, _ in steps]

    def traces(k):
        c = counts[k]
        return [
            dict(type="bar", x=[c[p] for p in parts], y=["attention", "FFN", "norms"], orientation="h",
                 marker=dict(color=[OKABE_ITO[0], OKABE_ITO[1], OKABE_ITO[2]]), name="parameters per block",
                 text=[f"{c[p]:,}" for p in parts], textposition="outside", cliponaxis=False,
                 hovertemplate="%{y}: %{x:,} parameters<extra></extra>"),
            dict(type="bar", x=[g for g in gaps[: k + 1]], y=labels[: k + 1], orientation="h", xaxis="x2", yaxis="y2",
                 marker=dict(color=OKABE_ITO[5]), name="differences from the recipe",
                 text=[str(g) for g in gaps[: k + 1]], textposition="outside", cliponaxis=False,
                 hovertemplate="%{y}: %{x} differences<extra></extra>"),
        ]

    frames = [dict(name=names[k], data=traces(k), layout=dict(title=dict(text=_title(
        f"Swap {k}: {labels[k]} — {counts[k]['total']:,} parameters per block",
        "first panel: one block's parameters by part; second panel: differences from the Llama-3-style recipe"))))
              for k in range(len(steps))]
    layout = dict(
        font=FONT, height=430, showlegend=False, margin=dict(l=80, r=40, t=100, b=150), plot_bgcolor="white",
        title=dict(text=frames[0]["layout"]["title"]["text"], x=0.01, xanchor="left"),
        xaxis=dict(domain=[0, 0.42], range=[0, top * 1.3], title=dict(text="parameters"), fixedrange=True),
        yaxis=dict(domain=[0, 1], type="category", categoryorder="array", categoryarray=["attention", "FFN", "norms"],
                   autorange="reversed", fixedrange=True),
        xaxis2=dict(domain=[0.7, 1], anchor="y2", range=[0, max(gaps) * 1.3 + 0.5], title=dict(text="differences from the recipe"),
                    fixedrange=True, dtick=1),
        # a fixed range over every step's row, first step at the top: frame k draws only k + 1 bars, and
        # with autorange plotly would size the axis for frame 0's single bar and keep it in later frames;
        # the book's figure core sizes the gap left of this panel for every label of the category array
        # labels at 11 px: the gap the core leaves for them is at most 130 px, and "ReLU 4x -> SwiGLU 8/3"
        # is about 145 px wide at the figure's 13 px
        yaxis2=dict(domain=[0, 1], anchor="x2", type="category", categoryorder="array", categoryarray=labels,
                    autorange=False, fixedrange=True, range=[len(labels) - 0.5, -0.5], tickfont=dict(size=11)),
        # each step labelled by its swap's name: the book's controls read "2 of 7: post-norm -> pre-norm"
        **animation_controls(names, labels, frame_ms, "", slider=dict(font=dict(size=9), ticklen=4)),
    )
    return make_figure(frames[0]["data"], layout, frames)
