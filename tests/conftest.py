"""Shared fixtures for the book's tests.

* ``book_html``: Path to ``_build/html``; builds the book (both editions; the Chinese one in ``zh/``) once per
  session when it is missing or older than any source (chapters, *.md, _config.yml, _toc.yml, tinytf/**/*.py,
  _static, and for the Chinese edition locales/zh_CN/**/*.po).
* ``browser``: headless Debian Chromium driven by Playwright (``/usr/bin/chromium``; the
  Playwright browser download cannot work here). Skipped with a reason when Chromium is
  absent on a developer machine; in CI (CI=true) a missing browser is a failure.
* ``zh_sample_book``: a small Chinese build (intro, chapter 2, bibliography) whose catalogue translates chapter
  2's title and one paragraph, in ``_build/zh-sample/_build/html`` (test_i18n.py's title test, the search test
  of test_zh_edition.py).
* ``open_page(browser, path) -> (page, console_errors, remote_requests)``: opens a page of the
  built book served by a local http.server on 127.0.0.1 (random free port). Requests to any
  other host are recorded and aborted (the book must work offline).
"""
from __future__ import annotations

import contextlib
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
# Screenshots are for a person to look at, not checks: the first screen by default; whole pages (several seconds
# each on a long chapter) with TINYTF_FULL_SCREENSHOTS=1.
FULL_SCREENSHOTS = os.environ.get("TINYTF_FULL_SCREENSHOTS") == "1"
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
@contextlib.contextmanager
def build_lock():
    """One process at a time (pytest-xdist runs two workers): the first to need the book builds it, the other
    waits and then finds it up to date. `make test` builds it before pytest starts, so usually nobody waits."""
    import fcntl

    (ROOT / "_build").mkdir(exist_ok=True)
    with open(ROOT / "_build" / ".build.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def book_html() -> Path:
    with build_lock():
        if build_book.is_stale():
            try:
                build_book.build(only_stale=True)
            except RuntimeError as err:
                pytest.fail(f"the book does not build:\n{err}", pytrace=False)
    assert (BOOK_HTML / "index.html").is_file()
    return BOOK_HTML


# --------------------------------------------------------------------------- a small translated Chinese build
ZH_SAMPLE = ROOT / "_build" / "zh-sample"
# chapter 2 of the sample: its title (the page's first message) and first paragraph get these translations
ZH_SAMPLE_DOC = "chapters/02_causal_self_attention"
ZH_SAMPLE_TITLE = "2. 因果自注意力"
ZH_SAMPLE_PARAGRAPH = "本章介绍因果自注意力：每个词元只看它自己和它之前的词元。"


def zh_sample_messages() -> dict[str, str]:
    """msgid -> msgstr of the sample's chapter 2 catalogue: its first message (the title) and one paragraph
    without markup, taken from the committed catalogue."""
    from babel.messages.pofile import read_po

    po = ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / f"{ZH_SAMPLE_DOC}.po"
    with po.open("rb") as handle:
        ids = [m.id for m in read_po(handle) if m.id and isinstance(m.id, str)]
    plain = next(i for i in ids[1:] if not any(c in i for c in "`${}[]*_<>"))
    return {ids[0]: ZH_SAMPLE_TITLE, plain: ZH_SAMPLE_PARAGRAPH}


@pytest.fixture(scope="session")
def zh_sample_book() -> Path:
    """The Chinese edition of a three-page book (intro, chapter 2, bibliography) with a catalogue that translates
    chapter 2's title and one of its paragraphs (zh_sample_messages()), built like `make zh` into
    _build/zh-sample/_build/html (once per test run: pytest-xdist's workers share it). Returns that folder."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or str(os.getpid())
    html = ZH_SAMPLE / "_build" / "html"
    with build_lock():
        marker = ZH_SAMPLE / f".run-{run}"
        if not marker.exists():
            shutil.rmtree(ZH_SAMPLE, ignore_errors=True)
            locales = ZH_SAMPLE / "locales"
            po = locales / "zh_CN" / "LC_MESSAGES" / f"{ZH_SAMPLE_DOC}.po"
            po.parent.mkdir(parents=True)
            catalog = Catalog(locale="zh_CN")
            for msgid, msgstr in zh_sample_messages().items():
                catalog.add(msgid, msgstr)
            with po.open("wb") as handle:
                write_po(handle, catalog)
            (ZH_SAMPLE / "_config.yml").write_text(build_book.chinese_config(locales), encoding="utf-8")
            (ZH_SAMPLE / "_toc.yml").write_text(
                f"format: jb-book\nroot: intro\nchapters:\n  - file: {ZH_SAMPLE_DOC}\n"
                "  - file: chapters/bibliography\n", encoding="utf-8")
            # not -W: the intro's links to the chapters left out are warnings here
            cmd = [build_book.jupyter_book_exe(), "build", ".", "--config", str(ZH_SAMPLE / "_config.yml"),
                   "--toc", str(ZH_SAMPLE / "_toc.yml"), "--path-output", str(ZH_SAMPLE)]
            try:
                build_book.run_jupyter_book(cmd, ZH_SAMPLE / "build.log")
                build_book.share_large_static(html)  # the models once on disk
            except RuntimeError as err:
                pytest.fail(f"the Chinese sample book does not build:\n{err}", pytrace=False)
            marker.touch()
    return html


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


# --------------------------------------------------------------------------- tools outside Python
# One policy for every test that needs a tool pip does not install: skip with a reason on a developer's machine,
# fail under CI=true (where .ci/run installs them all, so a missing tool is a broken set-up, not a reason to skip).
NODE_MODULES = ROOT / "node_modules"


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


TOOLS = {
    # name: (is it here?, how to get it)
    "chromium": (lambda: CHROMIUM.exists(), "install Debian's chromium: apt-get install chromium"),
    "playwright": (lambda: _has_module("playwright"), "install the lock: make env"),
    "node": (lambda: shutil.which("node") is not None, "install Node.js (Debian: apt-get install nodejs npm)"),
    "axe-core": (lambda: (NODE_MODULES / "axe-core" / "axe.min.js").is_file(), "run `npm ci`"),
    "plotly.js": (lambda: (NODE_MODULES / "plotly.js-cartesian-dist-min").is_dir(), "run `npm ci`"),
    "onnxruntime-web": (lambda: (NODE_MODULES / "onnxruntime-web" / "dist").is_dir(), "run `npm ci`"),
    "jupyterlab": (lambda: _has_module("jupyterlab"), "install the lock: make env"),
}


def unavailable(reason: str):
    """Skip the test with `reason` on a developer's machine; fail it under CI=true."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: every test must run in CI; .ci/run installs what the tests need)",
                    pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_module(name: str):
    """Import a Python package the lock installs (transformers, onnxruntime, ...): skip locally, fail in CI."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as err:
        unavailable(f"{name} cannot be imported ({err}): install the lock: make env")


def require(*tools: str) -> None:
    """The tools a test needs (names of TOOLS): a missing one skips the test locally, fails it in CI."""
    for tool in tools:
        present, how = TOOLS[tool]
        if not present():
            unavailable(f"{tool} is not available: {how}")


# --------------------------------------------------------------------------- browser


def fresh_screenshots() -> None:
    """Empty _build/screenshots once per test run (only this run's pages, none from an older toc); with
    pytest-xdist both workers share the run id, so the second worker keeps what the first has written."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or str(os.getpid())
    with build_lock():
        marker = SCREENSHOTS / f".run-{run}"
        if not marker.exists():
            shutil.rmtree(SCREENSHOTS, ignore_errors=True)
            SCREENSHOTS.mkdir(parents=True)
            marker.touch()


@pytest.fixture(scope="session")
def browser():
    """Chromium for the whole session (Playwright allows one sync instance per thread, so every
    browser test should use this fixture rather than start its own). It does not build the
    book: tests of book pages also request ``book_server`` (or ``book_html``)."""
    require("chromium", "playwright")
    from playwright.sync_api import sync_playwright

    fresh_screenshots()
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
