"""The second half of the Chinese edition's per-page audit (test_zh_edition.py has the first): the same checks as
the English pages' (test_a11y_book.audit_page), in a file of its own so that `make test`'s two pytest-xdist workers
(--dist loadfile) each audit half of the edition."""
from __future__ import annotations

import pytest

from test_a11y_book import PAGES, audit_page


@pytest.mark.parametrize("path", PAGES[1::2])
def test_chinese_page_for_every_reader(book_server, browser, path):
    audit_page(browser, "zh/" + path)
