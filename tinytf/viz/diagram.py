"""Block diagrams drawn by code (plotly shapes and annotations), so that they render offline like every other
figure of the book (show them with ``tinytf.viz.show``).

- :func:`block_diagram`: one decoder block, pre-norm (the Llama-3-style block) or post-norm (2017);
- :func:`model_diagram`: a decoder-only language model, ids to logits, with the block repeated;
- :func:`encoder_decoder_diagram`: the encoder-decoder of 2017, with cross-attention joining the stacks.

Each is a plain ``go.Figure``: boxes for the sublayers (one colour per kind: norm, attention, FFN,
embedding/head), ⊕ for the residual additions, arrows for the data flow, read from bottom (input) to top
(output), as in the 2017 paper's figure. The residual path is drawn to the left of the sublayers it bypasses.
"""
from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

COLORS = {  # fill colours by kind of step (colour-blind-safe pairs from the Okabe-Ito palette, lightened)
    "norm": "#f6e0a6",
    "attention": "#a9d3ef",
    "cross": "#c7b3e6",
    "ffn": "#b5e3c7",
    "embed": "#e6e6e6",
    "io": "#ffffff",
}
BOX_W, BOX_H, STEP = 2.6, 0.62, 1.0
# The block's input and output are named in words, not with a letter: the chapters write the stream as x
# (chapter 5) or H (chapter 6), and H is also the number of heads, so no one letter fits every chapter.
STREAM_IN, STREAM_OUT = "residual stream in  [B, T, C]", "residual stream out  [B, T, C]"


@dataclass
class Step:
    label: str
    kind: str  # a key of COLORS, or "add" for a residual addition
    y: float = 0.0


def _box(fig, x, step: Step, width=BOX_W):
    if step.kind == "add":
        r = 0.2
        fig.add_shape(type="circle", x0=x - r, x1=x + r, y0=step.y - r, y1=step.y + r,
                      line=dict(color="#333", width=1.5), fillcolor="white")
        fig.add_annotation(x=x, y=step.y, text="+", showarrow=False, font=dict(size=16, color="#333"))
        return
    border = dict(color="#333", width=1.2) if step.kind != "io" else dict(color="#999", width=1, dash="dot")
    fig.add_shape(type="rect", x0=x - width / 2, x1=x + width / 2, y0=step.y - BOX_H / 2, y1=step.y + BOX_H / 2,
                  line=border, fillcolor=COLORS[step.kind], layer="below")
    fig.add_annotation(x=x, y=step.y, text=step.label, showarrow=False, font=dict(size=12, color="#111"))


def _top(step: Step) -> float:
    return step.y + (0.2 if step.kind == "add" else BOX_H / 2)


def _bottom(step: Step) -> float:
    return step.y - (0.2 if step.kind == "add" else BOX_H / 2)


def _arrow(fig, x0, y0, x1, y1, color="#333", dash=None):
    if dash:
        fig.add_shape(type="line", x0=x0, y0=y0, x1=x1, y1=y1, line=dict(color=color, width=1.5, dash=dash))
        return
    fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="",
                       showarrow=True, arrowhead=2, arrowsize=1.1, arrowwidth=1.5, arrowcolor=color)


def _column(fig, x, steps, y0=0.0, width=BOX_W):
    """Place the steps bottom to top at x, draw them and the arrows between them."""
    for i, step in enumerate(steps):
        step.y = y0 + i * STEP
        _box(fig, x, step, width)
    for a, b in zip(steps, steps[1:]):
        _arrow(fig, x, _top(a), x, _bottom(b))
    return steps


def _residual(fig, x, steps, start, add, offset=1.75, label=None):
    """The residual path: leaves the arrow above steps[start], runs left of the column, enters steps[add] (⊕)."""
    y_split = (_top(steps[start]) + _bottom(steps[start + 1])) / 2
    xl = x - offset
    y_add = steps[add].y
    fig.add_shape(type="path", path=f"M {x},{y_split} L {xl},{y_split} L {xl},{y_add}",
                  line=dict(color="#c0392b", width=2))
    _arrow(fig, xl, y_add, x - 0.2, y_add, color="#c0392b")
    fig.add_shape(type="circle", x0=x - 0.05, x1=x + 0.05, y0=y_split - 0.05, y1=y_split + 0.05,
                  fillcolor="#c0392b", line=dict(color="#c0392b"))
    if label:
        fig.add_annotation(x=xl - 0.1, y=(y_split + y_add) / 2, text=label, showarrow=False, textangle=-90,
                           font=dict(size=11, color="#c0392b"))


def _bracket(fig, x, steps, first, last, text, offset=1.75):
    """A bracket to the right of steps[first..last] with a note such as '× N layers'."""
    y0, y1 = _bottom(steps[first]) - 0.15, _top(steps[last]) + 0.15
    xr = x + offset
    fig.add_shape(type="path", path=f"M {xr - 0.15},{y0} L {xr},{y0} L {xr},{y1} L {xr - 0.15},{y1}",
                  line=dict(color="#555", width=1.5))
    fig.add_annotation(x=xr + 0.15, y=(y0 + y1) / 2, text=text, showarrow=False, xanchor="left",
                       font=dict(size=12, color="#333"))


def _figure(title, x_range, y_range, height, width=None):
    fig = go.Figure()
    extra = 22 * title.count("<br>")  # room for each extra line of a title wrapped with <br>
    fig.update_layout(title=dict(text=title, x=0.5, xanchor="center"), template="plotly_white",
                      height=height + extra,
                      width=width, showlegend=False, margin=dict(l=10, r=10, t=60 + extra, b=10),
                      xaxis=dict(visible=False, range=list(x_range), fixedrange=True),
                      yaxis=dict(visible=False, range=list(y_range), fixedrange=True, scaleanchor="x"),
                      dragmode=False)
    return fig


def _block_steps(norm_position: str, norm: str, attention: str, ffn: str, cross: bool = False):
    if norm_position == "pre":
        steps = [Step(STREAM_IN, "io"), Step(norm, "norm"), Step(attention, "attention"),
                 Step("", "add")]
        residuals = [(0, 3)]
        if cross:
            steps += [Step(norm, "norm"), Step("cross-attention<br>(K, V from the memory)", "cross"), Step("", "add")]
            residuals.append((3, 6))
        start = len(steps) - 1
        steps += [Step(norm, "norm"), Step(ffn, "ffn"), Step("", "add"), Step(STREAM_OUT, "io")]
        residuals.append((start, start + 3))
        return steps, residuals
    if norm_position == "post":
        steps = [Step(STREAM_IN, "io"), Step(attention, "attention"), Step("", "add"),
                 Step(norm, "norm")]
        residuals = [(0, 2)]
        if cross:
            steps += [Step("cross-attention<br>(K, V from the memory)", "cross"), Step("", "add"), Step(norm, "norm")]
            residuals.append((3, 5))
        start = len(steps) - 1
        steps += [Step(ffn, "ffn"), Step("", "add"), Step(norm, "norm"), Step(STREAM_OUT, "io")]
        residuals.append((start, start + 2))
        return steps, residuals
    raise ValueError(f"norm_position must be 'pre' or 'post', got {norm_position!r}")


def block_diagram(norm_position: str = "pre", title: str | None = None, sublayers: str | None = None) -> go.Figure:
    """One decoder block: pre-norm (RMSNorm, causal attention with RoPE, SwiGLU: the Llama-3-style block) or
    post-norm (LayerNorm after each addition, ReLU MLP: the 2017 block).

    ``sublayers`` draws either placement with the other's parts: ``"llama"`` (RMSNorm, RoPE, SwiGLU) or
    ``"2017"`` (LayerNorm, no RoPE, ReLU MLP); by default pre-norm gets the Llama-3 parts and post-norm the 2017
    ones, as released. ``block_diagram("post", sublayers="llama")`` differs from ``block_diagram("pre")`` only in
    where the norms sit."""
    if norm_position not in ("pre", "post"):
        raise ValueError(f"norm_position must be 'pre' or 'post', got {norm_position!r}")
    if sublayers is None:
        sublayers = "llama" if norm_position == "pre" else "2017"
    if sublayers == "llama":
        parts = ("RMSNorm", "causal self-attention<br>(Q, K, V · RoPE · mask · W<sub>o</sub>)",
                 "SwiGLU FFN  C → d<sub>ff</sub> → C")
    elif sublayers == "2017":
        parts = ("LayerNorm", "causal self-attention<br>(Q, K, V · mask · W<sub>o</sub>)", "ReLU MLP  C → 4C → C")
    else:
        raise ValueError(f"sublayers must be 'llama', '2017' or None, got {sublayers!r}")
    steps, residuals = _block_steps(norm_position, *parts)
    as_released = sublayers == ("llama" if norm_position == "pre" else "2017")
    if title is None and as_released:
        # two lines: one line of this title overflows a phone-width (375 px) page
        title = ("A pre-norm decoder block<br>(the Llama-3-style block)" if norm_position == "pre"
                 else "A post-norm decoder block<br>(the 2017 block)")
    elif title is None:
        kind = "Llama-3-style" if sublayers == "llama" else "2017"
        title = f"A {norm_position}-norm decoder block<br>with the {kind} sublayers"
    fig = _figure(title, (-3.2, 1.9), (-0.6, len(steps) - 0.4), height=90 + 62 * len(steps), width=430)
    _column(fig, 0.0, steps)
    for start, add in residuals:
        _residual(fig, 0.0, steps, start, add, label="residual")
    return fig


def model_diagram(n_layers: int = 2, title: str | None = None, shapes: bool = False) -> go.Figure:
    """A decoder-only language model: ids → embedding → n_layers blocks → final norm → LM head → logits.

    ``shapes=True`` writes the stream's shape ``[B, T, C]`` beside every arrow from the embedding to the LM head."""
    steps = [Step("token ids  [B, T]", "io"), Step("embedding (one row per id)", "embed")]
    shown = min(n_layers, 3)
    for i in range(shown):
        label = f"block {i}" if (i < shown - 1 or shown == n_layers) else f"… block {n_layers - 1}"
        steps.append(Step(label + "<br>(norm, attention, +, norm, FFN, +)", "attention"))
    steps += [Step("final RMSNorm", "norm"), Step("LM head  C → V", "embed"), Step("logits  [B, T, V]", "io")]
    title = title or f"A decoder-only language model ({n_layers} blocks)"
    fig = _figure(title, (-2.4, 3.2), (-0.6, len(steps) - 0.4), height=90 + 58 * len(steps), width=520)
    _column(fig, 0.0, steps, width=4.0)
    _bracket(fig, 0.0, steps, 2, 1 + shown, f"× {n_layers}<br>same shape<br>in and out", offset=2.2)
    if shapes:  # the arrows that carry the stream: embedding → blocks → final norm → LM head
        for a, b in zip(steps[1:-2], steps[2:-1]):
            # 14 px: a phone-width page scales this 520-px figure by about 2/3, and 11 px became hard to read
            fig.add_annotation(x=0.12, y=(_top(a) + _bottom(b)) / 2, text="[B, T, C]", showarrow=False,
                               xanchor="left", font=dict(size=14, color="#555"))
    return fig


def _encdec_stacks(norm_position: str):
    """The encoder's and the decoder's steps, bottom to top, and their residual additions."""
    norm = "RMSNorm" if norm_position == "pre" else "LayerNorm"
    ffn = "FFN"
    enc, enc_res = _block_steps(norm_position, norm, "self-attention (no mask)", ffn)
    dec, dec_res = _block_steps(norm_position, norm, "masked self-attention", ffn, cross=True)
    encoder = [Step("source ids", "io"), Step("embedding", "embed")] + enc[1:-1] + \
        [Step(f"final {norm}<br>= memory [B, S, C]", "norm")]
    decoder = [Step("target ids", "io"), Step("embedding", "embed")] + dec[1:-1] + \
        [Step(f"final {norm}", "norm"), Step("LM head<br>→ logits [B, T, V]", "embed")]
    return encoder, enc_res, decoder, dec_res


# below this width (px) the book draws the narrow layout: the wide one, scaled to a phone, had 5-px text
NARROW_BELOW = 600


def encoder_decoder_diagram(norm_position: str = "pre", title: str | None = None) -> go.Figure:
    """The encoder-decoder: a bidirectional encoder stack whose output (the memory) feeds the cross-attention
    of every decoder block.

    The figure carries a second layout for narrow screens in ``layout.meta.tinytf.narrow`` (the book's figure
    core draws it below ``NARROW_BELOW`` px): the decoder stacked above the encoder, with larger text."""
    title = title or "The encoder–decoder: cross-attention joins the two stacks"
    fig = _encdec_wide(norm_position, title)
    narrow = _encdec_narrow(norm_position, title).to_plotly_json()
    del narrow["layout"]["template"]  # the same as the wide figure's, which the figure core lends it
    # each text of the narrow layout is one of the wide layout's: the figure core takes it from there, so that
    # another edition's translation of the wide figure (which does not look inside layout.meta) serves both
    wide = [a.text for a in fig.layout.annotations]
    text_of = [wide.index(a["text"]) for a in narrow["layout"]["annotations"]]
    fig.update_layout(meta=dict(tinytf=dict(narrow=dict(below=NARROW_BELOW, figure=narrow, text_of=text_of))))
    return fig


def _encdec_joins(fig, encoder, enc_res, xe, decoder, dec_res, xd, bracket_offset):
    """The residual paths and the '× N' brackets of both stacks; the memory box and the cross-attention box."""
    shift = 1  # the embedding step takes the place of the block's input stream
    for start, add in enc_res:
        _residual(fig, xe, encoder, start + shift, add + shift)
    for start, add in dec_res:
        _residual(fig, xd, decoder, start + shift, add + shift)
    _bracket(fig, xe, encoder, 2, len(encoder) - 2, "× N", offset=bracket_offset)
    _bracket(fig, xd, decoder, 2, len(decoder) - 3, "× N", offset=bracket_offset)
    return encoder[-1], next(s for s in decoder if s.kind == "cross")


def _encdec_wide(norm_position: str, title: str) -> go.Figure:
    """The two stacks side by side, encoder on the left (760 px)."""
    encoder, enc_res, decoder, dec_res = _encdec_stacks(norm_position)
    n = len(decoder)
    fig = _figure(title, (-3.2, 9.4), (-0.6, n - 0.4), height=90 + 60 * n, width=760)
    xe, xd = 0.0, 6.2
    _column(fig, xe, encoder)
    _column(fig, xd, decoder)
    memory, cross = _encdec_joins(fig, encoder, enc_res, xe, decoder, dec_res, xd, 1.5)
    fig.add_shape(type="path", path=f"M {xe + BOX_W / 2},{memory.y} L {xe + 2.3},{memory.y} L {xe + 2.3},{cross.y}",
                  line=dict(color="#6c3fb5", width=2))
    _arrow(fig, xe + 2.3, cross.y, xd - BOX_W / 2, cross.y, color="#6c3fb5")
    fig.add_annotation(x=xe + 2.4, y=(memory.y + cross.y) / 2, text="memory → K, V<br>of every decoder block",
                       showarrow=False, xanchor="left", font=dict(size=11, color="#6c3fb5"))
    fig.add_annotation(x=xe, y=n - 0.55, text="<b>encoder</b>", showarrow=False, font=dict(size=13))
    fig.add_annotation(x=xd, y=n - 0.55, text="<b>decoder</b>", showarrow=False, font=dict(size=13))
    return fig


def _encdec_narrow(norm_position: str, title: str) -> go.Figure:
    """The decoder stacked above the encoder, for a phone (360 px, text of 13 px): the memory's path runs up
    the right-hand side to the cross-attention, and each stack is named on the left of its input ids."""
    encoder, enc_res, decoder, dec_res = _encdec_stacks(norm_position)
    width, step, gap, size = 2.8, 0.9, 1.2, 13  # box width, row pitch, room between the stacks, text size
    y_dec = len(encoder) * step + gap  # the decoder's first row
    top = y_dec + (len(decoder) - 1) * step + 0.5
    unit = 65  # px per unit: 360 px across the x range below, less the margins
    fig = _figure(title, (-2.45, 2.75), (-0.5, top), height=70 + round(unit * (top + 0.5)), width=360)
    for column, y0 in ((encoder, 0.0), (decoder, y_dec)):
        for i, s in enumerate(column):
            s.y = y0 + i * step
            _box(fig, 0.0, s, width)
            if s.kind != "add":  # text of 13 px in place of _box's 12 (the whole figure is scaled on a phone)
                fig.layout.annotations[-1].font.size = size
        for a, b in zip(column, column[1:]):
            _arrow(fig, 0.0, _top(a), 0.0, _bottom(b))
    memory, cross = _encdec_joins(fig, encoder, enc_res, 0.0, decoder, dec_res, 0.0, 1.6)
    xm = 2.55  # the memory's path, right of the brackets
    fig.add_shape(type="path", path=f"M {width / 2},{memory.y} L {xm},{memory.y} L {xm},{cross.y}",
                  line=dict(color="#6c3fb5", width=2))
    _arrow(fig, xm, cross.y, width / 2, cross.y, color="#6c3fb5")
    fig.add_annotation(x=0.0, y=(_top(memory) + _bottom(decoder[0])) / 2, text="memory → K, V<br>of every decoder block",
                       showarrow=False, font=dict(size=size, color="#6c3fb5"))
    for name, first in (("encoder", encoder[0]), ("decoder", decoder[0])):
        fig.add_annotation(x=-width / 2 - 0.05, y=first.y, text=f"<b>{name}</b>", showarrow=False, xanchor="right",
                           font=dict(size=size))
    return fig
