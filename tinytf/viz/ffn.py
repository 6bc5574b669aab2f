"""FFN expansion: C -> d_ff -> C per token (and SiLU(gate) * up for SwiGLU), with how many
hidden units are exactly zero (ReLU) or near zero (GELU, SiLU), counted in the trace."""
from __future__ import annotations


from . import binding as bnd
from .common import DIVERGING, FONT, OKABE_ITO, block_prefix, get_traced, is_post_norm, make_figure

NEAR_ZERO = 1e-2


def ffn_parts(trace, layer: int = 0, x_label: str | None = None):
    """[(label, trace name, is_hidden)] from the FFN input to its output, for this block; ``x_label`` replaces
    the input's label ("x = U" post-norm, "x = Norm2(U)" pre-norm, in chapter 5's notation)."""
    p = block_prefix(trace, layer)
    post = is_post_norm(trace, p, None)
    x_in = (p + "resid_mid", "x = U") if post else (p + "norm2.out", "x = Norm2(U)")
    if x_label is not None:
        x_in = (x_in[0], x_label)
    if p + "ffn.gate" in trace:  # SwiGLU
        mid = [("gate = x·W_gate", p + "ffn.gate", True), ("up = x·W_up", p + "ffn.up", True),
               ("SiLU(gate)", p + "ffn.act", True), ("h = SiLU(gate) ⊙ up", p + "ffn.post", True)]
        down = "h·W_down"
    else:
        mid = [("x·W1", p + "ffn.pre", True), ("h = act(x·W1)", p + "ffn.post", True)]
        down = "h·W2"
    return [(x_in[1], x_in[0], False)] + mid + [(f"FFN(x) = {down}", p + "ffn.out", False)]


def ffn_sparsity(model_or_trace, ids=None, layer: int = 0, near: float = NEAR_ZERO, batch=None):
    """{label: (fraction exactly 0, fraction with |h| < near)} for each hidden tensor after an
    activation (ReLU/GELU: the hidden h; SwiGLU: SiLU(gate) and h), counted over the whole trace
    tensor (all batch rows and positions) unless ``batch`` picks one sequence."""
    t = get_traced(model_or_trace, ids)
    out = {}
    for label, name, hidden in ffn_parts(t.trace, layer):
        if not hidden or name.endswith(("ffn.pre", "ffn.gate", "ffn.up")):
            continue
        h = t.trace[name] if batch is None else t.trace[name][batch]
        out[label] = (float((h == 0).float().mean()), float((h.abs() < near).float().mean()))
    return out


def _bound_sparsity(parts, mats, near, near_rms=None) -> dict:
    """ffn_sparsity of one sequence, as Bound values (the same float32 shares, with their recipes);
    ``near_rms``: "near zero" is |h| < near_rms * RMS(h), RMS over the tensor, instead of |h| < ``near``."""
    return {label: (bnd.op("frac_eq", z, 0.0),
                    bnd.op("frac_abs_lt", z, near) if near_rms is None else bnd.op("frac_abs_lt_rms", z, near_rms))
            for (label, name, hidden), z in zip(parts, mats)
            if hidden and not name.endswith(("ffn.pre", "ffn.gate", "ffn.up"))}


def ffn_expansion(model, ids=None, layer: int = 0, labels=None, near: float = NEAR_ZERO, batch: int = 0,
                  near_rms: float | None = None, x_label: str | None = None, h_own_scale: bool = False, bar_max=1.25):
    """Stacked heatmaps, each drawn at its true width: the FFN input [T, C], the hidden tensors
    [T, d_ff] (d_ff = 4C in the classic block, so 4x as wide) and the output [T, C] (the book keeps the widths
    to scale at every page width: ``layout.meta.tinytf.toScale``); a bar chart below them gives the fraction of hidden units exactly zero and near zero (|h| < ``near``, or, with ``near_rms``,
    |h| < near_rms times the root-mean-square of that hidden tensor, a threshold relative to its size).
    ``x_label`` renames the input row (see ffn_parts); with ``h_own_scale`` a SwiGLU's h = SiLU(gate) ⊙ up gets its
    own symmetric colour scale and colour bar, so that its values show even when they are much smaller than the
    gate's (the other hidden rows keep their shared scale, whose colour bar then names them). ``bar_max``: the bars' axis end."""
    t = get_traced(model, ids, labels=labels, batch=batch)
    parts = ffn_parts(t.trace, layer, x_label)
    mats = [bnd.source(t.trace, name)[t.batch] for _, name, _ in parts]  # Bound (value + recipe)
    T, C = mats[0].shape
    Fh = max(m.shape[-1] for m in mats)
    ylab = bnd.token_axis_labels(t.labels, T)
    sparsity = _bound_sparsity(parts, mats, near, near_rms)
    n = len(parts)
    own_h = h_own_scale and any(name.endswith("ffn.gate") for _, name, _ in parts)
    shared = [i for i, (_, _, hid) in enumerate(parts) if hid and not (own_h and i == n - 2)]
    m_hid = bnd.op("symrange", [mats[i] for i in shared])
    left_w = 0.85  # the heatmaps' column; the colour bars sit to its right
    row_px, title_px, bar_px = T * 20 + 48, 34, 130  # a heatmap row (with its title above it), the bar chart
    plot_px = n * row_px + bar_px
    ph, step = (row_px - title_px) / plot_px, row_px / plot_px
    data, layout, annotations = [], {}, []
    # three colour scales: the FFN input, the hidden tensors, the FFN output (often much smaller)
    groups = {"in": [0], "hidden": shared, "out": [n - 1]}
    axis_of = {0: "coloraxis", n - 1: "coloraxis3"}
    if own_h:  # h, the last hidden row, on a fourth scale of its own
        axis_of[n - 2] = "coloraxis4"
    for i, ((label, name, hidden), z) in enumerate(zip(parts, mats)):
        ax = "" if i == 0 else str(i + 1)
        width = left_w * z.shape[-1] / Fh
        x0 = (left_w - width) / 2
        y1 = 1 - i * step - title_px / plot_px
        layout[f"xaxis{ax}"] = dict(domain=[x0, x0 + width], anchor=f"y{ax}", fixedrange=True, showgrid=False,
                                    zeroline=False, tickfont=dict(size=9), nticks=5)
        layout[f"yaxis{ax}"] = dict(domain=[y1 - ph, y1], anchor=f"x{ax}", type="category", autorange="reversed",
                                    fixedrange=True, tickfont=dict(size=10))
        data.append(dict(type="heatmap", z=z, y=ylab, xaxis=f"x{ax}", yaxis=f"y{ax}", ygap=1, name=label,
                         coloraxis=axis_of.get(i, "coloraxis2"),
                         hovertemplate=f"<b>{label}</b><br>token %{{y}}<br>unit %{{x}}<br>value %{{z:.4g}}"
                                       f"<extra>{name}</extra>"))
        annotations.append(dict(text=f"<b>{label}</b> [{T}, {z.shape[-1]}]", x=left_w / 2, y=y1, xref="paper",
                                yref="paper", yanchor="bottom", showarrow=False, font=dict(size=11)))
    bar_top = (bar_px - 40) / plot_px  # the legend sits above the bars
    bars, bar_axes = _sparsity_bars(sparsity, near, near_rms, n + 1, left_w, bar_top, bar_max)
    data += bars
    layout.update(bar_axes)
    hid = groups["hidden"]

    def bar(title, i0, i1):
        top = 1 - i0 * step - title_px / plot_px
        bottom = 1 - i1 * step - title_px / plot_px - ph
        return dict(title=dict(text=title, side="right", font=dict(size=10)), thickness=9, x=left_w + 0.01,
                    xanchor="left", y=(top + bottom) / 2, len=max(top - bottom, ph), yanchor="middle",
                    tickfont=dict(size=9))

    m_in, m_out = bnd.op("symrange", [mats[0]]), bnd.op("symrange", [mats[-1]])
    ratio = Fh / C
    layout.update(
        font=FONT, height=int(plot_px + 130), margin=dict(l=70, r=30, t=90, b=40), meta=dict(tinytf=dict(toScale=True)),
        plot_bgcolor="white", barmode="group", annotations=annotations,
        title=dict(text=(f"<b>Block {layer} FFN: each token goes {C} → {Fh} → {C} features "
                         f"({ratio:g}× wider inside), drawn to scale</b>"
                         "<br><span style='font-size:12px'>the same weights for every token; "
                         + ("below: hidden units that are exactly or nearly zero" if near_rms is None else
                            f"below: hidden values exactly 0, and near 0 (|v| below {near_rms:.0%} of the RMS of "
                            "its tensor)") + "</span>"), x=0.01, xanchor="left"),
        coloraxis=dict(colorscale=DIVERGING, cmin=-m_in, cmax=m_in, colorbar=bar("input", 0, 0)),
        coloraxis2=dict(colorscale=DIVERGING, cmin=-m_hid, cmax=m_hid, colorbar=bar("hidden: gate, up, SiLU(gate)" if own_h else "hidden", hid[0], hid[-1])),
        coloraxis3=dict(colorscale=DIVERGING, cmin=-m_out, cmax=m_out, colorbar=bar("output", n - 1, n - 1)),
        legend=dict(x=0.3, y=bar_top + 0.01, yanchor="bottom", xanchor="left", orientation="h", font=dict(size=10)),
    )
    if own_h:
        m_h = bnd.op("symrange", [mats[n - 2]])
        layout["coloraxis4"] = dict(colorscale=DIVERGING, cmin=-m_h, cmax=m_h, colorbar=bar("h", n - 2, n - 2))
    return make_figure(data, layout)


def _sparsity_bars(sparsity: dict, near: float, near_rms, k: int, left_w: float, bar_top: float, bar_max=1.25):
    """The bar chart under ffn_expansion's heatmaps: per hidden tensor, the share of its values (token x unit) exactly 0 and near 0,
    on axes x{k}/y{k} below the heatmaps (up to ``bar_top`` of the figure's height). Returns (traces, axes)."""
    labels_s = list(sparsity)
    near_label = f"|v| < {near:g}" if near_rms is None else f"|v| < {near_rms:g}·RMS of its tensor"
    data = []
    for j, (what, color) in enumerate((("exactly 0", OKABE_ITO[0]), (near_label, OKABE_ITO[1]))):
        vals = bnd.op("list", [sparsity[lab][j] for lab in labels_s])
        data.append(dict(type="bar", x=vals, y=labels_s, orientation="h", name=what, xaxis=f"x{k}",
                         yaxis=f"y{k}", marker=dict(color=color), text=bnd.op("format", "{:.0%}", [vals]),
                         textposition="outside", cliponaxis=False, textfont=dict(size=10),
                         hovertemplate=f"%{{y}}<br>{what}: %{{x:.1%}}<extra></extra>"))
    axes = {f"xaxis{k}": dict(domain=[0.3, left_w], anchor=f"y{k}", range=[0, bar_max], tickformat=".0%",
                              tickvals=[v for v in (0, 0.5, 1) if v <= bar_max], fixedrange=True,
                              title=dict(text="share of hidden values", font=dict(size=11))),
            f"yaxis{k}": dict(domain=[0, bar_top], anchor=f"x{k}", fixedrange=True,
                              autorange="reversed", tickfont=dict(size=10), type="category")}
    return data, axes
