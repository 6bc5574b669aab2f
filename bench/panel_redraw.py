"""Benchmark: the live panel's redraw in JupyterLab, measured in the browser from the reader's change to
the redrawn figure.

Starts ``.venv/bin/jupyter lab`` with a notebook showing ``live_panel(text="cat")`` (scripts/lab_session.py),
opens it in Chromium (Playwright), runs the cell, puts the block stepper on stage 5, then makes N control
changes from the page like a reader (seed, norm, FFN, tokens, norm position, weights), cycling. For each
change the page records the time of the click / change / Enter and the FigureView records when its message
arrived and when ``Plotly.react`` resolved. The message sizes are those of the same changes made on a
LivePanel in this process (the JSON the kernel sends: a patch, or the whole figure when the structure changed).

    .venv/bin/python bench/panel_redraw.py [--changes 24] [--baseline] [--json bench/results/panel_redraw.json]

``--baseline`` measures the panel as it was before FigureView instead (the whole ``show`` output set into an
ipywidgets Output widget on every change, drawn anew by JupyterLab's plotly renderer; "redrawn" is when that
renderer's Plotly.newPlot / react promise resolves), for a before / after with one harness.

Prints a short markdown table. Goal: median change -> redrawn <= 200 ms.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import book_browser  # noqa: E402  (scripts/book_browser.py)
import lab_session as lab  # noqa: E402  (scripts/lab_session.py)

GOAL_MS = 200.0
STAGE = 4  # 0-based: stage 5, "scores"

# one cycle of changes: (control, value, how the reader sets it); the trained weights fix norm / FFN, so the
# panel goes back to random weights right after
CYCLE = [
    ("seed", "1", "type"), ("norm", "LayerNorm", "click"), ("FFN", "ReLU", "select"), ("tokens", "dog", "type"),
    ("position", "post-norm", "click"), ("weights", 1, "select_index"), ("weights", 0, "select_index"),
    ("seed", "2", "type"), ("norm", "RMSNorm", "click"), ("FFN", "SwiGLU", "select"), ("tokens", "cat", "type"),
    ("position", "pre-norm", "click"),
]
CONTROLS = ["seed", "norm", "FFN", "tokens", "position", "weights"]
PANEL_ATTR = {"seed": "seed", "norm": "norm", "FFN": "ffn", "tokens": "text", "position": "norm_position",
              "weights": "weights"}


def plan(n: int) -> list[tuple[str, object, str]]:
    """n changes: the cycle repeated, the seeds counting up so that every seed change is a change."""
    out = []
    while len(out) < n:
        for control, value, how in CYCLE:
            if control == "seed":
                value = str(len(out) + 1)
            out.append((control, value, how))
    return out[:n]


BASELINE_CELL = """\
import ipywidgets as widgets
import tinytf.viz.panel as panel_module
from tinytf.viz.render import mimebundle


class _NoView(panel_module.FigureView):
    def set_figure(self, fig, key=None):
        return None


class OutputPanel(panel_module.LivePanel):
    \"\"\"The panel before FigureView: every change sets the whole show() output into an Output widget.\"\"\"

    def __init__(self, **kwargs):
        self._out = widgets.Output(layout=widgets.Layout(width="100%"))
        super().__init__(**kwargs)
        self.children = tuple(self._out if c is self.plot else c for c in self.children)

    def update(self, *args):
        spec = super().update(*args)
        if spec is not None:
            self._out.outputs = ({"output_type": "display_data", "metadata": {}, "data": mimebundle(spec)},)
        return spec


panel_module.FigureView = _NoView
panel = OutputPanel(text="cat")
panel"""

# the baseline's "redrawn": a new plot SVG added to the page (the notebook shows nothing else)
BASELINE_WATCH = """() => {
  window.__baselineDraws = 0;
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) {
      if (n.nodeType === 1 && (n.matches('svg.main-svg') || n.querySelector('svg.main-svg'))) {
        window.__baselineDrawn = performance.now(); window.__baselineDraws += 1; return;
      }
    }
  }).observe(document.body, {childList: true, subtree: true});
}"""


# JupyterLab's plotly renderer calls the same plotly.js object the page knows as window.Plotly
BASELINE_WRAP = """() => {
  const P = window.Plotly;
  window.__baselineDraws = 0;
  for (const name of ['newPlot', 'react']) {
    const orig = P[name];
    P[name] = function (...args) {
      return orig.apply(this, args).then((gd) => {
        window.__baselineDrawn = performance.now(); window.__baselineDraws += 1; return gd;
      });
    };
  }
}"""


def baseline_run(browser, steps, chapter: bool):
    if chapter:  # chapter 6 with its panel cell made an OutputPanel
        nb = json.loads((ROOT / "chapters" / "06_decoder_block.ipynb").read_text(encoding="utf-8"))
        (cell,) = [c for c in nb["cells"] if c["cell_type"] == "code" and "live_panel(" in "".join(c["source"])]
        body = BASELINE_CELL[:BASELINE_CELL.index("panel = OutputPanel")]
        cell["source"] = body + "".join(cell["source"]).replace("live_panel(", "OutputPanel(")
        with tempfile.TemporaryDirectory(prefix="tinytf-bench-") as tmp:
            copy = Path(tmp) / "06_baseline.ipynb"
            copy.write_text(json.dumps(nb), encoding="utf-8")
            server = lab.LabServer(copy=copy)
    else:
        server = lab.LabServer(BASELINE_CELL)
    rows = []
    try:
        page, _, _ = lab.open_notebook(browser, server, timeout_ms=180_000, run_all=chapter,
                                       before_run=lambda page: page.evaluate(BASELINE_WATCH))
        page.wait_for_function("() => window.__baselineDraws > 0 && window.Plotly && window.Plotly.react")
        page.locator(".jupyter-widgets .widget-text input").first.scroll_into_view_if_needed()
        page.wait_for_timeout(2_000)  # the chapter's other figures finish drawing
        # from now on "redrawn" is when the renderer's Plotly.newPlot / react promise resolves (as for FigureView)
        page.evaluate(BASELINE_WRAP)
        page.evaluate(lab.CHANGE_TIMER)
        for control, value, how in steps:
            n = page.evaluate("() => window.__baselineDraws")
            act(page, control, value, how)
            page.wait_for_function("(n) => window.__baselineDraws > n", arg=n)
            rows.append(dict(control=control, value=value,
                             total_ms=page.evaluate("() => window.__baselineDrawn - window.__tinytfChange")))
        page.context.close()
    finally:
        server.stop()
    return rows


def act(page, control: str, value, how: str) -> None:
    box = lab.control(page, control)
    if how == "type":
        field = box.locator("input")
        field.fill(str(value))
        field.press("Enter")
    elif how == "click":
        box.get_by_role("button", name=str(value)).click()
    elif how == "select":
        box.locator("select").select_option(label=str(value))
    else:
        box.locator("select").select_option(index=int(value))


def message_sizes(steps, bundles: list) -> list[tuple[str, int]]:
    """(type, JSON bytes) of the kernel's message for each change, from the same changes on a panel here;
    appends to ``bundles`` the JSON bytes of the show() output the Output-widget panel sent instead."""
    from tinytf.viz import live_panel, mimebundle
    from tinytf.viz.panel import RANDOM

    panel = live_panel(text="cat")
    out = []
    for control, value, how in steps:
        widget = getattr(panel, PANEL_ATTR[control])
        if control == "weights":
            widget.value = list(widget.options)[int(value)] if int(value) else RANDOM
        elif how == "click" or how == "select":
            widget.value = dict(widget.options)[str(value)]
        elif control == "seed":
            widget.value = int(value)
        else:
            widget.value = str(value)
        assert panel.message.value == "", panel.message.value
        msg = panel.plot.last_message
        out.append((msg["type"], len(json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode())))
        bundles.append(len(json.dumps(mimebundle(panel._spec), separators=(",", ":"), ensure_ascii=False).encode()))
    return out


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--changes", type=int, default=24)
    ap.add_argument("--chapter", action="store_true",
                    help="open chapters/06_decoder_block.ipynb (its figures and its panel) and Run All Cells, "
                         "instead of a notebook with the panel alone")
    ap.add_argument("--baseline", action="store_true", help="measure the Output-widget panel (before FigureView)")
    ap.add_argument("--json", type=Path, default=None, help="also write the measurements here")
    args = ap.parse_args(argv)
    if args.changes < 1:
        ap.error("--changes must be at least 1")
    steps = plan(args.changes)
    from playwright.sync_api import sync_playwright

    if args.baseline:
        with sync_playwright() as pw:
            browser = book_browser.launch(pw)
            try:
                rows = baseline_run(browser, steps, args.chapter)
            finally:
                browser.close()
        v = [r["total_ms"] for r in rows]
        print(f"BASELINE (Output widget, whole figure per change): {len(v)} changes, change -> redrawn: "
              f"median {statistics.median(v):.0f} ms, p90 {pct(v, 0.9):.0f} ms, max {max(v):.0f} ms")
        for control in CONTROLS:
            c = [r["total_ms"] for r in rows if r["control"] == control]
            if c:
                print(f"  {control}: median {statistics.median(c):.0f} ms ({len(c)} changes)")
        if args.json:
            args.json.write_text(json.dumps(dict(baseline_rows=rows), indent=1))
        return 0
    t0 = time.perf_counter()
    server = lab.LabServer(copy=ROOT / "chapters" / "06_decoder_block.ipynb") if args.chapter else lab.LabServer()
    rows = []
    try:
        with sync_playwright() as pw:
            browser = book_browser.launch(pw)
            try:
                page, console_errors, remote = lab.open_panel(browser, server, timeout_ms=180_000,
                                                              run_all=args.chapter)
                first_s = time.perf_counter() - t0
                plotly_ms = page.evaluate("() => document.documentElement.dataset.tinytfPlotlyLoadMs")
                lab.set_stage(page, STAGE)
                for control, value, how in steps:
                    n = lab.draws(page)
                    act(page, control, value, how)
                    total = lab.wait_redraw(page, n)
                    t = page.evaluate(f"""() => {{
                      const d = document.querySelector('{lab.FIGURE}');
                      return {{received: Number(d.dataset.tinytfReceived) - window.__tinytfChange,
                              kind: d.dataset.tinytfUpdate,
                              stage: d._tinytf && d._tinytf.steps.length ? d._tinytf.steps[d._tinytf.index].name : null}};
                    }}""")
                    rows.append(dict(control=control, value=value, total_ms=total, kernel_ms=t["received"],
                                     draw_ms=total - t["received"], kind=t["kind"], stage_kept=t["stage"] == "scores"))
                page.context.close()
            finally:
                browser.close()
    finally:
        server.stop()

    bundles = []
    sizes = message_sizes(steps, bundles)
    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    totals = [r["total_ms"] for r in rows]
    patch = [b for k, b in sizes if k == "patch"]
    full = [b for k, b in sizes if k == "full"]
    where = "chapter 6 (all cells run, its figures in the page)" if args.chapter else "a notebook with the panel alone"
    print(f"Live panel in JupyterLab, {where}, {len(rows)} control changes from the page (Chromium headless, "
          f"{'+'.join(sorted({c for c, _, _ in steps}))}), stepper on stage {STAGE + 1}:\n")
    print("| measure | median | p90 | max |")
    print("|---|---|---|---|")
    for label, key in [("change -> redrawn (browser)", "total_ms"), ("  change -> message received", "kernel_ms"),
                       ("  message -> Plotly.react resolved", "draw_ms")]:
        v = [r[key] for r in rows]
        print(f"| {label} | {statistics.median(v):.0f} ms | {pct(v, 0.9):.0f} ms | {max(v):.0f} ms |")
    print()
    print("| per control | changes | median change -> redrawn | message |")
    print("|---|---|---|---|")
    for control in CONTROLS:
        v = [r["total_ms"] for r in rows if r["control"] == control]
        kinds = sorted({r["kind"] for r in rows if r["control"] == control})
        if v:
            print(f"| {control} | {len(v)} | {statistics.median(v):.0f} ms | {'/'.join(kinds)} |")
    print()
    if patch:
        print(f"Message per update: patch median {statistics.median(patch) / 1000:.0f} kB "
              f"(range {min(patch) / 1000:.0f}-{max(patch) / 1000:.0f} kB, {len(patch)} changes); "
              f"whole figure median {statistics.median(full) / 1000:.0f} kB ({len(full)} changes)." if full else "")
    print(f"(The Output-widget panel sent the whole show() output every time: median "
          f"{statistics.median(bundles) / 1000:.0f} kB.)")
    js_mb = len(get_plotlyjs().encode()) / 1e6
    if plotly_ms is None:
        print(f"plotly.js: the page's own (JupyterLab's plotly renderer had loaded it); first panel figure "
              f"{first_s:.1f} s after starting JupyterLab.")
    else:
        print(f"plotly.js {get_plotlyjs_version()} from the kernel, once per page: {js_mb:.1f} MB, "
              f"{plotly_ms} ms to receive and evaluate; first figure {first_s:.1f} s after starting JupyterLab.")
    print(f"Stage kept (the stepper still on 'scores'): {sum(r['stage_kept'] for r in rows)}/{len(rows)} changes.")
    if console_errors or remote:
        print(f"console errors: {console_errors}; remote requests: {remote}")
    med = statistics.median(totals)
    print(f"\nGoal: median <= {GOAL_MS:.0f} ms: {'met' if med <= GOAL_MS else 'NOT met'} ({med:.0f} ms).")
    if args.json:
        args.json.write_text(json.dumps(dict(rows=rows, sizes=sizes, plotly_js_ms=plotly_ms,
                                             plotly_js_bytes=int(js_mb * 1e6), first_figure_s=first_s), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
