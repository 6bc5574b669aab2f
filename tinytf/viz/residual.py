"""Residual addition: the stream, the sublayer's output, and their sum, per token, with norms.

The panels are named with chapter 6's symbols (as in the block stepper): H is the stream entering the block,
U the stream between its two sublayers, H' the stream leaving it."""
from __future__ import annotations

from ..errors import TinyTFInputError
from . import binding as bnd
from .common import DIVERGING, FONT, OKABE_ITO, block_prefix, get_traced, is_post_norm, make_figure

SUBLAYERS = ("attn", "ffn")


def residual_parts(trace, layer: int = 0, sublayer: str = "attn", config=None):
    """[(label, trace name)] for the stream entering the sublayer (H or U), the sublayer output, and the stream
    after the add (U or H')."""
    if sublayer not in SUBLAYERS:
        raise TinyTFInputError(f"sublayer must be 'attn' or 'ffn'; got {sublayer!r}")
    p = block_prefix(trace, layer)
    post = is_post_norm(trace, p, config)
    if sublayer == "attn":
        x, f, out = p + "resid_pre", p + "attn.out", p + "resid_mid"
        names = ("H", "Attn(H)", "U = Norm1(H + Attn(H))") if post else ("H", "Attn(Norm1(H))", "U")
    else:
        x, f, out = p + "resid_mid", p + "ffn.out", p + "resid_post"
        names = ("U", "FFN(U)", "H' = Norm2(U + FFN(U))") if post else ("U", "FFN(Norm2(U))", "H'")
    return list(zip(names, (x, f, out))), post


def residual_view(model, ids=None, layer: int = 0, sublayer: str = "attn", labels=None, config=None,
                  batch: int = 0):
    """Three heatmaps side by side, one row per token, on one colour scale: the stream entering the sublayer,
    the sublayer's output and their sum (attention: H, Attn(Norm1(H)), U; FFN: U, FFN(Norm2(U)), H'), and below
    them each token's L2 norm for the three. For a post-norm block the panels are H, Attn(H) and
    U = Norm1(H + Attn(H)) (FFN: U, FFN(U), H' = Norm2(U + FFN(U))): the stream itself is normalised."""
    t = get_traced(model, ids, labels=labels, batch=batch, config=config)
    parts, post = residual_parts(t.trace, layer, sublayer, t.config)
    mats = [bnd.source(t.trace, name)[t.batch] for _, name in parts]  # 3 x [T, C], Bound (value + recipe)
    T, C = mats[0].shape
    ylab = bnd.token_axis_labels(t.labels, T)
    m = bnd.op("symrange", mats)
    data, annotations = [], []
    gap = 0.04
    pw = (1 - 2 * gap) / 3
    layout = {}
    for i, ((name, src), z) in enumerate(zip(parts, mats)):
        ax = "" if i == 0 else str(i + 1)
        x0 = i * (pw + gap)
        layout[f"xaxis{ax}"] = dict(domain=[x0, x0 + pw], anchor=f"y{ax}", fixedrange=True, showgrid=False,
                                    zeroline=False, tickfont=dict(size=9),
                                    title=dict(text="feature", font=dict(size=10), standoff=2))
        layout[f"yaxis{ax}"] = dict(domain=[0.45, 1.0], anchor=f"x{ax}", type="category", autorange="reversed",
                                    showticklabels=i == 0, fixedrange=True,
                                    title=dict(text="token" if i == 0 else "", font=dict(size=11)))
        data.append(dict(type="heatmap", z=z, y=ylab, xaxis=f"x{ax}", yaxis=f"y{ax}", coloraxis="coloraxis",
                         ygap=2, name=name,
                         hovertemplate=f"<b>{name}</b><br>token %{{y}}<br>feature %{{x}}<br>value %{{z:.4g}}"
                                       f"<extra>{src}</extra>"))
        annotations.append(dict(text=f"<b>{name}</b>", x=x0 + pw / 2, y=1.0, xref="paper", yref="paper",
                                yanchor="bottom", showarrow=False, font=dict(size=12)))
        if i < 2:
            op = ("+", "→ Norm") if post else ("+", "=")
            annotations.append(dict(text=op[i],
                                    x=x0 + pw + gap / 2, y=0.72, xref="paper", yref="paper", showarrow=False,
                                    font=dict(size=24, color="#333")))
    norms = [bnd.op("norm", z, -1) for z in mats]  # per token
    for i, ((name, _), nv) in enumerate(zip(parts, norms)):
        data.append(dict(type="bar", x=ylab, y=nv, name=f"‖{name}‖", xaxis="x4", yaxis="y4",
                         marker=dict(color=OKABE_ITO[i]),
                         hovertemplate=f"‖{name}‖<br>token %{{x}}<br>L2 norm %{{y:.4g}}<extra></extra>"))
    layout["xaxis4"] = dict(domain=[0.0, 1.0], anchor="y4", type="category", fixedrange=True,
                            title=dict(text="token", font=dict(size=11)))
    layout["xaxis4"]["domain"] = [0.0, 0.86]
    layout["yaxis4"] = dict(domain=[0.0, 0.28], anchor="x4", fixedrange=True, rangemode="tozero",
                            title=dict(text="L2 norm", font=dict(size=11)))
    what = "attention" if sublayer == "attn" else "FFN"
    if post:
        sub = "post-norm: the sum is normalised, so the stream itself is rescaled at every add"
    else:
        sub = "pre-norm: the stream passes through unchanged; the sublayer's output is added to it"
    layout.update(
        font=FONT, height=120 + 36 * T + 330, margin=dict(l=70, r=70, t=90, b=50), plot_bgcolor="white",
        title=dict(text=f"<b>Block {layer}, {what} sublayer: residual addition per token</b>"
                        f"<br><span style='font-size:12px'>{sub}</span>", x=0.01, xanchor="left"),
        coloraxis=dict(colorscale=DIVERGING, cmin=-m, cmax=m,
                       colorbar=dict(title=dict(text="value"), thickness=12, len=0.55, y=0.72)),
        barmode="group", annotations=annotations,
        legend=dict(orientation="v", x=1.0, xanchor="left", y=0.3, yanchor="top", font=dict(size=10)),
    )
    return make_figure(data, layout)
