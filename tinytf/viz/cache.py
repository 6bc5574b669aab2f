"""The KV cache growing during generation, as an animation (one frame per step).

``cache_snapshots`` runs ``tinytf.generate`` (greedy, with its cache) and records what it reports after
every step (``on_step``): the positions fed, the token picked, which positions each layer's cache holds
(``held``), the bytes it holds (``KVCache.nbytes()``) and, for every held position, the size of each stored
vector (L2 norm, averaged over the K/V heads): K and V for full, grouped and sliding-window layers, the
latent and the RoPE key part for MLA. ``cache_growth`` draws them:

* top: two rows per layer (K and V, or MLA's latent and k_rope), one column per position (the axis names
  each position's token from the frame that writes it on, as "10: h"; before, its number only); a cell is drawn
  while the cache holds that position (a sliding-window layer drops old ones), coloured by the step that
  wrote it (one flat colour per step: the prompt dark blue, the steps after it in distinct colours, the last
  yellow; hover: the step and the vector's size), and the columns written in the current step are outlined;
* bottom: the bytes the cache holds after each step (measured with ``nbytes()``).

Generation step 0 (frame 1) is the prompt (all its positions enter at once); every later step feeds one new token,
which still runs through every block, and appends one column to every layer.
"""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from ..errors import TinyTFInputError
from ..generation import generate, whole_number
from ..models import TinyTransformer, check_ids
from ..tokens import token_labels
from .common import FONT, OKABE_ITO, SEQUENTIAL, animation_controls


def _norms(tensor) -> list:
    """Size of each stored vector of the first sequence: [B, H, S, D] (averaged over heads) or [B, S, D] -> [S]."""
    sizes = tensor[0].norm(dim=-1)  # [H, S] or [S]
    return (sizes.mean(0) if sizes.dim() == 2 else sizes).tolist()


def _snapshot(step) -> dict:
    """One CacheStep as the plain dict the figure (and chapter 10) reads."""
    layers = [layer.parts() for layer in step.cache.layers]
    return {"step": step.step, "fed": step.fed, "positions": step.positions, "length": step.length,
            "nbytes": step.nbytes, "held": step.held, "parts": list(layers[0]),
            "norms": [[_norms(t) for t in parts.values()] for parts in layers],  # [n_layers][2][len(held)]
            "next": int(step.token[0])}


def cache_snapshots(model, prompt, max_new_tokens: int) -> list:
    """Greedy generation with a KV cache (``tinytf.generate``), recording the cache after the prompt and
    after each new token.

    Returns one dict per step: step, tokens fed ([ids]), positions fed, cache length (positions seen),
    nbytes, held (per layer: the positions its cache holds), parts (the names of what each layer stores),
    norms ([n_layers][2][one per held position]) and the next token chosen."""
    if not isinstance(model, TinyTransformer):
        raise TinyTFInputError(f"cache_snapshots needs a decoder-only TinyTransformer, got {type(model).__name__}")
    max_new_tokens = whole_number(max_new_tokens, "max_new_tokens", 0)
    ids, _ = check_ids(prompt, model.config, "prompt")
    snaps = []
    generate(model, ids[:1], max_new_tokens + 1, on_step=lambda step: snaps.append(_snapshot(step)))
    return snaps


def _grid(snap, width):
    """Rows: layer 0 part 0 (K), layer 0 part 1 (V), layer 1 part 0, ...; columns: positions 0..width-1.
    The vector size (L2 norm) in every cell the cache holds, None elsewhere."""
    rows = []
    for held, norms in zip(snap["held"], snap["norms"]):
        for part in norms:
            row = [None] * width
            for p, size in zip(held, part):
                row[p] = size
            rows.append(row)
    return rows


def _written_at(snaps, k, width):
    """Step that wrote each cell the cache holds after step k (None = not held)."""
    step_of = {}
    for s in snaps[: k + 1]:
        for p in s["positions"]:
            step_of[p] = s["step"]
    rows = []
    for held in snaps[k]["held"]:
        row = [None] * width
        for p in held:
            row[p] = step_of[p]
        rows += [row, list(row)]
    return rows


# the colours of the generated steps 1 to n-1 (the last one is yellow): Okabe-Ito's, each far from its
# neighbours, from the prompt's dark blue and from the vermillion outline of the current step's column
_STEP_COLOURS = [OKABE_ITO[i] for i in (4, 3, 2, 1, 0)] + ["#999999"]  # sky blue, pink, green, orange, blue, grey
_PROMPT, _LAST = SEQUENTIAL[0][1], OKABE_ITO[6]  # cividis's dark blue; yellow


def _step_scale(last: int) -> list:
    """A colour scale of one flat band per generation step 0..last (for cmin -0.5, cmax last + 0.5): the
    prompt dark blue, the last step yellow, the steps between in distinct colours (more steps than colours:
    cividis's lighter part, from step 1 on, so the prompt stays apart)."""
    if last <= len(_STEP_COLOURS) + 1:
        colours = [_PROMPT] + _STEP_COLOURS[: max(last - 1, 0)] + ([_LAST] if last else [])
    else:
        colours = [_PROMPT] + sample_colorscale(SEQUENTIAL, [0.3 + 0.7 * k / (last - 1) for k in range(last)])
    n = len(colours)
    return [[edge / n, c] for i, c in enumerate(colours) for edge in (i, i + 1)]


def _position_labels(snaps, width: int) -> list[list[str]]:
    """The x-axis labels of each frame: a position's token once a step has written it ("10: h"); a position
    still to come carries its number only, so the first frames do not give away the tokens still to come."""
    token_at = {}  # position -> token label, after each step
    labels = []
    for s in snaps:
        token_at.update(zip(s["positions"], token_labels(s["fed"])))
        labels.append([f"{p}: {token_at[p]}" if p in token_at else str(p) for p in range(width)])
    return labels


def cache_growth(model, prompt, max_new_tokens: int = 8, snapshots=None) -> go.Figure:
    """Animated figure of the cache filling up during greedy generation (see the module docstring)."""
    snaps = snapshots if snapshots is not None else cache_snapshots(model, prompt, max_new_tokens)
    if not snaps:
        raise TinyTFInputError("cache_growth: no snapshots to draw")
    n_layers = len(snaps[0]["held"])
    width = snaps[-1]["positions"][-1] + 1
    labels = _position_labels(snaps, width)
    rows = [f"block {i} {part}" for i in range(n_layers) for part in snaps[0]["parts"]]
    steps = [s["step"] for s in snaps]
    kib = [s["nbytes"] / 1024 for s in snaps]
    full = all(len(h) == s["length"] for s in snaps for h in s["held"])  # no layer drops a position

    def traces(k):
        s = snaps[k]
        sizes = _grid(s, width)
        heat = go.Heatmap(z=_written_at(snaps, k, width), customdata=sizes, x=list(range(width)), y=rows,
                          coloraxis="coloraxis", xgap=2, ygap=2,
                          hovertemplate="%{y}, position %{x}<br>written at step %{z}"
                                        "<br>vector size %{customdata:.3f}<extra></extra>")
        mem = go.Scatter(x=steps[: k + 1], y=kib[: k + 1], mode="lines+markers", line=dict(color=OKABE_ITO[1]),
                         name="KV cache", hovertemplate="after step %{x}: %{y:.2f} KiB<extra></extra>")
        return [heat, mem]

    def shapes(k):
        s = snaps[k]
        lo, hi = s["positions"][0], s["positions"][-1]
        return [dict(type="rect", xref="x", yref="y", x0=lo - 0.5, x1=hi + 0.5, y0=-0.5, y1=len(rows) - 0.5,
                     line=dict(color=OKABE_ITO[5], width=3))]

    def title(k):
        s = snaps[k]
        fed = token_labels(s["fed"])
        if k == 0:
            what = f"prompt of {len(fed)} tokens runs through every block at once"
        elif len(fed) > 1:  # a RoPE model's context window slid: its cache was refilled with the last tokens
            what = f"the context window slid: the last {len(fed)} tokens refill the cache"
        else:
            what = f"new token '{fed[0]}' (position {s['positions'][0]}) runs through every block"
            what += f", attends to {s['length'] - 1} cached keys and its own" if full else ""
        held = s["length"] if full else "/".join(str(len(h)) for h in s["held"])
        # frames count from 1, like pages (the book's convention); generation steps count from 0
        return (f"frame {k + 1}/{len(snaps)} (generation step {k}): {what}; "
                f"cache {held} positions{'' if full else ' per block'}, {s['nbytes']:,} bytes")

    fig = make_subplots(rows=2, cols=1, row_heights=[0.62, 0.38], vertical_spacing=0.2,
                        subplot_titles=("cached K and V per block: one column per position (token)",
                                        "KV cache size after each step (KiB, from KVCache.nbytes())"))
    for j, tr in enumerate(traces(0)):
        fig.add_trace(tr, row=j + 1, col=1)
    # a frame changes only what a step changes: the heatmap's z and customdata (its colour bar, the
    # layout's coloraxis set once and placed by the page, stays as it is), the bytes line and the axis
    # labels (the token a step wrote joins its column's number)
    fig.frames = [go.Frame(name=str(k), traces=[0, 1],
                           data=[go.Heatmap(z=heat.z, customdata=heat.customdata), mem],
                           layout=dict(shapes=shapes(k), title=dict(text=title(k)),
                                       xaxis=dict(ticktext=labels[k])))
                  for k, (heat, mem) in ((k, traces(k)) for k in range(len(snaps)))]
    fig.update_layout(template="plotly_white", font=FONT, height=560, showlegend=False, shapes=shapes(0),
                      # one colour scale for every frame: the step that wrote a cell, 0 to the last,
                      # one flat colour each (a tick per step when they fit)
                      coloraxis=dict(colorscale=_step_scale(steps[-1]), cmin=-0.5, cmax=steps[-1] + 0.5,
                                     colorbar=dict(title="written<br>at step", len=0.55, y=0.75,
                                                   **(dict(tickvals=steps) if len(steps) <= 12 else {}))),
                      title=dict(text=title(0), font=dict(size=13)),
                      # the steps' names: the book's readout ("2 of 7: step 1") counts the frames already
                      **animation_controls([str(k) for k in range(len(snaps))],
                                           ["step 0 (prompt)"] + [f"step {k}" for k in steps[1:]], 700,
                                           "generation ", buttons=dict(y=-0.1)),
                      margin=dict(l=80, r=20, t=80, b=110))
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    # one column per position, named by the labels of the frame shown
    fig.update_xaxes(type="linear", tickmode="array", tickvals=list(range(width)), ticktext=labels[0],
                     range=[-0.5, width - 0.5], row=1, col=1)
    fig.update_xaxes(title="generation step", range=[-0.5, steps[-1] + 0.5], dtick=1, row=2, col=1)
    fig.update_yaxes(title="KiB", range=[0, max(kib) * 1.1], row=2, col=1)
    return fig


def step_times_figure(steps, title: str, unit: str, look_for: str | None = None) -> go.Figure:
    """Milliseconds per generation step against the position the step feeds, naive and cached: the median over
    the repeats with IQR bars (``steps``: a ``tinytf.lab.prefill_decode.StepTimes``). The y axis starts at 0, so
    that the gap between the lines reads as the ratio it is. ``look_for``, when given, is a subtitle saying what
    to look for."""
    fig = go.Figure()
    for name in ("naive", "cached"):
        s = steps.per_step_spread(name)
        fig.add_trace(go.Scatter(
            x=steps.positions, y=[1e3 * x.median for x in s], mode="lines+markers", name=name,
            error_y=dict(type="data", symmetric=False, array=[1e3 * (x.q3 - x.median) for x in s],
                         arrayminus=[1e3 * (x.median - x.q1) for x in s])))
    head = f"<b>{title}</b><br><span style='font-size:12px'>look for: {look_for}</span>" if look_for else title
    fig.update_layout(title=head, xaxis_title=f"position of the {unit} the step feeds",
                      yaxis_title=f"milliseconds per {unit} (processor time)", template="plotly_white",
                      height=380)
    fig.update_yaxes(rangemode="tozero")
    return fig
