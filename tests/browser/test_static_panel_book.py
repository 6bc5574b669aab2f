"""Issue #15 acceptance: the live panel of chapter 6 runs in the built book, without a kernel.

In Chromium, on the built page served locally: the panel replaces its note; nothing of the runtime is
loaded before the reader uses it; typing tokens redraws the stepper and the attention map (and every other
view) with the new tokens on the axes and numbers equal to the figure Python builds for the same input
(every data array within 1e-4, strings exact), for each model; the stepper stays on its stage; bad input
shows the Python panel's message; the update time is reported; no console error, no request to another
host. Opened as file://, the panel says how to serve the folder.
"""
from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

import pytest

import book_browser
from conftest import book_url, require

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plain_figures import diff  # noqa: E402  (one comparison of plain figures for the binding tests and these)

from tinytf import TinyConfig, TinyTransformer, pretrained, seed_everything  # noqa: E402
from tinytf.viz.panel import LivePanel, readable_labels  # noqa: E402
from tinytf.viz.templates import build_view, plain  # noqa: E402

PAGE = "chapters/06_decoder_block.html"
PANEL = ".tinytf-static-panel"
TOL = 1e-4


def _untrained():
    seed_everything(0)
    return TinyTransformer(TinyConfig()).eval()


LOADERS = {"untrained": _untrained, "induction-2l": lambda: pretrained.load("induction-2l"),
           "text-4l": lambda: pretrained.load("text-4l")}
# (model, view, head, layer, text): every view, every model, several lengths and a multi-byte character
CASES = [
    ("untrained", "stepper", "all", 0, "abcd"),
    ("untrained", "attention", "all", 1, "héllo"),
    ("untrained", "residual_attn", "all", 0, "cat"),
    ("induction-2l", "attention", "0", 1, "abcab"),
    ("induction-2l", "stepper", "all", 1, "xyzx"),
    ("induction-2l", "ffn", "all", 0, "ab"),
    ("text-4l", "attention", "mean", 3, "the cat sat"),
    ("text-4l", "residual_ffn", "all", 2, "a dog"),
    ("text-4l", "stepper", "all", 0, "you"),
    ("text-4l", "ffn", "all", 1, "q"),
]

IDLE = f"""() => {{ const p = document.querySelector('{PANEL}')._tinytfPanel;
  return p && p.busy === null && !p.again; }}"""


@pytest.fixture(scope="module")
def page(book_server, browser):
    require("onnxruntime-web")
    page, errors, remote, loaded = book_browser.open_page(browser, book_url(PAGE))
    book_browser.settle(page)
    page.errors, page.remote, page.loaded_at_start = errors, remote, list(loaded)
    page.loaded = loaded
    yield page
    page.context.close()


def _set(page, what: str, value: str) -> None:
    """Choose ``value`` in the panel's select ``what`` (model, view, head, layer) like a reader."""
    sel = page.locator(f"{PANEL} select[id$='-{what}']")
    if sel.input_value() != value:
        sel.select_option(value)


def _type(page, text: str) -> None:
    box = page.locator(f"{PANEL} input[type=text]")
    box.fill(text)
    box.press("Enter")


def _settle(page, updates_before: int | None = None) -> None:
    if updates_before is not None:
        page.wait_for_function(f"() => +document.querySelector('{PANEL}').getAttribute('data-updates') > "
                               f"{updates_before}", timeout=30_000)
    page.wait_for_function(IDLE, timeout=30_000)


def _updates(page) -> int:
    return int(page.locator(PANEL).get_attribute("data-updates") or 0)


def _message(page) -> str:
    return page.locator(f"{PANEL} .tinytf-panel-message").text_content().strip()


def test_note_is_replaced_and_nothing_loads_before_use(page):
    assert page.locator(f"{PANEL} .tinytf-live-note").count() == 0
    assert page.locator(f"{PANEL} input[type=text]").input_value() == "cat"
    for what in ("model", "view", "head", "layer"):
        label = page.locator(f"{PANEL} label[for$='-{what}']")
        assert label.count() == 1 and label.text_content().strip()  # every control is named
    early = [u for u in page.loaded_at_start if "/_static/models/" in u or "/_static/ort/" in u]
    assert early == [], f"the runtime loaded before any interaction: {early}"


def test_first_use_loads_the_runtime_and_draws(page):
    before = _updates(page)
    page.locator(f"{PANEL} .tinytf-panel-run").click()
    _settle(page, before)
    status = page.locator(f"{PANEL} .tinytf-panel-status").text_content()
    assert re.search(r"Updated in \d+ ms \(model \d+ ms, figure \d+ ms\)", status), status
    assert page.locator(f"{PANEL} .plotly-graph-div .main-svg").count() >= 1
    assert any("/_static/ort/ort-wasm-simd-threaded.wasm" in u for u in page.loaded)


@pytest.mark.parametrize("model,view,head,layer,text", CASES)
def test_browser_figure_equals_python(page, model, view, head, layer, text):
    if not _updates(page):
        test_first_use_loads_the_runtime_and_draws(page)
    _set(page, "model", model)
    _set(page, "view", view)
    _settle(page)
    if view == "attention":
        _set(page, "head", head)
    _set(page, "layer", str(layer))
    _settle(page)
    before = _updates(page)
    _type(page, text)
    _settle(page, before)
    assert _message(page) == ""
    got = page.evaluate(f"""() => {{
        const p = document.querySelector('{PANEL}')._tinytfPanel;
        const fig = tinytfBind.apply(p.lastTemplate, p.lastOutputs, p.lastLabels);
        const drawn = document.querySelector('{PANEL} .plotly-graph-div');
        return JSON.parse(JSON.stringify({{fig: fig, ids: p.lastIds, drawnZ: drawn.data[0].z, drawnY: drawn.data[0].y}}));
    }}""")
    ids = list(text.encode("utf-8"))
    assert got["ids"] == ids
    m = LOADERS[model]()
    heads = head if head in ("all", "mean") else int(head)
    key = f"attention-{heads}" if view == "attention" else view
    import torch

    want = plain(build_view(m, key, torch.tensor(ids), layer, readable_labels(text, ids)))
    d = diff(got["fig"], want, "figure", tol=TOL)
    assert d is None, f"{model} {key} layer {layer} {text!r}: {d}"
    # what is drawn is that figure: the first trace's numbers and its token labels
    assert diff(got["drawnZ"], want["data"][0]["z"], "drawn z", tol=TOL) is None
    if "y" in want["data"][0]:
        assert got["drawnY"] == want["data"][0]["y"]


def test_the_stepper_stays_on_its_stage(page):
    if not _updates(page):
        test_first_use_loads_the_runtime_and_draws(page)
    _set(page, "model", "untrained")
    _set(page, "view", "stepper")
    _settle(page)
    before = _updates(page)
    _type(page, "q")  # one token: position 0 turns by angle 0, so this stepper has no RoPE stage
    _settle(page, before)
    stage = f"""() => {{ const r = document.querySelector('{PANEL} .plotly-graph-div')._tinytf;
        return [r.steps[r.index].name, r.steps.length, document.querySelector('{PANEL} .tinytf-figtitle').textContent]; }}"""
    rng = page.locator(f"{PANEL} .tinytf-anim-range")
    rng.focus()
    page.keyboard.press("Home")
    for _ in range(5):
        page.keyboard.press("ArrowRight")
    assert rng.input_value() == "5"
    name, n, caption = page.evaluate(stage)
    assert name == "softmax" and n == 14
    before = _updates(page)
    _type(page, "dog")
    _settle(page, before)
    name2, n2, caption2 = page.evaluate(stage)
    assert (name2, n2) == ("softmax", 15)  # the same stage, now the 7th of 15 (RoPE is back)
    assert rng.input_value() == "6"
    title = lambda c: c.split("·", 1)[1].split("shape")[0]  # noqa: E731  "7/15 · Softmax turns ... shape [..]"
    assert title(caption2) == title(caption) and "Softmax" in title(caption)  # the caption names the same stage
    y = page.evaluate(f"() => document.querySelector('{PANEL} .plotly-graph-div').data[0].y")
    assert y == ["0: d", "1: o", "2: g"]


def _python_message(model: str, text: str) -> str:
    ck = {} if model == "untrained" else {f"trained: {model}": LOADERS[model]}
    p = LivePanel(text="ab", checkpoints=ck, max_tokens=16)
    if model != "untrained":
        p.weights.value = f"trained: {model}"
    p.text.value = text
    return html.unescape(re.sub(r"<[^>]+>", "", p.message.value)).strip()


@pytest.mark.parametrize("model,text", [("untrained", ""), ("untrained", "x" * 17), ("induction-2l", "née"),
                                        ("text-4l", "the cat sat on the mat")])
def test_bad_input_gives_the_python_panels_message(page, model, text):
    if not _updates(page):
        test_first_use_loads_the_runtime_and_draws(page)
    _set(page, "model", model)
    _settle(page)
    _type(page, text)
    page.wait_for_function(f"() => document.querySelector('{PANEL} .tinytf-panel-message').textContent.length > 0",
                           timeout=10_000)
    _settle(page)
    assert _message(page) == _python_message(model, text)
    _type(page, "ok")  # a good input clears the message
    _settle(page)
    page.wait_for_function(f"() => document.querySelector('{PANEL} .tinytf-panel-message').textContent === ''",
                           timeout=10_000)


def test_no_console_error_and_no_other_host(page):
    page.wait_for_timeout(200)
    assert page.errors == []
    assert page.remote == []


def test_file_page_says_how_to_serve_it(book_html, browser):
    context = browser.new_context()
    try:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((Path(book_html) / PAGE).as_uri())
        page.locator(f"{PANEL} .tinytf-panel-run").click()
        msg = page.locator(f"{PANEL} .tinytf-panel-message")
        msg.wait_for(state="visible", timeout=10_000)
        text = msg.text_content()
        assert "file://" in text and "python -m http.server" in text, text
        assert errors == []
    finally:
        context.close()


def test_chapter_panel_matches_the_templates(book_html):
    """The page's panel may take as many tokens as the Python panel (its messages say the same limit): the
    templates the build wrote cover every length up to the panel's max_tokens."""
    page = (Path(book_html) / PAGE).read_text(encoding="utf-8")
    state = json.loads(html.unescape(re.search(r'data-panel="([^"]*)"', page).group(1)))
    for key in state["models"]:
        index = json.loads((Path(book_html) / "_static" / "models" / key / "index.json").read_text())
        assert index["max_tokens"] >= state["max_tokens"], (key, index["max_tokens"], state["max_tokens"])


@pytest.mark.parametrize("width,mode", [(375, "dark"), (1280, "light")])
def test_drawn_panel_for_every_reader(book_server, browser, width, mode):
    """With its figure drawn: axe-core finds no serious or critical violation in the panel, the figure's texts stay
    inside it and readable (book_browser.audit), at phone width in dark mode and at desktop width in light mode.
    (The rest of the page, and the panel before its first use, are the per-page audit's: test_a11y_book.py.)"""
    from test_a11y_book import _axe

    page, errors, remote, _ = book_browser.open_page(browser, book_url(PAGE), viewport=(width, 900))
    try:
        book_browser.settle(page)
        book_browser.set_mode(page, mode)
        page.locator(f"{PANEL} .tinytf-panel-run").click()
        _settle(page, 0)
        problems = [f"axe {p}" for p in _axe(page, within=PANEL)] + book_browser.audit(page)
        page.locator(PANEL).screenshot(path=str(Path(book_browser.__file__).resolve().parents[1] / "_build" / "screenshots"
                                                / f"static_panel_{width}_{mode}.png"))
        assert not problems, "\n".join(problems)
        assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
        assert errors == [] and remote == []
    finally:
        page.context.close()
