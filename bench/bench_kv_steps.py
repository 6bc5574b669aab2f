"""Benchmark: the shape of chapter 10's step timings (sections 10.4 and 10.9), over several runs.

Chapter 10 times a greedy generation replayed step by step, naive and cached (``time_steps``), and prints a
reading of that one run. Whether the shape it explains (the naive line climbs, the cached one barely moves,
the ratio naive / cached grows, and stays far below the ratio of positions run) holds on a machine is a
question about timings, so it is answered here over several runs, not asserted inside the chapter.

For each run and each kernel selection this script replays the chapter's two measurements with the chapter's
settings (the default TinyTransformer, seed 0: 128 greedy tokens after a 32-token prompt, every 8th step;
``text-4l``: the 100 greedy bytes after "Return the number of ", every 5th step; 5 repeats each, one thread)
and records the chapter's comparisons:

- ``naive_climb``: the naive median in the last quarter / in the first quarter;
- ``cached_change``: the same for the cached line;
- ``ratio_first`` / ``ratio_last``: naive / cached per repeat, median, in the first and the last quarter;
- ``shape_holds``: naive climbs by > 30 %, cached changes by < 50 %, the cached change is less than half the
  naive one, the ratio grows and ends above 1.5, and stays below 0.2 x the positions run (153 or 119).

    python bench/bench_kv_steps.py [--runs 3] [--other-kernels]

``--other-kernels`` re-runs itself with ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE (torch's generic
kernels, as the second nbval run uses). Results are appended to ``bench/results/kv_steps.json``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

import tinytf
from tinytf import pretrained
from tinytf.lab.prefill_decode import time_steps

RESULTS = Path(__file__).parent / "results" / "kv_steps.json"


def measure(model, tokens, start, every, first, last, positions_run):
    steps = time_steps(model, tokens, start=start, repeats=5, every=every)
    n0, n1 = (steps.band("naive", *b).median for b in (first, last))
    c0, c1 = (steps.band("cached", *b).median for b in (first, last))
    r0, r1 = steps.ratio(*first).median, steps.ratio(*last).median
    climb, change = n1 / n0, c1 / c0
    holds = (climb > 1.3 and change < 1.5 and abs(change - 1) < 0.5 * (climb - 1)
             and r1 > max(r0, 1.5) and r1 < 0.2 * positions_run)
    return {"naive_ms": [round(1e3 * n0, 2), round(1e3 * n1, 2)], "cached_ms": [round(1e3 * c0, 2), round(1e3 * c1, 2)],
            "naive_climb": round(climb, 2), "cached_change": round(change, 2),
            "ratio_first": round(r0, 2), "ratio_last": round(r1, 2), "shape_holds": bool(holds)}


def one_run():
    torch.set_num_threads(1)
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer().eval()
    prompt = tinytf.encode("Attention is one layer; the block is the unit.")[:32]
    tokens = tinytf.generate(model, prompt, 128).tokens
    default = measure(model, tokens[:-1], 32, 8, (32, 64), (128, 159), 153)
    lm = pretrained("text-4l")
    text_prompt = tinytf.encode("Return the number of ")
    run = tinytf.generate(lm, text_prompt, 100)
    text = measure(lm, run.tokens[:-1], len(text_prompt), 5, (21, 46), (96, 120), 119)
    return {"default": default, "text-4l": text}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--other-kernels", action="store_true", help="also run under torch's generic kernels")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one_run()))
        return
    selections = {"native": {}}
    if args.other_kernels:
        selections["default + MKL_CBWR=COMPATIBLE"] = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}
    entry = {"date": datetime.date.today().isoformat(), "torch": torch.__version__, "runs": {}}
    for label, env in selections.items():
        entry["runs"][label] = []
        for i in range(args.runs):
            load = os.getloadavg()[0]
            out = subprocess.run([sys.executable, __file__, "--child"], env={**os.environ, **env},
                                 capture_output=True, text=True, check=True).stdout
            res = json.loads(out.strip().splitlines()[-1])
            res["load_average"] = round(load, 1)
            entry["runs"][label].append(res)
            for name, r in res.items():
                if name == "load_average":
                    continue
                print(f"{label:32} run {i}  {name:8} naive x{r['naive_climb']:<5} cached x{r['cached_change']:<5} "
                      f"ratio {r['ratio_first']} -> {r['ratio_last']}  shape holds: {r['shape_holds']}  "
                      f"(load {res['load_average']})")
    history = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    history.append(entry)
    RESULTS.write_text(json.dumps(history, indent=1) + "\n")
    runs = [r[m] for rs in entry["runs"].values() for r in rs for m in ("default", "text-4l")]
    print(f"shape holds in {sum(r['shape_holds'] for r in runs)} of {len(runs)} measurements")


if __name__ == "__main__":
    main()
