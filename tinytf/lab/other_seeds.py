"""Other seeds: the shipped checkpoints next to the same recipe trained from other seeds.

    from tinytf.lab import other_seeds
    runs = other_seeds.load_results()            # measured once by scripts/other_seeds.py, shipped with tinytf
    print(other_seeds.format_text_table(runs))         # text-4l: held-out bits per byte and the four ablations
    print(other_seeds.format_reversal_table(runs))     # reversal-2l: accuracy and the anti-diagonal, per seed
    other_seeds.margin(runs, "1", "mean")              # text-4l seed 1: FFN removed minus attention removed, (mean, SE)
    other_seeds.margin(runs, "1", "mean", first="attn")  # the other way round: attention removed minus FFN removed
    lm1 = other_seeds.load_text_model(1)               # text-4l's recipe trained from seed 1 (its weights are shipped)

Every shipped checkpoint is one training run, seed 0. A number measured on it (text-4l's 2.03 bits per byte,
chapter 12's ablations, reversal-2l's anti-diagonal block) says how *that* run turned out; whether the recipe
gives it again is a question about other seeds. ``scripts/other_seeds.py`` retrains each recipe with the same
command and another ``--seed`` (the script writes the weights to a scratch directory; of those runs only text-4l's
seed-1 final weights are shipped, in ``checkpoints/other-seeds/``, loaded by ``load_text_model(1)``) and measures
every run, the shipped one included, with the same functions the chapters use:

- text-4l: ``textdata.bits_per_byte`` on the 256 held-out windows of 128 bytes, and ``ablation.window_bits``
  with every block's attention or FFN output zeroed or replaced by its mean (``ablation.conditions(...,
  per_block=False)``), means taken over the same windows; each window's bits are kept too, with the held-out
  module each window comes from (``context_length.window_modules``), so that a difference between two
  conditions gets a standard error clustered by module (``margin``);
- reversal-2l: the training run's own metrics on fresh strings (token accuracy, exact match) and
  ``head_stats.anti_diagonal_summary`` on the 180 strings chapter 8 uses (each block's mean weight on the
  anti-diagonal, as a multiple of the uniform share).
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from ..errors import TinyTFInputError
from . import ablation, context_length, head_stats, pretrained, textdata

RESULTS_PATH = Path(__file__).resolve().parents[1] / "checkpoints" / "other-seeds.json"
MODELS_DIR = Path(__file__).resolve().parents[1] / "checkpoints" / "other-seeds"  # shipped other-seed weights
ABLATIONS = ("attn zero", "ffn zero", "attn mean", "ffn mean")
WINDOWS = (256, 128)  # the held-out windows every text-4l run is measured on: count, bytes


def load_results(path=None) -> dict:
    """The recorded runs of each recipe: {"text-4l": {seed: {...}}, "reversal-2l": {seed: {...}}, "settings": {...}}
    (seeds are strings, as JSON keys)."""
    path = Path(path) if path is not None else RESULTS_PATH
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TinyTFInputError(f"{path}: not found; run python scripts/other_seeds.py to measure it") from None
    for key in ("text-4l", "reversal-2l", "settings"):
        if key not in data:
            raise TinyTFInputError(f"{path}: no {key!r} entry; is it an other-seeds file?")
    return data


def load_text_model(seed: int):
    """text-4l's recipe trained from ``seed`` (``checkpoints/other-seeds/text-4l-seed<seed>``; seed 0 is
    ``tinytf.pretrained("text-4l")``), in eval mode. Kept out of ``tinytf.pretrained``'s listing: it is a
    second run of a listed model, not a model of its own."""
    if seed == 0:
        return pretrained.load("text-4l")
    base = MODELS_DIR / f"text-4l-seed{seed}"
    if not base.with_suffix(".json").exists():
        shipped = sorted(int(p.stem.rsplit("seed", 1)[1]) for p in MODELS_DIR.glob("text-4l-seed*.json"))
        raise TinyTFInputError(f"text-4l seed {seed}: weights not shipped (shipped seeds: {[0] + shipped})")
    return pretrained.load_checkpoint(base)


def measure_text(model, corpus) -> dict:
    """Held-out bits per byte of a byte-level model on ``corpus.val`` (256 windows of 128 bytes), intact and under
    the four all-block ablations of ``ABLATIONS``; ``"window_bits"``: {"intact" or label: [256] bits per byte of
    each window}."""
    inputs, targets = textdata.eval_windows(corpus.val, *WINDOWS)
    sites = ablation.sites(model, "attn") + ablation.sites(model, "ffn")
    conditions = ablation.conditions(model, ablation.site_means(model, inputs, sites), per_block=False)
    out = {"val_bpb": textdata.bits_per_byte(model, corpus.val)}
    windows = {"intact": ablation.window_bits(model, inputs, targets).tolist()}
    for label in ABLATIONS:
        bits = ablation.window_bits(model, inputs, targets, conditions[label])
        out[label] = float(bits.double().mean())
        windows[label] = bits.tolist()
    out["window_bits"] = windows
    return out


def window_modules(corpus) -> list:
    """Per window of ``measure_text``: the held-out module it comes from (``context_length.window_modules``)."""
    return context_length.window_modules(corpus, *WINDOWS)


def margin(data: dict, seed: str, how: str, first: str = "ffn") -> tuple:
    """(mean, standard error) over the held-out windows of text-4l run ``seed``: bits per byte with every
    ``first`` sublayer removed minus with every sublayer of the other kind removed (``how``: "zero" or "mean";
    ``first`` "ffn", the default, or "attn"; > 0: ``first`` costs more), paired window by window, the standard
    error clustered by module (``context_length.clustered_mean_se``). A run recorded without per-window bits
    gives (the difference of its means, None)."""
    if how not in ("zero", "mean"):
        raise TinyTFInputError(f"margin: how must be 'zero' or 'mean', got {how!r}")
    if first not in ("ffn", "attn"):
        raise TinyTFInputError(f"margin: first must be 'ffn' or 'attn', got {first!r}")
    second = "attn" if first == "ffn" else "ffn"
    row = data["text-4l"][str(seed)]
    if "window_bits" not in row:
        return row[f"{first} {how}"] - row[f"{second} {how}"], None
    bits = row["window_bits"]
    diff = (torch.tensor(bits[f"{first} {how}"], dtype=torch.float64)
            - torch.tensor(bits[f"{second} {how}"], dtype=torch.float64))
    return context_length.clustered_mean_se(diff, data["settings"]["window_modules"])


def measure_reversal(model, metrics: dict, n_samples: int = 180) -> dict:
    """The training run's ``metrics`` (token accuracy and exact match on fresh strings) and each decoder block's
    mean cross-attention weight on the anti-diagonal as a multiple of the uniform share, with its stratified
    standard error (``head_stats.anti_diagonal_summary``)."""
    summary = head_stats.anti_diagonal_summary(model, "reversal-2l", n_samples=n_samples)
    return {"token_accuracy": metrics["token_accuracy"], "exact_match": metrics["exact_match"],
            "uniform_multiple": [s.mean for s in summary["uniform_multiple"]],
            "uniform_multiple_se": list(summary["uniform_multiple_se"]), "n_samples": n_samples}


def _seeds(block: dict) -> list:
    return sorted(block, key=int)


def format_text_table(data: dict) -> str:
    """One row per text-4l seed: held-out bits per byte, intact and under each ablation, and which sublayer
    costs more under each kind of ablation."""
    rows = data["text-4l"]
    head = f"{'seed':>4} {'intact':>7}" + "".join(f"{label:>10}" for label in ABLATIONS) + "   costlier: zero / mean"
    lines = [head, "-" * len(head)]
    for seed in _seeds(rows):
        r = rows[seed]
        zero = "FFN" if r["ffn zero"] > r["attn zero"] else "attention"
        mean = "FFN" if r["ffn mean"] > r["attn mean"] else "attention"
        shipped = "  (shipped)" if seed == "0" else ""
        lines.append(f"{seed:>4} {r['val_bpb']:>7.2f}" + "".join(f"{r[label]:>10.2f}" for label in ABLATIONS)
                     + f"   {zero} / {mean}{shipped}")
    return "\n".join(lines)


def format_reversal_table(data: dict) -> str:
    """One row per reversal-2l seed: accuracy on fresh strings and each block's anti-diagonal multiple ± its
    standard error."""
    rows = data["reversal-2l"]
    n_blocks = len(next(iter(rows.values()))["uniform_multiple"])
    head = (f"{'seed':>4} {'token acc %':>11} {'exact %':>8}"
            + "".join(f"{f'block {b}: x uniform':>20}" for b in range(n_blocks)))
    lines = [head, "-" * len(head)]
    for seed in _seeds(rows):
        r = rows[seed]
        cells = "".join(f"{f'{m:.2f} ± {se:.1g}':>20}" for m, se in zip(r["uniform_multiple"], r["uniform_multiple_se"]))
        shipped = "  (shipped)" if seed == "0" else ""
        lines.append(f"{seed:>4} {100 * r['token_accuracy']:>11.2f} {100 * r['exact_match']:>8.2f}{cells}{shipped}")
    return "\n".join(lines)
