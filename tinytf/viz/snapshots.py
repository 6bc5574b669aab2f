"""One attention head across a training run: the head's map on the same text at every saved snapshot
(``tinytf.pretrained.snapshots``), one animation frame per snapshot, with Play / Pause and a step slider.

    from tinytf.viz import show, snapshot_attention
    show(snapshot_attention("text-4l", "The cat sat on the mat.", layer=1, head=1))

Every map is the trace entry ``blocks.{layer}.attn.weights`` of a real forward pass of that snapshot; beside
it, the head's previous-token score (``tinytf.heads.previous_token_score``) at every snapshot, the current one
highlighted, so the frame shows both the map and how far the pattern has formed.

``head_comparison({"trained": lm, "untrained twin": twin}, text, layer, head)`` draws one head in several
models side by side (a light figure for long texts: masked cells are left blank)."""
from __future__ import annotations

import numpy as np
import torch

from ..errors import TinyTFInputError
from ..lab import pretrained
from ..lab.heads import previous_token_score
from ..tokens import encode, token_labels
from .common import FONT, OKABE_ITO, SEQUENTIAL, animation_controls, arr, axis_labels, make_figure
from .lab import VISIBLE

FRAME_MS = 1200


def snapshot_models(name: str) -> dict:
    """{training step: model} for every snapshot of the shipped checkpoint ``name``."""
    return {step: pretrained.load(snap) for step, snap in pretrained.snapshots(name).items()}


def snapshot_traces(models: dict, ids) -> dict:
    """{step: Trace} of each snapshot run on the same ids (no grad)."""
    out = {}
    with torch.no_grad():
        for step, model in models.items():
            _, out[step] = model.eval().run_with_trace(ids)
    return out


def _check_layer_head(cfg, layer: int, head: int) -> None:
    if not 0 <= layer < cfg.n_layers:
        raise TinyTFInputError(f"layer {layer} does not exist: the model has {cfg.n_layers} blocks (0..{cfg.n_layers - 1})")
    if not 0 <= head < cfg.n_heads:
        raise TinyTFInputError(f"head {head} does not exist: each block has {cfg.n_heads} heads (0..{cfg.n_heads - 1})")


def visible_labels(ids) -> list:
    """One axis label per byte of ``ids`` (``token_labels``), with a space shown as "␣" and a line break as "↵"
    (``tinytf.viz.lab.VISIBLE``, the lab's glyphs): the byte labels of every map in this module."""
    return [VISIBLE.get(t, t) for t in token_labels(torch.as_tensor(ids))]


def snapshot_attention(models, text, layer: int = 0, head: int = 0, frame_ms: int = FRAME_MS, title: str = ""):
    """Animated figure: head ``head`` of block ``layer`` on the bytes of ``text``, one frame per snapshot.

    ``models``: {training step: TinyTransformer} (e.g. ``snapshot_models("text-4l")``) or the name of a
    shipped checkpoint with snapshots. Frame ``str(step)`` holds the heatmap of the snapshot's traced
    weights (masked cells left blank) and a bar per snapshot of the head's previous-token
    score, the current step in orange."""
    if isinstance(models, str):
        models = snapshot_models(models)
    if not isinstance(models, dict) or not models:
        raise TinyTFInputError("snapshot_attention: expected {step: model} (at least one) or a checkpoint name")
    steps = list(models)
    cfg = next(iter(models.values())).config
    ids = encode(text, cfg.vocab_size) if isinstance(text, str) else torch.as_tensor(text)
    _check_layer_head(cfg, layer, head)
    traces = snapshot_traces(models, ids)
    name = f"blocks.{layer}.attn.weights"
    maps = {s: traces[s][name][0, head] for s in steps}
    scores = [float(previous_token_score(maps[s][None])[0]) for s in steps]
    T = ids.shape[-1]
    lab = axis_labels(visible_labels(ids), T)  # a bare " " would leave a blank tick ("3: ")
    masked = np.triu(np.ones((T, T), dtype=bool), k=1)
    step_labels = [f"step {s}" for s in steps]
    frames = []
    for k, s in enumerate(steps):
        z = np.where(masked, np.nan, arr(maps[s]))
        colors = [OKABE_ITO[1] if j == k else OKABE_ITO[0] for j in range(len(steps))]
        frames.append(dict(name=str(s), data=[
            dict(type="heatmap", z=z, x=lab, y=lab, coloraxis="coloraxis", xgap=0, ygap=0, name=f"step {s}",
                 hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>"),
            dict(type="bar", x=step_labels, y=scores, xaxis="x2", yaxis="y2", name="previous-token score",
                 marker=dict(color=colors), hovertemplate="%{x}: previous-token score %{y:.2f}<extra></extra>"),
        ], layout=dict(title=dict(text=(
            f"<b>Block {layer}, head {head} after {s} training steps</b><br><span style='font-size:12px'>"
            f"{title or 'attention weights on the same text at every saved snapshot'}</span>")))))
    cell = 16 if T > 24 else 24
    side = int(T * cell)
    layout = dict(
        font=FONT, height=side + 230, showlegend=False, margin=dict(l=80, r=40, t=90, b=140),
        title=dict(text=frames[0]["layout"]["title"]["text"], x=0.01, xanchor="left"),
        xaxis=dict(domain=[0, 0.64], type="category", title=dict(text="key (the byte read)"), fixedrange=True,
                   tickfont=dict(size=9), tickangle=-90, categoryorder="array", categoryarray=lab),
        yaxis=dict(domain=[0, 1], type="category", autorange="reversed", title=dict(text="query"), fixedrange=True,
                   tickfont=dict(size=9), categoryorder="array", categoryarray=lab),
        xaxis2=dict(domain=[0.8, 1], type="category", fixedrange=True, tickangle=-45, anchor="y2"),
        yaxis2=dict(domain=[0.15, 0.92], range=[0, 1], anchor="x2", fixedrange=True, tickvals=[0, 0.5, 1]),
        annotations=[dict(text="previous-token score<br>of this head", x=0.9, y=0.94, xref="paper", yref="paper",
                          yanchor="bottom", showarrow=False, font=dict(size=12))],
        coloraxis=dict(colorscale=SEQUENTIAL, cmin=0, cmax=1,
                       colorbar=dict(title=dict(text="weight", side="right"), x=0.655, xanchor="left", len=0.9,
                                     thickness=10)),
        plot_bgcolor="white",
        **animation_controls([f["name"] for f in frames], step_labels, frame_ms, "after "),
    )
    return make_figure(frames[0]["data"], layout, frames)


# below this width (px) the book's figure core draws head_comparison's narrow layout (its own NARROW: one
# column), where each map would otherwise keep its wide height, T * 16 px, one above the other
NARROW_BELOW = 600
PHONE_MAP_PX = 240  # px: a map's height in the narrow layout, about as tall as a phone leaves it wide


def _comparison_panels(maps: dict, lab: list, stacked: bool):
    """Heatmaps and axes of head_comparison: one panel per model, side by side (stacked=False) or one above the
    other (stacked=True), all on one colour axis; the panels' names as annotations, in the models' order."""
    n, gap = len(maps), (0.1 if stacked else 0.06)
    size = (1 - gap * (n - 1)) / n
    data, axes, annotations = [], {}, []
    for c, (label, z) in enumerate(maps.items()):
        ax = "" if c == 0 else str(c + 1)
        lo = (n - 1 - c) * (size + gap) if stacked else c * (size + gap)  # stacked: the first model on top
        x_dom, y_dom = ([0, 1], [lo, lo + size]) if stacked else ([lo, lo + size], [0, 1])
        data.append(dict(type="heatmap", z=z, x=lab, y=lab, coloraxis="coloraxis", name=str(label),
                         xaxis=f"x{ax}", yaxis=f"y{ax}",
                         hovertemplate=f"{label}<br>query %{{y}}<br>key %{{x}}<br>weight %{{z:.3f}}<extra></extra>"))
        axes[f"xaxis{ax}"] = dict(domain=x_dom, type="category", anchor=f"y{ax}", fixedrange=True,
                                  tickfont=dict(size=9), tickangle=-90, categoryorder="array", categoryarray=lab,
                                  title=dict(text="key (the byte read)"))
        first = stacked or c == 0  # y labels: every stacked panel, the leftmost of a row
        axes[f"yaxis{ax}"] = dict(domain=y_dom, type="category", anchor=f"x{ax}", autorange="reversed",
                                  fixedrange=True, tickfont=dict(size=9), categoryorder="array", categoryarray=lab,
                                  showticklabels=first, title=dict(text="query" if first else ""))
        annotations.append(dict(text=f"<b>{label}</b>", x=sum(x_dom) / 2, y=y_dom[1], xref="paper", yref="paper",
                                yanchor="bottom", showarrow=False, font=dict(size=12)))
    return data, axes, annotations


def head_comparison(models: dict, text, layer: int = 0, head: int = 0, title: str = "", labels=None):
    """One head's attention map on the bytes of ``text`` in several models side by side (e.g. {"trained": lm,
    "untrained twin": twin}), one panel per model sharing one 0..1 colour scale; masked cells are left blank.
    Every map is the trace entry ``blocks.{layer}.attn.weights[0, head]`` of that model's forward pass. Lighter
    than one ``attention_map`` per model (no mask marks), for long texts. The axes label each byte as
    ``visible_labels`` does (a space as "␣", a line break as "↵"); ``labels``: one axis label per byte instead.

    The figure carries a second layout for narrow screens in ``layout.meta.tinytf.narrow`` (the book's figure
    core draws it below ``NARROW_BELOW`` px): the same maps one above the other, each ``PHONE_MAP_PX`` tall
    (stacked at their wide height, two maps of a 46-byte text made the figure about 1,800 px tall on a phone).
    Its panel names are the wide figure's annotations (``text_of``), so a translation of the wide figure holds
    for both."""
    if not isinstance(models, dict) or not models:
        raise TinyTFInputError("head_comparison: expected {label: model} with at least one model")
    cfg = next(iter(models.values())).config
    ids = encode(text, cfg.vocab_size) if isinstance(text, str) else torch.as_tensor(text)
    _check_layer_head(cfg, layer, head)
    traces = snapshot_traces(models, ids)
    T = ids.shape[-1]
    lab = axis_labels(visible_labels(ids) if labels is None else list(labels), T)
    masked = np.triu(np.ones((T, T), dtype=bool), k=1)
    maps = {label: np.where(masked, np.nan, arr(traces[label][f"blocks.{layer}.attn.weights"][0, head]))
            for label in models}
    data, layout, annotations = _comparison_panels(maps, lab, stacked=False)
    colour = dict(colorscale=SEQUENTIAL, cmin=0, cmax=1,
                  colorbar=dict(title=dict(text="weight", side="right"), x=1.01, xanchor="left", len=0.9,
                                thickness=10))
    n_data, n_axes, n_annotations = _comparison_panels(maps, lab, stacked=True)
    n, top, bottom = len(maps), 40, 40
    share = (1 - 0.1 * (n - 1)) / n  # of the plot's height, per map
    narrow = dict(data=n_data, layout=dict(
        font=FONT, height=top + bottom + round(PHONE_MAP_PX / share), showlegend=False,
        margin=dict(l=60, r=80, t=top, b=bottom), annotations=n_annotations, plot_bgcolor="white",
        coloraxis=colour, **n_axes))
    cell = 16 if T > 24 else 24
    layout.update(
        font=FONT, height=int(T * cell) + 200, showlegend=False, margin=dict(l=80, r=70, t=100, b=100),
        title=dict(text=(f"<b>Block {layer}, head {head}: attention weights</b><br><span style='font-size:12px'>"
                         f"{title or 'the same head in each model, on the same text; each row sums to 1'}</span>"),
                   x=0.01, xanchor="left"),
        annotations=annotations, plot_bgcolor="white", coloraxis=colour,
        meta=dict(tinytf=dict(narrow=dict(below=NARROW_BELOW, figure=narrow,
                                          text_of=list(range(len(n_annotations)))))),
    )
    return make_figure(data, layout)
