"""Seed 001's hard exercise, done for real: the 2017 block vs the 2026 block on the reversal task.

Trains a 4-layer encoder-decoder (4 + 4 layers) with each block for several seeds (same data and
optimiser per seed; only the block differs; two extra variants make a single swap each), shows a tqdm progress bar per run, prints a summary
(mean ± std over seeds) and writes every loss curve and metric to
tinytf/checkpoints/compare_blocks.json, which chapter 9 loads.

    python scripts/compare_blocks.py                 # the shipped comparison (a few minutes on 2 idle cores)
    python scripts/compare_blocks.py --quick         # 40 steps, 2 seeds: a smoke test (not written by default)
    python scripts/compare_blocks.py --steps 800 --seeds 0 1 2 3 4 --out /tmp/longer.json

Every run trains on one thread, so its numbers are reproducible on one machine; by default two runs
train at once (``--jobs 2``), one per core.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from tinytf import block_comparison as bc


def main(argv=None) -> int:
    d = bc.DEFAULTS
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=d["steps"])
    p.add_argument("--seeds", type=int, nargs="+", default=list(d["seeds"]))
    p.add_argument("--lr", type=float, default=d["lr"])
    p.add_argument("--batch-size", type=int, default=d["batch_size"])
    p.add_argument("--d-model", type=int, default=d["d_model"])
    p.add_argument("--threads", type=int, default=1, help="torch threads with --jobs 1 (default 1: reproducible)")
    p.add_argument("--jobs", type=int, default=2,
                   help="runs trained at once, one process and one thread each (default 2 = the 2 cores); "
                        "with --jobs 1 each run shows a per-step progress bar")
    p.add_argument("--quick", action="store_true", help="40 steps, seeds 0 1; writes nothing unless --out is given")
    p.add_argument("--out", type=Path, help=f"results file (default {bc.RESULTS_PATH}, except with --quick)")
    p.add_argument("--no-ablations", action="store_true", help="only the 2017 and 2026 blocks")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.seeds = 40, [0, 1]
    torch.set_num_threads(args.threads)
    configs = bc.block_configs(d_model=args.d_model, ablations=not args.no_ablations)
    for name, cfg in configs.items():
        print(f"{name}: {cfg}")
    t0 = time.perf_counter()
    results = bc.run_comparison(configs, seeds=args.seeds, steps=args.steps, lr=args.lr,
                                batch_size=args.batch_size, progress=not args.no_progress, jobs=args.jobs)
    results["command"] = "python scripts/compare_blocks.py " + " ".join(argv if argv is not None else sys.argv[1:])
    results["environment"]["total_seconds"] = round(time.perf_counter() - t0, 1)
    print(bc.summary_table(results))
    for name in results["runs"]:
        if name != "2017":
            diffs = ", ".join(f"seed {s}: {d:+.3f}" for s, d in bc.paired_differences(results, "2017", name))
            print(f"eval loss 2017 - {name}: {diffs}")
    out = args.out if args.out is not None else (None if args.quick else bc.RESULTS_PATH)
    if out is not None:
        print("wrote", bc.save_results(results, out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
