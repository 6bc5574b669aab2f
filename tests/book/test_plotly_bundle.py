"""The book serves plotly.js's cartesian partial bundle; without it (no `npm ci`) the build says so aloud."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
book_offline = pytest.importorskip("book_offline")


def test_the_partial_bundle_is_chosen_when_npm_installed_it(capsys):
    if not (book_offline.PARTIAL_BUNDLE / "plotly-cartesian.min.js").is_file():
        pytest.skip("node_modules has no plotly.js-cartesian-dist-min (run `npm ci`)")
    src = book_offline.plotly_js_source()
    assert src.name == "plotly-cartesian.min.js"
    assert "warning" not in capsys.readouterr().err


def test_without_the_partial_bundle_the_full_one_is_served_with_a_warning(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(book_offline, "PARTIAL_BUNDLE", tmp_path / "absent")
    src = book_offline.plotly_js_source()
    assert src.name == "plotly.min.js"
    err = capsys.readouterr().err
    assert "npm ci" in err and "full bundle" in err
