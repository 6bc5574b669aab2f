"""Issue #23: the lab on the landing page runs text-4l in the reader's browser.

In Chromium, on the built intro page served locally: nothing of the model loads before the reader uses the lab
and the page's first load stays <= 4 MB; the first interaction loads it with a progress bar; for an ASCII, a
Chinese and a 500-byte prompt the next-byte probabilities (under several temperature / top-k / top-p settings)
equal tinytf's in Python to 1e-4; the attention map equals the figure Python's tinytf.viz.lab builds; Generate
writes the bytes tinytf.lab.browser_lab.sample_text writes for the same seed; bad input (empty, too long,
Chinese / emoji, 10,000 characters, out-of-range settings) gives a clear message and breaks nothing; every
control works from the keyboard; 375 px and dark mode pass the book's audit and axe (0 serious); no console
error and no request to another host.

What a fresh reader found (the second round): every control shows before the model loads, marked as waiting, and
one used early applies once it has loaded; an empty prompt clears every view and says what to do; a head switched
off says so on its map (faded); no "1 bytes"; each control and view has a line of plain words with links to the
chapters; the "try this" hints do what they say; the logit lens is a figure bound from Python's
tinytf.viz.lab.lens_view (its numbers equal Python's to 1e-4) with its numbers as a table too.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import book_browser
from conftest import book_url, require

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plain_figures import diff  # noqa: E402
from test_a11y_book import MAX_FIRST_LOAD, _axe, _weight  # noqa: E402

import tinytf  # noqa: E402
from tinytf.generation import next_token_probs  # noqa: E402
from tinytf.lab import browser_lab as lab  # noqa: E402
from tinytf.viz import lab as lab_views  # noqa: E402
from tinytf.viz.templates import plain  # noqa: E402

PAGE = "intro.html"
LAB = ".tinytf-lab"
TOL = 1e-4
ASCII = "The function returns the "
CHINESE = "函数返回一个列表。The result is "
LONG = ("Return a new list of the items in the sequence, sorted by the key function when one is given. " * 6)[:500]
SETTINGS = [(1.0, None, None), (0.8, 40, 0.95), (0.5, 5, None), (1.3, None, 0.5)]
READY = "() => { const l = document.querySelector('.tinytf-lab').tinytfLab; return l && l.ready && !l.busy; }"


@pytest.fixture(scope="module")
def model():
    return tinytf.pretrained("text-4l")


@pytest.fixture(scope="module")
def page(book_server, browser):
    require("onnxruntime-web")
    page, errors, remote, loaded = book_browser.open_page(browser, book_url(PAGE))
    book_browser.settle(page)
    page.errors, page.remote, page.loaded = errors, remote, loaded
    page.loaded_at_start = list(loaded)
    yield page
    page.context.close()


def _lab(page, expr: str):
    return page.evaluate(f"() => {{ const l = document.querySelector('{LAB}').tinytfLab; return {expr}; }}")


def _box(page, name: str):
    return page.locator(f"{LAB} [id$='-{name}']")


def _prompt(page, text: str) -> None:
    """Type a prompt as a reader does (fill fires an input event) and wait for the model's run."""
    page.locator(f"{LAB} textarea").fill(text)
    page.wait_for_function(READY, timeout=60_000)
    # the queue runs the latest request after the one under way: its promise resolves when the last is done
    page.evaluate(f"""() => {{ const l = document.querySelector('{LAB}').tinytfLab;
        return l.refresh().then(() => l.drawn).then(() => true); }}""")


def _settings(page, temperature, top_k, top_p) -> None:
    for name, value in (("temperature", temperature), ("top_k", top_k), ("top_p", top_p)):
        _box(page, name).fill("" if value is None else str(value))


def _loaded(page):
    if not _lab(page, "l.ready"):
        page.locator(f"{LAB} textarea").click()
        page.wait_for_function(READY, timeout=60_000)


def test_nothing_loads_before_use_and_the_first_load_is_light(page):
    assert page.locator(f"{LAB} .tinytf-live-note").count() == 0  # the script replaced the note
    early = [u for u in page.loaded_at_start if "/_static/lab/" in u or "/_static/ort/" in u or "plotly" in u]
    assert early == [], early
    server = sys.modules["conftest"]._server
    files = {server.file_for(u) for u in page.loaded_at_start} - {None}
    raw, gz = _weight(files)
    print(f"intro.html: first load {raw / 1e6:.2f} MB ({gz / 1e6:.2f} MB gzip)")
    assert raw <= MAX_FIRST_LOAD
    for name in ("prompt", "temperature", "top_k", "top_p", "seed", "n_bytes"):
        label = page.locator(f"{LAB} label[for$='-{name}']")
        assert label.count() == 1 and label.text_content().strip(), name  # every control is named


def test_every_control_shows_before_the_model_loads(page):
    """Before any interaction: the whole lab's controls are on the page, marked as waiting for the model, with a
    Load button that says what it costs; the views say they wait for the model."""
    assert _lab(page, "l.loaded") is False and page.locator(LAB).get_attribute("data-phase") == "idle"
    for name in ("prompt", "model", "temperature", "top_k", "top_p", "seed", "n_bytes", "layer", "head",
                 "head-0-0", "head-3-5"):
        label = page.locator(f"{LAB} label[for$='-{name}']")
        assert label.count() == 1 and label.is_visible(), name
        assert page.locator(f"{LAB} [id$='-{name}']").first.is_visible(), name
    for name in ("generate", "all-on", "load"):
        assert page.locator(f"{LAB} button[id$='-{name}']").is_visible(), name
    assert "(3.9 MB)" in page.locator(f"{LAB} button[id$='-load']").text_content()
    assert "Waiting for the model" in page.locator(f"{LAB} .tinytf-lab-idle").text_content()
    notes = page.locator(f"{LAB} .tinytf-lab-placeholder").all_inner_texts()
    assert len(notes) == 3 and all("Waiting for the model" in n for n in notes), notes
    waits = page.evaluate(f"""() => [...document.querySelectorAll('{LAB} .tinytf-lab-waits')]
        .map(e => getComputedStyle(e).borderLeftStyle)""")
    assert len(waits) == 3 and set(waits) == {"dashed"}  # the form, the head switches, the map's choosers
    assert page.locator(f"{LAB} .tinytf-lab-hints li").count() == 4
    assert not [u for u in page.loaded if "/_static/lab/" in u or "/_static/ort/" in u]


def test_first_use_loads_the_model_with_progress(page):
    page.locator(f"{LAB} textarea").focus()
    page.wait_for_function(READY, timeout=60_000)
    assert any(u.endswith("/_static/lab/text-4l.onnx") for u in page.loaded)
    assert "Loaded: text-4l, fully trained" in page.locator(f"{LAB} .tinytf-lab-status").text_content()
    assert page.locator(f"{LAB} progress").is_hidden()
    assert page.locator(f"{LAB} table[id$='-dist'] tbody tr").count() == 10
    assert page.locator(f"{LAB} .tinytf-lab-figure .main-svg").count() >= 1
    for name in ("model", "layer", "head", "head-0-0", "head-3-5"):
        label = page.locator(f"{LAB} label[for$='-{name}']")
        assert label.count() == 1 and label.text_content().strip(), name
    assert page.locator(f"{LAB} button[id$='-load']").is_hidden()
    assert page.locator(LAB).get_attribute("data-phase") == "ready"
    assert page.locator(f"{LAB} .tinytf-lab-placeholder:visible").count() == 0
    waits = page.evaluate(f"""() => [...document.querySelectorAll('{LAB} .tinytf-lab-waits')]
        .map(e => getComputedStyle(e).borderLeftStyle)""")
    assert "dashed" not in waits


@pytest.mark.parametrize("text", [ASCII, CHINESE, LONG], ids=["ascii", "chinese", "500-bytes"])
def test_probabilities_equal_python(page, model, text):
    _loaded(page)
    _prompt(page, text)
    ids = list(text.encode("utf-8"))[-128:]
    assert _lab(page, "l.ids") == ids
    logits = lab.run_lab(model, ids)["logits"]
    for t, k, p in SETTINGS:
        _settings(page, t, k, p)
        got = np.array(_lab(page, "Array.from(l.probs)"))
        want = next_token_probs(logits[None], t, k, p)[0].double().numpy()
        assert np.abs(got - want).max() < TOL, (t, k, p)
        assert (got > 0).sum() == (want > 0).sum(), (t, k, p)  # the same bytes kept by top-k / top-p
    shown = page.locator(f"{LAB} table[id$='-dist'] tbody tr td:nth-child(3)").all_text_contents()
    top = [q for q in np.sort(want)[::-1][:10] if q > 0]
    assert [s.strip() for s in shown] == [f"{100 * q:.1f}%" if q >= 0.001 else f"{100 * q:.3f}%" for q in top]
    _settings(page, 0.8, 40, 0.95)


@pytest.mark.parametrize("layer,head", [(0, 0), (3, 5)])
def test_attention_map_is_pythons_figure(page, model, layer, head):
    _loaded(page)
    _prompt(page, CHINESE)
    page.locator(f"{LAB} select[id$='-layer']").select_option(str(layer))
    page.locator(f"{LAB} select[id$='-head']").select_option(str(head))
    page.wait_for_function(f"() => document.querySelector('{LAB}').tinytfLab.spec.layout.title.text"
                           f".includes('Block {layer}, head {head}')")
    ids = list(CHINESE.encode("utf-8"))
    out = lab.run_lab(model, ids)
    labels = _lab(page, "l.labels")
    want = plain(lab_views.figure_of(lab_views.attention_view({"attn": out["attn"].numpy()}, labels, layer, head)))
    got = _lab(page, "l.spec")
    assert diff(got, want, "figure", tol=TOL) is None
    assert labels[:3] == ["函¹", "函²", "函³"]


def _generate(page) -> list:
    page.locator(f"{LAB} [id$='-generate']").click()
    page.wait_for_function(f"() => {{ const l = document.querySelector('{LAB}').tinytfLab; "
                           "return !l.busy && l.generated.length > 0; }", timeout=120_000)
    return _lab(page, "l.generated.slice()")


def test_generate_writes_pythons_seeded_text(page, model):
    _loaded(page)
    _prompt(page, ASCII)
    _settings(page, 0.8, 40, 0.95)
    _box(page, "seed").fill("7")
    _box(page, "n_bytes").fill("40")
    first = _generate(page)
    assert first == lab.sample_text(model, ASCII, 40, seed=7, temperature=0.8, top_k=40, top_p=0.95)
    assert _generate(page) == first  # the same seed, the same text
    assert page.locator(f"{LAB} .tinytf-lab-output").text_content() == ASCII + bytes(first).decode("utf-8", "replace")
    _box(page, "seed").fill("8")
    assert _generate(page) != first
    _box(page, "seed").fill("1")
    _box(page, "n_bytes").fill("64")


def test_generation_runs_past_the_whole_context(page, model):
    """100-byte prompt + 60 bytes: the context (128) fills, then each step reads the last 128 bytes afresh."""
    _loaded(page)
    prompt = LONG[:100]
    _prompt(page, prompt)
    _settings(page, 0, None, None)
    _box(page, "n_bytes").fill("60")
    got = _generate(page)
    assert got == lab.sample_text(model, prompt, 60, temperature=0)
    assert "the context was full" in page.locator(f"{LAB} [id$='-genstatus']").text_content()
    _settings(page, 0.8, 40, 0.95)
    _box(page, "n_bytes").fill("64")


def _messages(page) -> str:
    return page.locator(f"{LAB} .tinytf-lab-message").inner_text()


def test_bad_input_gets_a_message_and_breaks_nothing(page):
    _loaded(page)
    page.locator(f"{LAB} textarea").fill("")
    page.wait_for_function(f"() => document.querySelector('{LAB} .tinytf-lab-message').textContent.includes('empty')")
    assert page.locator(f"{LAB} table[id$='-dist'] tbody tr").count() == 0
    _prompt(page, "表情 🙂 ok")
    assert "each CJK character is 3 bytes" in _messages(page) and "🙂" in _messages(page)
    pasted = ("All work and no play makes a dull model. " * 250)[:10_000]
    _prompt(page, pasted)
    assert "Your text is 10000 bytes long" in _messages(page) and "the first 9872 were cut" in _messages(page)
    assert page.locator(f"{LAB} table[id$='-dist'] tbody tr").count() >= 1  # the model still runs (on the last 128)
    for name, bad, words in [("temperature", "-1", "from 0 to 5"), ("temperature", "abc", "from 0 to 5"),
                             ("top_k", "0", "from 1 to 256"), ("top_k", "2.5", "whole number"),
                             ("top_p", "0", "above 0"), ("top_p", "1.5", "at most 1"),
                             ("seed", "-3", "0 to 4294967295"), ("n_bytes", "100000", "1 to 512")]:
        box = _box(page, name)
        before = box.input_value()
        box.fill(bad)
        assert words in _messages(page) and f"got “{bad}”" in _messages(page), (name, bad)
        assert box.get_attribute("aria-invalid") == "true"
        box.fill(before)
        assert box.get_attribute("aria-invalid") is None
    assert _messages(page).count("got “") == 0
    _prompt(page, ASCII)
    assert _messages(page) == ""


def test_every_control_works_from_the_keyboard(page):
    _loaded(page)
    _prompt(page, ASCII)
    _settings(page, 0.8, 40, 0.95)
    box = _box(page, "temperature")
    box.focus()
    page.keyboard.press("ArrowUp")
    assert box.input_value() == "0.9"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert box.input_value() == "0.7"
    assert _lab(page, "l.settings.temperature") == 0.7
    box.fill("0.8")
    page.locator(f"{LAB} select[id$='-layer']").focus()
    page.keyboard.press("ArrowUp")  # a select: the arrow keys change it
    page.wait_for_function(f"() => document.querySelector('{LAB}').tinytfLab.spec.layout.title.text"
                           f".includes('Block 2,')")
    _box(page, "n_bytes").fill("8")
    page.locator(f"{LAB} [id$='-generate']").focus()
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => {{ const l = document.querySelector('{LAB}').tinytfLab; "
                           "return !l.busy && l.generated.length === 8; }", timeout=60_000)
    _box(page, "n_bytes").fill("64")
    page.locator(f"{LAB} textarea").focus()
    seen = []
    for _ in range(16):  # the controls, and the links of their help lines between them
        page.keyboard.press("Tab")
        seen.append(page.evaluate("() => document.activeElement.id"))
    for name in ("temperature", "top_k", "top_p", "seed", "n_bytes", "generate"):
        assert any(s.endswith("-" + name) for s in seen), (name, seen)


@pytest.mark.parametrize("width,mode", [(375, "dark"), (1280, "light")])
def test_phone_width_dark_mode_and_axe(page, width, mode):
    _loaded(page)
    _prompt(page, CHINESE)
    book_browser.resize(page, width)
    book_browser.set_mode(page, mode)
    problems = book_browser.audit(page)
    problems += _axe(page)
    lab_box = page.evaluate(f"() => document.querySelector('{LAB}').getBoundingClientRect().right")
    assert lab_box <= width + 1
    assert problems == []
    book_browser.set_mode(page, "light")
    book_browser.resize(page, 1280)


def test_no_console_error_and_nothing_from_another_host(page):
    page.wait_for_timeout(100)
    assert page.errors == []
    assert page.remote == []


# ------------------------------------------------------------------ stage 2: heads, lens, snapshots
def _heads(page, off: list) -> None:
    """Switch exactly the heads in ``off`` off, as a reader clicks them, and wait for the model's run."""
    page.locator(f"{LAB} [id$='-all-on']").click()
    for layer, head in off:
        page.locator(f"{LAB} input[id$='-head-{layer}-{head}']").click()
    page.evaluate(f"""() => {{ const l = document.querySelector('{LAB}').tinytfLab;
        return l.refresh().then(() => l.drawn).then(() => true); }}""")


@pytest.mark.parametrize("text", [ASCII, CHINESE, LONG], ids=["ascii", "chinese", "500-bytes"])
def test_ablated_probabilities_and_lens_equal_python(page, model, text):
    _loaded(page)
    _prompt(page, text)
    off = [(0, 1), (2, 3), (3, 0), (3, 5)]
    _heads(page, off)
    mask = lab.full_mask(model)
    for layer, head in off:
        mask[layer, head] = 0
    ids = list(text.encode("utf-8"))[-128:]
    out = lab.run_lab(model, ids, mask)
    for t, k, p in SETTINGS[:2]:
        _settings(page, t, k, p)
        got = np.array(_lab(page, "Array.from(l.probs)"))
        want = next_token_probs(out["logits"][None], t, k, p)[0].double().numpy()
        assert np.abs(got - want).max() < TOL, (t, k, p)
    intact = next_token_probs(lab.run_lab(model, ids)["logits"][None], 1.0)[0].double().numpy()
    assert np.abs(got - intact).max() > 1e-3  # switching the heads off changed the distribution
    assert "4 of 24 heads switched off" in _messages(page)
    _lens_is_pythons(page, {"lens": out["lens"].numpy()})  # the lens after each block, the heads switched off
    cells = page.locator(f"{LAB} .tinytf-lab-lens tbody tr").count()
    assert cells == 5  # four blocks and the true next byte
    _settings(page, 0.8, 40, 0.95)
    _heads(page, [])
    assert "heads switched off" not in _messages(page)


def test_ablation_changes_the_generated_text(page, model):
    _loaded(page)
    _prompt(page, ASCII)
    _settings(page, 0, None, None)
    _box(page, "n_bytes").fill("24")
    intact = _generate(page)
    _heads(page, [(0, h) for h in range(6)])  # every head of block 0 off
    ablated = _generate(page)
    mask = lab.full_mask(model)
    mask[0] = 0
    assert ablated == lab.sample_text(model, ASCII, 24, temperature=0, head_mask=mask)
    assert intact == lab.sample_text(model, ASCII, 24, temperature=0)
    assert ablated != intact
    _heads(page, [])
    _settings(page, 0.8, 40, 0.95)
    _box(page, "n_bytes").fill("64")


@pytest.mark.parametrize("key", ["text-4l@step0", "text-4l@step90", "text-4l@step360", "text-4l@step900"])
def test_each_snapshot_gives_pythons_probabilities(page, key):
    _loaded(page)
    _prompt(page, ASCII)
    page.locator(f"{LAB} select[id$='-model']").select_option(key)
    page.wait_for_function(f"() => document.querySelector('{LAB}').tinytfLab.entry.key === {key!r}", timeout=60_000)
    page.evaluate(f"""() => {{ const l = document.querySelector('{LAB}').tinytfLab;
        return l.refresh().then(() => l.drawn).then(() => true); }}""")
    _settings(page, 1.0, None, None)
    snap = tinytf.pretrained(key)
    want = next_token_probs(lab.run_lab(snap, list(ASCII.encode()))["logits"][None], 1.0)[0].double().numpy()
    got = np.array(_lab(page, "Array.from(l.probs)"))
    assert np.abs(got - want).max() < TOL
    assert any(u.endswith("/_static/lab/" + lab.file_name(key)) for u in page.loaded)
    page.locator(f"{LAB} select[id$='-model']").select_option("text-4l")
    page.wait_for_function(f"() => document.querySelector('{LAB}').tinytfLab.entry.key === 'text-4l'")
    page.evaluate(f"() => document.querySelector('{LAB}').tinytfLab.refresh().then(() => true)")
    _settings(page, 0.8, 40, 0.95)


@pytest.mark.parametrize("width", [375, 1280])
def test_one_search_box(page, width):
    book_browser.resize(page, width)
    visible = page.evaluate("""() => [...document.querySelectorAll('.search-button, .search-button-field')]
        .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; }).length""")
    assert visible == 1
    book_browser.resize(page, 1280)


# ------------------------------------------------------------------ round 2: what a fresh reader found
def _fresh(browser):
    require("onnxruntime-web")
    page, errors, remote, loaded = book_browser.open_page(browser, book_url(PAGE))
    book_browser.settle(page)
    page.errors, page.remote, page.loaded = errors, remote, loaded
    return page


def _drawn(page) -> None:
    page.wait_for_function(READY, timeout=60_000)
    page.evaluate(f"""() => {{ const l = document.querySelector('{LAB}').tinytfLab;
        return l.refresh().then(() => l.drawn).then(() => true); }}""")


def _lens_is_pythons(page, outputs: dict) -> None:
    """The lens figure on the page equals tinytf.viz.lab.lens_view for the page's prompt (numbers to 1e-4,
    strings equal), for the window of positions the page shows; its table shows the figure's numbers."""
    labels, window = _lab(page, "l.labels"), _lab(page, "l.lensWindow")
    want = plain(lab_views.figure_of(lab_views.lens_view(outputs, labels, last=window)))
    got = _lab(page, "l.lensSpec")
    assert diff(got, want, "lens", tol=TOL) is None, diff(got, want, "lens", tol=TOL)
    rows = page.locator(f"{LAB} .tinytf-lab-lens tbody tr")
    first = rows.nth(0).locator("td").all_text_contents()
    heat = want["data"][0]
    assert first == [f"{t} {100 * z:.0f}%" for t, z in zip(heat["text"][0], heat["z"][0])]
    assert page.locator(f"{LAB} .tinytf-lab-figure .main-svg").count() >= 2  # the lens and the map drawn


def test_controls_used_before_the_model_loads_apply_after(browser, model):
    """A head switched off, a layer and head chosen, a temperature typed before the model has loaded: each starts
    the load, and the page then shows exactly that."""
    page = _fresh(browser)
    try:
        phase = page.evaluate(f"""() => {{
            const root = document.querySelector('{LAB}'), l = root.tinytfLab, q = s => root.querySelector(s);
            const before = l.phase;
            q("select[id$='-layer']").value = "1"; q("select[id$='-layer']").dispatchEvent(new Event("change"));
            q("select[id$='-head']").value = "2"; q("select[id$='-head']").dispatchEvent(new Event("change"));
            q("input[id$='-head-1-2']").click();
            const t = q("input[id$='-temperature']"); t.value = "0.5"; t.dispatchEvent(new Event("input"));
            return [before, l.phase, l.loaded]; }}""")
        assert phase == ["idle", "loading", False]  # the first of them started the load
        _drawn(page)
        mask = lab.full_mask(model)
        mask[1, 2] = 0
        out = lab.run_lab(model, list(ASCII.encode()), mask)
        want = next_token_probs(out["logits"][None], 0.5, 40, 0.95)[0].double().numpy()
        assert np.abs(np.array(_lab(page, "Array.from(l.probs)")) - want).max() < TOL
        assert "Block 1, head 2 (switched off)" in _lab(page, "l.spec.layout.title.text")
        assert "1 head of 24 switched off." in _messages(page)
        assert page.errors == [] and page.remote == []
    finally:
        page.context.close()


def test_the_load_button_and_a_hint_load_the_model(browser, model):
    page = _fresh(browser)
    try:
        page.locator(f"{LAB} button[id$='-load']").click()
        page.wait_for_function(READY, timeout=60_000)
        assert page.locator(f"{LAB} button[id$='-load']").is_hidden()
    finally:
        page.context.close()
    page = _fresh(browser)  # a hint clicked first: it sets its prompt, loads the model and shows the lens
    try:
        page.locator(f"{LAB} button[id$='-try-lens']").click()
        page.wait_for_function(f"() => document.querySelector('{LAB}').tinytfLab.lensSpec !== null", timeout=60_000)
        _drawn(page)
        assert page.locator(f"{LAB} textarea").input_value() == "the quick brown f"
        out = lab.run_lab(model, list(b"the quick brown f"))
        _lens_is_pythons(page, {"lens": out["lens"].numpy()})
        column = [row[-1] for row in _lab(page, "l.lensSpec.data[0].text")]
        assert column.index("o") == 2  # block 2 guesses the o of "fox" first: the question has its answer on the page
        assert page.errors == [] and page.remote == []
    finally:
        page.context.close()


def test_each_hint_does_what_it_says(page, model):
    _loaded(page)
    hints = {h["key"]: h for h in lab.hints("all")}
    assert page.locator(f"{LAB} .tinytf-lab-hints li").all_inner_texts() == [h["text"] + " Try it" for h in
                                                                              hints.values()]

    def click(key):
        page.locator(f"{LAB} button[id$='-try-{key}']").click()
        page.wait_for_function(f"() => {{ const l = document.querySelector('{LAB}').tinytfLab; "
                               "return l.ready && !l.busy && l.generated.length === 64; }", timeout=120_000)
        return _lab(page, "l.generated.slice()")

    prompt = lab.DEFAULTS["prompt"]
    page.evaluate(f"() => {{ document.querySelector('{LAB}').tinytfLab.generated = []; }}")
    mask = lab.full_mask(model)
    mask[0] = 0
    assert click("block0") == lab.sample_text(model, prompt, 64, temperature=0, head_mask=mask)
    assert page.locator(f"{LAB} input[type=checkbox]:not(:checked)").count() == 6
    page.evaluate(f"() => {{ document.querySelector('{LAB}').tinytfLab.generated = []; }}")
    got = click("step90")
    assert got == lab.sample_text(tinytf.pretrained("text-4l@step90"), prompt, 64, temperature=0)
    assert set(bytes(got).decode().split()) == {"the"}
    assert page.locator(f"{LAB} input[type=checkbox]:not(:checked)").count() == 0  # every head on again
    page.evaluate(f"() => {{ document.querySelector('{LAB}').tinytfLab.generated = []; }}")
    greedy = click("greedy")
    assert greedy == lab.sample_text(model, prompt, 64, temperature=0)
    assert _lab(page, "l.entry.key") == "text-4l"
    assert _box(page, "seed").input_value() == "1"
    # what the hint says next, on the page: seed 2 at temperature 0 writes the same text; at 1.5 seeds 1 and 2
    # write different texts, and seed 1 its own again
    _box(page, "seed").fill("2")
    assert _generate(page) == greedy
    _box(page, "temperature").fill("1.5")
    _box(page, "seed").fill("1")
    hot = _generate(page)
    assert hot == lab.sample_text(model, prompt, 64, seed=1, temperature=1.5, top_k=40, top_p=0.95)
    _box(page, "seed").fill("2")
    assert _generate(page) not in (hot, greedy)
    _box(page, "seed").fill("1")
    assert _generate(page) == hot
    _prompt(page, ASCII)
    _settings(page, 0.8, 40, 0.95)


def test_an_empty_prompt_clears_every_view(page):
    _loaded(page)
    _prompt(page, ASCII)
    assert page.locator(f"{LAB} table[id$='-dist'] tbody tr").count() == 10
    page.locator(f"{LAB} textarea").fill("")
    page.wait_for_function(f"() => document.querySelector('{LAB}').tinytfLab.outputs === null")
    assert page.locator(f"{LAB} table[id$='-dist'] tbody tr").count() == 0
    assert page.locator(f"{LAB} table[id$='-dist']").is_hidden()
    assert page.locator(f"{LAB} .tinytf-lab-figure").first.is_hidden()  # the lens
    assert page.locator(f"{LAB} .tinytf-lab-figure").last.is_hidden()  # the attention map
    notes = page.locator(f"{LAB} .tinytf-lab-placeholder:visible").all_inner_texts()
    assert len(notes) == 3 and all(n.startswith("Type a few letters") for n in notes), notes
    assert "type a few letters" in _messages(page)
    assert page.locator(f"{LAB} .tinytf-lab-output").text_content() == ""
    assert _lab(page, "[l.spec, l.lensSpec, l.probs]") == [None, None, None]
    _prompt(page, ASCII)
    assert page.locator(f"{LAB} table[id$='-dist'] tbody tr").count() == 10
    assert page.locator(f"{LAB} .tinytf-lab-placeholder:visible").count() == 0


def test_a_switched_off_heads_map_says_so(page, model):
    _loaded(page)
    _prompt(page, ASCII)
    page.locator(f"{LAB} select[id$='-layer']").select_option("2")
    page.locator(f"{LAB} select[id$='-head']").select_option("3")
    _heads(page, [(2, 3)])
    mask = lab.full_mask(model)
    mask[2, 3] = 0
    out = lab.run_lab(model, list(ASCII.encode()), mask)
    labels = _lab(page, "l.labels")
    want = plain(lab_views.figure_of(lab_views.attention_view({"attn": out["attn"].numpy()}, labels, 2, 3,
                                                              switched_off=True)))
    got = _lab(page, "l.spec")
    assert diff(got, want, "figure", tol=TOL) is None
    caption = page.locator(f"{LAB} .tinytf-lab-off .tinytf-figtitle").inner_text()
    assert "head switched off: its weights are still computed, but its output is multiplied by 0" in caption
    assert got["data"][0]["opacity"] < 1  # drawn faded
    _heads(page, [])
    assert "switched off" not in _lab(page, "l.spec.layout.title.text")
    assert page.locator(f"{LAB} .tinytf-lab-off").count() == 0
    page.locator(f"{LAB} select[id$='-layer']").select_option("3")
    page.locator(f"{LAB} select[id$='-head']").select_option("0")


def test_one_byte_one_head_no_plural(page):
    """"1 byte", not "1 bytes": the table's caption, the generated message, a head switched off, a cut prompt."""
    _loaded(page)
    _prompt(page, ASCII)
    _settings(page, 0.8, 1, None)
    assert "the only byte the sampler can draw" in page.locator(f"{LAB} [id$='-dist-caption']").text_content()
    _settings(page, 0.8, 5, None)
    assert "the 5 bytes the sampler can draw, most likely first" in \
        page.locator(f"{LAB} [id$='-dist-caption']").text_content()
    _settings(page, 0.8, 40, 0.95)
    _box(page, "n_bytes").fill("1")
    page.locator(f"{LAB} [id$='-generate']").click()
    page.wait_for_function(f"() => {{ const l = document.querySelector('{LAB}').tinytfLab; "
                           "return !l.busy && l.generated.length === 1; }", timeout=60_000)
    assert page.locator(f"{LAB} [id$='-genstatus']").text_content().startswith("Wrote 1 byte in ")
    _box(page, "n_bytes").fill("64")
    _heads(page, [(0, 0)])
    assert "1 head of 24 switched off." in _messages(page)
    _heads(page, [])
    _prompt(page, "a" * 129)
    assert "the first byte was cut" in _messages(page)
    _prompt(page, "T")  # one byte: the figures' descriptions say "1 row × 1 column"
    described = page.evaluate(f"() => [...document.querySelectorAll('{LAB} .tinytf-figdesc p')].map(p => p.textContent)")
    assert any("1 row × 1 column" in d for d in described), described  # the attention map
    assert any("4 rows × 1 column" in d for d in described), described  # the lens
    text = page.locator(LAB).text_content()  # every word of the lab, hidden or not
    found = re.findall(r".{30}\b1 (?:bytes|heads|positions|rows|columns)\b", text)
    assert not found, found
    _prompt(page, ASCII)


@pytest.mark.parametrize("width,text", [(1280, LONG), (375, LONG), (1280, CHINESE), (1280, "T")],
                         ids=["wide-128", "phone-128", "chinese", "one-byte"])
def test_the_lens_figure_is_pythons(page, model, width, text):
    """The logit lens: Python's lens_view filled in the browser (softmax, max and argmax as binding operations)
    equals Python's figure to 1e-4; a 128-byte prompt shows its last 32 positions (10 on a phone), with a note."""
    _loaded(page)
    book_browser.resize(page, width)
    _prompt(page, text)
    ids = list(text.encode("utf-8"))[-128:]
    out = lab.run_lab(model, ids)
    _lens_is_pythons(page, {"lens": out["lens"].numpy()})
    window = _lab(page, "l.lensWindow")
    assert window == (lab_views.LENS_WINDOWS[0] if width < 600 else lab_views.LENS_WINDOWS[-1])
    note = page.locator(f"{LAB} [id$='-lens-note']")
    if len(ids) > window:
        assert note.inner_text() == f"The last {window} of the prompt's {len(ids)} positions are shown."
    else:
        assert note.is_hidden()
    box = page.evaluate(f"""() => {{ const r = document.querySelector('{LAB}').tinytfLab.ui.lensFigure
        .closest('.tinytf-figwrap').getBoundingClientRect(); return [r.right, document.documentElement.clientWidth]; }}""")
    assert box[0] <= box[1] + 1  # the figure fits the screen
    cap = page.evaluate(f"""() => [...document.querySelectorAll('{LAB} .tinytf-figtitle, {LAB} .tinytf-lab-caption')]
        .filter(e => e.offsetParent).map(e => [e.scrollWidth, e.clientWidth])""")
    assert all(sw <= cw + 1 for sw, cw in cap), cap  # no caption clipped
    book_browser.resize(page, 1280)


def test_generation_says_what_it_did_next_to_generate_and_shows_the_newest_text(page):
    """At 375 px a reader presses Generate where it is: the progress and the result show right beside it (a live
    region), not in the status line at the top of the lab, off-screen by then. After a long prompt the output box
    follows the new text to its end, unless the reader scrolls up in it."""
    _loaded(page)
    book_browser.resize(page, 375, 700)
    pasted = ("All work and no play makes a dull model. " * 40)  # 1640 bytes: the box shows the whole text
    _prompt(page, pasted)
    _box(page, "n_bytes").fill("40")
    button, status = page.locator(f"{LAB} [id$='-generate']"), page.locator(f"{LAB} [id$='-genstatus']")
    assert status.get_attribute("aria-live") == "polite"
    button.scroll_into_view_if_needed()
    button.click()
    page.wait_for_function(f"() => {{ const l = document.querySelector('{LAB}').tinytfLab; "
                           "return !l.busy && l.generated.length === 40; }", timeout=60_000)
    assert status.text_content().startswith("Wrote 40 bytes in ")
    assert "Loaded" in page.locator(f"{LAB} .tinytf-lab-status").text_content()  # the top line kept its words
    b, st = button.bounding_box(), status.bounding_box()
    assert 0 <= st["y"] and st["y"] + st["height"] <= 700  # on screen where the reader pressed
    assert st["y"] - (b["y"] + b["height"]) < 40  # beside the button, or just under it
    box = page.locator(f"{LAB} .tinytf-lab-output")
    top, height, client = box.evaluate("e => [e.scrollTop, e.scrollHeight, e.clientHeight]")
    assert height > 2 * client and top + client >= height - 4  # the box overflows and shows its end
    # the reader scrolls up in the box while it writes (after its third byte): it stays where the reader put it
    top = _lab(page, """new Promise(done => {
        const box = l.ui.output, seen = new MutationObserver(() => { if (l.generated.length === 3) box.scrollTop = 0; });
        seen.observe(box, { childList: true, characterData: true, subtree: true });
        l.generate().then(() => { seen.disconnect(); done([box.scrollTop, l.generated.length]); }); })""")
    assert top == [0, 40]
    _box(page, "n_bytes").fill("64")
    _prompt(page, ASCII)
    book_browser.resize(page, 1280)


@pytest.mark.parametrize("width,lines", [(375, 1), (320, 2), (1280, 1)])
def test_each_layers_head_switches_fit_their_row(page, width, lines):
    """A layer's six head switches: one line at 375 px and wider (h5 is not wrapped alone onto a line of its own),
    two even lines of three on a narrower phone; the same columns in every layer; nothing sticks out."""
    book_browser.resize(page, width)
    rows = page.evaluate(f"""() => [...document.querySelectorAll('{LAB} .tinytf-lab-headrow')].map(r => {{
        const tops = [...r.querySelectorAll('label')].map(l => Math.round(l.getBoundingClientRect().top));
        const lefts = [...r.querySelectorAll('label')].map(l => Math.round(l.getBoundingClientRect().left));
        const line = tops.map(t => tops.filter(u => u === t).length);
        return {{lines: new Set(tops).size, per: line, lefts: lefts,
                 out: Math.round(r.lastElementChild.getBoundingClientRect().right - r.getBoundingClientRect().right)}}; }})""")
    assert len(rows) == 4
    for row in rows:
        assert row["lines"] == lines and set(row["per"]) == {6 // lines}, row
        assert row["out"] <= 0, row
        assert row["lefts"] == rows[0]["lefts"]  # the same columns in every layer
    book_browser.resize(page, 1280)


def test_the_table_is_the_samplers_the_lens_the_models(page):
    """The next-byte table and the lens's last block disagree at the default temperature 0.8 (the table is the
    sampler's distribution, the lens the model's own): the help lines say so, and at temperature 1 with nothing
    cut the table's top byte has the lens's probability."""
    _loaded(page)
    _prompt(page, ASCII)
    _settings(page, 0.8, 40, 0.95)
    lens = _lab(page, "l.lensSpec.data[0].z")[-1][-1]  # the last block, the last position
    assert abs(_lab(page, "Math.max(...l.probs)") - lens) > 0.03
    _settings(page, 1, None, None)
    assert abs(_lab(page, "Math.max(...l.probs)") - lens) < TOL
    _settings(page, 0.8, 40, 0.95)
    assert "model's own (temperature 1, nothing cut)" in page.locator(f"{LAB} [id$='-lens-help']").inner_text()
    assert "after temperature, top-k and top-p" in page.locator(f"{LAB} [id$='-table-help']").inner_text()


def test_help_lines_and_their_links(page):
    _loaded(page)
    state = lab.page_state()
    for key, h in state["help"].items():
        line = page.locator(f"{LAB} [id$='-{key}-help']")
        assert line.count() == 1 and line.is_visible() and h["text"] in line.inner_text(), key
        links = line.locator("a")
        assert links.count() == len(h["chapters"]), key
    hrefs = page.evaluate(f"() => [...document.querySelectorAll('{LAB} a.tinytf-lab-chapter')].map(a => a.href)")
    statuses = page.evaluate("(urls) => Promise.all(urls.map(u => fetch(u, {method: 'HEAD'}).then(r => r.status)))",
                             sorted(set(hrefs)))
    assert statuses == [200] * len(set(hrefs)), dict(zip(sorted(set(hrefs)), statuses))
    described = page.evaluate(f"""() => ['temperature', 'top_k', 'top_p', 'model', 'layer'].map(n =>
        document.querySelector('{LAB} [id$="-' + n + '"]').getAttribute('aria-describedby'))""")
    assert all(d and d.endswith("-help") for d in described), described
