"""Block stepper (seed 002's animation): three tokens go through one decoder block, one
animation frame per stage, with Play/Pause and a stage slider that work in the static book.

Every number drawn is a trace entry of a real forward pass (``model.run_with_trace``)."""
from __future__ import annotations


from . import binding as bnd
from .common import (DIVERGING, FONT, MASK_GREY, MASK_MARK, SEQUENTIAL, animation_controls, axis_labels, get_traced,
                     make_figure, outputs_shape)
from .stages import block_stages

# Which stages move information between positions. tinytf.viz.shapes.measure_mixing measures
# this on a real model (tests check the two agree for every configuration).
MIXING_STAGES = {"scores", "wsum"}
MIXING_NOTES = {
    "embed": "no: each position gets its own vector",
    "norm1": "no: each token is rescaled on its own (shared weights)",
    "qkv": "no: projections and a reshape, per token",
    "rope": "no: each token is turned by its own position",
    "scores": "yes: every query meets every key",
    "mask": "no: it only blanks cells, deciding which pairs may mix",
    "softmax": "no: each query row on its own",
    "wsum": "yes: each token reads the values of itself and earlier positions",
    "merge": "no: per token",
    "resid1": "no: element-wise add, per token",
    "norm2": "no: per token (shared weights)",
    "up": "no: the same W for every token",
    "act": "no: element-wise",
    "down": "no: the same W for every token",
    "resid2": "no: element-wise add, per token",
}
FRAME_MS = 1400
BOTTOM = 140  # px below the plot: slider, its labels, then Play / Pause
RIGHT = 80  # px right of the plot: the colour bars (value, weight), with their ticks and titles
ROW_PX, LABEL_PX = 18, 40  # px per token row of a panel; px above a row of panels for its labels (the room that
# the book's figure core also leaves between subplots it stacks on a narrow screen, so a stage of fewer rows
# has the same height there)
ROW_AXES = ["y", "y3", "y4", "y5", "y6"]
# constant attributes of the heatmap / mask traces (the hover names the panel via fullData.name)
_HEAT = dict(type="heatmap", xgap=0, ygap=1,
             hovertemplate="<b>%{fullData.name}</b><br>token %{y}<br>value %{z:.4g}<extra></extra>")
_MASK = dict(type="heatmap", xgap=0, ygap=1, colorscale=[[0, MASK_GREY], [1, MASK_GREY]], showscale=False,
             hovertemplate="masked: token %{y} may not read this later key<extra></extra>")
_MARKS = dict(type="scatter", mode="markers", hoverinfo="skip", showlegend=False, name="mask marks",
              marker=dict(symbol="x-thin", size=9, line=dict(width=1.5, color=MASK_MARK)))  # one y axis per row of panels ("y2" is the position diagram)


class _Canvas:
    """Where every panel of every stage sits: one canvas whose x unit is one feature column, rows of panels in
    paper coordinates (fixed for the whole animation: plotly.animate cannot move subplots)."""

    def __init__(self, trace, b: int, stages: list, C: int, T: int):
        self.trace, self.b, self.C = trace, b, C
        self.g_op = max(2.0, 0.14 * C)  # gap holding an operator (+, =, →) or between Q | K | V
        self.g_head = max(1.0, 0.04 * C)  # gap between the heads of one group
        self.arrays = {}  # each trace tensor converted once, as a Bound (value + recipe)
        self.width, self.layouts = float(C), []
        for st in stages:
            kc = self.key_cell(st)
            rows = []
            for row in st.rows:
                mats = [self.values(pn) for pn in row]
                cells = [kc if pn.keys else 1.0 for pn in row]
                total = (sum(m.shape[-1] * c for m, c in zip(mats, cells))
                         + sum(self.gap(pn, i) for i, pn in enumerate(row)))
                rows.append((row, mats, cells, total))
                self.width = max(self.width, total)
            self.layouts.append(rows)
        self.n_rows = max(len(st.rows) for st in stages)
        # traces reserved per row of panels (a stage's rows sit at the top, right under the title)
        self.slots = [0] * self.n_rows
        for st in stages:
            for r, row in enumerate(st.rows):
                self.slots[r] = max(self.slots[r], len(row))
        # vertical layout in paper coordinates: a stage's rows share the plot's height equally (a stage of one
        # row is drawn taller, not followed by an empty band: the figure keeps one height for every stage)
        self.top, self.bottom = 0.97, 0.02
        self.plot_h = 24 + self.n_rows * (T * ROW_PX + LABEL_PX)  # px, as block_stepper sizes the figure
        self.label_h = LABEL_PX / self.plot_h
        self.diagram_row = 0  # the position diagram sits beside the top row of the stage with the most rows

    def array(self, name):
        if name not in self.arrays:
            self.arrays[name] = bnd.source(self.trace, name)
        return self.arrays[name]

    def values(self, pn):
        a = self.array(pn.source)
        return a[self.b][pn.index] if pn.source != "pos.table" else a[pn.index]

    def key_cell(self, stage):  # width of one key column, so that T x T score panels are readable
        n = max(sum(pn.keys for pn in row) for row in stage.rows)
        if not n:
            return 1.0
        S = max(self.values(pn).shape[-1] for row in stage.rows for pn in row if pn.keys)
        return min(self.C / n, 2.6 * self.C / (n * S))

    def gap(self, pn, i):
        return 0.0 if i == 0 else (self.g_op if pn.op in ("+", "=", "→", "|") else self.g_head)

    def x_range(self, rows):  # a frame's x range: its widest row, and at least two stream-wide panels
        span = max(max(total for *_, total in rows), min(self.width, 2 * self.C + self.g_op))
        return [(self.width - span) / 2 - 0.5, (self.width + span) / 2 + 0.5]

    def diagram_domain(self):  # the same on every frame (so that a narrow screen stacks it at one height)
        return self.row_domain(self.diagram_row, self.n_rows)

    def row_domain(self, r, n: int):
        """Row r of a stage with n rows (paper coordinates). A row the stage does not use (its axis and traces
        hidden in that frame) gets a sliver at the bottom, so that its empty subplot takes no hover from a row drawn."""
        if r >= n:
            return [0.0, 0.001]
        row_h = (self.top - self.bottom - n * self.label_h) / n
        y1 = self.top - r * (row_h + self.label_h) - self.label_h * 0.75
        return [y1 - row_h, y1]


class _Frame:
    """What one stage's frame collects while its panels are placed: traces per row, annotations, colour ranges."""

    def __init__(self, n_rows: int):
        self.heat = [[] for _ in range(n_rows)]
        self.masks = [[] for _ in range(n_rows)]
        self.annotations, self.mask_marks = [], {r: ([], []) for r in range(n_rows)}  # per row: Bound lists of x, y
        self.signed_vals, self.has_signed, self.has_weights = [], False, False


def _place_row(cv: _Canvas, fr: _Frame, r: int, n_used: int, row_layout, t, ylab):
    """Put one row of panels (heatmaps, operators, labels, masks) into the frame ``fr``."""
    row, mats, cells, total = row_layout
    dom = cv.row_domain(r, n_used)
    left = (cv.width - total) / 2
    for i, (pn, z, c) in enumerate(zip(row, mats, cells)):
        g = cv.gap(pn, i)
        if pn.op and pn.op != "|" and i > 0:
            fr.annotations.append(dict(x=left + g / 2, y=(dom[0] + dom[1]) / 2, text=pn.op, showarrow=False,
                                       font=dict(size=22, color="#333"), xref="x", yref="paper"))
        left += g
        w = z.shape[-1]
        masked = None
        if pn.masked:
            masked = bnd.op("isneginf", cv.array(pn.source.replace("weights", "masked_scores"))[cv.b][pn.index])
        if pn.kind == "weights":
            fr.has_weights = True
        else:
            fr.has_signed = True
            fr.signed_vals.append(z)
        width = w * c
        fr.annotations.append(dict(x=left + width / 2, y=dom[1], text=f"<b>{pn.label}</b>", showarrow=False,
                                   font=dict(size=11), xref="x", yref="paper", yanchor="bottom"))
        if pn.keys:  # key columns: the bare token ("c", not "0: c"), so that narrow columns stay legible
            key_labels = (bnd.token_labels_of(ylab) if t.source_labels is None
                          else axis_labels(t.source_labels, w))
            for j in range(w):
                fr.annotations.append(dict(x=left + (j + 0.5) * c, y=dom[0], text=bnd.op("item", key_labels, j),
                                           showarrow=False, font=dict(size=10, color="#555"),
                                           xref="x", yref="paper", yanchor="top"))
        fr.heat[r].append(dict(
            type="heatmap", z=bnd.op("where", masked, None, z) if masked is not None else z,
            x0=left + c / 2, dx=c, visible=True,
            coloraxis="coloraxis2" if pn.kind == "weights" else "coloraxis",
            name=f"{pn.name} ({'key' if pn.keys else 'feature'} columns)",
        ))
        if masked is not None and masked.value.any():  # which cells: set by the length (causal mask)
            fr.masks[r].append(dict(type="heatmap", z=bnd.op("where", masked, 1.0, None), x0=left + c / 2,
                                    dx=c, visible=True, name=f"{pn.name} mask"))
            kj = bnd.op("nonzero", masked, 1)
            fr.mask_marks[r][0].append(bnd.op("tolist", bnd.op("affine", kj, 0.5, c, left)))
            fr.mask_marks[r][1].append(bnd.op("take", ylab, bnd.op("nonzero", masked, 0)))
        left += width


def _stage_frame(cv: _Canvas, st, rows, k: int, n_stages: int, t, T: int, ylab) -> dict:
    """The animation frame of stage ``st`` (the k-th of n_stages): its traces, in fixed slots, and its layout."""
    fr = _Frame(cv.n_rows)
    n = len(rows)
    axes_layout = {}
    for r in range(cv.n_rows):  # a row this stage does not use: hidden, its traces too
        axes_layout["yaxis" + ROW_AXES[r][1:]] = dict(showticklabels=r < n, visible=r < n,
                                                      domain=cv.row_domain(r, n))
    for r, row_layout in enumerate(rows):
        _place_row(cv, fr, r, n, row_layout, t, ylab)
    data = []
    for r in range(cv.n_rows):  # fixed number of traces per row, so frames map onto the same traces
        for kind, items in (("heat", fr.heat[r]), ("mask", fr.masks[r])):
            while len(items) < cv.slots[r]:
                items.append(dict(type="heatmap", z=[[None]], x0=0, dx=1, visible=False, name="(unused)",
                                  **({"coloraxis": "coloraxis"} if kind == "heat" else {})))
            data += items
        data.append(dict(type="scatter", visible=r < n, **{k: bnd.op("concat", parts) if parts else []
                                                           for k, parts in zip("xy", fr.mask_marks[r])}))
    data += _position_diagram(cv.trace, st, T, ylab, cv.b)
    annotations = fr.annotations + _diagram_labels(cv.diagram_domain())
    m = bnd.op("symrange", fr.signed_vals)
    subtitle = f"shape {outputs_shape(cv.trace, st.outputs)} · mixes positions? {MIXING_NOTES.get(st.key, '')}"
    title = f"<b>{k + 1}/{n_stages} · {st.title}</b><br><span style='font-size:12px'>{subtitle}</span>"
    layout = dict(title=dict(text=title), annotations=annotations, xaxis=dict(range=cv.x_range(rows)),
                  yaxis2=dict(domain=cv.diagram_domain()),
                  coloraxis=dict(cmin=-m, cmax=m, showscale=fr.has_signed),
                  coloraxis2=dict(showscale=fr.has_weights), **axes_layout)
    return dict(name=st.key, data=data, layout=layout)


def _pad_annotations(frames: list) -> None:
    """plotly.animate merges a frame's annotations into the layout item by item and never drops
    extra items, so every frame carries the same number (padded with empty ones)
    and keeps keys an item does not set, so every annotation sets every key it could have."""
    n_ann = max(len(f["layout"]["annotations"]) for f in frames)
    for f in frames:
        anns = f["layout"]["annotations"]
        anns += [dict(text="", x=0, y=0, xref="paper", yref="paper")] * (n_ann - len(anns))
        f["layout"]["annotations"] = [_full_annotation(a) for a in anns]


def _constant_traces(cv: _Canvas, T: int, ylab) -> list:
    """Frames carry only what changes; plotly.animate keeps every other trace attribute, so the
    constant ones are set once, on the figure's traces."""
    consts = []
    for r in range(cv.n_rows):
        consts += [dict(_HEAT, y=ylab, yaxis=ROW_AXES[r])] * cv.slots[r]
        consts += [dict(_MASK, y=ylab, yaxis=ROW_AXES[r])] * cv.slots[r]
        consts.append(dict(_MARKS, yaxis=ROW_AXES[r]))
    return consts + _diagram_constants(T, ylab)


def _controls(frame_ms: int, plot_h: int, stages: list) -> dict:
    """Play / Pause below the slider (so that the two never overlap however narrow the page is), the stage slider."""
    return animation_controls(
        [st.key for st in stages], [f"{k + 1} {st.name}" for k, st in enumerate(stages)], frame_ms, "stage: ",
        buttons=dict(y=-98 / plot_h, pad=dict(t=0, r=0), font=dict(size=12)),
        slider=dict(x=0.03, len=0.93, pad=dict(t=26, b=0), font=dict(size=9), ticklen=4,
                    currentvalue=dict(prefix="stage: ", font=dict(size=12), visible=True, xanchor="left", offset=4)))


def _stepper_layout(cv: _Canvas, first: dict, T: int, ylab, fig_height: int, controls: dict) -> dict:
    """The figure's layout: axes, colour scales, the first frame's title and annotations, the controls."""
    layout = dict(
        font=FONT, height=fig_height, margin=dict(l=60, r=RIGHT, t=96, b=BOTTOM),
        plot_bgcolor="white", paper_bgcolor="white", showlegend=False,
        title=dict(text=first["layout"]["title"]["text"], x=0.01, xanchor="left", y=0.98, yanchor="top",
                   yref="container", font=dict(size=15)),
        xaxis=dict(domain=[0.14, 1.0], range=first["layout"]["xaxis"]["range"], showticklabels=False, showgrid=False,
                   zeroline=False, fixedrange=True, anchor="y"),
        xaxis2=dict(domain=[0.0, 0.1], range=[-0.4, 1.4], visible=False, fixedrange=True),
        yaxis2=dict(anchor="x2", domain=first["layout"]["yaxis2"]["domain"], range=[T - 0.5, -0.5], visible=False,
                    fixedrange=True),
        coloraxis=dict(first["layout"]["coloraxis"], colorscale=DIVERGING,
                       colorbar=dict(title=dict(text="value", side="right"), x=1.01, xanchor="left", len=0.75,
                                     y=1, yanchor="top", thickness=11)),
        coloraxis2=dict(first["layout"]["coloraxis2"], colorscale=SEQUENTIAL, cmin=0, cmax=1,
                        colorbar=dict(title=dict(text="weight", side="right"), x=1.01, xanchor="left", len=0.75,
                                      y=1, yanchor="top", thickness=11)),
        annotations=first["layout"]["annotations"],
        **controls,
    )
    for r in range(cv.n_rows):
        yname = "yaxis" + ROW_AXES[r][1:]
        layout[yname] = dict(first["layout"][yname], anchor="x", type="category",
                             autorange=False, range=[T - 0.5, -0.5], showgrid=False, fixedrange=True,
                             tickfont=dict(size=11), categoryorder="array", categoryarray=ylab)
    return layout


def block_stepper(model, ids=None, layer: int = 0, labels=None, config=None, batch: int = 0,
                  frame_ms: int = FRAME_MS, height: int | None = None):
    """Animated figure: one frame per stage of decoder block ``layer``, Play/Pause buttons and a
    stage slider (all plotly, so they work in the static book).

    ``model`` is a TinyTransformer (with ``ids``: token ids or a string) or a ready Trace.
    Frames are named by stage key: embed, norm1, qkv, [rope], scores, mask, softmax, wsum, merge,
    resid1, norm2, up, act, down, resid2 (post-norm blocks fold the norms into resid1 / resid2).
    Each frame draws the stage's tensors as heatmaps (one row per token, drawn to scale within the
    frame: the FFN hidden layer is d_ff/C times as wide; each frame's x range fits its widest row), the
    shape, and a diagram of which positions feed which."""
    t = get_traced(model, ids, labels=labels, batch=batch, config=config)
    trace, b = t.trace, t.batch
    stages = block_stages(trace, layer, t.config)
    T = trace[stages[-1].outputs[0]].shape[-2]
    ylab = bnd.token_axis_labels(t.labels, T)
    C = trace[stages[-1].outputs[0]].shape[-1]
    cv = _Canvas(trace, b, stages, C, T)
    frames = [_stage_frame(cv, st, rows, k, len(stages), t, T, ylab)
              for k, (st, rows) in enumerate(zip(stages, cv.layouts))]
    _pad_annotations(frames)
    consts = _constant_traces(cv, T, ylab)
    first = frames[0]
    assert all(len(f["data"]) == len(consts) for f in frames)
    initial_data = [dict(c, **d) for c, d in zip(consts, first["data"])]
    fig_height = height or int(BOTTOM + 96 + cv.plot_h)
    plot_h = fig_height - 96 - BOTTOM
    layout = _stepper_layout(cv, first, T, ylab, fig_height, _controls(frame_ms, plot_h, stages))
    return make_figure(initial_data, layout, frames)


def _full_annotation(a: dict) -> dict:
    font = dict(dict(size=11, color="#2a3f5f"), **a.get("font", {}))
    return dict(dict(xanchor="center", yanchor="middle", showarrow=False, visible=True), **dict(a, font=font))


def _position_diagram(trace, stage, T, ylab, b):
    """Left mini-diagram: positions in (left) -> positions out (right). Straight lines = per
    token (also the mask and softmax, which work on one query's row of scores at a time); slanted
    lines = a query reading an earlier key (from the trace's attention weights)."""
    y = list(range(T))
    ex, ey = [], []
    wx, wy, wval, wtext = [], [], [], []
    p = stage.inputs[0].rsplit("attn.", 1)[0] if "attn." in stage.inputs[0] else None
    if stage.edges == "straight" or p is None:
        for i in y:
            ex += [0, 1, None]
            ey += [i, i, None]
    else:
        weights = bnd.source(trace, p + "attn.weights")[b].mean(0)  # [T, S], mean over heads
        ms = bnd.source(trace, p + "attn.masked_scores")[b]
        blocked_b = bnd.op("all", bnd.op("isneginf", ms), 0)  # masked in every head
        blocked = blocked_b.value  # which: set by the length (a causal mask); the lines are geometry
        for i in range(T):
            for j in range(weights.shape[-1]):
                if stage.edges == "attention" or not blocked[i, j]:
                    ex += [0, 1, None]
                    ey += [j, i, None]
                if stage.edges == "weights" and not blocked[i, j]:
                    wx.append(0.72)
                    wy.append(j + 0.72 * (i - j))
        if stage.edges == "weights":  # the values of the cells drawn (C order, as the loop above)
            free = bnd.op("not", blocked_b)
            w_free = bnd.op("select", weights, free)
            wval = bnd.op("tolist", w_free)
            wtext = bnd.op("format", "{} reads {}: weight {:.3f} (mean of heads)",
                           [bnd.op("take", ylab, bnd.op("nonzero", free, k)) for k in (0, 1)] + [w_free])
            wsize = bnd.op("tolist", bnd.op("affine", w_free, 0, 14, 6))
    if not isinstance(wval, bnd.Bound):
        wsize = []
    return [  # the parts that change; _diagram_constants has the rest
        dict(type="scatter", x=ex, y=ey),
        dict(type="scatter", x=wx, y=wy, text=wtext,
             marker=dict(size=wsize, color=wval, coloraxis="coloraxis2",
                         line=dict(width=0.5, color="#222"))),
        dict(type="scatter"),
    ]


def _diagram_constants(T, ylab):
    y = list(range(T))
    tokens = bnd.op("repeat", bnd.token_labels_of(ylab), 2)
    return [
        dict(type="scatter", xaxis="x2", yaxis="y2", mode="lines", hoverinfo="skip",
             line=dict(color="#4d4d4d", width=1.6), name="reads"),
        dict(type="scatter", xaxis="x2", yaxis="y2", mode="markers", hovertemplate="%{text}<extra></extra>",
             name="weight"),
        dict(type="scatter", x=[0] * T + [1] * T, y=y + y, xaxis="x2", yaxis="y2", mode="markers+text",
             text=tokens,
             textposition=["middle left"] * T + ["middle right"] * T, hoverinfo="skip",
             marker=dict(size=11, color="#0072B2"), textfont=dict(size=12), name="positions"),
    ]


def _diagram_labels(domain):
    return [dict(text=text, x=x, y=domain[1], xref="x2", yref="paper", yanchor="bottom", showarrow=False,
                 font=dict(size=11, color="#555")) for text, x in (("in", 0), ("out", 1))]
