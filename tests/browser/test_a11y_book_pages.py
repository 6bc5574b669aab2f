"""The second half of the per-page audit of tests/browser/test_a11y_book.py (every other page): the same checks, in a file
of its own so that `make test`'s two pytest-xdist workers (--dist loadfile) each audit half of the book."""
from __future__ import annotations

import pytest

from test_a11y_book import PAGES, audit_page, toc_doc


@pytest.mark.parametrize("path", PAGES[1::2])
def test_page_for_every_reader(book_server, browser, path):
    audit_page(browser, path, first_load=toc_doc(path))
