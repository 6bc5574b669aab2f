"""Shared helpers for the views: get a trace from (model, ids) or a Trace, token labels,
palettes. The views only *read* the trace; no model math is repeated here."""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Optional

import torch

from ..config import TinyConfig
from ..errors import TinyTFInputError
from ..tokens import encode, token_labels
from ..tracing import Trace
from .arrays import arr, axis_labels, sym_range  # noqa: F401  (used here, and imported from here by the views)
from .binding import resolve

# Colour-blind-safe palettes: diverging RdBu (reversed so positive = red) for signed values,
# sequential cividis for weights in [0, 1], one grey for masked cells.
def _scale(colors):
    return [[round(i / (len(colors) - 1), 4), c] for i, c in enumerate(colors)]


# explicit lists (plotly.js does not know python's "_r" names; views skip python-side validation)
DIVERGING = _scale(['rgb(5,48,97)', 'rgb(33,102,172)', 'rgb(67,147,195)', 'rgb(146,197,222)', 'rgb(209,229,240)',
                    'rgb(247,247,247)', 'rgb(253,219,199)', 'rgb(244,165,130)', 'rgb(214,96,77)', 'rgb(178,24,43)',
                    'rgb(103,0,31)'])  # ColorBrewer RdBu reversed: blue < 0 < red
SEQUENTIAL = _scale(['#00224e', '#123570', '#3b496c', '#575d6d', '#707173', '#8a8678', '#a59c74', '#c3b369',
                     '#e1cc55', '#fee838'])  # cividis
MASK_GREY = "#dcdcdc"
MASK_MARK = "#5a5a5a"
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
FONT = dict(family="Arial, Helvetica, sans-serif", size=13)


def two_line_title(main: str, detail: str) -> str:
    """The book's figure title: a bold line, then a smaller line under it (fits the book's column)."""
    return f"<b>{main}</b><br><span style='font-size:12px'>{detail}</span>"


@dataclass
class Traced:
    """What a view needs: the trace, one label per position (target and source) and the config if known."""

    trace: Trace
    labels: list
    source_labels: Optional[list] = None
    config: Optional[TinyConfig] = None
    batch: int = 0


def _as_ids(ids, cfg: Optional[TinyConfig], what="ids"):
    if isinstance(ids, str):
        return encode(ids, cfg.vocab_size if cfg is not None else 256)
    if ids is None:
        raise TinyTFInputError(f"{what}: got None; pass token ids (e.g. tinytf.encode('cat')) or a string")
    return torch.as_tensor(ids)


def _labels_for(ids: torch.Tensor, batch: int) -> list:
    row = ids if ids.dim() == 1 else ids[batch]
    return token_labels(row)


def get_traced(model_or_trace, ids=None, labels=None, batch: int = 0, config: Optional[TinyConfig] = None) -> Traced:
    """Run ``model.run_with_trace(ids)`` (no grad) or take a ready Trace.

    ids may be a string (encoded with tinytf.encode), token ids [T] / [B, T], or for an
    EncoderDecoder a pair (src, tgt). labels overrides the axis labels (for a pair: (tgt, src))."""
    if isinstance(model_or_trace, Trace) or (isinstance(model_or_trace, dict) and not hasattr(model_or_trace, "forward")):
        trace = model_or_trace
        tgt_labels = src_labels = None
        if labels is not None and len(labels) == 2 and isinstance(labels[0], (list, tuple)):
            tgt_labels, src_labels = list(labels[0]), list(labels[1])
        elif labels is not None:
            tgt_labels = list(labels)
        return Traced(trace, tgt_labels, src_labels, config, batch)
    model = model_or_trace
    if not hasattr(model, "run_with_trace"):
        raise TinyTFInputError(
            f"expected a tinytf model (TinyTransformer / EncoderDecoder) or a Trace, got {type(model).__name__}")
    cfg = config or getattr(model, "config", None)
    with torch.no_grad():
        if type(model).__name__ == "EncoderDecoder":
            if not (isinstance(ids, (tuple, list)) and len(ids) == 2 and not isinstance(ids[0], int)):
                raise TinyTFInputError("an EncoderDecoder needs ids=(src, tgt): a pair of token-id tensors or strings")
            src, tgt = _as_ids(ids[0], cfg, "src"), _as_ids(ids[1], cfg, "tgt")
            _, trace = model.run_with_trace(src, tgt)
            src_l, tgt_l = _labels_for(src, batch), _labels_for(tgt, batch)
            if labels is not None:
                tgt_l, src_l = list(labels[0]), list(labels[1])
            return Traced(trace, tgt_l, src_l, cfg, batch)
        ids = _as_ids(ids, cfg)
        _, trace = model.run_with_trace(ids)
    lab = list(labels) if labels is not None else _labels_for(ids, batch)
    return Traced(trace, lab, None, cfg, batch)


def need(trace, name: str):
    if name not in trace:
        raise TinyTFInputError(
            f"the trace has no {name!r}; available names start with "
            f"{sorted({k.split('.')[0] for k in trace})} (see tinytf.TRACE_NAMES)")
    return trace[name]


def shape_str(t) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def outputs_shape(trace, names) -> str:
    """'[2, 4, 8]', '3 × [2, 2, 4, 4]' (several tensors of one shape) or '[..] → [..]'."""
    shapes = [shape_str(trace[n]) for n in names]
    if len(shapes) > 1 and len(set(shapes)) == 1:
        return f"{len(shapes)} × {shapes[0]}"
    return " → ".join(dict.fromkeys(shapes))


def block_prefix(trace, layer: int) -> str:
    """'blocks.{layer}.' for a TinyTransformer trace, 'decoder.blocks.{layer}.' for an EncoderDecoder."""
    for p in (f"blocks.{layer}.", f"decoder.blocks.{layer}."):
        if p + "resid_pre" in trace:
            return p
    n = len({k.split(".")[1] for k in trace if k.startswith("blocks.")})
    raise TinyTFInputError(f"block {layer} is not in this trace (it has {n} decoder blocks: 0..{max(n - 1, 0)})")


def is_post_norm(trace, p: str, config: Optional[TinyConfig]) -> bool:
    """Pre- or post-norm? From the config if known, else from the trace itself: in a post-norm
    block the stream after the first add *is* the Norm1 output."""
    if config is not None:
        return config.norm_position == "post"
    return bool(torch.equal(trace[p + "norm1.out"], trace[p + "resid_mid"]))


class FigureSpec(dict):
    """A figure as plain dicts {data, layout, frames}: what ``make_figure`` returns inside
    ``spec_only()`` (the live panel renders it directly; building plotly objects would cost
    tens of ms per update). ``to_figure()`` gives the go.Figure. ``bindings``: the recipes of
    its trace-dependent values (tinytf.viz.binding)."""

    bindings: list = []

    def to_figure(self):
        fig = make_figure(self["data"], self["layout"], self.get("frames"))
        fig._tinytf_bindings = self.bindings  # the values are in already; keep their recipes
        return fig


_spec_only = contextvars.ContextVar("tinytf_viz_spec_only", default=False)


@contextlib.contextmanager
def spec_only():
    """Inside this block the views return FigureSpec dicts instead of go.Figure objects."""
    token = _spec_only.set(True)
    try:
        yield
    finally:
        _spec_only.reset(token)


def make_figure(data, layout, frames=None):
    """A go.Figure from plain dicts without plotly's per-property validation (which costs
    seconds for an animated figure and would dominate a live update). The dicts are built
    by this package with valid property names; the browser tests draw every view."""
    import plotly.graph_objects as go

    # values read from the trace or the tokens come as Bound (value + recipe): put in the values,
    # keep the recipes (tinytf.viz.binding.bindings_of; the browser recomputes the figure with them)
    bindings = []
    data = resolve(data, ["data"], bindings)
    layout = resolve(layout, ["layout"], bindings)
    frames = resolve(frames, ["frames"], bindings) if frames else frames
    if _spec_only.get():
        spec = FigureSpec(data=data, layout=layout)
        if frames:
            spec["frames"] = frames
        spec.bindings = bindings
        return spec

    clamp_domains(layout)
    fig = go.Figure(dict(data=data, layout=layout), _validate=False)
    if frames:
        # go.Figure(frames=...) validates every frame regardless of _validate; build them unvalidated
        fig._frame_objs = tuple(_frame(f) for f in frames)
    fig._tinytf_bindings = bindings
    return fig


def clamp_domains(layout: dict) -> None:
    """Axis domains rounded to 6 digits and clipped to [0, 1] (float noise must not leave [0, 1])."""
    for key, ax in layout.items():
        if key.startswith(("xaxis", "yaxis")) and "domain" in ax:
            ax["domain"] = [min(max(round(float(v), 6), 0.0), 1.0) for v in ax["domain"]]


def _frame(f: dict):
    return _Frame(f, _validate=False)


def _lazy_frame_class():
    import plotly.graph_objects as go

    class Frame(go.Frame):
        """An unvalidated go.Frame whose ``.data`` is turned into trace objects only when read
        (plotly cannot do that for an unvalidated frame, and doing it eagerly costs a live update
        ~100 ms)."""

        @property
        def data(self):
            if self._compound_array_props.get("data") is None:
                traces = go.Figure(dict(data=self._props.get("data", [])), _validate=False).data
                self._compound_array_props["data"] = list(traces)
            return tuple(self._compound_array_props["data"])

    return Frame


_Frame = _lazy_frame_class()


def animation_controls(names: list, labels: list, frame_ms: int, prefix: str, *, slider: dict | None = None,
                       buttons: dict | None = None) -> dict:
    """Layout entries for an animated figure: a step slider over the frames ``names`` (labelled ``labels``)
    and Play/Pause buttons; ``slider`` and ``buttons`` override where plotly puts them (keys of a plotly
    slider / updatemenu). JupyterLab and plain plotly draw these; the HTML book and the live widget replace
    them by keyboard-operable controls bound to the same frames (the figure core)."""
    still = dict(duration=0)
    steps = [dict(label=lab, method="animate",
                  args=[[n], dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=still)])
             for n, lab in zip(names, labels)]
    play = dict(label="▶ Play", method="animate",
                args=[None, dict(frame=dict(duration=frame_ms, redraw=True), fromcurrent=True, transition=still,
                                 mode="immediate")])
    pause = dict(label="❚❚ Pause", method="animate",
                 args=[[None], dict(frame=dict(duration=0, redraw=False), mode="immediate", transition=still)])
    return dict(
        sliders=[dict(dict(active=0, x=0.22, len=0.78, y=0, yanchor="top", pad=dict(t=50, b=0), transition=still,
                           currentvalue=dict(prefix=prefix, visible=True, xanchor="left")), **(slider or {}),
                      steps=steps)],
        updatemenus=[dict(dict(type="buttons", direction="left", x=0.0, y=0, xanchor="left", yanchor="top",
                               pad=dict(t=50, r=10), showactive=False), **(buttons or {}), buttons=[play, pause])],
    )
