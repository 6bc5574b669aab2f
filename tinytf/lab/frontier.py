"""Measurements of the frontier block (chapter 11, "The frontier block") that the figures of
``tinytf.viz.frontier`` draw: how far each position's input reaches through sliding-window layers
(autograd), and how large attention logits grow while training with and without QK-norm.

    gradient_reach(model, ids)                  per layer: which input positions reach each query (autograd)
    logit_growth(cfg, steps, lr, seed)          train briefly, record the largest absolute attention logit every few steps
    load_logit_growth()                         the recorded runs, tinytf/checkpoints/qk_norm_logits.json
    load_lr_sweep()                             the recorded learning-rate sweep (scripts/qk_norm_sweep.py)
    main()                                      ``python -m tinytf record-qk-norm``: re-record them

The chapter's tables, laid out as plain text (the cells compute, these only format):

    format_cache_ranking(orders)                the three smallest KV caches at each context length
    format_attention_variants(rows)             cache and attention parameters of attention variants of one model
    attention_parameter_split(cfg)              one layer's attention parameters: queries, keys and values, output
    format_update_rms(updates, streams, x_rms)  RMS of each sublayer's update and of the final stream, per placement
    format_lr_sweep(sweep)                      the learning-rate sweep: largest absolute logit and late loss per seed
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from ..blocks import DecoderBlock
from ..config import TinyConfig
from ..errors import TinyTFInputError
from ..models import TinyTransformer
from .cache_memory import format_bytes
from .parameters import _skip_init
from .prefill_decode import two_digits
from .tasks import InductionTask
from .train import decoder_loss, num_threads

LOGIT_GROWTH_FILE = Path(__file__).resolve().parents[1] / "checkpoints" / "qk_norm_logits.json"
LR_SWEEP_FILE = LOGIT_GROWTH_FILE.with_name("qk_norm_sweep.json")


def gradient_reach(model, ids) -> np.ndarray:
    """bool [n_layers, T, T]: reach[l, q, j] is True when the stream leaving layer l at position q depends on
    the input at position j, measured with autograd (a non-zero gradient of that stream w.r.t. ``embed``)."""
    names = ["embed"] + [f"blocks.{i}.resid_post" for i in range(model.config.n_layers)]
    _, trace = model.run_with_trace(ids, names=names, detach=False)
    embed = trace["embed"]
    L, T = model.config.n_layers, embed.shape[1]
    reach = np.zeros((L, T, T), dtype=bool)
    for i in range(L):
        out = trace[f"blocks.{i}.resid_post"][0]
        for q in range(T):
            (g,) = torch.autograd.grad(out[q].sum(), embed, retain_graph=True)
            reach[i, q] = (g[0].abs().sum(-1) > 0).numpy()
    return reach


def logit_growth(cfg: TinyConfig, steps: int = 150, lr: float = 1e-2, seed: int = 0, every: int = 10,
                 batch_size: int = 32, task=None, qk_gain: float | None = None) -> dict:
    """Train a TinyTransformer(cfg) (seed ``seed``) on the induction task with AdamW at a constant, high
    learning rate (no warm-up, no clipping, no weight decay) and record, every ``every`` steps, the largest
    absolute attention logit (``blocks.*.attn.scores``, every query-key pair, the masked future ones included) on a
    fixed probe batch, the same over the pairs the causal mask lets through (``blocks.*.attn.masked_scores``), and
    the training loss, and, for a model with per-head QK-norm, the bound the norms' gains put on every logit
    (``qk_logit_bound``; None without QK-norm). Returns {"steps": [...], "max_logit": [...],
    "max_visible_logit": [...], "bound": [...], "loss": [...]} (loss at the recorded steps; step 0: None).
    ``qk_gain``: for a model with QK-norm, every gain of the query and key norms starts at this value instead of 1
    (set after initialisation, so the other weights are those of the same seed); None keeps 1."""
    task = task or InductionTask(min_length=4, max_length=12)
    with num_threads(1), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = TinyTransformer(cfg)
        if qk_gain is not None:
            if cfg.qk_norm == "none":
                raise TinyTFInputError("logit_growth: qk_gain needs a model with QK-norm (qk_norm 'head' or 'proj')")
            with torch.no_grad():
                for b in model.blocks:
                    b.attn.q_norm.weight.fill_(qk_gain)
                    b.attn.k_norm.weight.fill_(qk_gain)
        data = torch.Generator().manual_seed(seed)
        probe = task.batch(16, torch.Generator().manual_seed(10_000), length=task.max_length)[0]
        opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
        rec = {"steps": [], "max_logit": [], "max_visible_logit": [], "bound": [], "loss": []}
        loss = None
        for step in range(steps + 1):
            if step % every == 0 or step == steps:
                model.eval()
                with torch.no_grad():
                    _, tr = model.run_with_trace(probe, names=["blocks.*.attn.scores", "blocks.*.attn.masked_scores"])
                rec["steps"].append(step)
                rec["max_logit"].append(max(float(t.abs().max()) for k, t in tr.items() if k.endswith(".scores")))
                rec["max_visible_logit"].append(max(float(t[t.isfinite()].abs().max()) for k, t in tr.items()
                                                    if k.endswith(".masked_scores")))
                rec["bound"].append(qk_logit_bound(model))
                rec["loss"].append(None if loss is None else float(loss.detach()))
                model.train()
            if step == steps:
                break
            loss, _ = decoder_loss(model, task.batch(batch_size, data))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return rec


def qk_logit_bound(model):
    """The largest ``|logit|`` per-head QK-norm (RMSNorm) allows, over every block:
    ``sqrt(D) * max|g_q| * max|g_k|`` with the default 1/sqrt(D) scale, g_q and g_k the gains of the query and key
    norms. Each normalised vector has length at most sqrt(D) before its gain, so at most sqrt(D) * max|g| after it;
    RoPE keeps lengths, and Cauchy-Schwarz bounds ``|q . k|`` by the product of the lengths. None for a model
    without per-head RMSNorm QK-norm."""
    cfg = model.config
    if cfg.qk_norm != "head" or cfg.norm != "rms":
        return None
    bounds = []
    for b in model.blocks:
        D = b.attn.d_head
        scale = b.attn.scale if b.attn.scale is not None else D ** -0.5
        gains = b.attn.q_norm.weight.detach().abs().max() * b.attn.k_norm.weight.detach().abs().max()
        bounds.append(float(scale * D * gains))
    return max(bounds)


def load_logit_growth(path=None) -> dict:
    """The recorded QK-norm runs (written by ``python -m tinytf record-qk-norm``, ``main``)."""
    return json.loads(Path(path or LOGIT_GROWTH_FILE).read_text())


def load_lr_sweep(path=None) -> dict:
    """The recorded learning-rate sweep, plain against QK-norm (written by ``scripts/qk_norm_sweep.py``):
    ``runs[variant][str(lr)]`` is one ``logit_growth`` record per seed."""
    return json.loads(Path(path or LR_SWEEP_FILE).read_text())


LOGIT_GROWTH_SETTINGS = dict(base=dict(vocab_size=128, d_model=64, n_heads=4, n_layers=2, d_ff=192, max_seq_len=64),
                             steps=150, lr=1e-2, every=10, seeds=[0, 1, 2])


def format_cache_ranking(orders: dict) -> str:
    """Plain text: for each context length ``T`` of ``{T: [model names from the smallest cache up]}``, the first
    three names."""
    lines = [f"{'tokens':>8}  {'lowest':12} {'second':12} {'third':12}"]
    lines += [f"{T:>8,}  " + " ".join(f"{name:12}" for name in order[:3]) for T, order in orders.items()]
    return "\n".join(lines)


def format_attention_variants(rows: dict, title: str = "DeepSeek-V3 attention") -> str:
    """Plain text, one row per ``{name: (cached values per position and layer, cache bytes per token, cache bytes
    at 128k tokens, attention parameters of all layers)}``."""
    lines = [f"{title:22} {'values/layer':>12} {'per token':>11} {'at 128k tokens':>15} {'attention parameters':>21}"]
    lines += [f"{name:22} {values:>12,} {format_bytes(per_token):>11} {format_bytes(at_128k):>15} {params:>21,}"
              for name, (values, per_token, at_128k, params) in rows.items()]
    return "\n".join(lines)


_QUERY_PARTS = ("q_proj", "q_down", "q_norm", "q_up")
_KV_PARTS = ("k_proj", "v_proj", "k_norm", "kv_down", "kv_norm", "kv_up")


def attention_parameter_split(cfg: TinyConfig) -> dict:
    """One layer's attention parameters by role, counted on a meta-device block (no memory):
    ``{"queries": ..., "keys and values": ..., "output": ...}``, plus ``"other"`` when the attention has
    parameters of neither kind (e.g. sink logits). Works for plain, grouped-query and latent (MLA) attention:
    for MLA, "queries" is the low-rank query path (down-projection, its norm, up-projection) and "keys and
    values" the latent path (down-projection to the latent and the shared RoPE key, its norm, up-projection).
    The parts sum to ``exact_layer_params(cfg)["attention"]``."""
    if not isinstance(cfg, TinyConfig):
        raise TinyTFInputError(f"attention_parameter_split: expected a TinyConfig, got {type(cfg).__name__}")
    with torch.device("meta"), _skip_init():
        attn = DecoderBlock(cfg).attn
    split = {"queries": 0, "keys and values": 0, "output": 0}
    for name, p in attn.named_parameters():
        part = name.split(".")[0]
        role = ("queries" if part in _QUERY_PARTS else "keys and values" if part in _KV_PARTS
                else "output" if part == "o_proj" else "other")
        split[role] = split.get(role, 0) + p.numel()
    return split


def seed_span(values) -> str:
    """Lowest to highest of ``values`` (one per seed), each to two significant digits with thousands grouped:
    [3412.7, 3897.1] -> '3,400 to 3,900'; the QK-norm sweep of chapter 11 prints its largest logits this way."""
    values = list(values)
    if not values:
        raise TinyTFInputError("seed_span: no values")
    low, high = (two_digits(x, keep_zeros=True, grouping=True) for x in (min(values), max(values)))
    return f"{low} to {high}"


def format_lr_sweep(sweep: dict) -> str:
    """Plain text, one row per (learning rate, variant) of ``sweep`` (``load_lr_sweep``): per seed, the largest
    absolute attention logit at the last step (two significant digits) and the mean of the last ten recorded batch
    losses (two decimals)."""
    seeds = sweep["settings"]["seeds"]
    last = sweep["settings"]["steps"]
    w = max(8, *(len(v) for v in sweep["runs"]))
    head = "".join(f"{'seed ' + str(s):>8}" for s in seeds)
    lines = [f"{'':{w + 8}}{'largest |logit|, step ' + str(last):>{8 * len(seeds)}}     "
             f"{'loss, last 10 batches':>{8 * len(seeds)}}",
             f"{'lr':7} {'variant':{w}}{head}     {head}"]
    for lr in sweep["settings"]["lrs"]:
        for variant, by_lr in sweep["runs"].items():
            recs = by_lr[str(lr)]
            logits = "".join(f"{two_digits(r['max_logit'][-1], keep_zeros=True, grouping=True):>8}" for r in recs)
            losses = "".join(f"{sum(r['loss'][-10:]) / 10:>8.2f}" for r in recs)
            lines.append(f"{lr:<7g} {variant:{w}}{logits}     {losses}")
    return "\n".join(lines)


def late_loss(rec: dict, n: int = 10) -> float:
    """The mean of the last ``n`` recorded batch losses of one ``logit_growth`` record."""
    losses = [x for x in rec["loss"] if x is not None]
    if n < 1 or len(losses) < n:
        raise TinyTFInputError(f"late_loss: need n >= 1 and at least n recorded losses, got n={n}, {len(losses)} losses")
    return sum(losses[-n:]) / n


def best_rates(sweep: dict) -> dict:
    """{variant: (learning rate, [late loss per seed])} of ``sweep`` (``load_lr_sweep``): for each variant the rate
    whose late loss (``late_loss``), averaged over the seeds, is lowest, and that rate's losses seed by seed."""
    runs = sweep.get("runs") if isinstance(sweep, dict) else None
    if not runs:
        raise TinyTFInputError("best_rates: expected a sweep from load_lr_sweep, with a non-empty 'runs'")
    out = {}
    for variant, by_lr in runs.items():
        losses = {lr: [late_loss(r) for r in recs] for lr, recs in by_lr.items()}
        lr = min(losses, key=lambda k: sum(losses[k]) / len(losses[k]))
        out[variant] = (float(lr), losses[lr])
    return out


def format_best_rates(best: dict) -> str:
    """Plain text, one line per variant of ``best_rates``: the rate and the late loss of each seed (two decimals)."""
    lines = ["best rate (lowest mean over the seeds) and its loss per seed:"]
    w = max(8, *(len(v) for v in best))
    lines += [f"  {variant:{w}} {lr:<7g}" + "".join(f"{x:>8.2f}" for x in losses) for variant, (lr, losses) in best.items()]
    return "\n".join(lines)


def format_update_rms(updates: dict, streams: dict, input_rms: float, layers=range(0, 8, 2)) -> str:
    """Plain text: ``updates[placement]`` is ``{"attention": [RMS per layer], "FFN": [...]}``, the RMS of what each
    sublayer adds to the stream; ``streams[placement]`` the RMS of the stream at the end. First table: the updates
    of the blocks ``layers``, headed "block 0", "block 2", ... (blocks count from 0). Second: the input's RMS, the
    sum of all squared updates, the root of input² + that sum (the stream's RMS if the updates' squares simply
    added) and the stream at the end."""
    lines = [f"{'placement':24} {'update':10}" + "".join(f"{'block ' + str(i):>9}" for i in layers)]
    for name, by_kind in updates.items():
        for kind, update in by_kind.items():
            label = name if kind == "attention" else ""
            lines.append(f"{label:24} {kind:10}" + "".join(f"{update[i]:>9.3f}" for i in layers))
    lines += ["", f"{'placement':24} {'input':>6} {'sum of the 16 squared updates':>30} {'sqrt(input² + sum)':>19} "
                  f"{'stream at the end':>18}"]
    for name, by_kind in updates.items():
        squares = sum(u ** 2 for update in by_kind.values() for u in update)
        lines.append(f"{name:24} {input_rms:>6.2f} {squares:>30.2f} {(input_rms ** 2 + squares) ** 0.5:>19.2f} "
                     f"{streams[name]:>18.2f}")
    return "\n".join(lines)


def main() -> int:
    """``python -m tinytf record-qk-norm``: re-record tinytf/checkpoints/qk_norm_logits.json (chapter 11)."""
    s = LOGIT_GROWTH_SETTINGS
    runs = {}
    for variant, qk in (("plain", "none"), ("QK-norm", "head")):
        cfg = TinyConfig(**s["base"], qk_norm=qk)
        runs[variant] = [logit_growth(cfg, s["steps"], s["lr"], seed, s["every"]) for seed in s["seeds"]]
        print(variant, [round(r["max_logit"][-1], 1) for r in runs[variant]], flush=True)
    out = dict(command="python -m tinytf record-qk-norm", torch=torch.__version__, settings=s,
               task="induction, repeat length 4..12, batch 32", optimizer="AdamW(0.9, 0.95), constant lr, "
               "no warm-up, no clipping, no weight decay", runs=runs)
    LOGIT_GROWTH_FILE.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", LOGIT_GROWTH_FILE)
    return 0
