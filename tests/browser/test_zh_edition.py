"""The Chinese edition in a browser (_build/html/zh, built with the English one by scripts/build_book.py).

* The header's language switch goes both ways, to the same page of the other edition, by keyboard, from the
  local server and from file:// (relative links), and carries lang / hreflang; <html lang> is zh-CN / en.
* The interface is Chinese once the page's scripts have run (tests/ui_strings.py: the theme's and myst-nb's strings,
  and the words the book's own script adds, such as the sidebar's name), at 1280 and 375 px; the English page keeps
  them English. (Every built page's HTML: tests/book/test_zh_ui_strings.py.)
* A search for 注意力 finds chapter 2 (Sphinx's Chinese search splits words with jieba): in a sample build whose
  chapter 2 is translated (conftest's zh_sample_book), and in the real edition once chapter 2 is translated.
* Every Chinese page passes the per-page audit of the English ones (test_a11y_book.audit_page), narrowed to what
  words can change: half of them here, half in test_zh_edition_pages.py. A Chinese page is its English twin with
  other words: the same block structure (sections, figures, their controls, tables, admonitions, code cells: tested
  below on every page), the same scripts and style sheets (plus Sphinx's translations.js) and so the same colours.
  What the words change is checked at every width: where lines break, whether a heading, a table, a label or a
  figure's text still fits (no sideways scroll, no figure text outside its figure or over another), captions and
  descriptions, the first load's weight, console errors, other hosts, and axe-core's rules at 1280 and 375 px
  (names, lang, the narrow layout's menus). What only colours and scripts decide (text contrast in either mode,
  the switch between modes, Play and the step keys of every animation) is the English audit's: the same CSS and
  the same JavaScript on the same structure give the same answer.
"""
from __future__ import annotations

from html.parser import HTMLParser

import pytest
from babel.messages.pofile import read_po

import book_browser
from conftest import ROOT, ZH_SAMPLE_DOC, ZH_SAMPLE_TITLE, book_url, require, toc_docnames
from test_a11y_book import PAGES, audit_page
from ui_strings import PATTERNS, SCRIPT_PATTERNS, interface_strings

DOCS = toc_docnames()
SWITCH = "a.tinytf-lang-switch"
SWITCH_PAGES = ["intro.html", "chapters/03_normalisation.html"]
QUERY = "注意力"
CH2 = "chapters/02_causal_self_attention"


def chapter_2_says(word: str) -> bool:
    po = ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / f"{CH2}.po"
    with po.open("rb") as handle:
        return any(word in (m.string or "") for m in read_po(handle) if m.id)


def file_url(path: str) -> str:
    return (ROOT / "_build" / "html" / path).resolve().as_uri()


def open_any(browser, url: str, width: int = 1280):
    """A page by any URL (http or file://); requests to other hosts are aborted and recorded."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    remote: list[str] = []

    def route(r):
        url_ = r.request.url
        if url_.startswith("file://") or book_browser.is_local(url_):
            r.continue_()
        else:
            remote.append(url_)
            r.abort()

    context.route("**/*", route)
    page.goto(url, wait_until="load")
    return page, remote


def follow_switch(page, text: str, lang: str) -> None:
    """The switch is visible, says `text` in `lang` (its text's element), has a Chinese tooltip (阅读本页的中文版 /
    阅读本页英文版) and Enter on it (keyboard) opens the other edition."""
    switch = page.locator(SWITCH)
    assert switch.count() == 1, f"{page.url}: {switch.count()} language switches"
    assert switch.is_visible(), f"{page.url}: the language switch is not visible"
    assert switch.inner_text().strip() == text
    assert switch.locator("span[lang]").get_attribute("lang") == lang and switch.get_attribute("hreflang") == lang
    assert switch.get_attribute("title").startswith("阅读本页")
    assert page.evaluate("() => document.querySelector('a.tinytf-lang-switch').closest('[lang]').lang") == "zh-CN"
    switch.focus()
    assert page.evaluate("() => document.activeElement.classList.contains('tinytf-lang-switch')")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.wait_for_load_state("load")


@pytest.mark.parametrize("scheme", ["http", "file"])
@pytest.mark.parametrize("path", SWITCH_PAGES)
def test_language_switch_goes_both_ways(book_server, browser, path, scheme):
    url = book_url(path) if scheme == "http" else file_url(path)
    for width in (1280, 375):
        page, remote = open_any(browser, url, width)
        try:
            assert page.evaluate("() => document.documentElement.lang") == "en"
            follow_switch(page, "中文", "zh-CN")
            assert page.url.endswith(f"/zh/{path}"), page.url
            assert page.evaluate("() => document.documentElement.lang") == "zh-CN"
            follow_switch(page, "English", "en")
            assert page.url == url, page.url
            assert page.evaluate("() => document.documentElement.lang") == "en"
            assert not remote, remote
        finally:
            page.context.close()


@pytest.mark.parametrize("width", [1280, 375])
def test_the_interface_is_chinese_after_the_scripts_ran(book_server, browser, width):
    path = f"{CH2}.html"
    seen = {}
    for edition in ("zh/", ""):
        page, remote = open_any(browser, book_url(edition + path), width)
        try:
            page.wait_for_load_state("networkidle")
            assert page.locator(".bd-sidebar-primary[aria-label]").count() == 1  # the book's script has run
            seen[edition] = interface_strings(page.content(), {**PATTERNS, **SCRIPT_PATTERNS})
            assert not remote, remote
        finally:
            page.context.close()
    assert not seen["zh/"], f"English interface strings on the Chinese {path} at {width} px: {sorted(set(seen['zh/']))}"
    assert {name for name, _, _ in seen[""]} >= {"hidden cell", "search field", "the book's scripts"}, seen[""]


def test_switch_of_every_page_names_its_twin(book_html):
    """Every page of both editions links to the same page of the other edition (a relative URL)."""
    import re

    bad = []
    for doc in DOCS + ["search", "genindex"]:
        for edition, prefix, other in (("en", "", "zh/"), ("zh", "zh/", "")):
            page = book_html / f"{prefix}{doc}.html"
            hit = re.search(r'<a class="btn btn-sm tinytf-lang-switch" href="([^"]+)"', page.read_text(encoding="utf-8"))
            if not hit:
                bad.append(f"{prefix}{doc}.html: no language switch")
                continue
            target = (page.parent / hit.group(1)).resolve()
            if target != (book_html / f"{other}{doc}.html").resolve() or "//" in hit.group(1):
                bad.append(f"{prefix}{doc}.html: switch goes to {hit.group(1)}")
    assert not bad, bad


def search_hits(browser, url: str) -> list[str]:
    page, remote = open_any(browser, url)
    try:
        page.wait_for_selector("#search-results .search-summary, #search-results p", timeout=20_000)
        page.wait_for_function("() => !document.querySelector('#search-progress')"
                               " || document.querySelector('#search-progress').textContent === ''"
                               " || document.querySelectorAll('#search-results li').length > 0", timeout=20_000)
        page.wait_for_timeout(300)
        assert not remote, remote
        return page.eval_on_selector_all("#search-results li a", "els => els.map(a => a.getAttribute('href'))")
    finally:
        page.context.close()


def test_chinese_search_finds_a_translated_chapter(zh_sample_book, browser):
    """The sample build translates chapter 2's title and a paragraph: a search for 注意力 (a word inside 因果自注意力,
    found only when jieba splits the text into words) lists chapter 2."""
    require("chromium", "playwright")
    server = book_browser.BookServer(zh_sample_book)
    try:
        hits = search_hits(browser, server.url(f"search.html?q={QUERY}"))
    finally:
        server.stop()
    assert any(h.split("?")[0].split("#")[0] == f"{ZH_SAMPLE_DOC}.html" for h in hits), (ZH_SAMPLE_TITLE, hits)


@pytest.mark.xfail(not chapter_2_says(QUERY), strict=True,
                   reason="chapter 2's catalogue does not say 注意力 yet (translation in progress)")
def test_search_in_the_chinese_edition_finds_chapter_2(book_server, browser):
    hits = search_hits(browser, book_url(f"zh/search.html?q={QUERY}"))
    assert any(h.split("?")[0].split("#")[0] == f"{CH2}.html" for h in hits), hits


def test_every_built_chinese_page_is_audited(book_html):
    built = {str(p.relative_to(book_html / "zh")) for p in (book_html / "zh").rglob("*.html")
             if not ({"_static", "_sources", "_images"} & set(p.relative_to(book_html / "zh").parts))}
    assert built <= set(PAGES) | {"index.html"}, sorted(built - set(PAGES))


# ------------------------------------------------------------------ the per-page audit (see the module docstring)
ZH_STEPS = [(1280, "light"), (768, "light"), (375, "light")]
NO_CONTRAST = {"color-contrast": {"enabled": False}}  # colours are the English pages' (and axe's most costly rule)
ZH_AXE_RUNS = {(1280, "light"): (NO_CONTRAST, None), (375, "light"): (NO_CONTRAST, None)}
ZH_SHOTS_AT = {(1280, "light"), (375, "light")}
# The index lists the glossary's terms in the edition's language, grouped by their first character: its lists
# differ by nature. It has no figure, control or script of its own; its layout is audited at every width.
NOT_TWINS = {"genindex.html"}
INLINE = {"a", "span", "code", "em", "strong", "b", "i", "sub", "sup", "br", "kbd", "abbr", "mark", "small", "wbr",
          "cite", "q", "s", "u", "var", "samp", "dfn", "time", "script"}  # translation may reorder these
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def audit_chinese_page(browser, path: str) -> None:
    audit_page(browser, "zh/" + path, steps=ZH_STEPS, axe_runs=ZH_AXE_RUNS, shots_at=ZH_SHOTS_AT, keyboard=False)


class BlockSkeleton(HTMLParser):
    """The page's block elements in document order as "tag.class.class[role=...]": what the words of a translation
    must not change (inline elements are left out: a translation may reorder code, math and emphasis). The API
    page's Chinese note (p.tinytf-lang-note) and the div that marks its English content (lang only) are not part of
    the twin."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.open: list[tuple[str, bool]] = []  # (tag, skipped subtree)
        self.skipping = 0

    def handle_starttag(self, tag, attrs) -> None:
        a = dict(attrs)
        cls = a.get("class") or ""
        skip = "tinytf-lang-note" in cls.split()
        if tag not in VOID:
            self.open.append((tag, skip))
            self.skipping += skip
        marker_div = tag == "div" and set(a) == {"lang"}
        if self.skipping or tag in INLINE or marker_div:
            return
        role = f"[role={a['role']}]" if a.get("role") else ""
        self.blocks.append(f"{tag}.{'.'.join(sorted(cls.split()))}{role}")

    def handle_endtag(self, tag) -> None:
        if tag in VOID or not self.open or self.open[-1][0] != tag:
            return
        _, skip = self.open.pop()
        self.skipping -= skip


def block_skeleton(path) -> list[str]:
    parser = BlockSkeleton()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.blocks


@pytest.mark.parametrize("path", [p for p in PAGES if p not in NOT_TWINS] + ["index.html"])
def test_chinese_page_is_its_english_twin_with_other_words(book_html, path):
    """The premise of the narrowed Chinese audit: the same block structure as the English page (and so the same
    figures, controls, tables and boxes for the same CSS and scripts to act on)."""
    en, zh = block_skeleton(book_html / path), block_skeleton(book_html / "zh" / path)
    first = next((i for i, (x, y) in enumerate(zip(en, zh)) if x != y), min(len(en), len(zh)))
    assert en == zh, (f"{path}: the Chinese page's block structure differs from the English page's at block {first}: "
                      f"{en[first:first + 3]} vs {zh[first:first + 3]} ({len(en)} vs {len(zh)} blocks)")


def test_the_block_skeleton_sees_a_changed_structure(tmp_path):
    """The twin test can fail: a figure, a table row or a box more or less, or another class, changes the skeleton;
    words, inline order and the API note do not."""
    page = ('<html><body><div class="cell"><p>Hello <code>x</code> <em>world</em></p>'
            '<figure role="figure"><div class="plotly-graph-div"></div></figure><table><tr><td>1</td></tr></table>'
            '</div></body></html>')
    words = page.replace("Hello <code>x</code> <em>world</em>", "<em>世界</em>，<code>x</code> 你好")
    note = page.replace("<body>", '<body><p class="tinytf-lang-note">说明 <b>x</b></p><div lang="en">').replace(
        "</body>", "</div></body>")
    changed = [page.replace("<table><tr><td>1</td></tr>", "<table><tr><td>1</td></tr><tr><td>2</td></tr>"),
               page.replace('role="figure"', ""), page.replace('class="cell"', 'class="cell wide"'),
               page.replace("</div></body>", '<details><summary>Solution</summary></details></div></body>')]
    files = {}
    for name, html in {"page": page, "words": words, "note": note,
                       **{f"changed{i}": h for i, h in enumerate(changed)}}.items():
        files[name] = tmp_path / f"{name}.html"
        files[name].write_text(html, encoding="utf-8")
    base = block_skeleton(files["page"])
    assert block_skeleton(files["words"]) == base and block_skeleton(files["note"]) == base
    for i in range(len(changed)):
        assert block_skeleton(files[f"changed{i}"]) != base, changed[i]


# half of the pages here, the other half in test_zh_edition_pages.py: `make test`'s two pytest-xdist workers
# (--dist loadfile) share the audit, as they share the English one
@pytest.mark.parametrize("path", PAGES[0::2])
def test_chinese_page_for_every_reader(book_server, browser, path):
    audit_chinese_page(browser, path)
