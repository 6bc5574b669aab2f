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
