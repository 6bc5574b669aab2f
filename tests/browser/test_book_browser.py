"""Every page of the built book in headless Chromium (Debian's /usr/bin/chromium via
Playwright), served from 127.0.0.1 with every other host blocked: it loads, logs no console
error, requests nothing remote, draws every plotly figure, typesets its math, plays its
matplotlib animations, shows the title and the chapter navigation. A screenshot of each page (the
first screen; the full page with TINYTF_FULL_SCREENSHOTS=1) is kept in _build/screenshots/ for a person to
look at.

The checks of a toc page's first load (``first_load_problems``) run on the page load of its audit in
test_a11y_book.py (``audit_page(..., first_load=docname)``), before the audit switches modes and widths: a chapter
costs seconds of CPU to load (MathJax, plotly.js, every figure), so each page is loaded once for both. That audit
also fails on any console error or request to another host, over the first load and everything after it."""
from __future__ import annotations

import pytest

from book_browser import audit
from conftest import FULL_SCREENSHOTS, SCREENSHOTS, book_url, open_page, toc_docnames

DOCS = toc_docnames()
CHAPTER_DOCS = [d for d in DOCS if d.startswith("chapters/")]
BOOK_TITLE_PART = "tinytf"
EXTRA_PAGES = ["search.html", "genindex.html", "index.html"]


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name.replace('/', '__')}.png"), full_page=FULL_SCREENSHOTS)


# Text of the page outside code, typeset math and scripts that still looks like TeX: a command or a
# $$ that MathJax did not take, or the remains of "\\text" after "\\t" became a tab ("ext{").
STRAY_TEX_JS = r"""() => {
  const skip = 'code, pre, mjx-container, script, style, .highlight, textarea';
  const walker = document.createTreeWalker(document.querySelector('main') || document.body, NodeFilter.SHOW_TEXT);
  const bad = [];
  const tex = /\\(?:text|frac|cdot|sqrt|mathrm|left|right|begin|end|times|sum)\b|\$\$|(?:^|[^\w])ext\{/;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement && n.parentElement.closest(skip)) continue;
    const m = n.textContent.match(tex);
    if (m) bad.push(n.textContent.trim().slice(0, 80));
  }
  // the TeX that MathJax typeset: a control character in it is an escape gone wrong ("\t" of "\text")
  const items = (window.MathJax && MathJax.startup && MathJax.startup.document)
    ? Array.from(MathJax.startup.document.math) : [];
  const broken = items.map(m => String(m.math)).filter(t => /[\x00-\x08\x0b-\x1f]/.test(t))
    .map(t => 'control character in formula: ' + JSON.stringify(t.slice(0, 60)));
  return bad.concat(broken).slice(0, 5);
}"""


def first_load_checks(page, docname: str) -> None:
    """The checks of the module docstring on a toc page (`docname`) just loaded at 1280 px in the reader's system
    colour mode, before anything else is done with it (an AssertionError names the first failure). Console errors
    and requests to other hosts are the caller's to check (test_a11y_book.audit_page does, after its audit)."""
    # 1. title: "<page title> — <book title>", and the page has one h1
    title = page.title()
    assert BOOK_TITLE_PART in title, f"page title {title!r}"
    assert page.locator("main h1").count() >= 1, "no h1 heading"

    # 2. chapter navigation: the sidebar links every page of the toc (landing page included)
    nav = page.eval_on_selector_all("nav.bd-docs-nav a.reference.internal",
                                    "els => els.map(e => e.getAttribute('href'))")
    linked = {href.split("#")[0].rsplit("/", 1)[-1].removesuffix(".html") for href in nav}
    expected = {d.rsplit("/", 1)[-1] for d in DOCS}
    assert expected <= linked | {docname.rsplit("/", 1)[-1]}, f"sidebar links {sorted(linked)}"

    # 3. every plotly figure has drawn its SVG
    n_figures = page.locator(".plotly-graph-div").count()
    if n_figures:
        page.wait_for_function(
            "() => [...document.querySelectorAll('.plotly-graph-div')]"
            ".every(d => d.querySelector('svg.main-svg'))", timeout=30_000)
        assert page.locator(".tinytf-noplotly").count() == 0, "a figure fell back to its 'no plotly.js' note"
        # the layout audit of test_a11y_book.py on a desktop reader's first load (that test loads at 375 px and
        # widens the window): no sideways scroll, figure text inside its figure, apart, legible
        layout = audit(page)
        assert not layout, "first load at 1280 px:\n" + "\n".join(layout)

    # 4. math is typeset by the local MathJax: every math element holds a rendered formula
    if page.locator("span.math, div.math").count():
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                               timeout=30_000)
        page.evaluate("() => MathJax.startup.promise.then(() => true)")
        untypeset = page.eval_on_selector_all(
            "span.math, div.math", "els => els.filter(e => !e.querySelector('mjx-container')).length")
        assert untypeset == 0, f"{untypeset} formulas were not typeset"
        assert page.locator("mjx-merror").count() == 0, "MathJax reported a TeX error"
        # a formula that typesets but shows TeX as text ("ext{bytes}" from a tab where \\t was meant)
        stray = page.evaluate(STRAY_TEX_JS)
        assert not stray, f"TeX shown as text on the page: {stray}"

    # 5. matplotlib animations play (to_jshtml): press Play, the frame changes
    for i in range(page.locator("div.animation").count()):
        anim = page.locator("div.animation").nth(i)
        anim.scroll_into_view_if_needed()
        slider = anim.locator("input.anim-slider")
        start = int(slider.input_value())
        first_src = anim.locator("img").get_attribute("src")
        anim.locator("button[title='Play']").click()
        page.wait_for_function(
            "([el, v]) => parseInt(el.value) !== v", arg=[slider.element_handle(), start], timeout=10_000)
        anim.locator("button[title='Pause']").click()
        assert anim.locator("img").get_attribute("src") != first_src, "animation frame did not change"

    # 6. no dead control: widget views are not rendered; live notes carry launch links
    assert page.locator(".jupyter-widgets, .widget-area").count() == 0, "a widget is rendered on a static page"
    for i in range(page.locator(".tinytf-live-note").count()):
        note = page.locator(".tinytf-live-note").nth(i)
        assert note.is_visible()
        hrefs = note.locator("a").evaluate_all("els => els.map(e => e.href)")
        assert any("mybinder.org" in h for h in hrefs) and any("colab" in h for h in hrefs), hrefs

    # 7. chapter pages: the launch buttons are there
    if docname in CHAPTER_DOCS and (page.locator("a[href*='mybinder.org/v2/gh/']").count()):
        assert page.locator("a[href*='colab.research.google.com/github/']").count() >= 1

    screenshot(page, docname)


def first_load_problems(page, docname: str) -> list[str]:
    """first_load_checks as a list of problems for the audit (empty = fine); the page is left scrolled to the top
    with nothing focused, as it was loaded."""
    try:
        first_load_checks(page, docname)
        problems = []
    except AssertionError as err:
        problems = [f"first load: {err}"]
    page.evaluate("() => { document.activeElement?.blur(); window.scrollTo(0, 0); }")
    return problems


@pytest.mark.parametrize("path", EXTRA_PAGES)
def test_generated_pages_in_browser(book_server, browser, path):
    page, console_errors, remote_requests = open_page(browser, path)
    try:
        if path == "search.html":
            page.goto(book_url("search.html?q=attention"))
            page.wait_for_load_state("networkidle")
        elif path == "index.html":
            page.wait_for_url(f"**/{DOCS[0]}.html", timeout=10_000)  # redirect to the landing page
        screenshot(page, path.removesuffix(".html"))
        page.wait_for_timeout(500)
        assert not remote_requests, remote_requests
        assert not console_errors, console_errors
    finally:
        page.context.close()


def test_every_built_page_is_tested(book_html):
    # the Chinese edition (zh/) is opened by test_zh_edition.py
    built = {str(p.relative_to(book_html)) for p in book_html.rglob("*.html")
             if not ({"_static", "_sources", "_images"} & set(p.relative_to(book_html).parts))
             and p.relative_to(book_html).parts[0] != "zh"}
    tested = {f"{d}.html" for d in DOCS} | set(EXTRA_PAGES)
    assert built <= tested, f"pages built but not opened by these tests: {sorted(built - tested)}"


def test_the_book_follows_the_readers_system_colour_scheme(book_server, browser):
    """Until a reader picks a mode with the theme button, a page is dark on a system set to dark and light on one
    set to light (pydata-sphinx-theme's "auto"), and its figures are drawn for that mode."""
    page, console_errors, remote_requests = open_page(browser, "chapters/06_decoder_block.html")
    # the page's background and a figure's tick labels: dark background and light text, or the other way round
    looks = """() => { const sum = c => c.match(/\\d+/g).slice(0, 3).map(Number).reduce((a, b) => a + b, 0);
        const title = document.querySelector('.plotly-graph-div .xtick text');
        return [document.documentElement.dataset.theme, sum(getComputedStyle(document.body).backgroundColor) < 384,
                sum(getComputedStyle(title).fill) > 384]; }"""
    try:
        for scheme in ("dark", "light"):
            page.emulate_media(color_scheme=scheme)
            page.reload()
            page.wait_for_function(f"() => document.documentElement.dataset.theme === '{scheme}'")
            page.wait_for_function("() => document.querySelector('.plotly-graph-div .xtick text')")
            page.wait_for_timeout(300)  # the figures redraw for the mode after the theme is set
            theme, dark_page, light_text = page.evaluate(looks)
            assert (theme, dark_page, light_text) == (scheme, scheme == "dark", scheme == "dark"), scheme
        assert not console_errors, console_errors
        assert not remote_requests, remote_requests
    finally:
        page.context.close()
