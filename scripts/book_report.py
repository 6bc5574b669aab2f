"""Performance report of the book: per-chapter nbval execution time, total nbval time, build
time and per-page weight. Prints a markdown section and writes it to _build/book_report.md;
`--update-readme` also puts it under "## Performance report" in README.md.

    python scripts/book_report.py                   # everything (~ nbval + a full build)
    python scripts/book_report.py --skip-nbval      # only build + page weights
    python scripts/book_report.py --update-readme

Goals (2 cores): whole nbval <= 5 min, each chapter <= 60 s, each chapter page <= 1.5 MB.

How it measures
* nbval: `pytest --nbval` over the toc's chapter notebooks, exactly as `make test` runs them (same
  sanitize file, same kernel), once with the native CPU kernels and once under
  ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE. Per chapter (native run): the sum of its cells'
  times from pytest's JUnit XML; each total is the wall time of the whole run (kernel start-ups included).
* build: a full `jupyter-book build . -W -n --keep-going --all`.
* page weight: each page is opened in headless Chromium from a local server and every file it
  fetched is looked up on disk. "page" = the HTML plus the files no other page fetches (its
  images); "shared" = files several pages fetch (theme, MathJax, ...), cached by the browser
  after the first page. plotly.min.js is reported apart (one shared file, on figure pages only).
  The 1.5 MB goal applies to "page".
"""
from __future__ import annotations

import argparse
import platform
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import book_browser  # noqa: E402
import build_book  # noqa: E402

ROOT = build_book.ROOT
REPORT = ROOT / "_build" / "book_report.md"
JUNIT = ROOT / "_build" / "nbval-junit.xml"
GOAL_NBVAL_TOTAL_S = 300
GOAL_CHAPTER_S = 60
GOAL_PAGE_BYTES = 1_500_000
PLOTLY = "_static/plotly.min.js"


toc_docnames = build_book.toc_docnames


# --------------------------------------------------------------------------- nbval
# `make test` runs nbval twice: with torch's native CPU kernels and with the portable ones (another
# machine's last bits). The report times both.
KERNEL_SELECTIONS = {"native kernels": {}, "ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE":
                     {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}}


def run_nbval(notebooks: list[Path], env: dict | None = None) -> tuple[float, dict[str, dict], str]:
    """Run nbval over the notebooks (with ``env`` added to the environment); return
    (wall seconds, per-notebook stats, pytest summary)."""
    import os

    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
           "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", "--nbval-cell-timeout=300",
           f"--junit-xml={JUNIT}", *[str(p.relative_to(ROOT)) for p in notebooks]]
    JUNIT.unlink(missing_ok=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - start
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-500:]
    stats: dict[str, dict] = defaultdict(lambda: {"cells": 0, "seconds": 0.0, "failed": 0})
    if JUNIT.is_file():
        for case in ET.parse(JUNIT).getroot().iter("testcase"):
            # nbval cases: classname "chapters.01_tokens_embeddings_positions.ipynb", name "Cell 3"
            classname = case.get("classname", "")
            stem = classname.removesuffix(".ipynb")
            key = stem.replace(".", "/") + ".ipynb" if stem != classname else classname
            stats[key]["cells"] += 1
            stats[key]["seconds"] += float(case.get("time", 0.0))
            if case.find("failure") is not None or case.find("error") is not None:
                stats[key]["failed"] += 1
    return wall, dict(stats), summary


# --------------------------------------------------------------------------- page weight
def page_weights(docnames: list[str]) -> dict[str, dict]:
    """Open each page in Chromium; sizes of the files it fetched, split page/shared/plotly."""
    from playwright.sync_api import sync_playwright

    server = book_browser.BookServer(build_book.HTML)
    fetched: dict[str, set[Path]] = {}
    try:
        with sync_playwright() as pw:
            browser = book_browser.launch(pw)
            for doc in docnames:
                page, _, _, urls = book_browser.open_page(browser, server.url(f"{doc}.html"))
                page.wait_for_timeout(500)
                page.context.close()
                fetched[doc] = {f for f in (server.file_for(u) for u in urls) if f is not None}
            browser.close()
    finally:
        server.stop()
    users: dict[Path, int] = defaultdict(int)
    for files in fetched.values():
        for f in files:
            users[f] += 1
    html_root = build_book.HTML.resolve()
    out = {}
    for doc, files in fetched.items():
        html_file = (html_root / f"{doc}.html").resolve()
        row = {"html": html_file.stat().st_size, "own": 0, "shared": 0, "plotly": 0}
        for f in files:
            size = f.stat().st_size
            rel = f.relative_to(html_root).as_posix()
            if f == html_file:
                continue
            if rel == PLOTLY:
                row["plotly"] = size
            elif users[f] > 1:
                row["shared"] += size
            else:
                row["own"] += size
        row["page"] = row["html"] + row["own"]
        out[doc] = row
    return out


def static_page_weights(docnames: list[str]) -> dict[str, dict]:
    """Without Chromium: HTML + the images it references (no shared assets)."""
    out = {}
    for doc in docnames:
        html_file = build_book.HTML / f"{doc}.html"
        text = html_file.read_text(encoding="utf-8")
        own = 0
        for src in set(re.findall(r'<img[^>]+src="([^"]+)"', text)):
            f = (html_file.parent / src).resolve()
            if f.is_file():
                own += f.stat().st_size
        out[doc] = {"html": html_file.stat().st_size, "own": own, "shared": None, "plotly": None,
                    "page": html_file.stat().st_size + own}
    return out


# --------------------------------------------------------------------------- report
def kb(n) -> str:
    return "–" if n is None else f"{n / 1000:,.0f} kB"


def ok(flag: bool) -> str:
    return "yes" if flag else "**NO**"


def make_report(docnames, nbval, build_seconds, weights) -> str:
    lines = ["## Performance report", ""]
    lines.append(f"Measured {time.strftime('%Y-%m-%d')} with `make report` (scripts/book_report.py) on "
                 f"{platform.machine()}, Python {platform.python_version()}, "
                 f"{_cores()} cores, load average {_load()} when the report finished.")
    lines.append("")
    for name, (wall, _, summary) in (nbval or {}).items():
        lines.append(f"- nbval, all chapters, {name}: **{wall:.0f} s** wall time (goal ≤ {GOAL_NBVAL_TOTAL_S} s: "
                     f"{ok(wall <= GOAL_NBVAL_TOTAL_S)}); pytest: `{summary}`")
    if build_seconds is not None:
        lines.append(f"- full HTML build (`jupyter-book build . -W -n --keep-going --all`): **{build_seconds:.0f} s**")
    plotly_size = next((w["plotly"] for w in weights.values() if w.get("plotly")), None)
    shared_max = max((w["shared"] or 0) for w in weights.values()) if weights else 0
    lines.append(f"- shared files (theme, MathJax, search; fetched once, then cached): up to {kb(shared_max)} "
                 f"per page; plotly.min.js: {kb(plotly_size)}, only on pages with a figure")
    lines.append("")
    lines.append("| page | nbval cells | nbval s | ≤ 60 s | HTML | own files | page total | ≤ 1.5 MB | shared files | plotly.js |")
    lines.append("|---|---:|---:|:-:|---:|---:|---:|:-:|---:|:-:|")
    stats = next(iter(nbval.values()))[1] if nbval else {}
    for doc in docnames:
        w = weights.get(doc, {})
        s = stats.get(f"{doc}.ipynb")
        cells = "–" if s is None else f"{s['cells']}" + (f" ({s['failed']} failed)" if s["failed"] else "")
        secs = "–" if s is None else f"{s['seconds']:.1f}"
        fast = "–" if s is None else ok(s["seconds"] <= GOAL_CHAPTER_S)
        small = ok(w["page"] <= GOAL_PAGE_BYTES) if w else "–"
        lines.append(f"| {doc} | {cells} | {secs} | {fast} | {kb(w.get('html'))} | {kb(w.get('own'))} | "
                     f"{kb(w.get('page'))} | {small} | {kb(w.get('shared'))} | "
                     f"{'yes' if w.get('plotly') else '–'} |")
    lines.append("")
    return "\n".join(lines)


def _load() -> str:
    import os

    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "unknown"


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0


def update_readme(section: str) -> None:
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    pattern = re.compile(r"^## Performance report\n.*?(?=^## |\Z)", re.M | re.S)
    if not pattern.search(text):
        raise SystemExit("README.md has no '## Performance report' section")
    text = pattern.sub(lambda _: section.rstrip() + "\n\n", text, count=1)
    readme.write_text(text.rstrip() + "\n", encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-nbval", action="store_true")
    parser.add_argument("--skip-build", action="store_true", help="reuse _build/html (build time not measured)")
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args(argv)

    docnames = toc_docnames()
    notebooks = [ROOT / f"{d}.ipynb" for d in docnames if (ROOT / f"{d}.ipynb").is_file()]
    missing = [d for d in docnames if not (ROOT / f"{d}.ipynb").is_file() and not (ROOT / f"{d}.md").is_file()]
    if missing:
        print(f"note: not written yet: {', '.join(missing)}", file=sys.stderr)

    nbval = None
    if not args.skip_nbval and notebooks:
        nbval = {}
        for name, env in KERNEL_SELECTIONS.items():
            print(f"nbval over {len(notebooks)} notebooks, {name} ...", file=sys.stderr)
            nbval[name] = run_nbval(notebooks, env)
            print(f"  {nbval[name][0]:.0f} s: {nbval[name][2]}", file=sys.stderr)

    build_seconds = None
    if not args.skip_build:
        print("full build ...", file=sys.stderr)
        build_seconds = build_book.build(full=True)
    built = [d for d in docnames if (build_book.HTML / f"{d}.html").is_file()]
    if book_browser.CHROMIUM.exists():
        weights = page_weights(built)
    else:
        print("no /usr/bin/chromium: page weights from the HTML and its images only", file=sys.stderr)
        weights = static_page_weights(built)

    section = make_report(docnames, nbval, build_seconds, weights)
    REPORT.parent.mkdir(exist_ok=True)
    REPORT.write_text(section, encoding="utf-8")
    print(section)
    if args.update_readme:
        update_readme(section)
        print("README.md updated", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
