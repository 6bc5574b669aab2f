"""Other seeds: retrain text-4l and reversal-2l from other seeds and measure every run, the shipped one included.

Each shipped checkpoint is seed 0 of its recipe. This script trains the same recipe with other seeds (the
command recorded in each sidecar, plus ``--seed``), into a scratch directory. Of these weights only text-4l's
seed 1 is shipped (DIR/text1/text-4l.* copied to tinytf/checkpoints/other-seeds/text-4l-seed1.*, which chapters 4
and 6 load). It measures each run with ``tinytf.lab.other_seeds``: text-4l's held-out bits per byte, intact and with every
block's attention or FFN zeroed or mean-ablated; reversal-2l's accuracy on fresh strings and each decoder block's
anti-diagonal cross-attention. Writes tinytf/checkpoints/other-seeds.json, which the lab notes of chapters 7, 8
and 12 load.

    python scripts/other_seeds.py                       # trains text seed 1 and reversal seeds 1, 2, then measures
    python scripts/other_seeds.py --work /tmp/seeds     # reuse checkpoints already trained there (DIR/text1, DIR/rev1, ...)

One thread per run. Measured on the project's 2-core machine: reversal-2l about 20 s to 2 min per seed, text-4l
about 24 min (quiet machine) to 45 min (busy); the measurements about 1 minute.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import tinytf
from tinytf.lab import other_seeds, pretrained, textdata

ROOT = Path(__file__).resolve().parents[1]
RECIPES = {"text-4l": ("text", "small", "text"), "reversal-2l": ("reversal", "tiny", "rev")}


def train_once(out: Path, name: str, task: str, preset: str, seed: int, extra: tuple = ()) -> Path:
    """``out/<name>.safetensors``, trained first with ``python -m tinytf train`` if it is not there (also used by
    scripts/relu_twin.py)."""
    path = out / f"{name}.safetensors"
    if not path.exists():
        cmd = [sys.executable, "-m", "tinytf", "train", "--task", task, "--preset", preset, "--seed", str(seed),
               "--out", str(out), *extra]
        print("$", " ".join(cmd[1:]), flush=True)
        subprocess.run(cmd, check=True, cwd=ROOT)
    return path


def checkpoint(work: Path, name: str, seed: int) -> Path:
    """The checkpoint of ``name`` trained with ``seed`` under ``work``, training it first if it is not there."""
    task, preset, short = RECIPES[name]
    return train_once(work / f"{short}{seed}", name, task, preset, seed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default=None, help="scratch directory for the extra runs (default: a temporary one)")
    parser.add_argument("--text-seeds", type=int, nargs="*", default=[1])
    parser.add_argument("--reversal-seeds", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--out", default=str(other_seeds.RESULTS_PATH))
    args = parser.parse_args()
    torch.set_num_threads(1)
    start = time.time()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="other-seeds-"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = textdata.stdlib_corpus()
    result = {"settings": {
        "commands": {name: pretrained.info(name)["command"] + " --seed S" for name in RECIPES},
        "text": "tinytf.textdata.eval_windows(stdlib_corpus().val, 256, 128); ablations: every block's attention or "
                "FFN output zeroed, or replaced by its mean over every position of the same windows; window_bits: "
                "each window's bits per byte",
        "reversal": "metrics: the training run's own, on fresh strings; anti-diagonal: "
                    "head_stats.anti_diagonal_summary(model, 'reversal-2l', n_samples=180)",
        "window_modules": other_seeds.window_modules(corpus),  # per window: its held-out module, for clustered SEs
        "corpus_sha256": corpus.sha256, "torch_version": torch.__version__,
        "python_version": platform.python_version(), "threads": 1},
        "text-4l": {}, "reversal-2l": {}}
    for seed in [0] + args.text_seeds:
        model = tinytf.pretrained("text-4l") if seed == 0 else pretrained.load_checkpoint(checkpoint(work, "text-4l", seed))
        row = other_seeds.measure_text(model.eval(), corpus)
        windows = {k: [round(v, 5) for v in bits] for k, bits in row.pop("window_bits").items()}
        result["text-4l"][str(seed)] = {**{k: round(v, 5) for k, v in row.items()}, "window_bits": windows}
        print("text-4l seed", seed, {k: v for k, v in result["text-4l"][str(seed)].items() if k != "window_bits"},
              flush=True)
    for seed in [0] + args.reversal_seeds:
        if seed == 0:
            model, info = tinytf.pretrained("reversal-2l"), pretrained.info("reversal-2l")
        else:
            model = pretrained.load_checkpoint(checkpoint(work, "reversal-2l", seed))
            info = model.checkpoint_info
        r = other_seeds.measure_reversal(model.eval(), info["metrics"])
        result["reversal-2l"][str(seed)] = {k: (round(v, 5) if isinstance(v, float) else
                                                [round(x, 5) for x in v] if isinstance(v, list) else v)
                                            for k, v in r.items()}
        print("reversal-2l seed", seed, result["reversal-2l"][str(seed)], flush=True)
    result["settings"]["measure_seconds"] = round(time.time() - start, 1)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(other_seeds.format_text_table(result))
    print(other_seeds.format_reversal_table(result))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
