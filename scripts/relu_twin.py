"""ReLU twin: retrain text-4l with a ReLU MLP of the same size in place of SwiGLU, and measure both models.

The twin is text-4l's recipe (the command in its sidecar) with ONLY the FFN swapped: ``--preset small-relu``, a
bias-free ReLU MLP with d_ff = 768 (2 * 192 * 768 = 3 * 192 * 512 weights, the same as SwiGLU's), the same corpus,
steps, optimiser, learning rate and seed 0. It trains into a scratch directory (the weights are not shipped), and
``tinytf.lab.relu_twin`` measures, on text-4l's 256 held-out windows of 128 bytes: both trained models' bits per
byte, and for every FFN unit of every block the share of positions where it is active (ReLU: pre-activation > 0,
also for the twin at step 0; SwiGLU: gate > 0), summarised per block as dead units (never active), units active on
fewer than 1% of positions, and the median share. Writes tinytf/checkpoints/relu-twin.json, which chapter 4 loads.

    python scripts/relu_twin.py                        # trains the twin (one thread), then measures
    python scripts/relu_twin.py --work /tmp/relu-twin  # reuse DIR/relu0/text-4l-relu.safetensors if it is there
    python scripts/relu_twin.py --seed 1               # a second pair: the twin from seed 1 against text-4l's
                                                       # seed-1 run (tinytf.lab.other_seeds), added to the JSON

One thread. Measured on the project's 2-core machine, shared with other jobs: training 2,502 s wall (1,209 s CPU; 1800
steps; the times are recorded in the JSON), the measurements 17 s.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

import tinytf
from tinytf.lab import pretrained, relu_twin, textdata

from other_seeds import train_once  # scripts/ is on sys.path when a script here runs

NAME, SEED = "text-4l-relu", 0


def checkpoint(work: Path, seed: int = SEED) -> Path:
    """The twin's final checkpoint under ``work``, training it first if it is not there."""
    return train_once(work / f"relu{seed}", NAME, "text", "small-relu", seed, extra=("--no-progress",))


def run_record(info: dict) -> dict:
    """What the JSON keeps of one training run of the twin (its sidecar's command, times and metrics)."""
    return {"command": info["command"], "seed": info["seed"], "steps": info["steps"],
            "train_seconds": info["train_seconds"], "train_cpu_seconds": info["train_cpu_seconds"],
            "machine_load_average_5min": info["machine_load_average_5min"], "twin_metrics": info["metrics"],
            "date": datetime.date.today().isoformat()}


def add_seed(seed: int, work: Path, out: Path) -> None:
    """Train the twin from ``seed`` (> 0) and add the pair (text-4l's seed-``seed`` run, the twin) to ``out``."""
    from tinytf.lab import other_seeds

    result = relu_twin.load_results(out)
    path = checkpoint(work, seed)
    twin = pretrained.load_checkpoint(path)
    info = twin.checkpoint_info
    corpus = textdata.stdlib_corpus()
    if info["corpus"]["sha256"] != corpus.sha256 or result["settings"]["corpus_sha256"] != corpus.sha256:
        sys.exit("the corpus differs from the one text-4l and the twin were trained on (sha256)")
    if info["steps"] != result["settings"]["steps"]:
        sys.exit(f"seed {seed}: {info['steps']} steps, seed 0's twin {result['settings']['steps']}")
    models = {f"text-4l@seed{seed}": other_seeds.load_text_model(seed), f"relu-twin@seed{seed}": twin}
    start = time.time()
    for name, model in models.items():
        result["models"][name] = relu_twin.measure(model.eval(), corpus)
        print(name, json.dumps(result["models"][name]), flush=True)
    record = run_record(info)
    record["measure_seconds"] = round(time.time() - start, 1)
    result["settings"].setdefault("seed_runs", {})[str(seed)] = record
    relu_twin.check(result)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(relu_twin.format_pairs(result))
    print(f"wrote {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default=None, help="scratch directory for the twin (default: a temporary one)")
    parser.add_argument("--out", default=str(relu_twin.RESULTS_PATH))
    parser.add_argument("--seed", type=int, default=SEED,
                        help="0: the twin and its measurements (rewrites the file, keeping further pairs); "
                             "N > 0: add the pair from seed N (text-4l's seed-N run must be shipped)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="relu-twin-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.seed != SEED:
        add_seed(args.seed, work, Path(args.out))
        return
    path = checkpoint(work)
    start = time.time()
    twin = pretrained.load_checkpoint(path)
    info = twin.checkpoint_info
    twin0 = pretrained.load_checkpoint(path.with_name(f"{NAME}@step0.safetensors"))
    corpus = textdata.stdlib_corpus()
    if info["corpus"]["sha256"] != corpus.sha256 or pretrained.info("text-4l")["corpus"]["sha256"] != corpus.sha256:
        sys.exit("the corpus differs from the one text-4l and the twin were trained on (sha256)")
    models = {"text-4l": tinytf.pretrained("text-4l"), "relu-twin": twin, "relu-twin@step0": twin0}
    result = {"settings": {
        "command": info["command"], "text-4l_command": pretrained.info("text-4l")["command"],
        "seed": info["seed"], "steps": info["steps"], "corpus_sha256": corpus.sha256,
        "config": info["config"], "parameters": info["parameters"],
        "train_seconds": info["train_seconds"], "train_cpu_seconds": info["train_cpu_seconds"],
        "machine_load_average_5min": info["machine_load_average_5min"],
        "twin_metrics": info["metrics"],
        "windows": f"tinytf.textdata.eval_windows(stdlib_corpus().val, {relu_twin.N_WINDOWS}, {relu_twin.SEQ_LEN})",
        "active": "ReLU MLP: ffn.pre > 0; SwiGLU: ffn.gate > 0 (SiLU(gate) > 0); silent: ffn.post exactly 0 at "
                  "every position",
        "rare": f"active on fewer than {relu_twin.RARE:.0%} of the positions (the dead included)",
        "weights": "not shipped: python scripts/relu_twin.py retrains them (bit-identical on the same torch build)",
        "torch_version": torch.__version__, "python_version": platform.python_version(), "threads": 1,
        "date": datetime.date.today().isoformat()},
        "models": {}}
    for name, model in models.items():
        result["models"][name] = relu_twin.measure(model.eval(), corpus)
        print(name, json.dumps(result["models"][name]), flush=True)
    result["settings"]["measure_seconds"] = round(time.time() - start, 1)
    if Path(args.out).exists():  # keep the pairs from further seeds
        old = relu_twin.load_results(args.out)
        for seed in relu_twin.extra_seeds(old):
            for name in (f"text-4l@seed{seed}", f"relu-twin@seed{seed}"):
                result["models"][name] = old["models"][name]
            result["settings"].setdefault("seed_runs", {})[str(seed)] = old["settings"]["seed_runs"][str(seed)]
    relu_twin.check(result)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(relu_twin.format_bpb(result))
    print(relu_twin.format_units(result))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
