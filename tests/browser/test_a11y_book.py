"""Every page of the built book as readers use it (issue #13): at 1280, 768 and 375 px wide, in
light and dark mode, with the keyboard, and under axe-core.

One browser session; each page is loaded once, at 1280 px, and then narrowed to 768 and 375 px as a reader
narrows a window or turns a tablet (``book_browser.resize`` waits until every figure is drawn again for its new
width and the page has re-marked its sideways-scrolling boxes). At each width both colour modes are tried
(switching the mode as the theme's button does, so the figures must follow without a reload). For every
(width, mode):

* the page does not scroll sideways;
* no text of a figure (titles, axis and tick labels, annotations, legends) leaves its figure or
  overlaps another; no subplot is narrower than 120 px; every figure text has a contrast of at
  least 4.5:1 against the page behind the (transparent) figure (``book_browser.audit``);
* every figure is a ``role="figure"`` named by its caption and described by a text with numbers;
* axe-core (npm ``axe-core``, ``npm ci`` installs it) finds no serious or critical violation
  (every rule at 1280 px light and 375 px dark, the colour-contrast rule outside the article at 1280 px dark:
  see AXE_RUNS);
* a screenshot of the first screen at 1280 px light and 375 px dark is kept in ``_build/screenshots/a11y/``
  for a person to look at (with ``TINYTF_FULL_SCREENSHOTS=1`` the full page).

Every animated figure is driven from the keyboard (Tab reaches Play, Space plays and pauses, the
arrow keys step, focus is visible), and the first load of a chapter page transfers at most 4 MB. On the first load
of a toc page, before any mode switch, the page checks of test_book_browser.py run too (``first_load_checks``), so
that each page is loaded (MathJax, plotly.js, every figure: seconds of CPU) once for both. The load and
the resizes raise no console error and request nothing from another host.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

import book_browser
from conftest import FULL_SCREENSHOTS, ROOT, SCREENSHOTS, book_url, require, toc_docnames
from test_book_browser import first_load_problems

DOCS = toc_docnames()
PAGES = [f"{d}.html" for d in DOCS] + ["search.html", "genindex.html"]
WIDTHS = (1280, 768, 375)  # the order of the audit: loaded at 1280 px, then narrowed
MODES = ("light", "dark")
# (width, mode) in the order the audit visits them: the mode alternates so that each width after the first starts
# in the mode the previous one ended in (four mode switches, not six; each redraws every figure)
STEPS = [(w, m) for i, w in enumerate(WIDTHS) for m in (MODES if i % 2 == 0 else MODES[::-1])]
# axe-core checks markup and colours. A full run costs seconds on a long page (8 s for the API page on a busy
# 2-core machine), most of it in the colour-contrast rule (every text node's background), and each run pays for
# walking the whole page again, so there are three runs and each covers what the others do not:
# * markup does not change with the colour mode: every rule runs at 1280 px light (the wide layout) and at 375 px
#   dark (the narrow layout's own elements: menus, wrapped tables, boxes that scroll sideways and so get a Tab stop);
# * colours change with the mode, and with the width only outside the article: the book's CSS changes no colour with
#   the width, the theme's only the chrome's (the navbar's drawers, the secondary sidebar) and label.margin-toggle at
#   <= 992 px (in the 375 px dark run). So the article's text is contrast-checked in light at 1280 px and in dark at
#   375 px, and the colour-contrast rule runs once more on the rest of the page at 1280 px dark: the wide layout's
#   sidebars and header in dark colours. (The article at 1280 px dark too would cost another full run: 7 s on the
#   API page.)
# (width, mode): (rules, or None for every rule; CSS selector of what the run leaves out, or None)
ARTICLE = ".bd-article"
AXE_RUNS = {(1280, "light"): (None, None), (1280, "dark"): (["color-contrast"], ARTICLE), (375, "dark"): (None, None)}
# screenshots for a person to look at (not checks): the desktop in light mode and the phone in dark mode, the first
# screen (a full-page shot of a long page costs seconds) or, with TINYTF_FULL_SCREENSHOTS=1, the full page
SHOTS_AT = {(1280, "light"), (375, "dark")}
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

AXE_RUN = """([rules, exclude, within]) => axe.run(within ? {include: [[within]]}
                                                  : exclude ? {include: [document], exclude: [[exclude]]} : document,
                                           Array.isArray(rules) ? {runOnly: rules, resultTypes: ['violations']}
                                           : rules ? {rules: rules, resultTypes: ['violations']}
                                           : {resultTypes: ['violations']}).then(r => r.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => `${v.impact} ${v.id} (${v.nodes.length}): ` + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ')))"""


def _axe(page, rules: list[str] | dict | None = None, exclude: str | None = None,
         within: str | None = None) -> list[str]:
    """Serious and critical violations of every axe rule, of the given rules only (a list), or of every rule but
    those a dict turns off (axe's `rules` option: {"color-contrast": {"enabled": False}}); on the whole page, on the
    page without the elements that match the CSS selector `exclude` (and what is inside them), or only on the
    elements that match `within`."""
    require("axe-core")
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(path=str(AXE_JS))
    return page.evaluate(AXE_RUN, [rules, exclude, within])


def _shot(page, path: str, width: int, mode: str, shots_at=SHOTS_AT) -> None:
    if (width, mode) not in shots_at:
        return
    SHOTS.mkdir(parents=True, exist_ok=True)
    name = path.removesuffix(".html").replace("/", "__")
    page.screenshot(path=str(SHOTS / f"{name}_{width}_{mode}.png"), full_page=FULL_SCREENSHOTS)


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
    audit_page(browser, path, first_load=toc_doc(path))


def toc_doc(path: str) -> str | None:
    """The docname of a toc page ("intro.html" -> "intro"), None for the generated pages (search, genindex)."""
    doc = path.removesuffix(".html")
    return doc if doc in DOCS else None


def audit_page(browser, path: str, steps=STEPS, axe_runs=AXE_RUNS, shots_at=SHOTS_AT, keyboard: bool = True,
               first_load: str | None = None) -> None:
    """Every check of the module docstring for one page (a failure lists all problems found); `path` is relative
    to _build/html (``PAGES`` lists the book's, another edition's are under its folder, e.g. "zh/intro.html").
    `steps` (the (width, mode) visited, in order), `axe_runs` and `keyboard` narrow the audit for a page whose
    colours and scripts are those of an English page already audited (the Chinese edition's: test_zh_edition.py).
    `first_load` (a toc docname) runs test_book_browser.py's checks of that page's first load on this load first."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError  # (the browser fixture required it)

    problems: list[str] = []
    page, errors, remote, loaded = book_browser.open_page(browser, book_url(path), viewport=(WIDTHS[0], 900))
    try:
        if "/chapters/" in "/" + path:  # a chapter page, of any edition
            problems += _first_load_weight(page, path, loaded)
        if first_load is not None:
            problems += first_load_problems(page, first_load)
        for width, mode in steps:
            if width != page.viewport_size["width"]:
                # the keyboard drive scrolled and focused: the next width starts from the top, as a reader's would
                page.evaluate("() => { document.activeElement?.blur(); window.scrollTo(0, 0); }")
                try:
                    book_browser.resize(page, width)
                except PlaywrightTimeoutError:
                    problems.append(f"{width}px: the figures were not drawn again for the new width (30 s)")
            book_browser.set_mode(page, mode)
            where = f"{width}px {mode}"
            problems += [f"{where}: {p}" for p in book_browser.audit(page)]
            problems += [f"{where}: {p}" for p in page.evaluate(FIGURES_NAMED)]
            if (width, mode) in axe_runs:
                problems += [f"{where}: axe {p}" for p in _axe(page, *axe_runs[width, mode])]
            _shot(page, path, width, mode, shots_at)
            if keyboard and (width, mode) == steps[1]:  # both modes seen at the first width
                problems += [f"keyboard: {p}" for p in drive_animations_by_keyboard(page)]
        page.wait_for_timeout(100)
        problems += [str(e) for e in errors]
        problems += [f"remote request {u}" for u in remote]
    finally:
        page.context.close()
    assert not problems, "\n".join(problems)


def _first_load_weight(page, path: str, loaded: list[str]) -> list[str]:
    """The bytes of every local file the first load fetched (at most MAX_FIRST_LOAD)."""
    files = {book_browser_file(u) for u in loaded} - {None}
    raw, gz = _weight(files)
    load_ms = page.evaluate("() => Math.round(performance.getEntriesByType('navigation')[0].loadEventEnd)")
    print(f"{path}: first load {raw / 1e6:.2f} MB ({gz / 1e6:.2f} MB gzip), load event {load_ms} ms")
    if raw > MAX_FIRST_LOAD:
        biggest = sorted(files, key=lambda f: -f.stat().st_size)[:4]
        return [f"first load {raw / 1e6:.2f} MB > {MAX_FIRST_LOAD / 1e6:.0f} MB "
                f"(largest: {[f.name for f in biggest]})"]
    return []


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


_NARROW_ARTICLE = """(px) => { const main = document.querySelector('main') || document.body;
  main.style.maxWidth = px + 'px';
  return window.tinytfFigures.figures.filter(r => r.box.clientWidth).map(r => r.width); }"""


def test_figures_reflow_when_the_article_narrows_without_a_window_resize(book_server, browser):
    """The article's width changes while the window's does not (the reader hides a side bar; a notebook panel is
    dragged; the layout settles after a resize was handled): every shown figure is drawn again for its box."""
    page, errors, remote, _ = book_browser.open_page(browser, book_url(RESIZED_PAGE), viewport=(1280, 900))
    try:
        before = page.evaluate("() => window.tinytfFigures.figures.filter(r => r.box.clientWidth).map(r => r.width)")
        assert before and min(before) > 500, before  # drawn wide at 1280 px
        page.evaluate(_NARROW_ARTICLE, 420)
        page.wait_for_function(book_browser._REFLOWED, timeout=30_000)
        book_browser.settle(page)
        after = page.evaluate("() => window.tinytfFigures.figures.filter(r => r.box.clientWidth).map(r => r.width)")
        assert after and max(after) <= 420, after  # every shown figure now fits the narrowed article
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
    page, errors, _, _ = book_browser.open_page(browser, book_url("chapters/02_causal_self_attention_notes.html"))
    try:  # the temperature animation of chapter 2's lab notes
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
