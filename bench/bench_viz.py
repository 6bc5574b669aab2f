"""Benchmark: one live update of the tinytf.viz panel for three tokens at the default config.

A live update is what happens when the reader changes the text in the panel: encode the
new tokens, trace a forward pass (model.run_with_trace), build the figure from the trace and
render the output the panel displays (tinytf.viz.mimebundle: the rounded plotly JSON). The model
is not rebuilt (it is cached until the config or seed changes); a rebuild is timed separately.

    python bench/bench_viz.py [--runs 30] [--threads N]

Prints one markdown line per measurement for the README. Goal: median <= 50 ms.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

from tinytf.viz import mimebundle

GOAL_MS = 50.0


def time_runs(fn, runs: int) -> list[float]:
    fn()  # warm-up (first forward pass, imports, caches)
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--threads", type=int, default=None,
                    help="torch.set_num_threads for the session (the panel itself traces on one thread)")
    args = ap.parse_args(argv)
    if args.runs < 30:
        ap.error("use at least 30 runs")
    if args.threads:
        torch.set_num_threads(args.threads)
    from tinytf.viz.panel import LivePanel

    panel = LivePanel(text="cat")  # default TinyConfig, seed 0, block stepper view
    texts = ["cat", "dog"]
    results = []
    for view in ("stepper", "attention"):
        panel.view.value = view
        counter = {"i": 0}

        def update():
            counter["i"] += 1
            panel.text.value = texts[counter["i"] % 2]  # the panel's callback: encode, trace, build the figure
            assert panel.message.value == "", panel.message.value
            return mimebundle(panel._spec)  # the redraw: the output show() sends to the panel's Output widget

        results.append((f"live update, {view} view", time_runs(update, args.runs)))

    def rebuild():
        panel._cache_key = None  # force a new model (what changing seed / norm / FFN does)
        panel.update()
        return mimebundle(panel._spec)

    panel.view.value = "stepper"
    results.append(("model rebuild + update, stepper view", time_runs(rebuild, args.runs)))

    cfg = panel.model().config
    threads = torch.get_num_threads()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# tinytf.viz live update: 3 tokens, default TinyConfig (d_model={cfg.d_model}, "
          f"{cfg.n_heads} heads, d_ff={cfg.d_ff}), torch {torch.__version__}, session threads {threads}, "
          f"{os.cpu_count()} CPUs, load average {load:.1f}, {args.runs} runs each\n")
    ok = True
    for what, times in results:
        med = statistics.median(times)
        goal = ""
        if what.startswith("live update"):
            ok &= med <= GOAL_MS
            goal = f" (goal ≤ {GOAL_MS:.0f} ms: {'met' if med <= GOAL_MS else 'NOT met'})"
        print(f"| viz {what} | median {med:.1f} ms | min {min(times):.1f} ms | max {max(times):.1f} ms |{goal}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
