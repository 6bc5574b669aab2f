"""Chapter 9's block comparison repeated decoder-only: the same blocks, reversal task, recipe and seeds, no encoder.

Section 9.3 trains a 4 + 4-layer encoder-decoder (``tinytf.block_comparison``). The Llama-3-style block's own
setting is decoder-only, so this module trains each variant's config as a ``TinyTransformer``: its
``n_layers`` (4) decoder blocks with causal self-attention only, no encoder and no cross-attention.

**The sequence.** A decoder-only model reads source and output as one sequence,
``x0 ... x(L-1) <eos> <bos> x(L-1) ... x0`` (the encoder-decoder's source followed by its decoder input), and is
trained and scored only on the second half: at ``<bos>`` and at each reversed letter it predicts the next output
token, ``x(L-1) ... x0 <eos>``, the encoder-decoder's targets. The batches are those of
``block_comparison.train_one`` (``ReversalTask.batch`` from a generator seeded with the run's seed), so a
decoder-only run sees the same data in the same order as its encoder-decoder counterpart, and the evaluation and
validation sequences are the study's (``EVAL_SEED``, ``VAL_SEED``, 43 per length).

**The model.** ``build_model`` initialises it as ``block_comparison.build_model`` does (``paper_init`` under the
seed, sqrt(d_model)-scaled embeddings when the config asks, no final norm in a post-norm model). In a
decoder-only model RoPE acts in every attention that relates the output to the source, which cross-attention in
the encoder-decoder did not (section 8.4).

**The design.** ``run`` trains each variant at the cells (warm-up, peak rate) it is given, with every seed.
``scripts/decoder_only_blocks.py`` gives every variant the study's grid (3 rates x 2 warm-ups, seeds 0-2) and
writes ``tinytf/checkpoints/compare_blocks_decoder_only.json`` (``load_results``); the results have the layout of
``block_comparison``'s, so its readers (``best_settings``, ``cell_stats``, ``paired_differences``, the tables) read
them, and each variant's own decoder-only best cell (``best_cells``) is chosen on the validation sequences, as in
the study. The confirmation (``load_confirmation``) then trains each variant only at that cell on ten fresh seeds,
3-12 (``scripts/decoder_only_blocks.py --at-best-of``), as chapter 9 does for the encoder-decoder.
"""
from __future__ import annotations

import json
import math
import platform
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from . import block_comparison as bc
from . import tasks as T
from ..config import TinyConfig
from ..errors import TinyTFInputError
from ..models import TinyTransformer

RESULTS_PATH = bc.RESULTS_PATH.with_name("compare_blocks_decoder_only.json")
CONFIRM_PATH = bc.RESULTS_PATH.with_name("compare_blocks_decoder_only_confirm.json")


def as_sequence(batch):
    """(src, tgt_in, tgt_out) of ``ReversalTask.batch`` -> (ids, targets, start): ``ids`` = src then tgt_in
    ([B, S+1] + [B, S+1] -> [B, 2S+2]); the logits at positions ``start`` .. 2S+1 (those of tgt_in) predict
    ``targets`` = tgt_out ([B, S+1])."""
    src, tgt_in, tgt_out = batch
    if not (src.shape == tgt_in.shape == tgt_out.shape) or src.dim() != 2:
        raise TinyTFInputError(f"as_sequence: expected three [B, S+1] tensors, got shapes "
                               f"{tuple(src.shape)}, {tuple(tgt_in.shape)}, {tuple(tgt_out.shape)}")
    ids = torch.cat((src, tgt_in), dim=1)  # [B, S+1] + [B, S+1] -> [B, 2S+2]
    return ids, tgt_out, src.shape[1]


def output_logits(model, batch):
    """The logits of the output half, [B, S+1, V], and the targets, [B, S+1]."""
    ids, targets, start = as_sequence(batch)
    return model(ids)[:, start:], targets  # [B, 2S+2, V] -> [B, S+1, V]


def loss_fn(model, batch):
    """Mean cross-entropy over the output tokens (the encoder-decoder's targets)."""
    logits, targets = output_logits(model, batch)
    return F.cross_entropy(logits.transpose(1, 2), targets)  # [B, V, S+1] against [B, S+1]


def build_model(cfg: TinyConfig, seed: int) -> TinyTransformer:
    """A fresh decoder-only ``TinyTransformer`` for ``cfg``, initialised as ``block_comparison.build_model``
    initialises the encoder-decoder (the caller's RNG state is left alone)."""
    if not isinstance(cfg, TinyConfig):
        raise TinyTFInputError(f"build_model: expected a TinyConfig, got {type(cfg).__name__}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = TinyTransformer(cfg)  # sqrt(d_model)-scaled embeddings when cfg.scale_embeddings
        if cfg.norm_position == "post":
            model.final_norm = nn.Identity()  # a post-norm stack already ends in a norm (as in the study)
        bc.paper_init(model)
    if cfg.tie_embeddings:
        model.lm_head.weight = model.embed.weight
    return model


@torch.no_grad()
def evaluate(model, task: T.ReversalTask, n_samples: int, seed: int) -> dict:
    """Loss per output token, token accuracy and exact match (teacher-forced, as the study's ``evaluate``) on the
    sequences ``tinytf.train.evaluate`` draws for the encoder-decoder with the same ``n_samples`` and ``seed``."""
    was_training = model.training
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    lengths = list(range(task.min_length, task.max_length + 1))
    per_length = max(1, math.ceil(n_samples / len(lengths)))  # the same number of examples at every length
    correct = total = exact = n_seq = 0
    loss_sum = 0.0
    for length in lengths:
        logits, targets = output_logits(model, task.batch(per_length, gen, length=length))
        ok = logits.argmax(-1) == targets  # [B, S+1]
        correct, total = correct + int(ok.sum()), total + ok.numel()
        exact, n_seq = exact + int(ok.all(dim=1).sum()), n_seq + ok.shape[0]
        loss_sum += float(F.cross_entropy(logits.transpose(1, 2), targets, reduction="sum"))
    model.train(was_training)
    return {"token_accuracy": correct / total, "exact_match": exact / n_seq, "loss": loss_sum / total}


def train_one(cfg: TinyConfig, seed: int, lr: float, warmup: int, steps: int = bc.DEFAULTS["steps"],
              batch_size: int = bc.DEFAULTS["batch_size"], min_length: int = bc.DEFAULTS["min_length"],
              max_length: int = bc.DEFAULTS["max_length"], eval_samples: int = bc.DEFAULTS["eval_samples"],
              bar=None) -> dict:
    """One decoder-only run with the study's recipe (Adam 0.9/0.98/1e-9, ``block_comparison.lr_at``), batches
    and evaluation sets; the same record as ``block_comparison.train_one``. A run whose loss stops being finite
    is stopped and marked ``diverged``. ``bar``: a tqdm bar advanced by one per step."""
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 1:
        raise TinyTFInputError(f"warmup: expected a positive number of steps, got {warmup!r}")
    if not (isinstance(lr, (int, float)) and lr > 0):
        raise TinyTFInputError(f"lr: expected a positive peak learning rate, got {lr!r}")
    if 2 * (max_length + 1) > cfg.max_seq_len:
        raise TinyTFInputError(f"a sequence of 2 x (max_length + 1) = {2 * (max_length + 1)} tokens does not fit "
                               f"max_seq_len {cfg.max_seq_len}")
    task = T.ReversalTask(min_length=min_length, max_length=max_length)
    model = build_model(cfg, seed)
    return bc.run_record(model, task, loss_fn, lambda m, s: evaluate(m, task, eval_samples, s), seed=seed, lr=lr,
                         warmup=warmup, steps=steps, batch_size=batch_size, eval_samples=eval_samples, bar=bar)


def _cells(name, given) -> list:
    """One variant's cells as a list of (warm-up, lr) pairs, from one pair or a list of them."""
    pairs = [given] if isinstance(given, tuple) else list(given)
    for pair in pairs:
        if (not isinstance(pair, (tuple, list)) or len(pair) != 2 or isinstance(pair[0], bool)
                or not isinstance(pair[0], int) or pair[0] < 1 or not isinstance(pair[1], (int, float))
                or not pair[1] > 0):
            raise TinyTFInputError(f"run: a cell of {name!r} must be (warm-up steps, peak lr), got {pair!r}")
    if not pairs:
        raise TinyTFInputError(f"run: no cell for {name!r}")
    return [(int(w), float(lr)) for w, lr in pairs]


def run(configs: dict, cells: dict, seeds=bc.DEFAULTS["seeds"], steps: int = bc.DEFAULTS["steps"],
        eval_samples: int = bc.DEFAULTS["eval_samples"], progress: bool = True, on_run=None) -> dict:
    """Train every variant of ``configs`` ({name: TinyConfig}) at each of its cells ``cells[name]`` (one
    (warm-up, peak lr) pair or a list of them) with every seed; a JSON-able dict in ``block_comparison``'s layout,
    plus ``cells``. ``progress``: one tqdm bar over all steps. ``on_run(name, run)`` is called after every run."""
    missing = [name for name in configs if name not in cells]
    if missing:
        raise TinyTFInputError(f"run: no (warm-up, lr) cell for {', '.join(missing)}")
    seeds = list(seeds)
    if not seeds:
        raise TinyTFInputError("run: give at least one seed")
    cells = {name: _cells(name, cells[name]) for name in configs}
    every = [pair for pairs in cells.values() for pair in pairs]
    d = bc.DEFAULTS
    out = {"task": {"name": "reversal", "min_length": d["min_length"], "max_length": d["max_length"],
                    "model": "decoder-only: src then tgt_in as one sequence, loss on the tgt_in positions"},
           "settings": {"steps": steps, "lrs": sorted({lr for _, lr in every}),
                        "warmups": sorted({w for w, _ in every}), "batch_size": d["batch_size"],
                        "seeds": seeds, "eval_samples": eval_samples, "eval_seed": bc.EVAL_SEED,
                        "val_seed": bc.VAL_SEED, **bc.RECIPE},
           "cells": {name: [list(pair) for pair in pairs] for name, pairs in cells.items()},
           "configs": {name: cfg.to_dict() for name, cfg in configs.items()},
           "runs": {name: [] for name in configs},
           "environment": {"torch": torch.__version__, "python": platform.python_version(),
                           "threads": torch.get_num_threads()}}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(every) * len(seeds) * steps, unit="step", mininterval=1.0)
    for seed in seeds:
        for name, cfg in configs.items():
            for w, lr in cells[name]:
                if bar is not None:
                    bar.set_description(f"{name}, W {w}, lr {lr:g}, seed {seed}")
                r = train_one(cfg, seed, lr, w, steps=steps, eval_samples=eval_samples, bar=bar)
                out["runs"][name].append(r)
                if on_run is not None:
                    on_run(name, r)
    if bar is not None:
        bar.close()
    for runs in out["runs"].values():
        runs.sort(key=lambda r: (r["warmup"], r["lr"], r["seed"]))
    return out


def save_results(results: dict, path=None) -> Path:
    path = Path(RESULTS_PATH if path is None else path)
    path.write_text(json.dumps(results, indent=1, allow_nan=False) + "\n")
    return path


def load_results(path=None) -> dict:
    """The shipped decoder-only runs (``path=None``: ``RESULTS_PATH``) or another file written by ``save_results``."""
    path = Path(RESULTS_PATH if path is None else path)
    if not path.exists():
        raise TinyTFInputError(f"{path} does not exist; run `python scripts/decoder_only_blocks.py` to create it")
    results = json.loads(path.read_text())
    for key in ("settings", "configs", "runs", "cells"):
        if key not in results:
            raise TinyTFInputError(f"{path} has no {key!r} entry; it was not written by scripts/decoder_only_blocks.py")
    return results


def load_confirmation(path=None) -> dict:
    """The decoder-only confirmation (``path=None``: ``CONFIRM_PATH``): each variant trained only at its own best
    cell of the decoder-only grid (``best_cells(load_results())``, chosen on validation loss over seeds 0-2), on
    ten fresh seeds (3-12). Written by ``scripts/decoder_only_blocks.py --at-best-of FILE --seeds 3 ... 12``; one
    cell per variant, so ``block_comparison.cells_of``, ``paired_stats`` and ``interval_table`` read it."""
    results = load_results(CONFIRM_PATH if path is None else path)
    try:
        bc.cells_of(results)
    except TinyTFInputError as e:
        raise TinyTFInputError(f"{CONFIRM_PATH if path is None else path}: not a confirmation ({e})") from None
    return results


def combine(*parts: dict) -> dict:
    """One results dict from several written by ``run`` for the same variants' configs, task and recipe (e.g.
    the best cells first, the other rates later): runs and cells joined, the grid the union of the parts'.
    A cell trained twice is an error."""
    if not parts:
        raise TinyTFInputError("combine: give at least one results dict")
    first = parts[0]
    same = [k for k in first["settings"] if k not in ("lrs", "warmups")]
    out = dict(first, runs={}, cells={}, configs={})
    for part in parts:
        if part["task"] != first["task"] or any(part["settings"].get(k) != first["settings"][k] for k in same):
            raise TinyTFInputError("combine: the parts have different task settings or recipes")
        for name, runs in part["runs"].items():
            if name in out["configs"] and out["configs"][name] != part["configs"][name]:
                raise TinyTFInputError(f"combine: variant {name!r} has two different configs")
            out["configs"][name] = part["configs"][name]
            have = {tuple(c) for c in out["cells"].get(name, [])}
            new = {tuple(c) for c in part["cells"][name]}
            if have & new:
                raise TinyTFInputError(f"combine: variant {name!r} has runs at {sorted(have & new)} twice")
            out["cells"][name] = sorted(have | new)
            out["runs"][name] = sorted(out["runs"].get(name, []) + runs,
                                       key=lambda r: (r["warmup"], r["lr"], r["seed"]))
    out["cells"] = {name: [list(c) for c in cells] for name, cells in out["cells"].items()}
    every = [c for cells in out["cells"].values() for c in cells]
    out["settings"] = dict(first["settings"], lrs=sorted({lr for _, lr in every}),
                           warmups=sorted({w for w, _ in every}))
    out["environment"] = [part.get("environment") for part in parts]
    out["command"] = " && ".join(part.get("command", "?") for part in parts)
    return out


def best_cells(results: dict) -> dict:
    """{variant: (warm-up, lr)}: among the cells the variant was trained at (``results["cells"]``), the one with
    the lowest mean validation loss over seeds (ties: the shorter warm-up, then the smaller rate). A cell where
    a seed diverged is not eligible. Pass it as ``choice`` to ``block_comparison.summary_table`` or
    ``paired_differences``."""
    out = {}
    for name, cells in results["cells"].items():
        scores = []
        for w, lr in cells:
            st = bc.cell_stats(results, name, lr, "eval_loss", "val_metrics", w)
            scores.append((math.inf if st["diverged"] or st["mean"] is None else st["mean"], w, lr))
        best = min(scores)
        if not math.isfinite(best[0]):
            raise TinyTFInputError(f"variant {name!r} diverged in every cell")
        out[name] = (best[1], best[2])
    return out


def with_rates(results: dict) -> dict:
    """``results`` with ``lrs_by_variant`` (each variant's own rates), so that ``block_comparison``'s tables mark a
    best rate at the edge of the rates that variant was trained at."""
    return dict(results, lrs_by_variant={name: sorted({lr for _, lr in cells})
                                         for name, cells in results["cells"].items()})
