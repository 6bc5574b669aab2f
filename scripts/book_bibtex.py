"""Sphinx extension: the bibliography's style (`bibtex_default_style: tinytf` in _config.yml).

pybtex's `plain` style, sorted by author, year and title with TeX braces ignored: an organisation written as
one braced name (``{Gemma Team}``, ``{DeepSeek-AI}``) then sorts under G and D instead of after Z (the brace sorts
after every letter).

A GitHub URL shows its address without the scheme as link text: the HTML theme would otherwise shorten a link
whose text is its address to ``owner/repo``, and some 30 entries would all read ``huggingface/transformers``.
"""
from __future__ import annotations

from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.sorting.author_year_title import SortingStyle as AuthorYearTitle
from pybtex.style.template import field, href, words


class SortingStyle(AuthorYearTitle):
    def person_key(self, person):
        return super().person_key(person).replace("{", "").replace("}", "")


class Style(PlainStyle):
    default_sorting_style = "tinytf"

    def format_url(self, e):
        url = e.fields.get("url", "")  # inside optional[...]: an entry without a URL shows none
        text = url.split("://", 1)[1] if url.startswith("https://github.com/") else url
        return words["URL:", href(field("url", raw=True))[text]]


def setup(app):
    register_plugin("pybtex.style.sorting", "tinytf", SortingStyle)
    register_plugin("pybtex.style.formatting", "tinytf", Style)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
