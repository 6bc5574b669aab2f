"""Every page of the built book as readers use it (issue #13): at 375, 768 and 1280 px wide, in
light and dark mode, with the keyboard, and under axe-core.

One browser session; each (page, width) is loaded once and both colour modes are tried in that
load (switching the mode as the theme's button does, so the figures must follow without a
reload). For every (page, width, mode):

* the page does not scroll sideways;
* no text of a figure (titles, axis and tick labels, annotations, legends) leaves its figure or
  overlaps another; no subplot is narrower than 120 px; every figure text has a contrast of at
  least 4.5:1 against the page behind the (transparent) figure (``book_browser.audit``);
* every figure is a ``role="figure"`` named by its caption and described by a text with numbers;
* axe-core (npm ``axe-core``, ``npm ci`` installs it) finds no serious or critical violation
  (every rule at 1280 px light and 375 px dark, the colour rules at 1280 px dark: see AXE_RUNS);
* a screenshot of the first screen is kept in ``_build/screenshots/a11y/`` for a person to look at
  (with ``TINYTF_FULL_SCREENSHOTS=1`` the full page at 375 px dark and 1280 px light).

Every animated figure is driven from the keyboard (Tab reaches Play, Space plays and pauses, the
arrow keys step, focus is visible), and the first load of a chapter page transfers at most 4 MB.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

import book_browser
from conftest import FULL_SCREENSHOTS, ROOT, SCREENSHOTS, book_url, require, toc_docnames

DOCS = toc_docnames()
PAGES = [f"{d}.html" for d in DOCS] + ["search.html", "genindex.html"]
WIDTHS = (375, 768, 1280)
MODES = ("light", "dark")
# axe-core checks markup and colours. Markup does not change with the colour mode, colours do not change with the
# width: every rule runs at 1280 px light and at 375 px dark (the narrow layout's own elements: menus, wrapped
# tables), and the colour-contrast rule once more at 1280 px dark (the wide layout's sidebars in dark colours).
AXE_RUNS = {(1280, "light"): None, (375, "dark"): None, (1280, "dark"): ["color-contrast"]}
# full-page screenshots (TINYTF_FULL_SCREENSHOTS=1) for a person to look at: the phone in dark mode and the
# desktop in light mode; the first screen otherwise (a full-page shot of a long page costs seconds)
FULL_SHOTS = {(375, "dark"), (1280, "light")} if FULL_SCREENSHOTS else set()
AXE_JS = ROOT / "node_modules" / "axe-core" / "axe.min.js"
MAX_FIRST_LOAD = 4_000_000  # bytes a chapter page transfers on its first load
SHOTS = SCREENSHOTS / "a11y"

FIGURES_NAMED = """() => [...document.querySelectorAll('.plotly-graph-div')].map((gd, i) => {
  const fig = gd.closest('[role=figure]');
  if (!fig) return `figure ${i}: not inside a role=figure element`;
  const title = document.getElementById(fig.getAttribute('aria-labelledby') || '-');
  const desc = document.getElementById(fig.getAttribute('aria-describedby') || '-');
  if (!title || !title.textContent.trim()) return `figure ${i}: no caption naming it`;
  const numeric = (gd.data || []).some(t => t.type === 'heatmap' || t.type === 'bar');
  if (!desc || desc.textContent.trim().length < 30 || (numeric && !/\\d/.test(desc.textContent)))
    return `figure ${i} (${title.textContent.slice(0, 40)}): no text alternative (with its numbers)`;
  if (gd.querySelector('.modebar-container .modebar-btn')) return `figure ${i}: plotly toolbar present`;
  const bg = gd._fullLayout && gd._fullLayout.paper_bgcolor;
  if (!/rgba\\(0, ?0, ?0, ?0\\)|transparent/.test(String(bg))) return `figure ${i}: background ${bg}, not the page's`;
  return null;
}).filter(Boolean)"""

AXE_RUN = """(rules) => axe.run(document, rules ? {runOnly: rules, resultTypes: ['violations']}
                                              : {resultTypes: ['violations']}).then(r => r.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => `${v.impact} ${v.id} (${v.nodes.length}): ` + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ')))"""


def _axe(page, rules: list[str] | None = None) -> list[str]:
    """Serious and critical violations of every axe rule, or of the given rules only."""
    require("axe-core")
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(path=str(AXE_JS))
    return page.evaluate(AXE_RUN, rules)


def _shot(page, path: str, width: int, mode: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    name = path.removesuffix(".html").replace("/", "__")
    page.screenshot(path=str(SHOTS / f"{name}_{width}_{mode}.png"), full_page=(width, mode) in FULL_SHOTS)


def _weight(server_files) -> tuple[int, int]:
    raw = gz = 0
    for f in server_files:
        data = f.read_bytes()
        raw += len(data)
        gz += len(gzip.compress(data, 6))
    return raw, gz


# The pages are audited by two files, half each (test_a11y_book_pages.py has the other half), so that
# `make test`'s two pytest-xdist workers (--dist loadfile) share the longest test of the suite.
@pytest.mark.parametrize("path", PAGES[0::2])
def test_page_for_every_reader(book_server, browser, path):
    audit_page(browser, path)


def audit_page(browser, path: str) -> None:
    """Every check of the module docstring for one page (a failure lists all problems found)."""
    problems: list[str] = []
    for width in WIDTHS:
        page, errors, remote, loaded = book_browser.open_page(browser, book_url(path), viewport=(width, 900))
        try:
            if width == 1280 and path.startswith("chapters/"):
                files = {book_browser_file(u) for u in loaded} - {None}
                raw, gz = _weight(files)
                load_ms = page.evaluate("() => Math.round(performance.getEntriesByType('navigation')[0].loadEventEnd)")
                print(f"{path}: first load {raw / 1e6:.2f} MB ({gz / 1e6:.2f} MB gzip), load event {load_ms} ms")
                if raw > MAX_FIRST_LOAD:
                    biggest = sorted(files, key=lambda f: -f.stat().st_size)[:4]
                    problems.append(f"first load {raw / 1e6:.2f} MB > {MAX_FIRST_LOAD / 1e6:.0f} MB "
                                    f"(largest: {[f.name for f in biggest]})")
            for mode in MODES:
                book_browser.set_mode(page, mode)
                where = f"{width}px {mode}"
                problems += [f"{where}: {p}" for p in book_browser.audit(page)]
                problems += [f"{where}: {p}" for p in page.evaluate(FIGURES_NAMED)]
                if (width, mode) in AXE_RUNS:
                    problems += [f"{where}: axe {p}" for p in _axe(page, AXE_RUNS[width, mode])]
                _shot(page, path, width, mode)
            if width == 1280:
                problems += [f"keyboard: {p}" for p in drive_animations_by_keyboard(page)]
            page.wait_for_timeout(100)
            problems += [f"{width}px: {e}" for e in errors]
            problems += [f"{width}px: remote request {u}" for u in remote]
        finally:
            page.context.close()
    assert not problems, "\n".join(problems)


def book_browser_file(url: str):
    from conftest import _server

    return _server.file_for(url) if _server is not None else None


RESIZED_PAGE = "chapters/02_causal_self_attention.html"  # many multi-panel figures: their layout depends on the width


def test_figures_reflow_when_the_window_widens(book_server, browser):
    """A reader who turns a phone or widens a window: the page loaded at 375 px is widened to 1280 px, and every
    figure is drawn again for its new width (a figure drawn at phone width once kept its narrow subplots)."""
    page, errors, remote, _ = book_browser.open_page(browser, book_url(RESIZED_PAGE), viewport=(375, 900))
    try:
        book_browser.resize(page, 1280)
        problems = [p for p in book_browser.audit(page) if "scrolls sideways" not in p]
        assert not problems, "after widening 375 -> 1280 px:\n" + "\n".join(problems)
        assert not errors and not remote, (errors, remote)
    finally:
        page.context.close()


def test_index_page_is_a_page(book_html, browser):
    """index.html forwards to the landing page and is a page axe accepts (lang, title, landmark)."""
    html = (book_html / "index.html").read_text(encoding="utf-8")
    assert '<html lang="en">' in html and "<title>" in html and "http-equiv" in html
    page = browser.new_page()
    try:
        page.route("**/*", lambda r: r.abort())  # stay on this page: no redirect, nothing loaded
        page.set_content(html.replace('http-equiv="refresh"', 'data-refresh="kept-for-axe"'))
        assert page.title()
        assert not _axe(page)
    finally:
        page.close()


# ------------------------------------------------------------------ keyboard
KEYBOARD_STATE = """(i) => { const box = document.querySelectorAll('.tinytf-anim-controls')[i];
  const wrap = box.closest('.tinytf-figwrap');
  const range = box.querySelector('input[type=range]');
  const play = box.querySelector('.tinytf-anim-play');
  const a = document.activeElement;
  const cs = getComputedStyle(a);
  return { value: Number(range.value), max: Number(range.max), pressed: play.getAttribute('aria-pressed'),
           caption: wrap.querySelector('.tinytf-figtitle').textContent,
           focus: a === play ? 'play' : a === range ? 'range' : (a.className || a.tagName),
           outline: cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 2 };
}"""


def drive_animations_by_keyboard(page) -> list[str]:
    problems = []
    boxes = page.locator(".tinytf-anim-controls")
    for i in range(boxes.count()):
        box = boxes.nth(i)
        box.scroll_into_view_if_needed()
        # start from the figure's caption (made focusable for the test) and Tab into the controls
        page.evaluate("""(i) => { const c = document.querySelectorAll('.tinytf-anim-controls')[i]
            .closest('.tinytf-figwrap').querySelector('.tinytf-figtitle');
            c.setAttribute('tabindex', '-1'); c.focus(); }""", i)
        for _ in range(3):  # the plot itself has no Tab stop: the next one is Play
            page.keyboard.press("Tab")
            if page.evaluate(KEYBOARD_STATE, i)["focus"] == "play":
                break
        s = page.evaluate(KEYBOARD_STATE, i)
        if s["focus"] != "play":
            problems.append(f"animation {i}: Tab from the caption reaches {s['focus']!r}, not Play")
            continue
        if not s["outline"]:
            problems.append(f"animation {i}: the focused Play button shows no focus outline")
        start = s["value"]
        page.keyboard.press("Space")  # play
        try:
            page.wait_for_function(
                f"() => Number(document.querySelectorAll('.tinytf-anim-controls')[{i}]"
                f".querySelector('input[type=range]').value) !== {start}", timeout=8_000)
        except Exception:  # noqa: BLE001 - reported below
            problems.append(f"animation {i}: Space on Play did not advance the animation")
        page.keyboard.press("Space")  # pause
        s = page.evaluate(KEYBOARD_STATE, i)
        if s["pressed"] != "false":
            problems.append(f"animation {i}: Space did not pause (aria-pressed={s['pressed']})")
        paused_at = s["value"]
        page.wait_for_timeout(300)
        if page.evaluate(KEYBOARD_STATE, i)["value"] != paused_at:
            problems.append(f"animation {i}: still playing after pause")
        for _ in range(3):  # Play, previous, next, then the step slider
            page.keyboard.press("Tab")
        s = page.evaluate(KEYBOARD_STATE, i)
        if s["focus"] != "range":
            problems.append(f"animation {i}: Tab order does not reach the step slider ({s['focus']!r})")
            continue
        page.keyboard.press("Home")
        first = page.evaluate(KEYBOARD_STATE, i)
        page.keyboard.press("ArrowRight")
        second = page.evaluate(KEYBOARD_STATE, i)
        if second["value"] != first["value"] + 1 or second["caption"] == first["caption"] and first["max"] > 0:
            problems.append(f"animation {i}: ArrowRight did not step ({first['value']} -> {second['value']})")
        page.keyboard.press("ArrowLeft")
        if page.evaluate(KEYBOARD_STATE, i)["value"] != first["value"]:
            problems.append(f"animation {i}: ArrowLeft did not step back")
        if not second["outline"]:
            problems.append(f"animation {i}: the focused step slider shows no focus outline")
    return problems


def test_interrupted_animation_raises_no_error(book_server, browser):
    """Plotly.animate rejects the promise of a step that a newer step interrupts (fast keys, Play then
    Pause, a colour-mode redraw during a step): the controls must treat that as expected, not leave an
    unhandled rejection. Four steps asked for in one tick interrupt one another every time."""
    page, errors, _, _ = book_browser.open_page(browser, book_url("chapters/02_causal_self_attention.html"))
    try:
        book_browser.settle(page)
        shown = page.evaluate("""() => { const r = document.querySelector('.tinytf-anim-controls input[type=range]');
            for (const v of [1, 2, 3, 0]) { r.value = String(v); r.dispatchEvent(new Event('input')); }
            return r.closest('.tinytf-anim-controls').querySelector('output').textContent; }""")
        page.wait_for_timeout(400)
        assert shown.startswith("1 of "), shown
        assert errors == []
    finally:
        page.context.close()


def test_partial_plotly_bundle_is_served(book_html):
    """The book serves plotly.js's cartesian partial bundle (npm), not plotly's 4.8 MB full bundle."""
    js = book_html / "_static" / "plotly.min.js"
    require("plotly.js")
    assert js.stat().st_size < 2_000_000, f"{js} is {js.stat().st_size} bytes: the full bundle?"
    assert Path(book_html / "_static" / "scripts" / "fontawesome.js").stat().st_size < 100_000
