"""Benchmark of the landing page's lab (issue #23; a script, not a timed test).

The built intro page in headless Chromium, served by a local http server, one WebAssembly thread (the book's
onnxruntime-web). Measured in the browser (performance.now()):

1. first load: the bytes the intro page transfers before any interaction (goal <= 4 MB);
2. model load: the first interaction -> onnxruntime-web, lab.json and text-4l's lab graph (3.9 MB) loaded,
   the session created, the prompt run, the table and the attention map drawn; in a fresh page (cold cache);
3. update: a keystroke in a 64-byte prompt -> the model run (S = 0, all outputs) and the distribution table
   shown. Goal: median <= 100 ms (N keystrokes). The figures (the logit lens, then the attention map) follow in their
   own queue (typing never waits for them): the time until both are drawn is reported beside, and each figure's
   share (template filled + drawn by the figure core);
4. generation: Generate from a 1-byte prompt until the context (128 bytes) is full, one byte per step through the
   KV cache; bytes/s over the whole run and over its last 16 bytes (goal >= 20 up to the whole context). For
   the decision between a cache and re-running the prompt: one run of the whole 127-byte prompt (what each step
   would cost without the cache) against one cached step.

    python bench/bench_lab.py            # 30 keystrokes; writes bench/results/lab.json
    python bench/bench_lab.py --quick    # 5 keystrokes; nothing written
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import book_browser  # noqa: E402
import build_book  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "lab.json"
PAGE = "intro.html"
L = ".tinytf-lab"
PROMPT64 = "Return the list of names in the module, sorted, without the dunde"  # 64 bytes + 1 typed
READY = f"() => {{ const l = document.querySelector('{L}').tinytfLab; return l && l.ready && !l.busy; }}"
KEYSTROKE = f"""async (text) => {{
  const l = document.querySelector('{L}').tinytfLab, box = l.ui.prompt;
  const t0 = performance.now();
  box.value = text; box.dispatchEvent(new Event('input'));
  await l.pending;
  const shown = performance.now() - t0;
  await l.drawn;
  return [shown, performance.now() - t0, l.figureTimes]; }}"""
RUNS = f"""async () => {{
  const l = document.querySelector('{L}').tinytfLab, ids = Array.from({{length: 127}}, (_, i) => 97 + i % 26);
  const times = {{full: [], step: []}};
  for (let k = 0; k < 7; k++) {{
    let t = performance.now(); const out = await l.run(ids); times.full.push(performance.now() - t);
    t = performance.now(); await l.run([32], out.present_k, out.present_v); times.step.push(performance.now() - t);
  }}
  return times; }}"""


def median(xs):
    return statistics.median(xs)


def run(n_keys: int) -> dict:
    if build_book.is_stale():
        build_book.build()
    from playwright.sync_api import sync_playwright

    server = book_browser.BookServer(build_book.HTML)
    out = {"load_average_before": round(os.getloadavg()[0], 1)}
    try:
        with sync_playwright() as pw:
            browser = book_browser.launch(pw)
            page, errors, remote, loaded = book_browser.open_page(browser, server.url(PAGE))
            book_browser.settle(page)
            files = {server.file_for(u) for u in loaded} - {None}
            out["first_load_mb"] = round(sum(f.stat().st_size for f in files) / 1e6, 2)
            page.locator(f"{L} textarea").click()
            page.wait_for_function(READY, timeout=120_000)
            out["model_load_ms"] = round(page.evaluate(f"() => document.querySelector('{L}').tinytfLab.loadMs"))
            times, parts = [], []
            for i in range(n_keys + 2):
                text = PROMPT64[:63] + "abcdefghijklmnopqrstuvwxyz"[i % 26]
                assert len(text.encode()) == 64
                times.append(page.evaluate(KEYSTROKE, text))
                parts.append(page.evaluate(f"() => document.querySelector('{L}').tinytfLab.times"))
            times, parts = times[2:], parts[2:]  # the first runs of a new length warm the runtime
            drawn = [t[1] for t in times]
            out["figures_ms_median"] = {k: round(median([t[2][k] for t in times]), 1) for k in times[0][2]}
            times = [t[0] for t in times]
            out["update_with_figure_ms_median"] = round(median(drawn), 1)
            out["update_parts_ms_median"] = {k: round(median([p[k] for p in parts]), 1) for k in parts[0]}
            out["update_ms_median"] = round(median(times), 1)
            out["update_ms_p90"] = round(sorted(times)[int(0.9 * (len(times) - 1))], 1)
            out["updates"] = len(times)
            runs = page.evaluate(RUNS)
            out["full_127_ms_median"] = round(median(runs["full"][2:]), 1)
            out["cached_step_ms_median"] = round(median(runs["step"][2:]), 1)
            page.evaluate(KEYSTROKE, "T")
            for name, value in (("temperature", "0.8"), ("top_k", "40"), ("top_p", "0.95"), ("seed", "1"),
                                ("n_bytes", "127")):
                page.locator(f"{L} [id$='-{name}']").fill(value)
            page.locator(f"{L} [id$='-generate']").click()
            page.wait_for_function(f"() => {{ const l = document.querySelector('{L}').tinytfLab; "
                                   "return !l.busy && l.generated.length === 127; }", timeout=120_000)
            steps = page.evaluate(f"() => document.querySelector('{L}').tinytfLab.stepTimes")
            out["generate_bytes"] = len(steps)
            out["generate_bytes_per_s"] = round(len(steps) / (steps[-1] / 1000), 1)
            out["generate_last16_bytes_per_s"] = round(16 / ((steps[-1] - steps[-17]) / 1000), 1)
            out["console_errors"] = errors
            out["remote_requests"] = remote
            browser.close()
    finally:
        server.stop()
    out["load_average_after"] = round(os.getloadavg()[0], 1)
    out["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform()}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    res = run(5 if args.quick else 30)
    print(f"load average {res['load_average_before']} -> {res['load_average_after']}")
    print("| measure | value | goal |\n|---|---|---|")
    print(f"| first load of intro.html | {res['first_load_mb']} MB | <= 4 MB |")
    print(f"| model load (first interaction -> drawn) | {res['model_load_ms']} ms | |")
    print(f"| update after a keystroke, 64-byte prompt (table) | median {res['update_ms_median']} ms "
          f"(p90 {res['update_ms_p90']} ms, {res['updates']} keystrokes; model / table "
          f"{' / '.join(str(v) for v in res['update_parts_ms_median'].values())} ms) | <= 100 ms |")
    print(f"| ... and the figures redrawn (lens / attention map) | median {res['update_with_figure_ms_median']} ms "
          f"({' / '.join(str(v) for v in res['figures_ms_median'].values())} ms) | |")
    print(f"| generation, 1 -> 128 bytes (KV cache) | {res['generate_bytes_per_s']} bytes/s "
          f"(last 16 bytes: {res['generate_last16_bytes_per_s']}) | >= 20 |")
    print(f"| one run of a 127-byte prompt / one cached step | {res['full_127_ms_median']} ms / "
          f"{res['cached_step_ms_median']} ms | |")
    if not args.quick:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
