"""Benchmark of the static page's live panel (issue #15; a script, not a timed test).

Chapter 6 of the built book in headless Chromium, served by a local http server (what `python -m http.server`
does). Measured in the browser by the panel itself (performance.now(), from the control change to the redrawn
figure):

1. ready: the reader's first use (the Run button) -> onnxruntime-web loaded, the model's ONNX session created, the
   view's templates fetched, the model run and the figure drawn. Goal: <= 2 s. Once per model, each in a fresh
   page (the 14 MB runtime is fetched and compiled again, as for a new reader; the browser's HTTP cache is cold).
2. update: every later change of the tokens (model run + figure recomputed + drawn in place). Goal: median
   <= 100 ms. N changes alternating between texts of 3..12 tokens, per model and view.

    python bench/bench_static_panel.py            # all models and views, 20 updates each; writes results
    python bench/bench_static_panel.py --quick    # 5 updates, the untrained model only; nothing written

Prints a markdown table and writes bench/results/static_panel.json.
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

RESULTS = ROOT / "bench" / "results" / "static_panel.json"
PAGE = "chapters/06_decoder_block.html"
P = ".tinytf-static-panel"
TEXTS = ["abc", "hello", "the cat", "abcdabcd", "a dog ran", "tokens here!"]
VIEWS = ["stepper", "attention", "residual_attn", "ffn"]


def _wait_update(page, before: int) -> int:
    page.wait_for_function(f"() => +document.querySelector('{P}').getAttribute('data-updates') > {before}",
                           timeout=60_000)
    page.wait_for_function(f"() => {{ const p = document.querySelector('{P}')._tinytfPanel; "
                           "return p.busy === null && !p.again; }", timeout=60_000)
    return int(page.locator(P).get_attribute("data-update-ms"))


def _updates(page) -> int:
    return int(page.locator(P).get_attribute("data-updates") or 0)


def measure(browser, url: str, model: str, views: list, n: int) -> dict:
    page, errors, _, _ = book_browser.open_page(browser, url)
    try:
        book_browser.settle(page)
        page.locator(f"{P} select[id$='-model']").select_option(model)  # the first use: loads everything
        ready = _wait_update(page, 0)
        timing = page.evaluate(f"() => document.querySelector('{P}')._tinytfPanel.timing")
        out = {"ready_ms": ready, "ready_parts_ms": {k: round(v) for k, v in timing.items()}, "views": {}}
        for view in views:
            before = _updates(page)
            page.locator(f"{P} select[id$='-view']").select_option(view)
            _wait_update(page, before)  # the view's templates are fetched once: not counted below
            times = []
            for i in range(n):
                before = _updates(page)
                box = page.locator(f"{P} input[type=text]")
                box.fill(TEXTS[i % len(TEXTS)])
                box.press("Enter")
                times.append(_wait_update(page, before))
            times.sort()
            out["views"][view] = {"median_ms": statistics.median(times), "p90_ms": times[int(0.9 * (len(times) - 1))],
                                  "min_ms": times[0], "max_ms": times[-1], "n": n}
        if errors:
            out["errors"] = errors
        return out
    finally:
        page.context.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if build_book.is_stale():
        build_book.build()
    from playwright.sync_api import sync_playwright

    models = ["untrained"] if args.quick else ["untrained", "induction-2l", "text-4l"]
    n = 5 if args.quick else 20
    server = book_browser.BookServer(build_book.HTML)
    results = {}
    try:
        with sync_playwright() as pw:
            browser = book_browser.launch(pw)
            try:
                for model in models:
                    results[model] = measure(browser, server.url(PAGE), model, VIEWS, n)
            finally:
                browser.close()
    finally:
        server.stop()
    print(f"| model | ready (first use) | {' | '.join(f'{v} update median (p90)' for v in VIEWS)} |")
    print("|---|---|" + "---|" * len(VIEWS))
    for model, r in results.items():
        cells = [f"{r['views'][v]['median_ms']:.0f} ms ({r['views'][v]['p90_ms']:.0f})" for v in VIEWS]
        print(f"| {model} | {r['ready_ms']} ms | {' | '.join(cells)} |")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"\nload average at the end: {load:.2f} on {os.cpu_count()} cores" if load is not None else "")
    if not args.quick:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps({"machine": platform.machine(), "cores": os.cpu_count(), "load": load,
                                       "updates_per_view": n, "results": results}, indent=1) + "\n")
        print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
