"""The 2017 block against the 2026 block, measured (seed 001's hard exercise).

A 4-layer encoder-decoder (4 encoder + 4 decoder layers) is trained on the toy reversal task of
``tinytf.tasks`` with the 2017 block and with the 2026 block, several seeds each, same data, same
optimiser and learning-rate schedule. Only the block changes:

* 2017: post-norm, LayerNorm, ReLU MLP with d_ff = 4 d, sinusoidal positions, biases, multi-head attention;
* 2026: pre-norm, RMSNorm, SwiGLU with d_ff = 8/3 d (the same FFN parameter count), RoPE, no biases,
  grouped-query attention;

plus two variants that make a single swap to the 2017 block (pre-norm only; RoPE only), to see
which change carries a difference.

``scripts/compare_blocks.py`` runs the full comparison and writes
``tinytf/checkpoints/compare_blocks.json``, which ``load_results()`` reads back (it ships with the
package, so the chapter works without retraining). ``run_comparison`` is the same code a chapter can
call for a very short live run.
"""
from __future__ import annotations

import json
import math
import platform
import statistics
from pathlib import Path

import torch

from . import tasks as T
from .config import TinyConfig, config_2017, config_2026
from .errors import TinyTFInputError

RESULTS_PATH = Path(__file__).parent / "checkpoints" / "compare_blocks.json"

#: settings of the shipped comparison (scripts/compare_blocks.py uses these unless told otherwise)
DEFAULTS = dict(d_model=32, n_heads=4, n_kv_heads=2, n_layers=4, steps=400, lr=3e-3, batch_size=32,
                seeds=(0, 1, 2), min_length=3, max_length=8, eval_samples=256)


def swiglu_d_ff(d_model: int) -> int:
    """d_ff that gives a SwiGLU FFN (3 matrices) the parameter count of a 4x two-matrix MLP: round(8/3 d)."""
    return round(8 * d_model / 3)


def block_configs(d_model: int = DEFAULTS["d_model"], n_heads: int = DEFAULTS["n_heads"],
                  n_kv_heads: int = DEFAULTS["n_kv_heads"], n_layers: int = DEFAULTS["n_layers"],
                  max_length: int = DEFAULTS["max_length"], ablations: bool = True) -> dict:
    """{'2017': TinyConfig, '2026': TinyConfig} for the comparison: same width, depth and heads. With
    ``ablations`` also two single swaps of the 2017 block: '2017 + pre-norm' and '2017 + RoPE'."""
    common = dict(vocab_size=T.VOCAB_SIZE, d_model=d_model, n_heads=n_heads, n_layers=n_layers,
                  max_seq_len=max(32, max_length + 1))
    old = config_2017(**common, d_ff=4 * d_model)
    configs = {"2017": old}
    if ablations:  # one swap each, to see which change carries the difference
        configs["2017 + pre-norm"] = old.replace(norm_position="pre")
        configs["2017 + RoPE"] = old.replace(pos="rope")
    configs["2026"] = config_2026(**common, d_ff=swiglu_d_ff(d_model), n_kv_heads=n_kv_heads)
    return configs


def train_one(cfg: TinyConfig, seed: int, steps: int, lr: float, batch_size: int, min_length: int,
              max_length: int, eval_samples: int, progress: bool = False, threads=None) -> dict:
    """One run: a fresh EncoderDecoder initialised under ``seed``, trained on batches drawn with ``seed``."""
    from . import train as TR

    if threads is not None:
        torch.set_num_threads(threads)
    task = T.ReversalTask(min_length=min_length, max_length=max_length)
    model = TR.build_model("seq2seq", cfg, seed)
    history = TR.train(model, task, steps=steps, lr=lr, batch_size=batch_size, seed=seed, progress=progress,
                       eval_samples=eval_samples)
    return {
        "seed": seed,
        "parameters": sum(p.numel() for p in model.parameters()),
        "losses": [round(x, 5) for x in history.losses],
        "final_loss": round(history.final_loss, 5),
        "metrics": {k: (round(v, 5) if isinstance(v, float) else v) for k, v in history.metrics.items()},
        "seconds": round(history.seconds, 1),
    }


def run_comparison(configs: dict | None = None, seeds=DEFAULTS["seeds"], steps: int = DEFAULTS["steps"],
                   lr: float = DEFAULTS["lr"], batch_size: int = DEFAULTS["batch_size"],
                   min_length: int = DEFAULTS["min_length"], max_length: int = DEFAULTS["max_length"],
                   eval_samples: int = DEFAULTS["eval_samples"], progress: bool = True, jobs: int = 1) -> dict:
    """Train one EncoderDecoder per (block, seed) on the reversal task; return a JSON-able dict.

    Seed s fixes both the initial weights and the training batches, so all blocks of one seed see
    the same data in the same order. Evaluation uses fresh sequences (tinytf.train.EVAL_SEED).
    ``jobs`` > 1 trains that many runs at once in separate processes with one thread each (the
    progress bar then counts finished runs instead of steps). With ``jobs=1`` the runs use the caller's
    torch thread count; scripts/compare_blocks.py sets one thread, so a run gives the same numbers with
    ``--jobs 1`` and ``--jobs 2`` on one machine."""
    from . import train as TR

    configs = block_configs(max_length=max_length) if configs is None else configs
    seeds = list(seeds)
    if not seeds:
        raise TinyTFInputError("run_comparison: give at least one seed")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise TinyTFInputError(f"jobs: expected a positive integer, got {jobs!r}")
    out = {
        "task": {"name": "reversal", "min_length": min_length, "max_length": max_length},
        "settings": {"steps": steps, "lr": lr, "batch_size": batch_size, "seeds": seeds,
                     "eval_samples": eval_samples, "eval_seed": TR.EVAL_SEED,
                     "optimizer": "AdamW(0.9, 0.98), weight decay 0.01, warm-up then cosine decay, clip 1.0"},
        "configs": {name: _config_dict(cfg) for name, cfg in configs.items()},
        "runs": {name: [] for name in configs},
        "environment": {"torch": torch.__version__, "python": platform.python_version(),
                        "threads": 1 if jobs > 1 else torch.get_num_threads(), "jobs": jobs},
    }
    todo = [(name, seed) for seed in seeds for name in configs]
    common = dict(steps=steps, lr=lr, batch_size=batch_size, min_length=min_length, max_length=max_length,
                  eval_samples=eval_samples)
    results = {}
    if jobs == 1:
        for name, seed in todo:
            if progress:
                print(f"block {name}, seed {seed}", flush=True)
            results[name, seed] = train_one(configs[name], seed, progress=progress, **common)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(todo), desc=f"runs ({jobs} at a time)", unit="run")
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(train_one, configs[name], seed, threads=1, **common): (name, seed)
                       for name, seed in todo}
            for f in as_completed(futures):
                name, seed = futures[f]
                results[name, seed] = f.result()
                if bar is not None:
                    bar.set_postfix_str(f"{name} seed {seed}: loss {results[name, seed]['final_loss']:.3f}")
                    bar.update(1)
        if bar is not None:
            bar.close()
    for name, seed in todo:
        out["runs"][name].append(results[name, seed])
    return out


def _config_dict(cfg: TinyConfig) -> dict:
    from dataclasses import asdict

    return asdict(cfg)


def save_results(results: dict, path=None) -> Path:
    """Write ``results`` as JSON to ``path`` (default: the shipped ``RESULTS_PATH``)."""
    path = Path(RESULTS_PATH if path is None else path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")
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
    return results


def configs_of(results: dict) -> dict:
    """The TinyConfigs stored in a results dict."""
    return {name: TinyConfig(**c) for name, c in results["configs"].items()}


def _stats(xs) -> dict:
    xs = list(xs)
    return {"mean": statistics.fmean(xs), "std": statistics.stdev(xs) if len(xs) > 1 else 0.0,
            "min": min(xs), "max": max(xs), "n": len(xs)}


def summarise(results: dict) -> dict:
    """Per block: mean, std (sample), min and max over seeds of the final training loss, the
    evaluation loss, token accuracy and exact match, plus the parameter count."""
    out = {}
    for name, runs in results["runs"].items():
        if not runs:
            raise TinyTFInputError(f"block {name!r} has no runs in these results")
        out[name] = {
            "parameters": runs[0]["parameters"],
            "final_train_loss": _stats(r["final_loss"] for r in runs),
            "eval_loss": _stats(r["metrics"]["loss"] for r in runs),
            "token_accuracy": _stats(r["metrics"]["token_accuracy"] for r in runs),
            "exact_match": _stats(r["metrics"]["exact_match"] for r in runs),
        }
    return out


def summary_table(results: dict) -> str:
    """Plain text: one row per block and metric, 'mean ± std (min .. max)' over the seeds."""
    s = summarise(results)
    rows = [("final train loss", "final_train_loss"), ("eval loss", "eval_loss"),
            ("token accuracy", "token_accuracy"), ("exact match", "exact_match")]
    w = max(5, *(len(n) for n in s))
    head = f"{'block':<{w}} {'params':>8}  {'metric':<16} {'mean':>6} {'± std':>6}  {'min .. max':<14}  seeds"
    lines = [head, "-" * len(head)]
    for name, st in s.items():
        for i, (label, key) in enumerate(rows):
            m = st[key]
            left = f"{name:<{w}} {st['parameters']:>8,}" if i == 0 else " " * (w + 9)
            lines.append(f"{left}  {label:<16} {m['mean']:>6.3f} {m['std']:>6.3f}  "
                         f"{m['min']:.3f} .. {m['max']:.3f}  {m['n']:>5}")
    return "\n".join(lines)


def paired_differences(results: dict, a: str = "2017", b: str = "2026", key: str = "eval_loss") -> list:
    """Per seed: value(a) - value(b) of ``key`` ('final_loss' or a metric name), paired by seed."""
    def value(run):
        return run["final_loss"] if key == "final_loss" else run["metrics"][key if key != "eval_loss" else "loss"]

    by_seed = {r["seed"]: value(r) for r in results["runs"][a]}
    return [(r["seed"], by_seed[r["seed"]] - value(r)) for r in results["runs"][b] if r["seed"] in by_seed]


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


def is_finite(results: dict) -> bool:
    return all(math.isfinite(x) for runs in results["runs"].values() for r in runs for x in r["losses"])
