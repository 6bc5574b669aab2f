"""Shared fixtures for the book's tests.

* ``book_html``: Path to ``_build/html``; builds the book once per session when it is missing
  or older than any source (chapters, *.md, _config.yml, _toc.yml, tinytf/**/*.py, _static).
* ``browser``: headless Debian Chromium driven by Playwright (``/usr/bin/chromium``; the
  Playwright browser download cannot work here). Skipped with a reason when Chromium is
  absent on a developer machine; in CI (CI=true) a missing browser is a failure.
* ``open_page(browser, path) -> (page, console_errors, remote_requests)``: opens a page of the
  built book served by a local http.server on 127.0.0.1 (random free port). Requests to any
  other host are recorded and aborted (the book must work offline).
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import book_browser  # noqa: E402  (scripts/book_browser.py)
import build_book  # noqa: E402  (scripts/build_book.py)

BOOK_HTML = build_book.HTML
SCREENSHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = book_browser.CHROMIUM
IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """The model tests use small tensors: they run fastest on one thread, and far faster than on two when
    other processes share the cores. (Chapters run in their own kernels and are not affected.)"""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


toc_docnames = build_book.toc_docnames  # docnames listed in _toc.yml, root first


def doc_source(docname: str) -> Path | None:
    for suffix in (".ipynb", ".md"):
        path = ROOT / f"{docname}{suffix}"
        if path.is_file():
            return path
    return None


# --------------------------------------------------------------------------- book build
@pytest.fixture(scope="session")
def book_html() -> Path:
    if build_book.is_stale():
        try:
            build_book.build()
        except RuntimeError as err:
            pytest.fail(f"the book does not build:\n{err}", pytrace=False)
    assert (BOOK_HTML / "index.html").is_file()
    return BOOK_HTML


# --------------------------------------------------------------------------- local server
_server: book_browser.BookServer | None = None


def book_url(path: str = "") -> str:
    """http://127.0.0.1:PORT/<path> of the built book (starts the server on first use)."""
    global _server
    if _server is None:
        _server = book_browser.BookServer(BOOK_HTML)
    return _server.url(path)


@pytest.fixture(scope="session")
def book_server(book_html):
    """Base URL of the local server for the built book; stopped at the end of the session."""
    global _server
    yield book_url()
    if _server is not None:
        _server.stop()
        _server = None


# --------------------------------------------------------------------------- browser
def _no_browser(reason: str):
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: browser tests must run in CI; .ci/run installs chromium)",
                    pytrace=False)
    pytest.skip(f"{reason}; install Debian's chromium (apt-get install chromium) to run the browser tests")


@pytest.fixture(scope="session")
def browser():
    """Chromium for the whole session (Playwright allows one sync instance per thread, so every
    browser test should use this fixture rather than start its own). It does not build the
    book: tests of book pages also request ``book_server`` (or ``book_html``)."""
    if not CHROMIUM.exists():
        _no_browser(f"{CHROMIUM} not found")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _no_browser("the playwright package is not installed")
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)  # only this session's pages, none from an older toc
    with sync_playwright() as pw:
        chromium = book_browser.launch(pw)
        try:
            yield chromium
        finally:
            chromium.close()


def open_page(browser, path: str, viewport=(1280, 900), timeout_ms: int = 30_000):
    """Open `path` (relative to _build/html) in a fresh browser context.

    Returns (page, console_errors, remote_requests). console_errors collects console.error
    messages and uncaught page errors; remote_requests every request to a non-local host
    (each is aborted). Close with ``page.context.close()``.
    """
    page, console_errors, remote_requests, _ = book_browser.open_page(
        browser, book_url(path), viewport=viewport, timeout_ms=timeout_ms)
    return page, console_errors, remote_requests


@pytest.fixture
def no_unpickling(monkeypatch):
    """Every way to unpickle (torch.load, pickle.load/loads/Unpickler) fails the test while it runs: a
    checkpoint must load from safetensors and JSON only."""
    import pickle

    import torch

    def refuse(*args, **kwargs):
        raise AssertionError("a checkpoint load tried to unpickle")

    for owner, name in ((torch, "load"), (pickle, "load"), (pickle, "loads"), (pickle, "Unpickler")):
        monkeypatch.setattr(owner, name, refuse)
