"""First load of every chapter page of the built book (a script, not a timed test).

Headless Chromium (Debian's /usr/bin/chromium via Playwright) opens each page of `_build/html` from a local
http server with a cold cache at 1280 x 900 and reports the navigation timing's load event, the bytes
transferred and the number of requests. The page weights are *checked* by tests/browser/test_a11y_book.py
(at most 4 MB per chapter page); load times move with the machine's load, so they are measured here and
reported in the README with the load average they were measured under.

    python bench/bench_page_load.py          # build the book first (make book)
"""
from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import book_browser  # noqa: E402
import build_book  # noqa: E402

LOAD_MS = "() => Math.round(performance.getEntriesByType('navigation')[0].loadEventEnd)"


def main() -> None:
    from playwright.sync_api import sync_playwright

    html = build_book.HTML
    if not (html / "index.html").is_file():
        raise SystemExit("no built book: run `make book` first")
    docs = [d for d in build_book.toc_docnames() if d.startswith("chapters/") or d == "intro"]
    server = book_browser.BookServer(html)
    rows = []
    try:
        with sync_playwright() as pw:
            browser = book_browser.launch(pw)
            for doc in docs:
                page, _, _, _ = book_browser.open_page(browser, server.url(f"{doc}.html"), viewport=(1280, 900))
                book_browser.settle(page)
                sizes = page.evaluate("() => performance.getEntriesByType('resource').map(r => r.transferSize)"
                                      ".concat([performance.getEntriesByType('navigation')[0].transferSize])")
                rows.append((doc, page.evaluate(LOAD_MS), sum(sizes), len(sizes)))
                page.context.close()
            browser.close()
    finally:
        server.stop()
    print(f"load average {os.getloadavg()[0]:.1f}\n")
    print("| page | load event | transferred | requests |\n|---|---:|---:|---:|")
    for doc, ms, size, n in rows:
        print(f"| {doc} | {ms} ms | {size / 1e6:.2f} MB | {n} |")
    print(f"\nmedian load event {statistics.median(r[1] for r in rows):.0f} ms")


if __name__ == "__main__":
    main()
