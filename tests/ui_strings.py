"""The English interface strings of the book's pages, and a reader that finds them in a page's HTML (shared by
tests/book/test_zh_ui_strings.py, on the built files, and tests/browser/test_zh_edition.py, on a page after its
scripts ran): what Sphinx, the themes, myst-nb and the book's own scripts write around the text, which the Chinese
edition must say in Chinese (scripts/book_i18n.py, locales/zh_CN/LC_MESSAGES/sphinx.po and booktheme.po).

A page is read as a reader meets it: its text outside scripts, styles and code, and its placeholder, aria-label,
title, alt and tooltip attributes, leaving out what the page marks ``lang="en"`` (the switch to the English edition,
the API page's docstrings).
"""
from __future__ import annotations

import re
from html.parser import HTMLParser

# The theme's and the extensions' English interface strings; a text or an attribute fails when it is one of these
# (whole, spaces collapsed).
UI_STRINGS = {
    "hidden cell": r"(Show|Hide) code cell (source|content|outputs?)",
    "hidden cell's aria-label": r"Toggle hidden content",
    "search field": r"Search this book\.\.\.|Search",
    "API page's title": r"API reference",
    "permalink": r"Link to this (heading|definition|term|table|code|image|equation|toctree)",
    "sidebar buttons": r"Toggle (primary|secondary) sidebar|Toggle navigation",
    "colour mode": r"Color mode|Light|Dark|System Settings",
    "launch buttons": r"Launch on \w+|Launch interactive content|\w+ logo",
    "download buttons": r"Download (this page|source file|notebook file)|Print to PDF",
    "full screen": r"Fullscreen mode",
    "footer": r"© Copyright \d+\.|By .+",
    "navigation labels": r"Main|Page|Site navigation|Section Navigation|Contents|On this page",
    "next and previous": r"previous|next|previous page|next page",
    "skip and back links": r"Skip to main content|Back to top",
    "repository": r"Source repository|Repository",
}
# what the book's own script (_static/tinytf-book.js) adds to a page once it has run: only in a browser
SCRIPT_STRINGS = {"the book's scripts": r"Book contents|Show sub-pages|Launch in Binder|Open in Colab|row|item"}
PATTERNS = {name: re.compile(rf"(?:{rx})") for name, rx in UI_STRINGS.items()}
SCRIPT_PATTERNS = {name: re.compile(rf"(?:{rx})") for name, rx in SCRIPT_STRINGS.items()}
ATTRIBUTES = ("placeholder", "aria-label", "title", "alt", "data-bs-title")
SKIP = {"script", "style", "pre", "code"}  # code is not interface
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class InterfaceText(HTMLParser):
    """(where, text) of a page: its text nodes and the attributes of ATTRIBUTES, outside scripts, styles and
    subtrees marked lang="en"."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str]] = []
        self.open: list[tuple[str, bool]] = []  # (tag, leaves the subtree out)

    def leaving_out(self) -> bool:
        return any(skip for _, skip in self.open)

    def handle_starttag(self, tag, attrs) -> None:
        a = dict(attrs)
        # an element marked English inside the page (not the page itself: <html lang="en"> on the English edition)
        skip = tag in SKIP or (tag != "html" and (a.get("lang") or "").lower().startswith("en"))
        if not self.leaving_out() and not skip:
            self.found += [(f"<{tag} {k}>", " ".join(v.split())) for k, v in attrs if k in ATTRIBUTES and v]
        if tag not in VOID:
            self.open.append((tag, skip))

    def handle_startendtag(self, tag, attrs) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID and self.open and self.open[-1][0] == tag:
            self.open.pop()

    def handle_endtag(self, tag) -> None:
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i][0] == tag:
                del self.open[i:]
                return

    def handle_data(self, data) -> None:
        text = " ".join(data.split())
        if text and not self.leaving_out():
            self.found.append(("text", text))


def interface_strings(html: str, patterns: dict | None = None) -> list[tuple[str, str, str]]:
    """(kind of string, where, text) for every text or attribute of the page that is an English interface string
    (of PATTERNS, or of `patterns`)."""
    parser = InterfaceText()
    parser.feed(html)
    return [(name, where, text) for where, text in parser.found
            for name, rx in (patterns or PATTERNS).items() if rx.fullmatch(text)]
