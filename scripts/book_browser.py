"""Serving the built book on 127.0.0.1 and driving Debian's Chromium with Playwright.

Shared by tests/conftest.py (browser tests) and scripts/book_report.py (page weights).
Playwright's own browser download cannot work here, so Chromium is /usr/bin/chromium.
"""
from __future__ import annotations

import functools
import http.server
import socketserver
import threading
from pathlib import Path
from urllib.parse import urlsplit

CHROMIUM = Path("/usr/bin/chromium")
# without the background-networking flags Chromium keeps calling home, which the closed
# network here refuses
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--disable-quic", "--no-first-run",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature of the base class
        pass


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class BookServer:
    """http.server for a directory on 127.0.0.1, random free port, in a daemon thread."""

    def __init__(self, directory: Path):
        handler = functools.partial(_QuietHandler, directory=str(directory))
        self._server = _Server(("127.0.0.1", 0), handler)
        self.directory = Path(directory)
        self.host, self.port = self._server.server_address[:2]
        self._thread = threading.Thread(target=self._server.serve_forever, name="book-http", daemon=True)
        self._thread.start()

    def url(self, path: str = "") -> str:
        return f"http://{self.host}:{self.port}/{path.lstrip('/')}"

    def file_for(self, url: str) -> Path | None:
        """The file a local URL of this server maps to (None for other URLs)."""
        parts = urlsplit(url)
        if parts.hostname != self.host or parts.port != self.port:
            return None
        path = (self.directory / parts.path.lstrip("/")).resolve()
        if path.is_dir():
            path = path / "index.html"
        return path if path.is_file() else None

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def is_local(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about", "javascript"):
        return True
    return parts.hostname in LOCAL_HOSTS


def launch(playwright):
    """Headless Chromium from /usr/bin/chromium."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)


def open_page(browser, url: str, viewport=(1280, 900), timeout_ms: int = 30_000):
    """Open `url` in a fresh context; every request to a non-local host is recorded and aborted.

    Returns (page, console_errors, remote_requests, loaded_urls); close with page.context.close().
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    console_errors: list[str] = []
    remote_requests: list[str] = []
    loaded_urls: list[str] = []
    page.on("console", lambda msg: console_errors.append(f"console.{msg.type}: {msg.text}")
            if msg.type == "error" else None)
    page.on("pageerror", lambda exc: console_errors.append(f"uncaught: {exc}"))
    page.on("requestfinished", lambda req: loaded_urls.append(req.url))

    def route(r):
        if is_local(r.request.url):
            r.continue_()
        else:
            remote_requests.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    response = page.goto(url, wait_until="load")
    if response is None or not response.ok:
        status = None if response is None else response.status
        context.close()
        raise AssertionError(f"{url}: HTTP status {status}")
    try:
        # a page that loads plotly.js but not MathJax never reaches Chromium's "network idle"
        # here (no request is pending), so this is a short settle, not a condition
        page.wait_for_load_state("networkidle", timeout=min(timeout_ms, 5_000))
    except PlaywrightTimeoutError:
        pass
    settle(page, timeout_ms)
    return page, console_errors, remote_requests, loaded_urls


# MathJax typesets after "load" and changes the height of what it typesets, so coordinates
# taken before it finishes are stale; plotly draws after plotly.js has parsed.
_SETTLED = """() => {
  const math = !window.MathJax || !MathJax.startup || !MathJax.startup.promise
      ? Promise.resolve() : MathJax.startup.promise;
  return Promise.all([math, document.fonts.ready]).then(() => true);
}"""
_FIGURES_DRAWN = """() => [...document.querySelectorAll('.plotly-graph-div')]
    .every(d => d.querySelector('svg.main-svg') || d.querySelector('.tinytf-noplotly'))"""


def settle(page, timeout_ms: int = 30_000) -> None:
    """Wait until MathJax has typeset, fonts are loaded and every plotly figure is drawn (or has
    given up). Does not fail: the tests assert each of these themselves."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    try:
        page.evaluate(_SETTLED)
        page.wait_for_function(_FIGURES_DRAWN, timeout=timeout_ms)
        page.wait_for_timeout(200)  # one more layout pass
    except PlaywrightTimeoutError:
        pass


_REFLOWED = """() => { const T = window.tinytfFigures; if (!T) return true;
  // a figure whose box is hidden (clientWidth 0) is not redrawn on resize; the others must have their new width
  return T.figures.every(r => !document.body.contains(r.el) || !r.box.clientWidth ||
    Math.abs(r.width - Math.max(r.box.clientWidth, 200)) < 2); }"""


# The page's own resize handlers run on timers set by the resize event: the figures redraw 150 ms and
# _static/tinytf-book.js re-marks the boxes that scroll sideways (their Tab stop) 200 ms after the last event. The
# event is dispatched in the next frame; a timer the page sets after two frames, with a longer delay, fires after
# theirs (timers run in the order of their deadlines), however slow the machine (a wait in Python does not).
_AFTER_RESIZE_TIMERS = """(ms) => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(
    () => setTimeout(() => done(true), ms))))"""


def resize(page, width: int, height: int = 900, timeout_ms: int = 30_000) -> None:
    """Change the window's size as a reader does (rotating a tablet, widening or narrowing a window) and wait
    until the page's resize handlers have run (the figures' redraw, the marking of boxes that scroll sideways)
    and every figure has been drawn again for its new width."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    page.set_viewport_size({"width": width, "height": height})
    page.evaluate(_AFTER_RESIZE_TIMERS, 250)
    try:
        page.wait_for_function(_REFLOWED, timeout=timeout_ms)
    except PlaywrightTimeoutError:
        stale = page.evaluate(_STALE_FIGURES)
        raise AssertionError(f"{timeout_ms / 1000:.0f} s after the window was resized to {width} px, figures are "
                             f"still drawn for another width: {stale}") from None
    settle(page, timeout_ms)


# what a failed resize() reports: each figure not drawn for its box's width, with its redraw queue's state
_STALE_FIGURES = """() => !window.tinytfFigures ? [] : window.tinytfFigures.figures
  .filter(r => document.body.contains(r.el) && r.box.clientWidth && Math.abs(r.width - Math.max(r.box.clientWidth, 200)) >= 2)
  .map(r => ({ id: r.id, drawnFor: r.width, box: r.box.clientWidth, busy: !!(r.redraw && r.redraw.busy),
               again: !!(r.redraw && r.redraw.again), playing: r.playing }))"""


# ------------------------------------------------------------------ layout / accessibility audit
# Used by tests/browser/test_a11y_book.py (every page at 1280, 768 and 375 px, light and dark).

def set_mode(page, mode: str) -> None:
    """Switch the theme's colour mode as the reader's button does (pydata-sphinx-theme keeps it
    in localStorage and on <html data-theme>); figures redraw through their MutationObserver."""
    page.evaluate("""(mode) => { localStorage.setItem('mode', mode); localStorage.setItem('theme', mode);
        document.documentElement.dataset.mode = mode; document.documentElement.dataset.theme = mode; }""", mode)
    page.wait_for_timeout(50)
    # The theme eases link colours over 0.15 s: an audit (axe's contrast check) taken before the transitions end
    # reads a colour halfway between the two modes (seen on a loaded machine: the language switch at contrast 2.5).
    page.wait_for_function(_NO_RUNNING_TRANSITION, timeout=10_000)
    settle(page)


_NO_RUNNING_TRANSITION = """() => document.getAnimations().every(a => !(a instanceof CSSTransition) || a.playState !== 'running')"""


# Every check returns a list of human-readable problems (empty = fine).
AUDIT_JS = r"""(minSubplot) => {
  const problems = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > window.innerWidth + 1) {
    // name the widest element that sticks out, to help whoever fixes it
    let worst = null, right = window.innerWidth;
    for (const el of document.querySelectorAll('body *')) {
      const r = el.getBoundingClientRect();
      if (r.width && r.right > right + 1 && !el.closest('.bd-sidebar-primary, .bd-sidebar-secondary')) {
        right = r.right; worst = el;
      }
    }
    problems.push(`page scrolls sideways: ${doc.scrollWidth} px wide in a ${window.innerWidth} px window` +
      (worst ? ` (${worst.tagName.toLowerCase()}.${[...worst.classList].join('.')}: "${(worst.textContent || '').trim().slice(0, 60)}")` : ''));
  }
  // from 768 px up a printed output line longer than the column wraps (tinytf-book.css): none may hide its end
  if (window.innerWidth >= 768) {
    document.querySelectorAll('.bd-article .cell_output pre').forEach(pre => {
      if (pre.offsetParent && pre.scrollWidth > pre.clientWidth + 2) {
        const line = (pre.textContent || '').split('\n').reduce((a, l) => l.length > a.length ? l : a, '');
        problems.push(`a printed output scrolls sideways (${pre.scrollWidth} px in ${pre.clientWidth} px): "${line.trim().slice(0, 60)}"`);
      }
    });
  }
  const luminance = (rgb) => {
    const c = rgb.map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const parse = (s) => { const m = (s || '').match(/rgba?\(([^)]+)\)/); if (!m) return null;
    const p = m[1].split(',').map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const pageBg = (() => { for (let el = document.querySelector('main') || document.body; el; el = el.parentElement) {
      const c = parse(getComputedStyle(el).backgroundColor); if (c && c[3] > 0.5) return c; } return [255, 255, 255, 1]; })();
  const blend = (fg, bg) => [0, 1, 2].map(i => fg[i] * fg[3] + bg[i] * (1 - fg[3]));
  const ratio = (a, b) => { const la = luminance(a), lb = luminance(b); return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05); };
  document.querySelectorAll('.plotly-graph-div').forEach((gd, gi) => {
    if (!gd.querySelector('svg.main-svg')) { problems.push(`figure ${gi}: not drawn`); return; }
    const name = `figure ${gi} (${(gd.closest('.tinytf-figwrap')?.querySelector('.tinytf-figtitle')?.textContent || gd.id).slice(0, 50)})`;
    const box = gd.getBoundingClientRect();
    const paper = parse(gd._fullLayout.paper_bgcolor) || [255, 255, 255, 0];
    const bg = blend(paper, pageBg);
    const texts = [];
    // filled boxes drawn as shapes (block diagrams): text on them is read against their fill
    const fills = [...gd.querySelectorAll('.shapelayer path')].map(p => {
      const c = parse(getComputedStyle(p).fill); const o = Number(getComputedStyle(p).fillOpacity || 1);
      return c && c[3] * o > 0.5 ? { r: p.getBoundingClientRect(), c: [c[0], c[1], c[2], 1] } : null;
    }).filter(Boolean);
    gd.querySelectorAll('svg text').forEach(t => {
      if (t.closest('.hoverlayer, .modebar, defs')) return;
      const s = (t.textContent || '').trim();
      if (!s) return;
      const r = t.getBoundingClientRect();
      if (!r.width || !r.height) return;
      const cs = getComputedStyle(t);
      if (cs.visibility === 'hidden' || cs.display === 'none' || Number(cs.opacity) === 0) return;
      let hidden = false;
      for (let p = t; p && p !== gd; p = p.parentElement) {
        const ps = getComputedStyle(p);
        if (ps.display === 'none' || Number(ps.opacity) === 0 || ps.visibility === 'hidden') { hidden = true; break; }
      }
      if (hidden) return;
      texts.push({ s, r, t });
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1) {
        problems.push(`${name}: text "${s.slice(0, 40)}" leaves the figure (${Math.round(r.left - box.left)}..${Math.round(r.right - box.left)} of ${Math.round(box.width)} px wide, ${Math.round(r.top - box.top)}..${Math.round(r.bottom - box.top)} of ${Math.round(box.height)} px high)`);
      }
      const fill = parse(cs.fill);
      if (fill) {
        const fo = Number(cs.fillOpacity || 1) * fill[3];
        const mid = [(r.left + r.right) / 2, (r.top + r.bottom) / 2];
        const box = fills.filter(f => mid[0] >= f.r.left && mid[0] <= f.r.right && mid[1] >= f.r.top && mid[1] <= f.r.bottom).pop();
        const under = box ? blend(box.c, bg) : bg;
        const c = blend([fill[0], fill[1], fill[2], fo], under);
        const cr = ratio(c, under);
        // text drawn on a heatmap cell or a bar is not on the page background: skip text inside the plot area
        if (cr < 4.5 && !t.closest('.heatmaplayer, .barlayer .bartext-inside')) {
          problems.push(`${name}: text "${s.slice(0, 40)}" has contrast ${cr.toFixed(2)}:1`);
        }
      }
    });
    let overlaps = 0;
    for (let i = 0; i < texts.length; i++) {
      for (let j = i + 1; j < texts.length; j++) {
        const a = texts[i].r, b = texts[j].r;
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1.5 && h > 1.5 && !texts[i].t.contains(texts[j].t) && !texts[j].t.contains(texts[i].t)) {
          if (overlaps++ < 3) problems.push(`${name}: "${texts[i].s.slice(0, 30)}" overlaps "${texts[j].s.slice(0, 30)}"`);
        }
      }
    }
    if (overlaps > 3) problems.push(`${name}: ${overlaps} overlapping text pairs in all`);
    const used = new Set((gd._fullData || []).filter(t => t.visible === true).map(t => (t.xaxis || 'x') + (t.yaxis || 'y')));
    // a figure drawn to scale (layout.meta.tinytf.toScale: a [T, 128] panel a quarter as wide as a [T, 512] one)
    // has narrower panels by design: its widest panel must have the usual width, the others a third of it
    const meta = gd.layout && gd.layout.meta && gd.layout.meta.tinytf;
    const plots = Object.entries(gd._fullLayout._plots || {}).filter(([id]) => used.has(id));
    const widest = Math.max(0, ...plots.map(([, p]) => p.xaxis._length));
    const floor = meta && meta.toScale ? minSubplot / 3 : minSubplot;
    if (meta && meta.toScale && widest < minSubplot) problems.push(`${name}: widest subplot is ${Math.round(widest)} px wide`);
    plots.forEach(([id, p]) => {
      if (p.xaxis._length < floor) problems.push(`${name}: subplot ${id} is ${Math.round(p.xaxis._length)} px wide`);
    });
  });
  return problems;
}"""


def audit(page, min_subplot: int = 120) -> list[str]:
    return page.evaluate(AUDIT_JS, min_subplot)
