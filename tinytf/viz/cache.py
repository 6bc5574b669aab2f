"""The KV cache growing during generation, as an animation (one frame per step).

``cache_snapshots`` runs greedy generation with a real ``KVCache`` (the same calls as
``tinytf.generate(..., use_cache=True)``) and records, after every step, what the cache holds:
for each layer the size of the cached key and value vector at every position (L2 norm, averaged
over the K/V heads), its length and ``KVCache.nbytes()``. ``cache_growth`` draws them:

* top: one row per layer and K/V, one column per position; a cell appears when that position's
  K or V enters the cache, coloured by the step that wrote it (hover: the step and the vector's size),
  and the column written in the current step is outlined;
* bottom: the bytes the cache holds after each step (measured with ``nbytes()``).

Step 0 is the prompt (all its positions enter at once); every later step feeds one new token,
which still runs through every block, and appends one column to every layer.
"""
from __future__ import annotations

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..errors import TinyTFInputError
from ..generation import pick_next
from ..models import check_ids
from ..tokens import token_labels
from .common import FONT, OKABE_ITO, SEQUENTIAL


@torch.no_grad()
def cache_snapshots(model, prompt, max_new_tokens: int) -> list:
    """Greedy generation with a KV cache, recording the cache after the prompt and after each new token.

    Returns one dict per step: step, tokens fed ([ids]), positions fed, cache length, nbytes,
    k_norms and v_norms (lists [n_layers][length]), and the next token chosen."""
    if not hasattr(model, "new_cache") or type(model).__name__ != "TinyTransformer":
        raise TinyTFInputError(f"cache_snapshots needs a decoder-only TinyTransformer, got {type(model).__name__}")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise TinyTFInputError(f"max_new_tokens: expected a non-negative integer, got {max_new_tokens!r}")
    ids, _ = check_ids(prompt, model.config, "prompt")
    ids = ids[:1]  # one sequence
    limit = model.config.max_seq_len
    if ids.shape[1] + max_new_tokens > limit and model.config.pos in ("sinusoidal", "learned"):
        raise TinyTFInputError(f"prompt ({ids.shape[1]}) + {max_new_tokens} new tokens exceeds max_seq_len={limit}")
    model.eval()
    cache = model.new_cache()
    snaps, step_input, start = [], ids, 0
    for step in range(max_new_tokens + 1):
        logits = model(step_input, cache=cache)[:, -1]  # [1, V]
        nxt = pick_next(logits)  # greedy, [1]
        snaps.append({
            "step": step,
            "fed": step_input[0].tolist(),
            "positions": list(range(start, start + step_input.shape[1])),
            "length": cache.length,
            "nbytes": cache.nbytes(),
            "k_norms": [layer.k[0].norm(dim=-1).mean(0).tolist() for layer in cache.layers],  # [H_kv, S, D] -> [S]
            "v_norms": [layer.v[0].norm(dim=-1).mean(0).tolist() for layer in cache.layers],
            "next": int(nxt[0]),
        })
        start += step_input.shape[1]
        step_input = nxt[:, None]
    return snaps


def _grid(snap, n_layers, width):
    """Rows: layer 0 K, layer 0 V, layer 1 K, ...; columns: positions 0..width-1 (None = not cached yet).
    Returns (sizes, rows names) with the vector sizes (L2 norms) per cell."""
    rows = []
    for i in range(n_layers):
        for norms in (snap["k_norms"][i], snap["v_norms"][i]):
            rows.append(list(norms) + [None] * (width - len(norms)))
    return rows


def _written_at(snaps, k, n_rows, width):
    """Step that wrote each cell, for the cache after step k (None = not written yet)."""
    step_of = {}
    for s in snaps[: k + 1]:
        for p in s["positions"]:
            step_of[p] = s["step"]
    row = [step_of.get(p) for p in range(width)]
    return [list(row) for _ in range(n_rows)]


def cache_growth(model, prompt, max_new_tokens: int = 8, snapshots=None) -> go.Figure:
    """Animated figure of the cache filling up during greedy generation (see the module docstring)."""
    snaps = snapshots if snapshots is not None else cache_snapshots(model, prompt, max_new_tokens)
    if not snaps:
        raise TinyTFInputError("cache_growth: no snapshots to draw")
    n_layers = len(snaps[0]["k_norms"])
    width = snaps[-1]["length"]
    all_tokens = snaps[0]["fed"] + [s["fed"][0] for s in snaps[1:]]
    labels = [f"{p}: {t}" for p, t in enumerate(token_labels(all_tokens))]
    rows = [f"layer {i} {kv}" for i in range(n_layers) for kv in ("K", "V")]
    steps = [s["step"] for s in snaps]
    kib = [s["nbytes"] / 1024 for s in snaps]
    n_rows = 2 * n_layers

    def traces(k):
        s = snaps[k]
        sizes = _grid(s, n_layers, width)
        heat = go.Heatmap(z=_written_at(snaps, k, n_rows, width), customdata=sizes, x=labels, y=rows,
                          colorscale=SEQUENTIAL, zmin=0, zmax=max(steps[-1], 1), xgap=2, ygap=2,
                          colorbar=dict(title="written<br>at step", len=0.55, y=0.75),
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
        what = (f"prompt of {len(fed)} tokens runs through all {n_layers} blocks at once" if k == 0 else
                f"new token '{fed[0]}' (position {s['positions'][0]}) runs through all {n_layers} blocks, "
                f"attends to {s['length'] - 1} cached keys and its own")
        return f"Step {k}: {what}; cache {s['length']} positions, {s['nbytes']:,} bytes"

    fig = make_subplots(rows=2, cols=1, row_heights=[0.62, 0.38], vertical_spacing=0.2,
                        subplot_titles=("cached K and V per layer: one column per position (token)",
                                        "KV cache size after each step (KiB, from KVCache.nbytes())"))
    for j, tr in enumerate(traces(0)):
        fig.add_trace(tr, row=j + 1, col=1)
    fig.frames = [go.Frame(name=str(k), data=traces(k), traces=[0, 1],
                           layout=dict(shapes=shapes(k), title=dict(text=title(k))))
                  for k in range(len(snaps))]
    slider = dict(active=0, currentvalue=dict(prefix="step "), pad=dict(t=50), x=0.22, len=0.78,
                  steps=[dict(label=str(k), method="animate",
                              args=[[str(k)], dict(mode="immediate", frame=dict(duration=0, redraw=True),
                                                   transition=dict(duration=0))]) for k in range(len(snaps))])
    play = dict(type="buttons", showactive=False, direction="left", x=0.0, y=-0.1, xanchor="left", yanchor="top",
                pad=dict(t=50),
                buttons=[dict(label="▶ play", method="animate",
                              args=[None, dict(frame=dict(duration=700, redraw=True), fromcurrent=True,
                                               transition=dict(duration=0))]),
                         dict(label="❚❚ pause", method="animate",
                              args=[[None], dict(mode="immediate", frame=dict(duration=0, redraw=False))])])
    fig.update_layout(template="plotly_white", font=FONT, height=560, showlegend=False, shapes=shapes(0),
                      title=dict(text=title(0), font=dict(size=13)), sliders=[slider], updatemenus=[play],
                      margin=dict(l=80, r=20, t=80, b=110))
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_xaxes(title="generation step", range=[-0.5, steps[-1] + 0.5], dtick=1, row=2, col=1)
    fig.update_yaxes(title="KiB", range=[0, max(kib) * 1.1], row=2, col=1)
    return fig
