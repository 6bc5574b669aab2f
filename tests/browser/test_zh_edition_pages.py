"""The second half of the Chinese edition's per-page audit (test_zh_edition.py has the first, and says which of the
English pages' checks, test_a11y_book.audit_page, a Chinese page needs), in a file of its own so that `make test`'s
two pytest-xdist workers (--dist loadfile) each audit half of the edition."""
from __future__ import annotations

import pytest

from test_a11y_book import PAGES
from test_zh_edition import audit_chinese_page


@pytest.mark.parametrize("path", PAGES[1::2])
def test_chinese_page_for_every_reader(book_server, browser, path):
    audit_chinese_page(browser, path)
