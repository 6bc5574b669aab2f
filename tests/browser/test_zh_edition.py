"""The Chinese edition in a browser (_build/html/zh, built with the English one by scripts/build_book.py).

* The header's language switch goes both ways, to the same page of the other edition, by keyboard, from the
  local server and from file:// (relative links), and carries lang / hreflang; <html lang> is zh-CN / en.
* A search for 注意力 finds chapter 2 (Sphinx's Chinese search splits words with jieba): in a sample build whose
  chapter 2 is translated (conftest's zh_sample_book), and in the real edition once chapter 2 is translated.
* Every Chinese page passes the per-page audit of the English ones (test_a11y_book.audit_page: 375/768/1280 px,
  light and dark, axe-core, keyboard, contrast, page weight, offline): half of them here, half in
  test_zh_edition_pages.py.
"""
from __future__ import annotations

import pytest
from babel.messages.pofile import read_po

import book_browser
from conftest import ROOT, ZH_SAMPLE_DOC, ZH_SAMPLE_TITLE, book_url, require, toc_docnames
from test_a11y_book import PAGES, audit_page

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
    """The switch is visible, says `text` in `lang`, and Enter on it (keyboard) opens the other edition."""
    switch = page.locator(SWITCH)
    assert switch.count() == 1, f"{page.url}: {switch.count()} language switches"
    assert switch.is_visible(), f"{page.url}: the language switch is not visible"
    assert switch.inner_text().strip() == text
    assert switch.get_attribute("lang") == lang and switch.get_attribute("hreflang") == lang
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


# half of the pages here, the other half in test_zh_edition_pages.py: `make test`'s two pytest-xdist workers
# (--dist loadfile) share the audit, as they share the English one
@pytest.mark.parametrize("path", PAGES[0::2])
def test_chinese_page_for_every_reader(book_server, browser, path):
    audit_page(browser, "zh/" + path)
