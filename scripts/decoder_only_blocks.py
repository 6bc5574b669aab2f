"""Chapter 9's block comparison repeated decoder-only (tinytf.decoder_only_reversal), with a progress bar.

Trains the five blocks of section 9.3 (2017, 2017 + pre-norm, Llama-3-style + post-norm, Llama-3-style + MHA,
Llama-3-style) as decoder-only models on the reversal task, on the study's grid (peak rates 0.004, 0.008, 0.016
x warm-ups 16 and 100 steps x seeds 0, 1, 2), and writes tinytf/checkpoints/compare_blocks_decoder_only.json,
which chapter 9 loads. Smaller designs: ``--cells best`` (each variant only at its best cell of the
encoder-decoder study) and ``--cells rates`` (the study's three rates at that cell's warm-up; ``--skip-best``
leaves out the best cell itself, e.g. when ``--cells best`` already trained it). ``--combine`` joins such files.

    python scripts/decoder_only_blocks.py                     # 5 variants x 6 cells x 3 seeds = 90 runs
    python scripts/decoder_only_blocks.py --cells best        # 5 variants x 3 seeds = 15 runs
    python scripts/decoder_only_blocks.py --cells rates --skip-best --out /tmp/rates.json   # 30 more runs
    python scripts/decoder_only_blocks.py --combine /tmp/best.json /tmp/rates.json   # -> the shipped file
    python scripts/decoder_only_blocks.py --quick             # 20 steps, seed 0, best cells: a smoke test
    python scripts/decoder_only_blocks.py --at-best-of tinytf/checkpoints/compare_blocks_decoder_only.json \
        --seeds 3 4 5 6 7 8 9 10 11 12 --out tinytf/checkpoints/compare_blocks_decoder_only_confirm.json
        # the confirmation: each variant at its own best decoder-only cell (chosen on seeds 0-2), fresh seeds
"""
from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tinytf import block_comparison as bc  # noqa: E402
from tinytf.lab import decoder_only_reversal as dor  # noqa: E402

STUDY = ("2017", "2017 + pre-norm", "Llama-3-style + post-norm", "Llama-3-style + MHA", "Llama-3-style")
LATER = ("2017_lr0.002", "prenorm_lr0.002", "2026_lr0.032")  # the study's runs one rate beyond an edge


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=bc.DEFAULTS["steps"])
    p.add_argument("--seeds", type=int, nargs="+", default=list(bc.DEFAULTS["seeds"]))
    p.add_argument("--variants", nargs="+", default=list(STUDY), metavar="NAME")
    p.add_argument("--cells", choices=("grid", "best", "rates"), default="grid",
                   help="grid: the study's 3 rates x 2 warm-ups; best: the study's best cell; rates: the 3 rates "
                        "at the best cell's warm-up")
    p.add_argument("--at-best-of", type=Path, metavar="FILE",
                   help="train each variant only at its best cell of FILE (a decoder-only grid written by this "
                        "script, chosen on validation loss); overrides --cells")
    p.add_argument("--skip-best", action="store_true", help="leave out each variant's best cell of the study")
    p.add_argument("--combine", nargs="+", type=Path, metavar="FILE",
                   help="join these results files (written by this script) into --out instead of training")
    p.add_argument("--quick", action="store_true",
                   help="20 steps, seed 0, --cells best; writes nothing unless --out is given")
    p.add_argument("--out", type=Path, help=f"results file (default {dor.RESULTS_PATH}, except with --quick)")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.seeds, args.cells = 20, [0], "best"
    if args.combine:
        combined = dor.combine(*(dor.load_results(f) for f in args.combine))
        print("wrote", dor.save_results(combined, args.out or dor.RESULTS_PATH))
        print(bc.summary_table(dor.with_rates(combined), choice=dor.best_cells(combined)))
        return 0
    torch.set_num_threads(1)
    study = bc.extend(bc.load_results(), *(bc.load_results(bc.RESULTS_PATH.with_name(f"compare_blocks_{x}.json"))
                                         for x in LATER))
    configs = bc.configs_of(study)
    unknown = [v for v in args.variants if v not in configs]
    if unknown:
        p.error(f"unknown variant(s) {unknown}; choose from {list(configs)}")
    configs = {name: configs[name] for name in args.variants}
    best = bc.best_settings(study)
    grid = {"grid": lambda w: [(x, lr) for x in bc.DEFAULTS["warmups"] for lr in bc.DEFAULTS["lrs"]],
            "best": lambda w: None, "rates": lambda w: [(w, lr) for lr in bc.DEFAULTS["lrs"]]}[args.cells]
    cells = {name: grid(best[name][0]) or [best[name]] for name in configs}
    if args.at_best_of:
        own = dor.best_cells(dor.load_results(args.at_best_of))
        missing = [name for name in configs if name not in own]
        if missing:
            p.error(f"--at-best-of: {args.at_best_of} has no runs of {missing}")
        cells = {name: [own[name]] for name in configs}
    if args.skip_best:
        cells = {name: [c for c in pairs if c != best[name]] for name, pairs in cells.items()}
    for name, pairs in cells.items():
        print(f"{name}: " + ", ".join(f"W = {w}, lr {lr:g}" for w, lr in pairs), flush=True)
    t0 = time.perf_counter()
    results = dor.run(configs, cells, seeds=args.seeds, steps=args.steps, progress=not args.no_progress)
    given = argv if argv is not None else sys.argv[1:]
    results["command"] = f"python scripts/decoder_only_blocks.py {shlex.join(a for a in given if a != '--no-progress')}".rstrip()
    results["environment"]["total_seconds"] = round(time.perf_counter() - t0, 1)
    results["environment"]["training_cpu_seconds"] = round(
        sum(r["cpu_seconds"] for runs in results["runs"].values() for r in runs), 1)
    out = args.out if args.out is not None else (None if args.quick else dor.RESULTS_PATH)
    if out is not None:
        print("wrote", dor.save_results(results, out), flush=True)
    print(bc.summary_table(dor.with_rates(results), choice=dor.best_cells(results)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
