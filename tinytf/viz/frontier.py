"""Figures of the frontier block (chapter "The frontier block"). Every number drawn is read from a real
tinytf forward pass (its trace), from a measurement of ``tinytf.lab.frontier`` (autograd on that pass, the
recorded training runs), or from ``tinytf.kv_cache_bytes``; nothing of the model's math is repeated here, and
nothing is trained here.

    window_masks(model, ids)                    per layer: which keys each query reads (from the trace)
    sliding_window_figure(cfg_or_model, T)      animated over query positions: local/global masks + reach
    cache_context_figure(configs, lengths)      KV-cache bytes against context length (log-log)
    expert_load(model, ids)                     tokens per expert, per MoE layer (from router_topk)
    router_figure(model, ids, layer=0)          animated over the tokens: router scores, the k experts chosen
    logit_growth_figure(runs)                   recorded curves (lab.frontier.logit_growth), each QK-norm run's bound
    titled(fig, main, look_for)                 a bold title above a figure's own title and a "look for:" line under it
"""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..config import TinyConfig
from ..errors import TinyTFInputError
from ..lab.cache_memory import format_bytes, kv_cache_bytes
from ..lab.frontier import gradient_reach
from ..models import TinyTransformer
from ..tokens import encode, token_labels
from .common import FONT, OKABE_ITO, animation_controls, arr, two_line_title

__all__ = ["window_masks", "sliding_window_figure", "cache_context_figure", "expert_load",
           "router_figure", "logit_growth_figure", "titled"]

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _controls(names, labels, prefix, frame_ms):
    return animation_controls(names, labels, frame_ms, prefix,
                              slider=dict(currentvalue=dict(prefix=prefix, font=dict(size=12)), x=0.2, len=0.8),
                              buttons=dict(pad=dict(t=60), font=dict(size=12)))


def _model_and_ids(model_or_cfg, T, ids):
    if isinstance(model_or_cfg, TinyConfig):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            model = TinyTransformer(model_or_cfg)
    elif isinstance(model_or_cfg, TinyTransformer):
        model = model_or_cfg
    else:
        raise TinyTFInputError(f"expected a TinyConfig or a TinyTransformer, got {type(model_or_cfg).__name__}")
    if ids is None:
        if T is None or T < 1:
            raise TinyTFInputError(f"T: expected a positive number of positions, got {T!r}")
        ids = encode((_LETTERS * (T // 26 + 1))[:T], model.config.vocab_size)
    ids = torch.as_tensor(ids)
    return model.eval(), (ids if ids.dim() == 1 else ids[0])


# ---------------------------------------------------------------------------------------- sliding window


@torch.no_grad()
def window_masks(model, ids) -> list:
    """One bool array [T, T] per layer: True where the query (row) may read the key (column), read from the
    trace (``blocks.{i}.attn.masked_scores`` is -inf where the layer's mask forbids; the same in every head)."""
    _, trace = model.run_with_trace(ids, names=["blocks.*.attn.masked_scores"])
    out = []
    for i in range(model.config.n_layers):
        blocked = np.isneginf(arr(trace[f"blocks.{i}.attn.masked_scores"])[0])  # [H, T, S]
        if not (blocked == blocked[0]).all():
            raise AssertionError("the mask differs between heads")
        out.append(~blocked[0])
    return out


def _mask_groups(masks) -> list:
    """Runs of consecutive layers with the same mask, as lists of layer indices: one panel each."""
    groups = []
    for i, m in enumerate(masks):
        if groups and np.array_equal(masks[groups[-1][0]], m):
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def _blocks(group) -> str:
    return f"block {group[0]}" if len(group) == 1 else f"blocks {group[0]}–{group[-1]}"


def sliding_window_figure(model_or_cfg, T: int | None = None, ids=None, frame_ms: int = 900, start: int = -1):
    """Animated over query positions: the masks (read from the trace; the current query's row outlined), one
    panel for each run of consecutive layers with the same mask (three local layers make one panel, so the
    figure stays short on a phone), and on the right which input positions have reached that query after each
    layer (autograd). ``model_or_cfg``: a TinyTransformer, or a TinyConfig (a model is built with seed 0). The
    figure opens on query ``start`` (default -1: the last query, the one a window cuts off from the far past);
    Play runs from 0."""
    model, ids = _model_and_ids(model_or_cfg, T, ids)
    cfg = model.config
    masks = window_masks(model, ids)
    reach = gradient_reach(model, ids)
    L, T = len(masks), len(ids)
    if not -T <= start < T:
        raise TinyTFInputError(f"start: expected a query position in 0..{T - 1} (or from the end), got {start!r}")
    start %= T
    labels = [f"{p}: {t}" for p, t in enumerate(token_labels(ids))]
    groups = _mask_groups(masks)
    G = len(groups)
    kinds = [cfg.layer_type(g[0]) for g in groups]
    titles = [f"{_blocks(g)}: {k}" + (f" (window {cfg.sliding_window.size})" if k == "local" else "")
              for g, k in zip(groups, kinds)] + ["reached after each block"]
    fig = make_subplots(rows=1, cols=G + 1, subplot_titles=titles, horizontal_spacing=0.06,
                        column_widths=[1.0] * G + [1.15])
    scale = [[0, "white"], [1, OKABE_ITO[0]]]
    for j, g in enumerate(groups):
        fig.add_trace(go.Heatmap(z=masks[g[0]].astype(int), x=list(range(T)), y=list(range(T)), colorscale=scale,
                                 zmin=0, zmax=1, showscale=False, xgap=1, ygap=1, name=f"{_blocks(g)} mask",
                                 hovertemplate=f"{_blocks(g)}: query %{{y}} reads key %{{x}}: %{{z}}<extra></extra>"),
                      row=1, col=j + 1)
    reach_scale = [[0, "white"], [1, OKABE_ITO[2]]]

    def reach_trace(q):
        return go.Heatmap(z=reach[:, q, :].astype(int), x=list(range(T)), y=[f"after {i}" for i in range(L)],
                          colorscale=reach_scale, zmin=0, zmax=1, showscale=False, xgap=1, ygap=1,
                          name="reach", hovertemplate="%{y}: input %{x} reaches the query: %{z}<extra></extra>")

    fig.add_trace(reach_trace(start), row=1, col=G + 1)

    def shapes(q):
        out = []
        for j in range(G):
            ax = "" if j == 0 else str(j + 1)
            out.append(dict(type="rect", xref=f"x{ax}", yref=f"y{ax}", x0=-0.5, x1=T - 0.5, y0=q - 0.5, y1=q + 0.5,
                            line=dict(color=OKABE_ITO[5], width=2.5)))
        ax = str(G + 1)
        out.append(dict(type="rect", xref=f"x{ax}", yref=f"y{ax}", x0=q - 0.5, x1=q + 0.5, y0=-0.5, y1=L - 0.5,
                        line=dict(color=OKABE_ITO[5], width=2.5)))
        return out

    def title(q):
        def keys(m):
            return f"{int(np.flatnonzero(m[q]).min())}..{int(np.flatnonzero(m[q]).max())}"
        reads = "; ".join(f"{_blocks(g)} read{'s' if len(g) == 1 else ''} keys {keys(masks[g[0]])}"
                          for g in groups)
        return (f"query position {q} ({labels[q]}): {reads}<br>after block {L - 1} it has been reached by "
                f"{int(reach[-1, q].sum())} of the {q + 1} positions 0..{q}")

    names = [str(q) for q in range(T)]
    fig.frames = [go.Frame(name=n, data=[reach_trace(q)], traces=[G], layout=dict(shapes=shapes(q),
                                                                                  title=dict(text=title(q))))
                  for q, n in zip(range(T), names)]
    fig.update_layout(template="plotly_white", font=FONT, height=400, shapes=shapes(start),
                      title=dict(text=title(start), font=dict(size=13), x=0.01, xanchor="left"),
                      margin=dict(l=50, r=20, t=100, b=120), **_controls(names, names, "query position ", frame_ms))
    fig.layout.sliders[0].active = start  # the slider (and the book's controls) open on that query
    for j in range(G):
        fig.update_yaxes(autorange="reversed", title="query" if j == 0 else None, row=1, col=j + 1, dtick=2)
        fig.update_xaxes(title="key", row=1, col=j + 1, dtick=2)
    fig.update_yaxes(autorange="reversed", row=1, col=G + 1)
    fig.update_xaxes(title="input position", row=1, col=G + 1, dtick=2)
    return fig


# ---------------------------------------------------------------------------------------- cache vs context


def cache_context_figure(configs: dict, lengths=None, dtype=torch.bfloat16, batch: int = 1, contexts: dict | None = None):
    """KV-cache bytes (``tinytf.kv_cache_bytes``) of each config against the context length, log-log.
    ``contexts`` ({name: context length}, optional) ends each model's line at the last length within its
    context and continues it, faint and dotted and without a legend entry, over the lengths past it.
    Each model has its own dash and marker; a line equal (within 1%) to an earlier model's from the first length
    on is named "NAME (= OTHER up to T)" in the legend, and the line it covers is drawn wider."""
    if not configs:
        raise TinyTFInputError("cache_context_figure: no configs")
    contexts = dict(contexts or {})
    unknown = set(contexts) - set(configs)
    if unknown:
        raise TinyTFInputError(f"cache_context_figure: contexts for models not in configs: {sorted(unknown)}")
    if any(not isinstance(c, int) or c < 1 for c in contexts.values()):
        raise TinyTFInputError("cache_context_figure: every context must be a positive int (tokens)")
    lengths = list(lengths) if lengths is not None else [2 ** k for k in range(7, 18)]
    fig = go.Figure()
    dashes = ["solid", "dash", "dashdot", "longdash", "longdashdot"]  # "dot" is kept for the lines past a context
    symbols = ["circle", "square", "diamond", "triangle-up", "x"]
    nbytes = {name: [kv_cache_bytes(cfg, T, batch, dtype) for T in lengths] for name, cfg in configs.items()}
    gibs = {name: [b / 2 ** 30 for b in values] for name, values in nbytes.items()}
    ends = {name: sum(T <= contexts.get(name, max(lengths)) for T in lengths) for name in configs}
    # a line that lies on an earlier one (within 1%) from the first length on is drawn over it: the legend says so
    # up to where, and the covered line is drawn wider, so that both stay visible
    same_as, covered = {}, set()
    names = list(configs)
    for j, name in enumerate(names):
        for other in names[:j]:
            run = 0
            while (run < min(ends[name], ends[other])
                   and abs(gibs[name][run] - gibs[other][run]) <= 0.01 * gibs[other][run]):
                run += 1
            if run >= 2:
                T = lengths[run - 1]
                same_as[name] = f"{name} (= {other} up to {T // 1024}k)" if T >= 1024 and T % 1024 == 0 \
                    else f"{name} (= {other} up to {T:,})"
                covered.add(other)
                break
    for j, (name, cfg) in enumerate(configs.items()):
        gib = gibs[name]
        text = [format_bytes(b) for b in nbytes[name]]
        color = OKABE_ITO[j % len(OKABE_ITO)]
        inside = [i for i, T in enumerate(lengths) if T <= contexts.get(name, max(lengths))]
        wide = name in covered
        fig.add_trace(go.Scatter(x=[lengths[i] for i in inside], y=[gib[i] for i in inside], mode="lines+markers",
                                 name=same_as.get(name, name), text=[text[i] for i in inside],
                                 line=dict(color=color, dash=dashes[j % len(dashes)], width=6 if wide else 2),
                                 marker=dict(symbol=symbols[j % len(symbols)], size=13 if wide else 7),
                                 hovertemplate=f"{name}<br>%{{x:,}} tokens: %{{text}}<extra></extra>"))
        past = [i for i in range(len(lengths)) if i not in inside]
        if past:
            past = ([inside[-1]] if inside else []) + past  # joined to the line's last point
            fig.add_trace(go.Scatter(x=[lengths[i] for i in past], y=[gib[i] for i in past], mode="lines+markers",
                                     name=f"{name} (past its context)", showlegend=False, opacity=0.35,
                                     text=[text[i] for i in past], line=dict(color=color, dash="dot"),
                                     hovertemplate=f"{name}, past its context<br>%{{x:,}} tokens: %{{text}}"
                                                   "<extra></extra>"))
    fig.update_layout(template="plotly_white", font=FONT, height=430, margin=dict(l=70, r=20, t=60, b=60),
                      title=dict(text=f"KV cache of one sequence ({torch.empty((), dtype=dtype).element_size()} "
                                      "bytes per value) against context length", font=dict(size=14)),
                      legend=dict(x=0.01, y=0.99, bgcolor="rgba(255,255,255,0.8)"))
    # labelled ticks only, no bare minor labels ("2", "5") that read as token counts: every second power of
    # two on x (256, 1k, 4k, ...), the powers of ten on y
    xticks = [T for T in lengths if T & (T - 1) == 0 and T.bit_length() % 2 == 1] or lengths
    fig.update_xaxes(type="log", title="context length (tokens)", tickmode="array", tickvals=xticks,
                     ticktext=[f"{T // 1024}k" if T >= 1024 and T % 1024 == 0 else f"{T:,}" for T in xticks])
    all_gib = [kv_cache_bytes(cfg, T, batch, dtype) / 2 ** 30 for cfg in configs.values() for T in lengths]
    decades = range(math.floor(math.log10(min(all_gib))), math.ceil(math.log10(max(all_gib))) + 1)
    fig.update_yaxes(type="log", title="KV cache (GiB)", tickmode="array", tickvals=[10.0 ** k for k in decades],
                     ticktext=[f"{10.0 ** k:g}" for k in decades])
    return fig


# ---------------------------------------------------------------------------------------- mixture of experts


@torch.no_grad()
def expert_load(model, ids) -> dict:
    """{layer: int array [moe.n_experts]}: how many (token, slot) choices each expert received, per MoE layer,
    counted from the trace's ``blocks.{i}.ffn.router_topk``."""
    _, trace = model.run_with_trace(ids, names=["blocks.*.ffn.router_topk"])
    if model.config.moe is None:
        raise TinyTFInputError("expert_load: the model has no mixture-of-experts layer (its config's moe is None)")
    E = model.config.moe.n_experts
    out = {}
    for i in range(model.config.n_layers):
        name = f"blocks.{i}.ffn.router_topk"
        if name in trace:
            out[i] = np.bincount(trace[name].ids.reshape(-1).numpy(), minlength=E)
    if not out:
        raise TinyTFInputError("expert_load: the model has no mixture-of-experts layer (all are moe.n_dense_layers)")
    return out


@torch.no_grad()
def router_figure(model, ids, layer: int = 0, frame_ms: int = 1500):
    """Animated over the tokens of ``ids`` (one frame each): the router's score for every expert (bars,
    from ``router_logits``), the k experts it chose with their weights (from ``router_topk``) and, below,
    how many tokens each expert has received so far."""
    if isinstance(ids, str):
        ids = encode(ids, model.config.vocab_size)
    ids = torch.as_tensor(ids)
    ids = ids if ids.dim() == 1 else ids[0]
    name = f"blocks.{layer}.ffn."
    _, trace = model.eval().run_with_trace(ids, names=[name + "router_logits", name + "router_topk"])
    if name + "router_topk" not in trace:
        raise TinyTFInputError(f"layer {layer} has no mixture-of-experts FFN")
    logits = arr(trace[name + "router_logits"])[0]  # [T, E]
    chosen = trace[name + "router_topk"]
    ids_k, w_k = chosen.ids[0].numpy(), arr(chosen.weights)[0]  # [T, k]
    T, E = logits.shape
    experts = [f"expert {e}" for e in range(E)]
    labels = token_labels(ids)
    lo, hi = float(logits.min()), float(logits.max())
    pad = 0.15 * (hi - lo or 1.0)

    def traces(t):
        picked = {int(e): float(w) for e, w in zip(ids_k[t], w_k[t])}
        colours = [OKABE_ITO[5] if e in picked else "#b8b8b8" for e in range(E)]
        text = [f"w = {picked[e]:.3f}" if e in picked else "" for e in range(E)]
        load = np.bincount(ids_k[: t + 1].reshape(-1), minlength=E)
        return [go.Bar(x=experts, y=logits[t], marker=dict(color=colours), text=text, textposition="outside",
                       name="router score", hovertemplate="%{x}: score %{y:.4f}<extra></extra>"),
                go.Bar(x=experts, y=load, marker=dict(color=OKABE_ITO[0]), name="tokens so far",
                       hovertemplate="%{x}: %{y} tokens so far<extra></extra>")]

    def title(t):
        picks = ", ".join(f"expert {int(e)} (weight {float(w):.3f})" for e, w in zip(ids_k[t], w_k[t]))
        return f"token {t} '{labels[t]}' goes to {picks}"

    fig = make_subplots(rows=2, cols=1, row_heights=[0.62, 0.38], vertical_spacing=0.16,
                        subplot_titles=(f"block {layer}: router score of every expert (the chosen {ids_k.shape[1]} "
                                        "in orange, with their weights)", "tokens routed to each expert so far"))
    for j, tr in enumerate(traces(0)):
        fig.add_trace(tr, row=j + 1, col=1)
    names = [str(t) for t in range(T)]
    fig.frames = [go.Frame(name=n, data=traces(t), traces=[0, 1], layout=dict(title=dict(text=title(t))))
                  for t, n in zip(range(T), names)]
    fig.update_layout(template="plotly_white", font=FONT, height=520, showlegend=False,
                      title=dict(text=title(0), font=dict(size=13), x=0.01, xanchor="left"),
                      margin=dict(l=60, r=20, t=90, b=120),
                      **_controls(names, [f"{t}: {labels[t]}" for t in range(T)], "token ", frame_ms))
    fig.update_yaxes(range=[min(lo - pad, 0), hi + pad], title="score", row=1, col=1)
    fig.update_yaxes(range=[0, T + 0.5], dtick=1, title="tokens", row=2, col=1)
    return fig


# ---------------------------------------------------------------------------------------- QK-norm


def logit_growth_figure(runs: dict, log_y: bool = False, bound: float | None = None, bound_label: str = "√D"):
    """runs: {variant: [record per seed]} (records from ``logit_growth``): the largest absolute attention logit per step,
    one colour per variant, one marker per seed (circle, square, diamond). A record whose ``"bound"`` holds numbers
    (a QK-norm run: the bound its gains allow at each recorded step, √D · max|g_q| · max|g_k|) also gets that bound as
    a dashed line in its colour, with open markers of its seed's shape: each run against its own bound. ``log_y``
    draws the logits on a logarithmic axis; ``bound`` (e.g. √D, per-head QK-norm's bound with unit gains) adds a grey
    dashed horizontal line at that value, labelled ``bound_label``."""
    if bound is not None and not (isinstance(bound, (int, float)) and bound > 0):
        raise TinyTFInputError(f"logit_growth_figure: bound must be a positive number, got {bound!r}")
    fig = go.Figure()
    symbols = ["circle", "square", "diamond"]
    for j, (variant, recs) in enumerate(runs.items()):
        colour = OKABE_ITO[[5, 0][j % 2]]
        for s, rec in enumerate(recs):
            fig.add_trace(go.Scatter(x=rec["steps"], y=rec["max_logit"], mode="lines+markers",
                                     name=variant, legendgroup=variant, showlegend=s == 0,
                                     line=dict(color=colour), marker=dict(size=6, symbol=symbols[s % 3]),
                                     hovertemplate=f"{variant}, seed {s}<br>step %{{x}}: max |logit| %{{y:.1f}}"
                                                   "<extra></extra>"))
        own = [(s, rec) for s, rec in enumerate(recs) if any(b is not None for b in rec.get("bound") or [])]
        for n, (s, rec) in enumerate(own):  # each run's own bound, from its gains at every recorded step
            fig.add_trace(go.Scatter(x=rec["steps"], y=rec["bound"], mode="lines+markers",
                                     name=f"{variant}: each run's own bound √D · max|g_q| · max|g_k|",
                                     legendgroup=f"{variant} bound", showlegend=n == 0,
                                     line=dict(color=colour, dash="dash", width=1.5),
                                     marker=dict(size=6, symbol=f"{symbols[s % 3]}-open"),
                                     hovertemplate=f"{variant}, seed {s}<br>step %{{x}}: bound %{{y:.1f}}"
                                                   "<extra></extra>"))
    if bound is not None:  # a trace, not a shape: a trace's y is a data value on a log axis too
        steps = [s for recs in runs.values() for rec in recs for s in rec["steps"]]
        fig.add_trace(go.Scatter(x=[min(steps), max(steps)], y=[bound, bound], mode="lines",
                                 name=f"{bound_label} = {bound:g}", line=dict(color="grey", dash="dash", width=1),
                                 hovertemplate=f"{bound_label} = {bound:g}<extra></extra>"))
    fig.update_layout(template="plotly_white", font=FONT, height=400, margin=dict(l=70, r=20, t=60, b=60),
                      title=dict(text="largest |attention logit| (q·k scaled) on a fixed batch during training",
                                 font=dict(size=14)))
    fig.update_xaxes(title="training step")
    # the legend where the curves are not: bottom right on a log axis (no curve falls there), else top left
    fig.update_layout(legend=dict(x=0.99, xanchor="right", y=0.01, yanchor="bottom") if log_y else dict(x=0.01, y=0.99))
    if log_y:
        fig.update_yaxes(title="max |logit| (log scale)", type="log")
    else:
        fig.update_yaxes(title="max |logit|", rangemode="tozero")
    return fig


# ---------------------------------------------------------------------------------------- titles


def titled(fig: go.Figure, main: str | None, look_for: str) -> go.Figure:
    """The chapters' figure title: ``main`` in bold, then the figure's own title lines (every frame's readout of an
    animated figure), then ``look for: ...`` in small type. A static figure's own title is replaced by ``main``, or
    kept (in bold) when ``main`` is None. Returns ``fig``, changed in place."""
    if not look_for or (main is None and fig.frames) or (main is not None and not main):
        raise TinyTFInputError("titled: expected a 'look for' line, and a title for an animated figure")
    under = f"<br><span style='font-size:12px'>look for: {look_for}</span>"
    if fig.frames:
        for frame in fig.frames:
            frame.layout.title.text = f"<b>{main}</b><br>{frame.layout.title.text}{under}"
        fig.layout.title.text = f"<b>{main}</b><br>{fig.layout.title.text}{under}"
    else:
        fig.layout.title.text = two_line_title(fig.layout.title.text if main is None else main, f"look for: {look_for}")
    top = fig.layout.margin.t if fig.layout.margin.t is not None else 60
    extra = 40 if fig.frames else 20  # room for the added lines; the plot keeps its size
    fig.update_layout(margin_t=top + extra, height=(fig.layout.height or 450) + extra)
    return fig
