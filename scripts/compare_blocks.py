"""The 2017 block vs the Llama-3-style block on the reversal task, trained for real (chapter 9, section 9.3).

Trains a 4-layer encoder-decoder (4 + 4 layers, d_model 32) with the paper's 2017 block (sqrt(d_model)-scaled
embeddings + sinusoids, post-norm), the Llama-3-style block and variants in between, for every warm-up length and peak
learning rate of a grid and several seeds, all with the paper's recipe scaled to the run (Adam 0.9/0.98/1e-9,
linear warm-up then inverse-square-root decay, Xavier init; see tinytf.block_comparison). Shows one tqdm
progress bar, prints the grids and each variant at its best cell (chosen on validation sequences), and writes
every loss curve and metric to tinytf/checkpoints/compare_blocks.json, which chapter 9 loads.

    python scripts/compare_blocks.py --jobs 2        # every variant x 2 warm-ups x 3 rates x 3 seeds
    python scripts/compare_blocks.py --quick         # 20 steps, 2 seeds, 2 rates: a smoke test (writes nothing)
    python scripts/compare_blocks.py --steps 800 --warmups 32 200 --lrs 3e-3 1e-2 --out /tmp/longer.json

Every run trains on one thread, so its numbers are reproducible on one machine; one run of 400 steps takes
about 13 s of CPU time. ``--jobs N`` trains N runs at once in separate processes, with the same numbers.
Every finished run is appended to <out>.partial.jsonl at once; after an interruption, ``--resume`` trains
only what is missing. ``--variants NAME ... --merge`` trains some variants and adds them to an existing
results file with the same settings.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import torch

from tinytf import block_comparison as bc


def merge(old: dict, new: dict, order: list) -> dict:
    """``old`` with the variants of ``new`` added (or replaced); both must have the same task and settings.
    Each run depends only on its (config, peak rate, seed), so the merged file holds the numbers one
    invocation with every variant would give; the commands and wall times of both are kept."""
    if old["task"] != new["task"] or old["settings"] != new["settings"]:
        raise SystemExit("--merge: the existing results file has other task settings; re-run every variant")
    merged = dict(old)
    names = [n for n in order if n in old["runs"] or n in new["runs"]]
    merged["configs"] = {n: (new if n in new["runs"] else old)["configs"][n] for n in names}
    merged["runs"] = {n: (new if n in new["runs"] else old)["runs"][n] for n in names}
    merged["command"] = old["command"].split(" && ")[0] + " && " + new["command"]
    merged["environment"] = dict(old["environment"], total_seconds=round(
        old["environment"]["total_seconds"] + new["environment"]["total_seconds"], 1))
    merged["environment"]["training_cpu_seconds"] = round(
        sum(r.get("cpu_seconds", 0) for runs in merged["runs"].values() for r in runs), 1)
    return merged


def main(argv=None) -> int:
    d = bc.DEFAULTS
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=d["steps"])
    p.add_argument("--seeds", type=int, nargs="+", default=list(d["seeds"]))
    p.add_argument("--lrs", type=float, nargs="+", default=list(d["lrs"]), help="peak learning rates (the grid)")
    p.add_argument("--warmups", type=int, nargs="+", default=list(d["warmups"]),
                   help="warm-up lengths W in steps (each is a factor level of the study)")
    p.add_argument("--batch-size", type=int, default=d["batch_size"])
    p.add_argument("--d-model", type=int, default=d["d_model"])
    p.add_argument("--threads", type=int, default=1, help="torch threads with --jobs 1 (default 1: reproducible)")
    p.add_argument("--jobs", type=int, default=1,
                   help="runs trained at once, one process and one thread each (default 1)")
    p.add_argument("--quick", action="store_true",
                   help="20 steps, seeds 0 1, the first two rates; writes nothing unless --out is given")
    p.add_argument("--out", type=Path, help=f"results file (default {bc.RESULTS_PATH}, except with --quick)")
    p.add_argument("--no-ablations", action="store_true", help="only the 2017 and Llama-3-style blocks")
    p.add_argument("--variants", nargs="+", metavar="NAME",
                   help=f"train only these variants (of {list(bc.VARIANTS)}), in this order")
    p.add_argument("--merge", action="store_true",
                   help="add the runs to the existing results file (same settings required), replacing those "
                        "variants' runs; the file keeps the variants in the order of block_configs()")
    p.add_argument("--resume", action="store_true",
                   help="skip the runs already recorded in <out>.partial.jsonl by an interrupted invocation")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.seeds, args.lrs, args.warmups = 20, [0, 1], args.lrs[:2], [2]
    torch.set_num_threads(args.threads)
    configs = bc.block_configs(d_model=args.d_model, ablations=not args.no_ablations)
    all_configs = dict(configs)
    if args.variants:
        unknown = [v for v in args.variants if v not in configs]
        if unknown:
            p.error(f"unknown variant(s) {unknown}; choose from {list(configs)}")
        configs = {k: v for k, v in configs.items() if k in args.variants}
    for name, cfg in configs.items():
        print(f"{name}: {cfg}")
    n_runs = len(configs) * len(args.warmups) * len(args.lrs) * len(args.seeds)
    print(f"{n_runs} runs of {args.steps} steps: {len(configs)} variants x {len(args.warmups)} warm-ups "
          f"{args.warmups} x {len(args.lrs)} peak rates {args.lrs} x {len(args.seeds)} seeds {args.seeds}", flush=True)
    out = args.out if args.out is not None else (None if args.quick else bc.RESULTS_PATH)
    partial = None if out is None else Path(str(out) + ".partial.jsonl")
    done = {}
    if partial is not None and args.resume and partial.exists():
        for line in partial.read_text().splitlines():
            rec = json.loads(line)
            if rec["steps"] == args.steps:
                done[rec["name"], rec["run"]["warmup"], rec["run"]["lr"], rec["run"]["seed"]] = rec["run"]
        print(f"resuming: {len(done)} runs already recorded in {partial}", flush=True)
    elif partial is not None and partial.exists():
        partial.unlink()

    def save_run(name, run):  # every finished run is kept at once, so an interrupted sweep can --resume
        if partial is not None:
            with partial.open("a") as f:
                f.write(json.dumps({"name": name, "steps": args.steps, "run": run}, allow_nan=False) + "\n")

    t0 = time.perf_counter()
    results = bc.run_comparison(configs, seeds=args.seeds, steps=args.steps, lrs=args.lrs,
                                warmups=args.warmups, batch_size=args.batch_size, progress=not args.no_progress,
                                jobs=args.jobs, done=done, on_run=save_run, priority=args.variants)
    given = argv if argv is not None else sys.argv[1:]
    args_text = shlex.join(a for a in given if a not in ("--no-progress", "--resume"))
    results["command"] = f"python scripts/compare_blocks.py {args_text}".rstrip()
    results["environment"]["total_seconds"] = round(time.perf_counter() - t0, 1)  # this invocation only
    results["environment"]["training_cpu_seconds"] = round(
        sum(r.get("cpu_seconds", 0) for runs in results["runs"].values() for r in runs), 1)
    if args.merge:
        if out is None:
            p.error("--merge needs a results file (--out, or no --quick)")
        results = merge(bc.load_results(out), results, list(all_configs))
    if out is not None:
        print("wrote", bc.save_results(results, out), flush=True)
        partial.unlink(missing_ok=True)
    print(f"wall time {results['environment']['total_seconds']:.0f} s, "
          f"training CPU time {results['environment']['training_cpu_seconds']:.0f} s")
    print("mean eval loss ± std over seeds, every variant at every peak rate ('<': best by validation loss):")
    for w in bc.warmups_of(results):
        print(bc.grid_table(results, warmup=w))
    print("each variant at its best rate for each warm-up ('<': its best cell overall):")
    print(bc.warmup_table(results))
    print("each variant at its best warm-up and rate ('*': the rate is at an edge of the grid):")
    print(bc.summary_table(results))
    for name in results["runs"]:
        if name != "2017" and "2017" in results["runs"]:  # a run of other variants only has no 2017 to pair with
            diffs = ", ".join(f"seed {s}: {x:+.3f}" for s, x in bc.paired_differences(results, "2017", name))
            print(f"eval loss 2017 - {name}: {diffs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
