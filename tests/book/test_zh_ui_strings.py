"""The Chinese edition's interface is Chinese (pure Python, on the built book; no browser).

What Sphinx, the themes and myst-nb write around the text (the hidden cells' "Show code cell source", the search
field's placeholder, the permalinks' "Link to this heading", the header's buttons, the footer, the API page's title
in the sidebar) once stayed English on every Chinese page. scripts/book_i18n.py translates it through
locales/zh_CN/LC_MESSAGES/sphinx.po and booktheme.po, and scripts/build_book.py sets the search placeholder.

Every page of both editions is read as tests/ui_strings.py says (text and the attributes a reader meets, without
code and without what the page marks English). No Chinese page may hold one of its English interface strings, and
every kind of them must be on some English page (so the check reads the places where they are, and the list is the
theme's words). What the book's own script adds once it has run is checked in a browser
(tests/browser/test_zh_edition.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import toc_docnames
from ui_strings import UI_STRINGS, interface_strings

EXTRA_PAGES = ["search", "genindex"]  # pages of the theme, not of the table of contents


def pages(root: Path) -> list[Path]:
    return [root / f"{doc}.html" for doc in toc_docnames() + EXTRA_PAGES if (root / f"{doc}.html").is_file()]


def test_the_chinese_pages_have_no_english_interface_string(book_html):
    zh = book_html / "zh"
    assert (zh / "index.html").is_file()
    bad = [f"{page.relative_to(zh)}: {name}: {where} {text!r}"
           for page in pages(zh) for name, where, text in interface_strings(page.read_text(encoding="utf-8"))]
    assert not bad, f"{len(bad)} English interface string(s) on Chinese pages:\n" + "\n".join(sorted(set(bad))[:60])


def test_the_english_pages_have_every_interface_string(book_html):
    """The other half: the English edition keeps its interface English, and each kind of string the Chinese test
    looks for is really on an English page (a pattern that matches nothing would check nothing)."""
    seen = {name for page in pages(book_html) for name, _, _ in interface_strings(page.read_text(encoding="utf-8"))}
    assert seen == set(UI_STRINGS), f"not on any English page: {sorted(set(UI_STRINGS) - seen)}"


@pytest.mark.parametrize("html, expected", [
    ('<summary aria-label="Toggle hidden content"><p>Show code cell source</p></summary>',
     {"hidden cell", "hidden cell's aria-label"}),
    ('<input placeholder="Search this book..."/><a title="Link to this heading">#</a>', {"search field", "permalink"}),
    ('<p>© Copyright 2026.</p><img alt="Binder logo">', {"footer", "launch buttons"}),
    ('<a lang="en" title="Read this page in English">English</a><div lang="en"><a title="Link to this heading">#</a>'
     '</div><script>var s = "Search";</script>', set()),
    ('<summary aria-label="显示或隐藏折叠的内容"><p>显示代码</p></summary><p>Show code cell sources and more</p>', set()),
])
def test_the_check_finds_the_strings_and_leaves_english_marked_text_alone(html, expected):
    assert {name for name, _, _ in interface_strings(html)} == expected


def test_the_launch_tooltips_are_whole_chinese_phrases():
    """The theme builds a launch button's tooltip as translation("Launch on") + " Binder" (启动于 Binder); the
    Chinese pages get 在 Binder 中启动 / 在 Colab 中启动, and nothing else in the page changes."""
    import book_i18n

    snippet = ('<li><a href="https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/chapters/x.ipynb" target="_blank"\n'
               '   class="btn btn-sm dropdown-item"\n   title="启动于 Binder"\n'
               '   data-bs-placement="left" data-bs-toggle="tooltip"\n>'
               '<span class="btn__text-container">Binder</span></a></li>\n'
               '<li><a href="https://colab.research.google.com/github/o/r/blob/main/chapters/x.ipynb" target="_blank"\n'
               '   class="btn btn-sm dropdown-item"\n   title="启动于 Colab"\n>'
               '<span class="btn__text-container">Colab</span></a></li>\n'
               '<p title="启动于 Binder 的说明">启动于 Binder</p>')
    out = book_i18n.launch_titles_zh(snippet)
    assert 'title="在 Binder 中启动"' in out and 'title="在 Colab 中启动"' in out
    assert 'title="启动于 Binder"' not in out and 'title="启动于 Colab"' not in out
    assert out.replace("在 Binder 中启动", "启动于 Binder").replace("在 Colab 中启动", "启动于 Colab") == snippet
    assert book_i18n.launch_titles_zh('title="Launch on Binder"') == 'title="在 Binder 中启动"'
