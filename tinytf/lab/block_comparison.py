"""The 2017 block against the Llama-3-style block, measured (chapter 9, section 9.3).

A 4-layer encoder-decoder (4 encoder + 4 decoder layers, d_model 32) is trained on the toy reversal task of
``tinytf.tasks`` with several blocks, two warm-up lengths, several peak learning rates and several seeds each.
Every run uses one training recipe, the one of "Attention Is All You Need" scaled to a 400-step run, so that
only the block, the warm-up and the peak rate differ:

* **the 2017 block, as in the paper**: post-norm, LayerNorm, ReLU MLP with d_ff = 4 d, biases, multi-head
  attention, sinusoidal positions added to the token embeddings *multiplied by sqrt(d_model)*
  (``scale_embeddings=True``; section 3.4 of the paper), and no norm after the last block (a post-norm stack
  already ends in one);
* **the Llama-3-style block** (``config_2026`` with two changes, at toy size): pre-norm, RMSNorm, SwiGLU with
  d_ff = 8/3 d (the same FFN parameter count), RoPE, no biases, grouped-query attention (2 key/value heads),
  no embedding scaling, a final norm;
* the variants that separate the causes (``VARIANTS``): 2017 + pre-norm, Llama-3-style + post-norm,
  Llama-3-style + sinusoidal (the paper's input layer: sinusoids added to sqrt(d)-scaled embeddings),
  Llama-3-style + scaled emb. (RoPE kept, only the sqrt(d) scaling added) and Llama-3-style + MHA (one key/value
  head per query head, which also brings the parameter count within 3% of the 2017 model's).

The variants were keyed "2026", "2026 + ..." until December 2026 (the year of the book, as "2017" is the year of
the paper); the shipped results files were renamed with them (their ``renamed`` entry says so).

The recipe (``RECIPE``), for every variant:

* initialisation as in the paper's reference code (tensor2tensor): every Linear weight Glorot/Xavier-uniform
  (t2t's "uniform_unit_scaling", gain 1), biases 0, token embeddings N(0, d_model^-1/2), norm gains 1;
* Adam with beta1 0.9, beta2 0.98, eps 1e-9, no weight decay, no gradient clipping;
* the paper's schedule: linear warm-up over W steps, then decay with the inverse square root of the step,
  ``lr(n) = peak * min(n / W, sqrt(W / n))``. W is a factor of the study (``DEFAULTS["warmups"]``): 16 steps
  (the paper's 4,000 of 100,000 steps, the same 4% of a 400-step run) and 100 steps (a quarter of the run);
* no dropout and no label smoothing: every batch is freshly drawn, so there is nothing to regularise, and
  label smoothing would change the loss being compared;
* peak learning rates from a grid (``DEFAULTS["lrs"]``): the paper's own formula (d^-1/2 W^-1/2) assumes
  its own size and run length, so each variant is trained at every grid value.

The best cell (warm-up, peak rate) of a variant is the one with the lowest mean *validation* loss over the
seeds (sequences drawn with ``VAL_SEED``); the reported numbers come from another fresh set (``EVAL_SEED``),
so the choice does not flatter the number reported.

``scripts/compare_blocks.py`` runs the sweep and writes ``tinytf/checkpoints/compare_blocks.json``, which
``load_results()`` reads back (it ships with the package, so the chapter works without retraining).
``run_comparison`` is the same code a chapter can call for a very short live run.

Note: ``build_model`` builds the ``EncoderDecoder`` with plain embeddings and then replaces them by
``tinytf.models.ScaledEmbedding`` when the config asks for sqrt(d_model) scaling (``EncoderDecoder`` itself
honours ``TinyConfig.scale_embeddings``), and replaces the final norms of a post-norm model by the identity.
"""
from __future__ import annotations

import json
import math
import platform
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from . import tasks as T
from ..config import TinyConfig, config_2017, config_2026
from ..errors import TinyTFInputError
from ..models import EncoderDecoder, ScaledEmbedding
from . import train as TR

RESULTS_PATH = Path(__file__).resolve().parents[1] / "checkpoints" / "compare_blocks.json"

#: the reported metrics come from sequences drawn with EVAL_SEED (= tinytf.train.EVAL_SEED); the learning rate
#: is chosen on sequences drawn with VAL_SEED; training batches use the small run seeds
EVAL_SEED = 10_000
VAL_SEED = 20_000

#: the variants, in the order the chapter shows them
VARIANTS = ("2017", "2017 + pre-norm", "Llama-3-style + post-norm", "Llama-3-style + sinusoidal",
            "Llama-3-style + scaled emb.", "Llama-3-style + MHA", "Llama-3-style")

#: settings of the shipped comparison (scripts/compare_blocks.py uses these unless told otherwise)
DEFAULTS = dict(d_model=32, n_heads=4, n_kv_heads=2, n_layers=4, steps=400,
                lrs=(4e-3, 8e-3, 1.6e-2), warmups=(16, 100), batch_size=32, seeds=(0, 1, 2),
                min_length=3, max_length=8, eval_samples=256, warmup_fraction=0.04)

RECIPE = {
    "optimizer": "Adam(beta1 0.9, beta2 0.98, eps 1e-9), no weight decay, no gradient clipping",
    "schedule": "peak * min(n / W, sqrt(W / n)) at step n = 1, 2, ...: linear warm-up over W steps, then "
                "inverse square root; W is a factor: 16 steps (4% of the run, as the paper's 4,000 of 100,000) "
                "or 100 steps",
    "init": "Linear weights Xavier/Glorot uniform, biases 0, token embeddings N(0, d_model^-0.5), norm gains 1 "
            "(the paper's reference code, tensor2tensor)",
    "regularisation": "none (no dropout, no label smoothing): every training batch is freshly drawn",
    "lr_choice": "per variant (and per warm-up), the peak lr with the lowest mean validation loss over seeds "
                 "(validation sequences drawn with VAL_SEED); reported metrics on other sequences (EVAL_SEED)",
}
BETAS = (0.9, 0.98)
ADAM_EPS = 1e-9


def swiglu_d_ff(d_model: int) -> int:
    """d_ff that gives a SwiGLU FFN (3 matrices) the parameter count of a 4x two-matrix MLP: round(8/3 d)."""
    return round(8 * d_model / 3)


def block_configs(d_model: int = DEFAULTS["d_model"], n_heads: int = DEFAULTS["n_heads"],
                  n_kv_heads: int = DEFAULTS["n_kv_heads"], n_layers: int = DEFAULTS["n_layers"],
                  max_length: int = DEFAULTS["max_length"], ablations: bool = True) -> dict:
    """{name: TinyConfig} for the comparison, in the order of ``VARIANTS``: same width, depth and heads.

    '2017' is the paper's block (sqrt(d_model)-scaled embeddings + sinusoids, post-norm LayerNorm, ReLU 4x,
    biases), 'Llama-3-style' the modern one (``config_2026`` with SwiGLU at 8/3 d and grouped-query attention).
    With ``ablations`` also the five variants in between: '2017 + pre-norm', 'Llama-3-style + post-norm',
    'Llama-3-style + sinusoidal' (sinusoids added to sqrt(d_model)-scaled embeddings, the paper's input layer),
    'Llama-3-style + scaled emb.' (RoPE kept, only the sqrt(d_model) scaling added: separates the two changes
    of 'Llama-3-style + sinusoidal') and 'Llama-3-style + MHA'. Without: only '2017' and 'Llama-3-style'."""
    common = dict(vocab_size=T.VOCAB_SIZE, d_model=d_model, n_heads=n_heads, n_layers=n_layers,
                  max_seq_len=max(32, max_length + 1))
    old = config_2017(**common, d_ff=4 * d_model, scale_embeddings=True)
    new = config_2026(**common, d_ff=swiglu_d_ff(d_model), n_kv_heads=n_kv_heads)
    if not ablations:
        return {"2017": old, "Llama-3-style": new}
    return {
        "2017": old,
        "2017 + pre-norm": old.replace(norm_position="pre"),
        "Llama-3-style + post-norm": new.replace(norm_position="post"),
        "Llama-3-style + sinusoidal": new.replace(pos="sinusoidal", scale_embeddings=True),
        "Llama-3-style + scaled emb.": new.replace(scale_embeddings=True),
        "Llama-3-style + MHA": new.replace(n_kv_heads=None),
        "Llama-3-style": new,
    }


# ---------------------------------------------------------------------------------------------- one run


def warmup_steps(steps: int, fraction: float = DEFAULTS["warmup_fraction"]) -> int:
    """W of the schedule: ``fraction`` of the run (the paper: 4,000 / 100,000), at least one step."""
    return max(1, round(fraction * steps))


def lr_at(step: int, peak: float, warmup: int) -> float:
    """The paper's schedule at 0-based ``step`` (n = step + 1): peak * min(n / W, sqrt(W / n)).

    The paper writes it d_model^-0.5 * min(n^-0.5, n * W^-1.5), whose peak at n = W is d^-0.5 W^-0.5; here
    the peak is a parameter (the learning-rate grid) and the shape is the same."""
    n = step + 1
    return peak * min(n / warmup, math.sqrt(warmup / n))


def paper_init(model: nn.Module) -> nn.Module:
    """Initialise ``model`` in place as the paper's reference code (tensor2tensor) does: Linear weights
    Xavier/Glorot uniform (t2t "uniform_unit_scaling", gain 1.0: fan_avg, uniform), biases 0, embedding rows
    N(0, d_model^-0.5) (t2t's embedding initialiser; with the sqrt(d_model) scaling the lookup then has unit
    variance per component), norm gains 1 and offsets 0. Uses the global torch RNG."""
    for m in model.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, 0.0, m.embedding_dim ** -0.5)
    return model


def _scale_embeddings(model) -> None:
    """Give the encoder and decoder of an EncoderDecoder sqrt(d_model)-scaled embeddings (if not already)."""
    for part in (model.encoder, model.decoder):
        if not isinstance(part.embed, ScaledEmbedding):
            part.embed = ScaledEmbedding(part.embed.num_embeddings, part.embed.embedding_dim)


def _drop_final_norms(model) -> None:
    """A post-norm stack ends in the norm of its last sublayer, as in the paper: replace the final norms of
    encoder and decoder (which a pre-norm stack needs) by the identity, so post-norm models have no extra norm."""
    for part in (model.encoder, model.decoder):
        part.final_norm = nn.Identity()


def build_model(cfg: TinyConfig, seed: int):
    """A fresh EncoderDecoder for ``cfg``, initialised by ``paper_init`` under ``seed`` (the caller's RNG state
    is left alone). With ``cfg.scale_embeddings`` its token embeddings are multiplied by sqrt(d_model). A
    post-norm model has no final norm after its encoder and decoder stacks (their last sublayer already ends in
    one, as in the paper); a pre-norm model keeps them."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = EncoderDecoder(cfg.replace(scale_embeddings=False))  # the draws of the recorded runs
        if cfg.scale_embeddings:
            _scale_embeddings(model)
        if cfg.norm_position == "post":
            _drop_final_norms(model)
        paper_init(model)
    if cfg.tie_embeddings:
        model.lm_head.weight = model.decoder.embed.weight
    return model


def _rounded(metrics: dict) -> dict:
    return {k: (round(v, 5) if isinstance(v, float) else v) for k, v in metrics.items()}


def train_one(cfg: TinyConfig, seed: int, lr: float, steps: int = DEFAULTS["steps"],
              batch_size: int = DEFAULTS["batch_size"], min_length: int = DEFAULTS["min_length"],
              max_length: int = DEFAULTS["max_length"], eval_samples: int = DEFAULTS["eval_samples"],
              warmup_fraction: float = DEFAULTS["warmup_fraction"], warmup: int | None = None, bar=None,
              threads=None) -> dict:
    """One run: ``build_model(cfg, seed)`` trained with the recipe at peak rate ``lr`` on reversal batches drawn
    from a generator seeded with ``seed``, then evaluated on fresh sequences (``VAL_SEED`` and ``EVAL_SEED``).
    ``warmup``: the warm-up length W in steps (default: ``warmup_fraction`` of the run).

    A run whose loss stops being finite is stopped there and marked ``diverged`` (its metrics are None).
    ``bar``: a tqdm bar advanced by one per step."""
    if threads is not None:
        torch.set_num_threads(threads)
    task = T.ReversalTask(min_length=min_length, max_length=max_length)
    model = build_model(cfg, seed)
    if warmup is None:
        warmup = warmup_steps(steps, warmup_fraction)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 1:
        raise TinyTFInputError(f"warmup: expected a positive number of steps, got {warmup!r}")
    return run_record(model, task, lambda m, batch: TR.seq2seq_loss(m, batch)[0],
                      lambda m, s: TR.evaluate(m, task, n_samples=eval_samples, seed=s, threads=None),
                      seed=seed, lr=lr, warmup=warmup, steps=steps, batch_size=batch_size,
                      eval_samples=eval_samples, bar=bar)


def run_record(model, task, loss_fn, evaluate, *, seed: int, lr: float, warmup: int, steps: int, batch_size: int,
               eval_samples: int, bar=None) -> dict:
    """Train ``model`` with the recipe (Adam 0.9/0.98/1e-9, ``lr_at``) on ``task`` batches drawn from a generator
    seeded with ``seed``, then evaluate it on ``VAL_SEED`` and ``EVAL_SEED``: the record of one run, shared by
    this study and its decoder-only repeat. ``loss_fn(model, batch)`` returns the scalar loss, ``evaluate(model,
    seed)`` a metrics dict with a "loss". A run whose loss stops being finite is stopped and marked ``diverged``."""
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=BETAS, eps=ADAM_EPS)
    data = torch.Generator().manual_seed(seed)
    losses, diverged = [], False
    t0, c0 = time.perf_counter(), time.process_time()
    model.train()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, lr, warmup)
        loss = loss_fn(model, task.batch(batch_size, data))
        if not math.isfinite(loss.item()):
            diverged = True
            if bar is not None:
                bar.update(steps - step)
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if bar is not None:
            bar.update(1)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    model.eval()
    tail = losses[-max(1, steps // 20):]
    out = {"seed": seed, "lr": lr, "warmup": warmup, "parameters": sum(p.numel() for p in model.parameters()),
           "losses": [round(x, 4) for x in losses], "diverged": diverged,
           "final_loss": None if diverged or not tail else round(sum(tail) / len(tail), 5),
           "metrics": None, "val_metrics": None, "seconds": round(seconds, 1),
           "cpu_seconds": round(cpu, 1)}
    if not diverged and eval_samples:
        out["val_metrics"] = _rounded(evaluate(model, VAL_SEED))
        out["metrics"] = _rounded(evaluate(model, EVAL_SEED))
        if not (math.isfinite(out["metrics"]["loss"]) and math.isfinite(out["val_metrics"]["loss"])):
            out["diverged"], out["metrics"], out["val_metrics"] = True, None, None
    return out


def _train_job(args):  # for the process pool (picklable)
    cfg, seed, lr, warmup, common = args
    return train_one(cfg, seed, lr, warmup=warmup, threads=1, **common)


def run_comparison(configs: dict | None = None, seeds=DEFAULTS["seeds"], steps: int = DEFAULTS["steps"],
                   lrs=DEFAULTS["lrs"], warmups=DEFAULTS["warmups"], batch_size: int = DEFAULTS["batch_size"],
                   min_length: int = DEFAULTS["min_length"], max_length: int = DEFAULTS["max_length"],
                   eval_samples: int = DEFAULTS["eval_samples"], progress: bool = True, jobs: int = 1,
                   done: dict | None = None, on_run=None, priority=None) -> dict:
    """Train one EncoderDecoder per (variant, warm-up, peak lr, seed) on the reversal task; return a JSON-able dict.

    ``lrs``: one peak learning rate or a sequence of them; ``warmups``: one warm-up length W (in steps) or a
    sequence of them. Seed s fixes both the initial weights and the training batches, so all variants, warm-ups
    and rates of one seed see the same data in the same order. ``progress`` shows one tqdm bar over all steps
    of all runs. ``jobs`` > 1 trains that many runs at once in separate processes with one thread each (the bar
    then counts finished runs; the numbers are the same). With ``jobs=1`` the runs use the caller's torch
    thread count; scripts/compare_blocks.py sets one thread.

    ``done``: {(name, warm-up, lr, seed): run} already trained (e.g. by an interrupted sweep); those are not
    trained again. ``on_run(name, run)`` is called after every newly finished run (e.g. to save it at once).
    ``priority``: variant names in the order to train them (every run of the first, then of the next, ...);
    by default the runs go seed by seed. The results are in the order of ``configs`` either way."""
    configs = block_configs(max_length=max_length) if configs is None else configs
    seeds, lrs, warmups = _sweep_grid(seeds, lrs, warmups, jobs)
    out = {
        "task": {"name": "reversal", "min_length": min_length, "max_length": max_length},
        "settings": {"steps": steps, "lrs": lrs, "warmups": warmups, "batch_size": batch_size, "seeds": seeds,
                     "eval_samples": eval_samples, "eval_seed": EVAL_SEED, "val_seed": VAL_SEED, **RECIPE},
        "configs": {name: _config_dict(cfg) for name, cfg in configs.items()},
        "runs": {name: [] for name in configs},
        "environment": {"torch": torch.__version__, "python": platform.python_version(),
                        "threads": 1 if jobs > 1 else torch.get_num_threads(), "jobs": jobs},
    }
    every = [(name, w, lr, seed) for seed in seeds for w in warmups for lr in lrs for name in configs]
    results = {key: run for key, run in (done or {}).items() if key in every}
    todo = [key for key in every if key not in results]
    if priority is not None:
        rank = {name: i for i, name in enumerate(priority)}
        todo.sort(key=lambda k: rank.get(k[0], len(rank)))  # stable: seed by seed within a variant
    common = dict(steps=steps, batch_size=batch_size, min_length=min_length, max_length=max_length,
                  eval_samples=eval_samples)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = (tqdm(total=len(todo) * steps, desc=f"{len(todo)} runs", unit="step", mininterval=1.0)
               if jobs == 1 else tqdm(total=len(todo), desc=f"runs ({jobs} at a time)", unit="run"))
    if jobs == 1:
        for name, w, lr, seed in todo:
            if bar is not None:
                bar.set_description(f"{name}, W {w}, lr {lr:g}, seed {seed}")
            r = results[name, w, lr, seed] = train_one(configs[name], seed, lr, warmup=w, bar=bar, **common)
            if on_run is not None:
                on_run(name, r)
            if bar is not None:
                bar.set_postfix_str(f"last: {'diverged' if r['diverged'] else format(r['final_loss'], '.3f')}")
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(_train_job, (configs[name], seed, lr, w, common)): (name, w, lr, seed)
                       for name, w, lr, seed in todo}
            for f in as_completed(futures):
                key = futures[f]
                results[key] = f.result()
                if on_run is not None:
                    on_run(key[0], results[key])
                if bar is not None:
                    bar.set_postfix_str(f"{key[0]} W {key[1]} lr {key[2]:g} seed {key[3]}")
                    bar.update(1)
    if bar is not None:
        bar.close()
    for name, w, lr, seed in sorted(every, key=lambda k: (list(configs).index(k[0]), warmups.index(k[1]),
                                                         lrs.index(k[2]), seeds.index(k[3]))):
        out["runs"][name].append(results[name, w, lr, seed])
    return out


def _sweep_grid(seeds, lrs, warmups, jobs) -> tuple[list, list, list]:
    """run_comparison's grid as lists (seeds, peak rates, warm-ups), with a clear message for bad input."""
    seeds = list(seeds)
    lrs = [float(lrs)] if isinstance(lrs, (int, float)) else [float(x) for x in lrs]
    warmups = [warmups] if isinstance(warmups, int) else list(warmups)
    if not seeds:
        raise TinyTFInputError("run_comparison: give at least one seed")
    if not lrs or not all(x > 0 for x in lrs):
        raise TinyTFInputError(f"run_comparison: give at least one positive learning rate, got {lrs!r}")
    if not warmups or not all(isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in warmups):
        raise TinyTFInputError(f"run_comparison: give at least one warm-up length (a positive number of steps), "
                               f"got {warmups!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise TinyTFInputError(f"jobs: expected a positive integer, got {jobs!r}")
    return seeds, lrs, warmups


def _config_dict(cfg: TinyConfig) -> dict:
    return cfg.to_dict()


def save_results(results: dict, path=None) -> Path:
    path = Path(RESULTS_PATH if path is None else path)  # default: the shipped RESULTS_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, allow_nan=False) + "\n")
    return path


def load_results(path=None) -> dict:
    """The shipped comparison (``path=None``: ``RESULTS_PATH``) or another results file written by ``save_results``."""
    path = Path(RESULTS_PATH if path is None else path)
    if not path.exists():
        raise TinyTFInputError(f"{path} does not exist; run `python scripts/compare_blocks.py` to create it")
    try:
        results = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise TinyTFInputError(f"{path} is not valid JSON ({e}); re-run `python scripts/compare_blocks.py`")
    for key in ("settings", "configs", "runs"):
        if key not in results:
            raise TinyTFInputError(f"{path} has no {key!r} entry; it was not written by scripts/compare_blocks.py")
    if "lrs" not in results["settings"]:
        raise TinyTFInputError(f"{path} has no learning-rate grid (settings 'lrs'); it was written by an older "
                               "scripts/compare_blocks.py: run it again")
    if "warmups" not in results["settings"]:
        raise TinyTFInputError(f"{path} has no warm-up factor (settings 'warmups'); it was written by an older "
                               "scripts/compare_blocks.py: run it again")
    return results


def configs_of(results: dict) -> dict:
    """The TinyConfigs stored in a results dict."""
    return {name: TinyConfig.from_dict(c) for name, c in results["configs"].items()}


# ---------------------------------------------------------------------------------------------- reading results


def lrs_of(results: dict) -> list:
    return list(results["settings"]["lrs"])


def warmups_of(results: dict) -> list:
    return list(results["settings"]["warmups"])


def lrs_for(results: dict, name: str) -> list:
    """The peak rates tried for variant ``name``: the whole grid, unless ``extend`` gave it more rates than
    other variants have."""
    return list(results.get("lrs_by_variant", {}).get(name, lrs_of(results)))


def extend(results: dict, *extras: dict) -> dict:
    """``results`` with the runs of ``extras`` added: results files with more peak rates for some variants
    (written by ``scripts/compare_blocks.py --variants ... --lrs ...``), with the same task, configs and other
    settings. The grid becomes the union of the rates; each variant keeps its own rates (``lrs_for``), so the
    tables leave a rate a variant was not trained at blank, best cells are chosen among the rates it was
    trained at, and a best rate is at an edge when it is the lowest or highest of them."""
    out = dict(results, runs={name: list(runs) for name, runs in results["runs"].items()})
    tried = {name: set(lrs_for(results, name)) for name in results["runs"]}
    for extra in extras:
        if extra["task"] != results["task"] or any(
                extra["settings"].get(k) != v for k, v in results["settings"].items() if k != "lrs"):
            raise TinyTFInputError("extend: an extra results file has other task settings than the study")
        for name, runs in extra["runs"].items():
            if name not in results["runs"] or configs_of(extra)[name] != configs_of(results)[name]:
                raise TinyTFInputError(f"extend: variant {name!r} is not in the study with the same config")
            new = set(lrs_of(extra))
            if new & tried[name]:
                raise TinyTFInputError(f"extend: variant {name!r} already has runs at {sorted(new & tried[name])}")
            out["runs"][name] += runs
            tried[name] |= new
    out["settings"] = dict(results["settings"], lrs=sorted(set().union(*tried.values())))
    out["lrs_by_variant"] = {name: sorted(rates) for name, rates in tried.items()}
    return out


def combine(*parts: dict) -> dict:
    """One results dict from files that each trained other variants at their own cells (``scripts/compare_blocks.py
    --variants NAME --warmups W --lrs LR --seeds ...``): the same task and recipe, the same seeds; the warm-ups
    and rates become the union. Used for the confirmation runs, where each variant is trained only at the cell
    the study chose for it, on seeds the study never saw."""
    if not parts:
        raise TinyTFInputError("combine: no results to combine")
    first = parts[0]
    fixed = {k: v for k, v in first["settings"].items() if k not in ("lrs", "warmups")}
    out = dict(first, runs={}, configs={})
    for part in parts:
        if part["task"] != first["task"] or {k: v for k, v in part["settings"].items()
                                             if k not in ("lrs", "warmups")} != fixed:
            raise TinyTFInputError("combine: the results files differ in task, recipe or seeds")
        for name, runs in part["runs"].items():
            if name in out["runs"]:
                raise TinyTFInputError(f"combine: variant {name!r} appears in two files")
            out["runs"][name], out["configs"][name] = list(runs), part["configs"][name]
    out["settings"] = dict(fixed, lrs=sorted({lr for p in parts for lr in lrs_of(p)}),
                           warmups=sorted({w for p in parts for w in warmups_of(p)}))
    return out


#: the study's extensions, compare_blocks_<part>.json: each trains one or two variants at one more peak rate, beyond
#: the edge of the grid where that variant's best rate sat (2017 and 2017 + pre-norm at 0.002, Llama-3-style and
#: Llama-3-style + MHA at 0.032)
EXTENSION_PARTS = ("2017_lr0.002", "prenorm_lr0.002", "2026_lr0.032")


def load_study(directory=None) -> dict:
    """Chapter 9's study as the chapter reads it: the shipped grid (``load_results()``: every variant x 2 warm-ups x
    3 peak rates x seeds 0-2) with the runs at one more rate where a variant's best rate sat at the edge of the
    grid (``EXTENSION_PARTS``), joined by ``extend``, so each variant keeps its own rates (``lrs_for``)."""
    directory = Path(directory) if directory is not None else RESULTS_PATH.parent
    study = load_results(directory / RESULTS_PATH.name)
    return extend(study, *(load_results(directory / f"compare_blocks_{part}.json") for part in EXTENSION_PARTS))


CONFIRM_PARTS = ("2017", "prenorm", "llama", "scaled", "mha", "postnorm")  # compare_blocks_confirm_<part>.json


def load_confirmation(directory=None) -> dict:
    """The confirmation runs (chapter 9): six variants, each trained only at the best cell the study chose for it
    on seeds 0-2, on ten fresh seeds (3-12), combined into one results dict (``combine``). Written by
    ``scripts/compare_blocks.py --variants NAME --warmups W --lrs LR --seeds 3 ... 12`` (each file's ``command``)."""
    directory = Path(directory) if directory is not None else RESULTS_PATH.parent
    return combine(*(load_results(directory / f"compare_blocks_confirm_{part}.json") for part in CONFIRM_PARTS))


def cells_of(results: dict) -> dict:
    """{variant: (warm-up, lr)} of a results dict in which every variant was trained at one cell only (the
    confirmation runs)."""
    out = {}
    for name, runs in results["runs"].items():
        cells = {(r["warmup"], r["lr"]) for r in runs}
        if len(cells) != 1:
            raise TinyTFInputError(f"cells_of: variant {name!r} was trained at {len(cells)} cells, not one")
        out[name] = cells.pop()
    return out


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t distribution with ``df`` degrees of freedom (e.g. ``t_quantile(0.975,
    9)`` = 2.262, the factor of a two-sided 95% interval from 10 paired differences): the CDF, integrated from
    the density with Simpson's rule, solved for ``p`` by bisection (accurate to about 1e-6)."""
    if not 0.5 <= p < 1 or isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise TinyTFInputError(f"t_quantile: expected 0.5 <= p < 1 and an integer df >= 1, got p={p!r}, df={df!r}")
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def cdf(t, n=2000):  # 0.5 + integral of the density from 0 to t (Simpson, n even)
        h = t / n
        f = [math.exp(log_c - (df + 1) / 2 * math.log1p((i * h) ** 2 / df)) for i in range(n + 1)]
        return 0.5 + h / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2]))

    lo, hi = 0.0, 1.0
    while cdf(hi) < p:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return (lo + hi) / 2


def _warmup(results: dict, warmup) -> int:
    """``warmup`` itself, or the only warm-up of the results when it is None."""
    if warmup is not None:
        if warmup not in warmups_of(results):
            raise TinyTFInputError(f"no runs with warm-up {warmup!r}; the warm-ups are {warmups_of(results)}")
        return warmup
    if len(warmups_of(results)) != 1:
        raise TinyTFInputError(f"these results have several warm-ups {warmups_of(results)}: say which one")
    return warmups_of(results)[0]


def runs_at(results: dict, name: str, lr: float, warmup: int | None = None) -> list:
    """The runs of variant ``name`` at peak rate ``lr`` and warm-up ``warmup`` (steps), in seed order."""
    if name not in results["runs"]:
        raise TinyTFInputError(f"no variant {name!r} in these results; they have {', '.join(results['runs'])}")
    warmup = _warmup(results, warmup)
    runs = [r for r in results["runs"][name] if r["lr"] == lr and r["warmup"] == warmup]
    if not runs:
        raise TinyTFInputError(f"variant {name!r} has no runs at lr {lr!r} with warm-up {warmup}; the grid is "
                               f"{lrs_of(results)}")
    return sorted(runs, key=lambda r: r["seed"])


def _value(run: dict, key: str, split: str = "metrics"):
    """A run's number: key 'final_loss', or a metric name of ``split`` ('metrics': evaluation set,
    'val_metrics': validation set); 'eval_loss' means the metric 'loss'. None when the run diverged."""
    if run.get("diverged"):
        return None
    if key == "final_loss":
        return run["final_loss"]
    return run[split]["loss" if key == "eval_loss" else key]


def _stats(xs) -> dict:
    xs = list(xs)
    return {"mean": statistics.fmean(xs), "std": statistics.stdev(xs) if len(xs) > 1 else 0.0,
            "min": min(xs), "max": max(xs), "n": len(xs)}


def cell_stats(results: dict, name: str, lr: float, key: str = "eval_loss", split: str = "metrics",
               warmup: int | None = None) -> dict:
    """Stats over seeds of one (variant, warm-up, lr) cell: mean, std (sample), min, max, n, plus ``diverged``
    (how many seeds diverged; the statistics are then over the others, and are None when none is left)."""
    values = [_value(r, key, split) for r in runs_at(results, name, lr, warmup)]
    ok = [v for v in values if v is not None]
    base = _stats(ok) if ok else {"mean": None, "std": None, "min": None, "max": None, "n": 0}
    return dict(base, diverged=len(values) - len(ok))


def best_settings(results: dict, warmup: int | None = None) -> dict:
    """{variant: (warm-up, peak lr)} with the lowest mean validation loss over seeds, among the cells with warm-up
    ``warmup`` (None: among all warm-ups and rates). A cell where any seed diverged is not eligible; ties go to
    the shorter warm-up, then to the smaller rate."""
    warmups = warmups_of(results) if warmup is None else [_warmup(results, warmup)]
    out = {}
    for name in results["runs"]:
        scores = []
        for w in warmups:
            for lr in lrs_for(results, name):
                st = cell_stats(results, name, lr, "eval_loss", "val_metrics", w)
                scores.append((math.inf if st["diverged"] or st["mean"] is None else st["mean"], w, lr))
        best = min(scores)
        if not math.isfinite(best[0]):
            raise TinyTFInputError(f"variant {name!r} diverged at every learning rate")
        out[name] = (best[1], best[2])
    return out


def best_lrs(results: dict, warmup: int | None = None) -> dict:
    """{variant: its best peak lr} at warm-up ``warmup`` (None: the lr of its best (warm-up, lr) cell)."""
    return {name: lr for name, (_, lr) in best_settings(results, warmup).items()}


def _chosen(results: dict, choice="best", warmup: int | None = None) -> dict:
    """{variant: (warm-up, lr)} from ``choice``: 'best' (``best_settings(results, warmup)``), one peak rate for
    all (at ``warmup``), a (warm-up, lr) pair for all, or a dict {variant: (warm-up, lr)}."""
    if isinstance(choice, str):
        if choice != "best":
            raise TinyTFInputError(f"choice: expected 'best', a rate, a (warm-up, lr) pair or a dict, got {choice!r}")
        return best_settings(results, warmup)
    if isinstance(choice, dict):
        return {name: tuple(v) for name, v in choice.items()}
    if isinstance(choice, (tuple, list)):
        return {name: tuple(choice) for name in results["runs"]}
    return {name: (_warmup(results, warmup), choice) for name in results["runs"]}


def summarise(results: dict, choice="best", warmup: int | None = None) -> dict:
    """Per variant, at its chosen cell (``choice`` and ``warmup`` as in ``_chosen``; default: its best warm-up
    and rate by validation loss): the warm-up, the lr, whether the lr is at an edge of the grid, the parameter
    count, and stats over seeds of the final training loss, the evaluation loss, token accuracy and exact
    match."""
    chosen = _chosen(results, choice, warmup)
    out = {}
    for name in results["runs"]:
        w, lr, grid = *chosen[name], lrs_for(results, name)
        runs = runs_at(results, name, lr, w)
        out[name] = {"warmup": w, "lr": lr, "at_edge": lr in (grid[0], grid[-1]) and len(grid) > 1,
                     "parameters": runs[0]["parameters"],
                     **{key: cell_stats(results, name, lr, key, warmup=w)
                        for key in ("final_loss", "eval_loss", "token_accuracy", "exact_match")}}
    return out


def _pm(st: dict, digits: int = 2) -> str:
    if st["mean"] is None:
        return "diverged"
    return f"{st['mean']:.{digits}f} ± {st['std']:.{digits}f}"


def summary_table(results: dict, choice="best", warmup: int | None = None, labels: dict | None = None) -> str:
    """Plain text, one row per variant at its chosen cell: warm-up W, lr ('*' at an edge of the grid),
    evaluation loss mean ± std over seeds, token accuracy and exact match (mean and range over seeds, in %).
    With names up to 25 characters every line fits 80 characters (the parameter counts are in the runs,
    ``run["parameters"]``). ``labels``: {variant: the name to print} for some variants, e.g.
    {"Llama-3-style": "Llama 3 (toy)"}; the others print their own name."""
    labels = labels or {}
    s = {labels.get(name, name): st for name, st in summarise(results, choice, warmup).items()}
    w = max(7, *(len(n) for n in s))
    head = f"{'variant':<{w}} {'W':>3} {'lr':>6}  {'eval loss':>11}  {'token acc %':>11}  {'exact match %':>13}"
    lines = [head, "-" * len(head)]
    for name, st in s.items():
        e, a, x = st["eval_loss"], st["token_accuracy"], st["exact_match"]
        lr = f"{st['lr']:g}" + ("*" if st["at_edge"] else "")
        first = f"{name:<{w}} {st['warmup']:>3} {lr:>6}"
        if e["mean"] is None:
            lines.append(f"{first}  {'diverged':>11}")
            continue
        note = f"  ({e['diverged']} diverged)" if e["diverged"] else ""
        acc = f"{100 * a['mean']:.0f} ({100 * a['min']:.0f}-{100 * a['max']:.0f})"
        exact = f"{100 * x['mean']:.0f} ({100 * x['min']:.0f}-{100 * x['max']:.0f})"
        lines.append(f"{first}  {_pm(e):>11}  {acc:>11}  {exact:>13}{note}")
    if any(st["at_edge"] for st in s.values()):
        lines.append("* best at the edge of the grid searched; the optimum may lie beyond it")
    return "\n".join(lines)


def grid_table(results: dict, key: str = "eval_loss", digits: int = 2, warmup: int | None = None) -> str:
    """Plain text: one row per variant, one column per peak lr, each cell the mean ± std over seeds of ``key``
    on the evaluation set at warm-up ``warmup`` ('div' when every seed diverged, a '!' when some did; blank at a
    rate the variant was not trained at); the best rate of each variant at this warm-up (by validation loss) is
    marked with '<', which a legend line under the table explains."""
    warmup = _warmup(results, warmup)
    best = best_lrs(results, warmup)
    grid = lrs_of(results)
    w = max(7, *(len(n) for n in results["runs"]))
    cw = 8 + 2 * digits  # 'x.xx ± y.yy!' and a space before it
    lines = [f"{'W = ' + str(warmup):<{w}}" + "".join(f"{'lr ' + format(lr, 'g'):>{cw}}  " for lr in grid).rstrip(),
             "-" * (w + (cw + 2) * len(grid))]
    for name in results["runs"]:
        cells = []
        for lr in grid:
            if lr not in lrs_for(results, name):
                cells.append(" " * (cw + 2))
                continue
            st = cell_stats(results, name, lr, key, warmup=warmup)
            text = "div" if st["mean"] is None else _pm(st, digits) + ("!" if st["diverged"] else "")
            cells.append(f"{text:>{cw}}" + (" <" if lr == best[name] else "  "))
        lines.append((f"{name:<{w}}" + "".join(cells)).rstrip())
    lines.append("< each variant's best rate for this warm-up: the lowest mean validation loss"
                 + ("; blank: a rate that variant was not trained at" if "lrs_by_variant" in results else ""))
    return "\n".join(lines)


def warmup_table(results: dict, key: str = "eval_loss", digits: int = 2) -> str:
    """Plain text: one row per variant; for every warm-up W, the variant at its best rate for that W (by
    validation loss): lr and mean ± std over seeds of ``key`` on the evaluation set. The last column marks
    the variant's best cell overall (warm-up and rate, as ``best_settings`` picks it) with '†', a different sign
    from the grid table's '<' (best rate for one warm-up). A '*' after a rate marks a best rate at the first or
    last rate tried for that variant (``lrs_for``). Footnote lines under the table explain both marks."""
    warmups = warmups_of(results)
    edges = {name: (g[0], g[-1]) if len(g) > 1 else () for name in results["runs"] for g in [lrs_for(results, name)]}
    overall = best_settings(results)
    per_w = {w: best_lrs(results, w) for w in warmups}
    nw = max(7, *(len(n) for n in results["runs"]))
    pw = 7 + 2 * digits  # 'x.xx ± y.yy'
    cw = pw + 13
    label = key.replace("_", " ")
    head = f"{'variant':<{nw}}" + "".join(f"{'W = ' + str(w) + ': lr, ' + label:>{cw}}  " for w in warmups)
    lines = [head.rstrip(), "-" * len(head.rstrip())]
    for name in results["runs"]:
        cells = []
        for w in warmups:
            lr = per_w[w][name]
            st = cell_stats(results, name, lr, key, warmup=w)
            mark = " †" if overall[name] == (w, lr) else "  "
            rate = format(lr, "g") + ("*" if lr in edges[name] else " ")
            cells.append(f"{rate:>{cw - pw - 1}} {_pm(st, digits):>{pw}}{mark}")
        lines.append((f"{name:<{nw}}" + "".join(cells)).rstrip())
    lines.append("† each variant's best cell overall: the warm-up and rate with the lowest validation loss")
    if any(per_w[w][name] in edges[name] for w in warmups for name in results["runs"]):
        lines.append("* best at the edge of the grid searched; the optimum may lie beyond it")
    return "\n".join(lines)


def paired_differences(results: dict, a: str = "2017", b: str = "Llama-3-style", key: str = "eval_loss",
                       choice="best", warmup: int | None = None) -> list:
    """Per seed: value(a) - value(b) of ``key`` ('final_loss', 'eval_loss' or a metric name), each variant at its
    chosen cell (``choice``/``warmup`` as in ``summarise``), paired by seed; seeds where either run diverged are
    left out."""
    chosen = _chosen(results, choice, warmup)
    (wa, la), (wb, lb) = chosen[a], chosen[b]
    va = {r["seed"]: _value(r, key) for r in runs_at(results, a, la, wa)}
    out = []
    for r in runs_at(results, b, lb, wb):
        x, y = va.get(r["seed"]), _value(r, key)
        if x is not None and y is not None:
            out.append((r["seed"], x - y))
    return out


@dataclass(frozen=True)
class Paired:
    """The paired comparison of two variants over seeds (``paired_stats``): per seed the difference value(a) -
    value(b) (positive: b is lower), their mean, its standard error (sd over seeds / sqrt(n)), Student's t
    quantile with ``df`` = n - 1 degrees of freedom for a two-sided ``level`` interval (Bonferroni-corrected for
    ``n_intervals`` intervals: each at ``1 - (1 - level) / n_intervals``), the interval mean ± t·SE, and in how
    many seeds b is lower."""
    a: str
    b: str
    seeds: tuple  # the paired seeds, in increasing order
    diffs: tuple  # value(a) - value(b), one per seed in ``seeds``
    mean: float
    se: float
    df: int
    t: float
    level: float
    n_intervals: int
    lo: float
    hi: float
    b_lower: int  # seeds where a - b > 0

    @property
    def n(self) -> int:
        """The number of paired seeds."""
        return len(self.diffs)

    @property
    def half(self) -> float:
        """The half-width of the interval, t·SE."""
        return self.t * self.se

    @property
    def excludes_zero(self) -> bool:
        """True when the interval lies wholly above or wholly below 0."""
        return self.lo > 0 or self.hi < 0


def paired_stats(results: dict, a: str, b: str, choice="best", key: str = "eval_loss", level: float = 0.95,
                 n_intervals: int = 1, warmup: int | None = None) -> Paired:
    """The paired comparison a - b of ``key`` over the seeds, each variant at the cell ``choice`` (and ``warmup``)
    gives it, as in ``paired_differences`` (seeds where a run diverged are left out): a ``Paired`` with the
    per-seed differences (in seed order), their mean and standard error, the t quantile of n - 1 degrees of freedom for a
    two-sided ``level`` interval, and that interval. ``n_intervals`` > 1 applies Bonferroni's correction for that
    many intervals (each at level 1 - (1 - level) / n_intervals). Needs at least 2 paired seeds."""
    if isinstance(n_intervals, bool) or not isinstance(n_intervals, int) or n_intervals < 1:
        raise TinyTFInputError(f"paired_stats: n_intervals must be a positive integer, got {n_intervals!r}")
    per_seed = sorted(paired_differences(results, a, b, key, choice, warmup))
    d = [x for _, x in per_seed]
    if len(d) < 2:
        raise TinyTFInputError(f"paired_stats: {pair_label(a, b)} has {len(d)} paired seeds; need at least 2")
    mean, se = statistics.fmean(d), statistics.stdev(d) / math.sqrt(len(d))
    p = 0.5 + level / 2 if n_intervals == 1 else 1 - (1 - level) / (2 * n_intervals)
    t = t_quantile(p, len(d) - 1)
    return Paired(a=a, b=b, seeds=tuple(s for s, _ in per_seed), diffs=tuple(d), mean=mean, se=se, df=len(d) - 1,
                  t=t, level=level, n_intervals=n_intervals, lo=mean - t * se, hi=mean + t * se,
                  b_lower=sum(x > 0 for x in d))


def interval_table(results: dict, pairs, choice, key: str = "eval_loss", level: float = 0.95, digits: int = 2) -> str:
    """Plain text, one line per pair (a, b): the mean of value(a) - value(b) over the seeds (positive: b is
    lower), its standard error (sd over seeds / sqrt(n)), the two-sided ``level`` interval mean ± t·SE with
    Student's t of n - 1 degrees of freedom, and in how many seeds b is lower (``paired_stats`` of each pair).
    Each variant at the cell ``choice`` gives it (a dict {variant: (warm-up, lr)}, as in ``paired_differences``).
    A pair may be given as (name, a, b): the table then opens with a column of these names."""
    pairs = [tuple(p) for p in pairs]
    if any(len(p) not in (2, 3) for p in pairs):
        raise TinyTFInputError("interval_table: give each pair as (a, b) or (name, a, b)")
    named = any(len(p) == 3 for p in pairs)
    names = {p[-2:]: p[0] if len(p) == 3 else "" for p in pairs}
    qw = max(len("question"), *map(len, names.values()))
    first = {k: f"{name:<{qw}}  " if named else "" for k, name in names.items()}  # the name column, if any
    pairs = [p[-2:] for p in pairs]
    labels = {(a, b): pair_label(a, b) for a, b in pairs}
    nw = max(len(label) for label in labels.values())
    head = (f"{'question':<{qw}}  " * named
            + f"{'a vs b':<{nw}}  {'a - b, mean ± SE':>17}  {f'{level:.0%} interval':>17}  {'b lower':>8}")
    lines = [head, "-" * len(head)]
    for a, b in pairs:
        missing = [n for n in (a, b) if n not in results["runs"] or n not in choice]
        if missing:
            raise TinyTFInputError(f"interval_table: no runs or no chosen cell for {missing}; the results have "
                                   f"{list(results['runs'])}, the cells {list(choice)}")
        try:
            st = paired_stats(results, a, b, choice, key, level)
        except TinyTFInputError as e:
            raise TinyTFInputError(str(e).replace("paired_stats", "interval_table", 1)) from None
        lo, hi = _signed(st.lo, digits), _signed(st.hi, digits)
        lines.append(first[a, b]
                     + f"{labels[a, b]:<{nw}}  {_signed(st.mean, digits) + ' ± ' + f'{st.se:.{digits}f}':>17}  "
                     f"{lo + ' to ' + hi:>17}  {f'{st.b_lower}/{st.n}':>8}")
    n = len(results["settings"]["seeds"])
    lines.append(f"seeds {results['settings']['seeds'][0]}..{results['settings']['seeds'][-1]} ({n}); t with "
                 f"{n - 1} degrees of freedom: {t_quantile(0.5 + level / 2, n - 1):.2f}")
    return "\n".join(lines)


def pair_table(results: dict, pairs, key: str = "eval_loss", digits: int = 2) -> str:
    """Plain text: for each pair (a, b), the per-seed differences value(a) - value(b) of ``key`` (positive: b is
    lower), with both variants at their best rate for each warm-up, and then each at its own best cell
    (warm-up and rate); after each row, in how many seeds b is lower. One block per grouping, one under the
    other, so that no line is much wider than the pair names. Seeds where a run diverged are left out (and
    counted in the denominator only if both ran)."""
    choices = [(f"W = {w}", "best", w) for w in warmups_of(results)] + [("each at its best cell", "best", None)]
    labels = {(a, b): pair_label(a, b) for a, b in pairs}
    nw = max(len(label) for label in labels.values())
    lines = ["a minus b per seed (positive: b lower); in brackets, the seeds where b is lower"]
    for label, choice, w in choices:
        lines.append(f"{label}:")
        for a, b in pairs:
            diffs = paired_differences(results, a, b, key, choice, w)
            text = " ".join(_signed(d, digits) for _, d in diffs)
            lines.append(f"  {labels[a, b]:<{nw}}  {text}  ({sum(d > 0 for _, d in diffs)}/{len(diffs)})")
    return "\n".join(lines)


def pair_label(a: str, b: str) -> str:
    """'a vs b', with a name that contains spaces in brackets: '2017 vs (Llama-3-style + MHA)' (not read as
    arithmetic)."""
    def wrap(name):
        return f"({name})" if " " in name else name
    return f"{wrap(a)} vs {wrap(b)}"


# chapter 9's four questions, each a pair (a, b) compared seed by seed as a - b, a the older choice and b the newer
# one, so that a positive difference always means that the newer choice has the lower loss
QUESTIONS = (("(1) norm position", "2017", "2017 + pre-norm"),
             ("(2) whole blocks", "2017", "Llama-3-style"),
             ("(3) GQA", "Llama-3-style + MHA", "Llama-3-style"),
             ("(4) five swaps, unscaled", "2017 + pre-norm", "Llama-3-style"))

#: chapter 9's confirmation (section 9.3.2, seeds 3-12): its seven pairs (short label, a, b), compared as a - b with a
#: the older choice (positive: the newer choice is lower), in the chapter's order: question (1), the norm's position,
#: in both blocks ((1b): the Llama-3-style block with its norms after the add against itself), questions (2) to (4),
#: then (4), the other swaps + the embedding scale, split post hoc into (4a) the embedding scale (the 2017 block scales
#: them, the Llama-3-style block does not) and (4b) the other swaps. The first five pairs need only the decoder-only
#: study's five variants.
CONFIRM_PAIRS = (QUESTIONS[0],
                 ("(1b) norm position, Llama-3-style block", "Llama-3-style + post-norm", "Llama-3-style"),
                 *QUESTIONS[1:],
                 ("(4a) unscaled embeddings alone", "Llama-3-style + scaled emb.", "Llama-3-style"),
                 ("(4b) other five swaps alone", "2017 + pre-norm", "Llama-3-style + scaled emb."))

#: chapter 9's planned retest (section 9.3.3): question (2s), question (2) with the embeddings scaled in both
#: blocks, 2017 vs Llama-3-style + scaled emb., each at the cell chosen on seeds 0-2, on seeds 13-22
#: (compare_blocks_planned.json); one comparison, fixed before its runs, so its 95% interval needs no correction
#: for multiplicity. The label is the one the lesson and its notes use (the results file's plan names no label).
PLANNED_PAIR = ("(2s) whole blocks, embeddings scaled", "2017", "Llama-3-style + scaled emb.")


def lengths_at_init(names=("Llama-3-style", "Llama-3-style + scaled emb."), n: int = 64, length: int = 8,
                    seed: int = 0) -> dict:
    """{variant: (token vector, attention update, FFN update)}: at initialisation (``build_model(cfg, 0)``),
    the mean length, over ``n`` random sources of ``length`` letters, of a token's vector entering encoder block
    0 and of the two updates that block adds to the stream (chapter 9: why the embedding scale matters)."""
    g = torch.Generator().manual_seed(seed)
    letters = (ord("a"), ord("z") + 1)
    src_ids = torch.randint(*letters, (n, length), generator=g)
    tgt_ids = torch.randint(*letters, (n, length + 1), generator=g)
    keys = ("resid_pre", "attn.out", "ffn.out")  # the input of block 0, its two updates
    configs, out = block_configs(), {}
    for name in names:
        model = build_model(configs[name], 0)
        with torch.no_grad():
            _, tr = model.run_with_trace(src_ids, tgt_ids)
        out[name] = tuple(tr[f"encoder.blocks.0.{k}"].norm(dim=-1).mean().item() for k in keys)
    return out


def load_planned(directory=None) -> dict:
    """Chapter 9's planned retest (``PLANNED_PAIR``): the 2017 block and Llama-3-style + scaled emb., each trained
    only at the cell the study chose for it, on seeds 13-22, in one results file (``compare_blocks_planned.json``,
    two ``scripts/compare_blocks.py`` invocations joined by ``combine``; its ``command`` gives both)."""
    directory = Path(directory) if directory is not None else RESULTS_PATH.parent
    return load_results(directory / "compare_blocks_planned.json")


def sign_table(results: dict, groupings=None, questions=QUESTIONS) -> str:
    """Plain text, one line per question: in how many seeds a - b > 0 (b lower), for each grouping (a label and
    the ``paired_differences`` keywords; default: each warm-up, then each variant at its best cell), and whether
    every grouping has the same sign in every seed."""
    groupings = groupings or [(f"W = {w}", dict(warmup=w)) for w in warmups_of(results)] + [("best", {})]
    lines = [f"{'a vs b: seeds where a - b > 0 (b lower)':46}" + "".join(f"{g:>8}" for g, _ in groupings)
             + "  same sign"]
    for question, a, b in questions:
        diffs = [[d for _, d in paired_differences(results, a, b, **how)] for _, how in groupings]
        n = [sum(d > 0 for d in ds) for ds in diffs]
        same = "yes" if all(k == len(ds) for k, ds in zip(n, diffs)) or not any(n) else "no"
        lines.append(f"{question[:3] + ' ' + pair_label(a, b):46}"
                     + "".join(f"{k:>6}/{len(ds)}" for k, ds in zip(n, diffs)) + f"  {same}")
    return "\n".join(lines)


def _signed(d: float, digits: int) -> str:
    """A difference with its sign, but a tie that rounds to zero as ' 0.00' (no '-0.00')."""
    return f"{d:+.{digits}f}" if round(d, digits) else " " + f"{0:.{digits}f}"


def ranking_by_seed(results: dict, key: str = "eval_loss", choice="best", warmup: int | None = None) -> dict:
    """{seed: [variants from lowest to highest ``key``]}, each variant at its chosen cell."""
    chosen = _chosen(results, choice, warmup)
    per_seed = {}
    for name in results["runs"]:
        w, lr = chosen[name]
        for r in runs_at(results, name, lr, w):
            v = _value(r, key)
            per_seed.setdefault(r["seed"], []).append((math.inf if v is None else v, name))
    return {seed: [n for _, n in sorted(vals)] for seed, vals in sorted(per_seed.items())}


def beats_in_every_seed(results: dict, key: str = "eval_loss", choice="best", warmup: int | None = None) -> list:
    """Pairs (a, b) such that a has a lower ``key`` than b in every seed (each at its chosen cell)."""
    names = list(results["runs"])
    out = []
    for a in names:
        for b in names:
            if a != b:
                diffs = paired_differences(results, b, a, key, choice, warmup)  # value(b) - value(a) > 0
                if diffs and len(diffs) == len(results["settings"]["seeds"]) and all(d > 0 for _, d in diffs):
                    out.append((a, b))
    return out


def smooth(xs, window: int = 10) -> list:
    """Trailing moving average (the first window-1 points average what exists so far)."""
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x
        if i >= window:
            acc -= xs[i - window]
        out.append(acc / min(i + 1, window))
    return out


def curve_band(runs: list, window: int = 10) -> dict:
    """Across seeds, at every step: mean, min and max of the smoothed loss curves."""
    curves = [smooth(r["losses"], window) for r in runs]
    n = min(len(c) for c in curves)
    cols = [[c[i] for c in curves] for i in range(n)]
    return {"step": list(range(1, n + 1)), "mean": [statistics.fmean(c) for c in cols],
            "min": [min(c) for c in cols], "max": [max(c) for c in cols],
            "seeds": [r["seed"] for r in runs], "curves": [c[:n] for c in curves]}


def best_runs(results: dict, choice="best", warmup: int | None = None) -> dict:
    """{variant: its runs at its chosen cell} (e.g. for ``tinytf.viz.training.loss_curves``)."""
    chosen = _chosen(results, choice, warmup)
    return {name: runs_at(results, name, chosen[name][1], chosen[name][0]) for name in results["runs"]}


def is_finite(results: dict) -> bool:
    """True when no run diverged and every recorded loss is finite."""
    return all(not r.get("diverged") and all(math.isfinite(x) for x in r["losses"])
               for runs in results["runs"].values() for r in runs)
