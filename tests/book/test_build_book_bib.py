"""scripts/build_book.py rebuilds every page when references.bib changed since the last build: citation links
point into the bibliography by ids numbered over all its entries, and an incremental build once left the pages
that did not change themselves (chapter 12's notes) with citations that opened the wrong papers."""
from __future__ import annotations

import json
import os
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import build_book  # noqa: E402


def test_a_changed_bibliography_forces_a_full_build(tmp_path, monkeypatch):
    bib, stamp = tmp_path / "references.bib", tmp_path / "stamp.json"
    bib.write_text("@misc{a, title={A}}\n")
    monkeypatch.setattr(build_book, "ROOT", tmp_path)
    monkeypatch.setattr(build_book, "stamp_path", lambda edition: stamp)
    assert not build_book.bib_changed("en")  # no build yet: nothing to compare with
    os.utime(bib, (1_000, 1_000))
    stamp.write_text(json.dumps({"started": 2_000.0}))
    assert not build_book.bib_changed("en") and not build_book.bib_changed("zh")
    os.utime(bib, (3_000, 3_000))  # edited after the last build started
    assert build_book.bib_changed("en") and build_book.bib_changed("zh")
