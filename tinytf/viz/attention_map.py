"""Attention maps: query x key weights per head and averaged over heads, read from the trace."""
from __future__ import annotations

import math

import numpy as np

from ..errors import TinyTFInputError
from . import binding as bnd
from .common import FONT, OKABE_ITO, SEQUENTIAL, axis_labels, get_traced, make_figure, need

KINDS = ("self", "cross", "encoder")
MASK_FILL = "#ffffff"  # masked cells: white in light and dark mode, unlike any colour of the weight scale
# the mark on a masked cell: dark in both modes. Not a pure grey (equal r, g, b), which the page's dark mode
# would lighten for a dark background, making it vanish on the white cell
MASK_ON_WHITE = "#4a4a55"
ROW_GAP_PX = 72  # between rows of panels: the upper row's tick labels and axis title, then the lower row's title
OUTLINE_COLOR = OKABE_ITO[5]  # vermillion: stands out from every colour of the cividis weight scale


def attention_names(trace, layer: int, kind: str = "self"):
    """(weights name, masked-scores name or None) for this kind of attention in this trace."""
    if kind not in KINDS:
        raise TinyTFInputError(f"kind must be one of {', '.join(map(repr, KINDS))}; got {kind!r}")
    if kind == "cross":
        p = f"decoder.blocks.{layer}.cross_attn."
        if p + "weights" not in trace:
            raise TinyTFInputError(
                f"no cross-attention in this trace for layer {layer}: cross-attention exists only in an "
                "EncoderDecoder (decoder.blocks.{i}.cross_attn.weights)")
    elif kind == "encoder":
        p = f"encoder.blocks.{layer}.attn."
    else:
        p = f"blocks.{layer}.attn." if f"blocks.{layer}.attn.weights" in trace else f"decoder.blocks.{layer}.attn."
    need(trace, p + "weights")
    return p + "weights", (p + "masked_scores" if p + "masked_scores" in trace else None)


def _choose_panels(w, masked, heads, H: int) -> list:
    """(title, weights [T, S], masked [T, S]) per panel: the mean over heads and/or the heads asked for."""
    if isinstance(heads, (list, tuple)):  # e.g. ("mean", 0): the panels named, in this order
        if not heads or any(h in ("all", "each") or isinstance(h, (bool, list, tuple)) for h in heads):
            raise TinyTFInputError(f"a list of heads takes 'mean' and head indices; got {heads!r}")
        return [panel for h in heads for panel in _choose_panels(w, masked, h, H)]
    if isinstance(heads, int) and not isinstance(heads, bool):
        if not 0 <= heads < H:
            raise TinyTFInputError(f"head {heads} does not exist: this layer has {H} heads (0..{H - 1})")
        panels = [(f"head {heads}", w[heads], masked[heads])]
    elif heads in ("all", "mean", "each"):
        panels = [("mean of heads", w.mean(0), masked.all(0))] if heads in ("all", "mean") else []
        if heads in ("all", "each"):
            panels += [(f"head {h}", w[h], masked[h]) for h in range(H)]
    else:
        raise TinyTFInputError(
            f"heads must be 'all', 'mean', 'each', a head index or a list of them; got {heads!r}")
    return panels


def _panel_traces(name, z, mk, qlab, klab, ax: str, q_name: str, k_name: str) -> list:
    """One panel's traces: the weights, and where a mask blanks cells, a grey layer with an x on each."""
    data = [dict(
        type="heatmap", z=bnd.op("where", mk, None, z), x=klab, y=qlab, xaxis=f"x{ax}", yaxis=f"y{ax}",
        coloraxis="coloraxis", xgap=1, ygap=1, name=name,  # the hover reads the labels from x and y
        hovertemplate=(f"<b>{name}</b><br>{q_name} %{{y}}<br>{k_name} %{{x}}"
                       "<br>weight %{z:.3f}<extra></extra>"),
    )]
    if mk.value.any():  # which cells are masked depends on the length only (a causal mask)
        data.append(dict(
            type="heatmap", z=bnd.op("where", mk, 1.0, None), x=klab, y=qlab, xaxis=f"x{ax}", yaxis=f"y{ax}",
            # white, not grey: a light grey cell would read as a mid weight of the cividis scale; the fill is a
            # colour scale, so the page's dark mode leaves it (and the mark drawn on it) white and dark
            colorscale=[[0, MASK_FILL], [1, MASK_FILL]], showscale=False, xgap=1, ygap=1,
            name=f"{name} (masked)",
            hovertemplate=(f"<b>{name}</b><br>{q_name} %{{y}}<br>{k_name} %{{x}}"
                           "<br>masked: a later position, weight 0<extra></extra>"),
        ))
        marks_x, marks_y = (bnd.op("take", lab, bnd.op("nonzero", mk, k)) for lab, k in ((klab, 1), (qlab, 0)))
        data.append(dict(type="scatter", x=marks_x, y=marks_y, xaxis=f"x{ax}",
                         yaxis=f"y{ax}", mode="markers", hoverinfo="skip", name=f"{name} mask marks",
                         marker=dict(symbol="x-thin", size=10, line=dict(width=1.5, color=MASK_ON_WHITE))))
    return data


def attention_map(model_or_trace, ids=None, layer: int = 0, kind: str = "self", labels=None, batch: int = 0,
                  heads="all", cols: int | None = None, outline=None, name_block: bool = False):
    """Heatmaps of attention weights, query (rows) x key (columns): the mean over heads first, then one panel
    per head (``heads``: "all" | "mean" | "each" | a head index | a list of "mean" and head indices, e.g.
    ``("mean", 0)``: fewer panels, a shorter figure on a phone, where the panels stack), sharing one 0..1 colour
    scale. Masked cells (the causal mask's -inf scores) are grey with an x and hover "masked". kind="cross"
    (EncoderDecoder) shows target (rows) x source (columns); kind="encoder" the encoder's bidirectional one.

    ``model_or_trace``: a model with ``ids`` (string / ids; a (src, tgt) pair for an EncoderDecoder) or a Trace
    (then ``labels``: a list of query labels, or (target labels, source labels)). ``outline``: (row, column)
    positions (0-based) boxed in every panel, e.g. where a hypothesis puts the weight. ``name_block=True`` puts
    the block in every panel's title ("block 1, head 0"), for a figure whose neighbours show another block."""
    t = get_traced(model_or_trace, ids, labels=labels, batch=batch)
    wname, mname = attention_names(t.trace, layer, kind)
    w = bnd.source(t.trace, wname)[t.batch]  # [H, T, S]; values read from the trace are Bound (value + recipe)
    H, T, S = w.shape
    masked = _masked(t, wname, mname, w.shape)
    qlab, klab = _query_key_labels(t, kind, T, S)
    panels = _choose_panels(w, masked, heads, H)
    if name_block:
        panels = [(f"block {layer}, {title}", wt, mk) for title, wt, mk in panels]
    outline = _outline_cells(outline, T, S)
    n = len(panels)
    cols = cols or min(n, 5)
    rows = math.ceil(n / cols)
    gap_x = 0.05
    cell = 34 if max(T, S) <= 8 else 20
    gap_y = ROW_GAP_PX / (rows * (max(T, 3) * cell + 60) + 14)  # as a share of the plot height set below
    pw = (1 - gap_x * (cols - 1)) / cols
    ph = (1 - gap_y * (rows - 1)) / rows
    q_name, k_name = ("target", "source") if kind == "cross" else ("query", "key")
    # Cross-attention maps are read column by column ("row 1 lights up column 9"), so every source and target
    # position gets its tick; Plotly would otherwise skip every other label once the cells get narrow.
    every_tick = dict(tickmode="linear", tick0=0, dtick=1) if kind == "cross" else {}
    # one cross-attention panel of up to 16 sources has room for its labels side by side, in larger cells
    single = kind == "cross" and n == 1 and S <= 16
    rotate = kind == "cross" and S > 8 and not single  # long source labels such as "10: r" would overlap
    cell = 34 if max(T, S) <= 8 or single else 20
    if rotate:  # leave 110 px under each panel for its rotated labels, its axis title and the next panel's title
        panel_px = max(T, 3) * cell
        gap_y = 110 / (rows * panel_px + (rows - 1) * 110)
        ph = (1 - gap_y * (rows - 1)) / rows
    data, layout, annotations, shapes = [], {}, [], []
    for i, (name, z, mk) in enumerate(panels):
        r, c = divmod(i, cols)
        ax = "" if i == 0 else str(i + 1)
        x0 = c * (pw + gap_x)
        y1 = 1 - r * (ph + gap_y)
        layout[f"xaxis{ax}"] = dict(domain=[x0, x0 + pw], anchor=f"y{ax}", type="category",
                                    tickangle=-90 if rotate else 0,
                                    title=dict(text=k_name, font=dict(size=11)), fixedrange=True,
                                    tickfont=dict(size=10 if rotate else 11), **every_tick)
        layout[f"yaxis{ax}"] = dict(domain=[y1 - ph, y1], anchor=f"x{ax}", type="category", autorange="reversed",
                                    title=dict(text=q_name if c == 0 else "", font=dict(size=11)),
                                    showticklabels=c == 0 or T > 8, fixedrange=True, tickfont=dict(size=11),
                                    **every_tick)
        data += _panel_traces(name, z, mk, qlab, klab, ax, q_name, k_name)
        annotations.append(dict(text=f"<b>{name}</b>", x=x0 + pw / 2, y=y1, xref="paper", yref="paper",
                                yanchor="bottom", showarrow=False, font=dict(size=12)))
        shapes += _outline_shapes(outline, ax)
    what = {"self": "causal self-attention" if mname else "self-attention",
            "cross": "cross-attention", "encoder": "encoder self-attention"}[kind]
    sub = ("each row sums to 1; grey ✕ = masked (a later position)" if masked.value.any()
           else "each row sums to 1; no mask")
    if kind == "cross":
        sub = "each target row sums to 1 over the source; the decoder's only view of the encoder"
    height = int(150 + rows * (max(T, 3) * cell + 60)) if not rotate else int(86 + 90 + rows * max(T, 3) * cell
                                                                            + (rows - 1) * 110)
    layout.update(
        font=FONT, height=height, margin=dict(l=70, r=70, t=86, b=90 if rotate else 50), plot_bgcolor="white",
        title=dict(text=(f"<b>Block {layer} {what}: which {k_name} each {q_name} reads</b>"
                         f"<br><span style='font-size:12px'>{sub}</span>"),
                   x=0.01, xanchor="left"),
        coloraxis=dict(colorscale=SEQUENTIAL, cmin=0, cmax=1,
                       colorbar=dict(title=dict(text="weight"), thickness=12, len=0.9)),
        annotations=annotations, showlegend=False,
    )
    if shapes:
        layout["shapes"] = shapes
    return make_figure(data, layout)


def _masked(t, wname: str, mname, shape):
    """Which cells the mask hid (its -inf scores), as a Bound; all False for an unmasked attention."""
    if mname:
        return bnd.op("isneginf", bnd.source(t.trace, mname)[t.batch])
    return bnd.Bound(np.zeros(shape, dtype=bool), ["isneginf", ["index", ["out", wname], [t.batch]]])


def _query_key_labels(t, kind: str, T: int, S: int):
    """The row (query) and column (key) labels of the map."""
    if kind == "encoder":  # the encoder reads the source: queries and keys are source positions
        lab = axis_labels(t.source_labels or t.labels, T)
        return lab, lab
    if kind == "cross":
        return axis_labels(t.labels, T), axis_labels(t.source_labels, S)
    lab = bnd.token_axis_labels(t.labels, T)
    return lab, lab


def _outline_cells(outline, T: int, S: int) -> list:
    """The (row, column) cells to outline, checked against the map's T rows and S columns."""
    cells = []
    for cell in outline or ():
        try:
            r, c = (int(v) for v in cell)
        except (TypeError, ValueError):
            raise TinyTFInputError(f"outline takes (row, column) pairs of positions; got {cell!r}") from None
        if not (0 <= r < T and 0 <= c < S):
            raise TinyTFInputError(f"outline cell {(r, c)} is outside the map: rows 0..{T - 1}, columns 0..{S - 1}")
        cells.append((r, c))
    return cells


def _outline_shapes(cells, ax: str) -> list:
    """A box around each cell of one panel (category axes: cell k spans k - 0.5 .. k + 0.5)."""
    return [dict(type="rect", xref=f"x{ax}", yref=f"y{ax}", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5,
                 line=dict(color=OUTLINE_COLOR, width=2)) for r, c in cells]
