"""A throwaway JupyterLab on 127.0.0.1 with one notebook showing the live panel, driven by Playwright.

Shared by tests/browser/test_live_panel_lab.py and bench/panel_redraw.py. ``LabServer`` starts
``.venv/bin/jupyter lab`` (random free port, random token, a temporary notebook dir, no update or
news checks, its own workspace and runtime dirs); ``open_panel`` opens the notebook in Chromium,
runs its cell and waits for the panel's first drawn figure. ``change_timer`` records in the page
the time of the reader's last change (click / change / Enter), for ``redraw_ms``.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JUPYTER = ROOT / ".venv" / "bin" / "jupyter"

PANEL_CELL = (
    "from tinytf.viz import live_panel\n"
    "panel = live_panel(text=\"cat\")\n"
    "panel"
)


def notebook(source: str = PANEL_CELL) -> dict:
    return {"cells": [{"cell_type": "code", "execution_count": None, "id": "panel", "metadata": {},
                       "outputs": [], "source": source}],
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """jupyter lab in a subprocess; ``url(path)`` carries the token; ``stop()`` ends it (and its kernels)."""

    def __init__(self, source: str = PANEL_CELL, timeout_s: float = 60, copy: Path | None = None):
        """``source``: the one cell of panel.ipynb; ``copy``: a notebook copied in as panel.ipynb instead."""
        self.dir = Path(tempfile.mkdtemp(prefix="tinytf-lab-"))
        if copy is not None:  # with its outputs (what a reader opens), without execution counts
            nb = json.loads(Path(copy).read_text(encoding="utf-8"))
            for cell in nb["cells"]:
                if cell["cell_type"] == "code":
                    cell["execution_count"] = None
                    for out in cell.get("outputs", []):
                        if "execution_count" in out:
                            out["execution_count"] = None
            (self.dir / "panel.ipynb").write_text(json.dumps(nb), encoding="utf-8")
        else:
            (self.dir / "panel.ipynb").write_text(json.dumps(notebook(source)), encoding="utf-8")
        self.port, self.token = _free_port(), secrets.token_hex(16)
        env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(self.dir / ".runtime"),
                   JUPYTERLAB_WORKSPACES_DIR=str(self.dir / ".workspaces"),
                   JUPYTER_CONFIG_DIR=str(self.dir / ".config"), PYTHONPATH=str(ROOT))
        # no "Would you like to get notified about official Jupyter news?" toast over the notebook
        settings = self.dir / ".config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}', encoding="utf-8")
        self.log = open(self.dir / "lab.log", "wb")
        self.proc = subprocess.Popen(
            [str(JUPYTER), "lab", "--allow-root", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
             f"--ServerApp.token={self.token}", f"--notebook-dir={self.dir}",
             "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            cwd=self.dir, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited ({self.proc.returncode}):\n{self.log_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url("api/status"), timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"jupyter lab did not answer within {timeout_s:.0f} s:\n{self.log_text()[-3000:]}")
            time.sleep(0.3)

    def url(self, path: str = "") -> str:
        sep = "&" if "?" in path else "?"
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}{sep}token={self.token}"

    def log_text(self) -> str:
        self.log.flush()
        return (self.dir / "lab.log").read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)  # the server and the kernels it started (its own session)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


CHANGE_TIMER = """() => {
  if (window.__tinytfChangeTimer) return;
  window.__tinytfChangeTimer = true;
  const mark = () => { window.__tinytfChange = performance.now(); };
  document.addEventListener("click", mark, true);
  document.addEventListener("change", mark, true);
  document.addEventListener("keydown", (e) => { if (e.key === "Enter") mark(); }, true);
}"""

FIGURE = ".tinytf-figure-view"


def open_notebook(browser, lab: LabServer, timeout_ms: int = 60_000, run_all: bool = False, before_run=None):
    """Open panel.ipynb in JupyterLab and run its first code cell (``run_all``: Run > Run All Cells);
    ``before_run(page)`` is called just before. Returns (page, console_errors, remote_requests)."""
    import book_browser

    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    console_errors: list[str] = []
    remote_requests: list[str] = []
    page.on("console", lambda msg: console_errors.append(f"console.{msg.type}: {msg.text}")
            if msg.type == "error" else None)
    page.on("pageerror", lambda exc: console_errors.append(f"uncaught: {exc}"))

    def route(r):
        if book_browser.is_local(r.request.url):
            r.continue_()
        else:
            remote_requests.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page.goto(lab.url("lab/tree/panel.ipynb"), wait_until="load")
    page.locator(".jp-Notebook .jp-Cell .cm-content").first.wait_for()
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for()
    page.locator(".jp-StatusBar-Widget", has_text="Idle").first.wait_for()  # the kernel is connected
    prompt = page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt").first
    if before_run is not None:
        before_run(page)
    for _ in range(10):  # a run asked before the kernel's connection is up is dropped silently: ask again
        dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
        if dialog.count():  # a run asked before the session existed: take the preferred kernel
            dialog.locator(".jp-mod-accept").first.click()
            page.wait_for_timeout(1_000)
        if run_all:
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        else:
            page.locator(".jp-Notebook .jp-CodeCell .cm-content").first.click()
            page.keyboard.press("Shift+Enter")
        try:
            page.wait_for_function("(el) => /\\[(\\*|\\d+)\\]/.test(el.textContent)", arg=prompt.element_handle(),
                                   timeout=3_000)
            break
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: try again
            continue
    return page, console_errors, remote_requests


def open_panel(browser, lab: LabServer, timeout_ms: int = 60_000, run_all: bool = False):
    """open_notebook, then wait for the panel's first drawn figure.

    Returns (page, console_errors, remote_requests); close with page.context.close()."""
    page, console_errors, remote_requests = open_notebook(browser, lab, timeout_ms, run_all)
    if run_all:
        page.locator(FIGURE).first.scroll_into_view_if_needed(timeout=timeout_ms)
    try:
        page.wait_for_function(
            f"() => (document.querySelector('{FIGURE}') || {{dataset: {{}}}}).dataset.tinytfDraws", timeout=timeout_ms)
    except Exception as err:
        shot = lab.dir.parent / f"{lab.dir.name}-failed.png"
        page.screenshot(path=str(shot))
        raise RuntimeError(f"the panel was not drawn ({err}); screenshot {shot}; console errors {console_errors}; "
                           f"lab log:\n{lab.log_text()[-2000:]}") from None
    page.evaluate(CHANGE_TIMER)
    return page, console_errors, remote_requests


def draws(page) -> int:
    return int(page.evaluate(f"() => Number(document.querySelector('{FIGURE}').dataset.tinytfDraws || 0)"))


def wait_redraw(page, after: int, timeout_ms: int = 30_000) -> float:
    """Wait for the figure's redraw number ``after + 1`` (or later); return ms from the last change to it."""
    page.wait_for_function(
        f"(n) => Number(document.querySelector('{FIGURE}').dataset.tinytfDraws || 0) > n", arg=after,
        timeout=timeout_ms)
    return float(page.evaluate(
        f"() => Number(document.querySelector('{FIGURE}').dataset.tinytfDrawn) - window.__tinytfChange"))


def control(page, label: str):
    """The ipywidgets control whose description is ``label`` (e.g. "seed", "norm", "FFN")."""
    has = f":has(> label.widget-label:text-is('{label}'))"
    return page.locator(f".widget-inline-hbox{has}, .widget-toggle-buttons{has}").first


def set_stage(page, index: int) -> None:
    """Put the stepper on step ``index`` (0-based) as a keyboard reader would: the figure core's range input
    (its HTML controls), Home, then the right arrow ``index`` times."""
    rng = page.locator(f".tinytf-figwrap:has({FIGURE}) input.tinytf-anim-range").first
    rng.focus()
    page.keyboard.press("Home")
    for _ in range(index):
        page.keyboard.press("ArrowRight")
    page.wait_for_function(f"""() => {{
      const d = document.querySelector('{FIGURE}'), rec = d._tinytf;
      return rec.index === {index} && rec.controls.range.value === '{index}'
        && rec.caption.textContent.startsWith('{index + 1}/');
    }}""")


# the figure core's record of the drawn figure (el._tinytf): its steps, the one shown, its caption and controls
STATE = f"""() => {{
  const d = document.querySelector('{FIGURE}'), rec = d._tinytf, wrap = d.closest('.tinytf-figwrap');
  const range = wrap.querySelector('input.tinytf-anim-range');
  return {{draws: Number(d.dataset.tinytfDraws), rev: Number(d.dataset.tinytfRev), mark: d.__tinytfMark || null,
          title: rec.frameTitle(rec.steps.length ? rec.index : 0), caption: rec.caption.textContent,
          active: range ? Number(range.value) : null,
          stage: rec.steps.length ? rec.steps[rec.index].name : null,
          current: range ? range.getAttribute('aria-valuetext') : null,
          controls: wrap.querySelectorAll('.tinytf-anim-controls').length,
          plotly_controls: d.querySelectorAll('.slider-rail-rect, .updatemenu-button').length,
          z: JSON.stringify(d.data.map((t) => t.z === undefined ? null : t.z))}};
}}"""


def state(page) -> dict:
    """The drawn figure: redraw count, revision, title (plotly text of the step shown) and caption, the step
    (range value, frame name, the text the range announces, e.g. "5 of 15: 5 scores"), how many core
    controls and plotly slider / button parts it shows, and a fingerprint of its numbers."""
    return page.evaluate(STATE)
