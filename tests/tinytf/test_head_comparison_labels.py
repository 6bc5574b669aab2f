"""head_comparison: its optional ``labels`` replace the byte labels on both axes of every panel."""
import pytest

import tinytf
from tinytf.viz.snapshots import head_comparison


def test_labels_replace_the_byte_labels():
    model = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1))
    default = head_comparison({"m": model}, "a b")
    assert list(default.data[0].x) == ["0: a", "1:  ", "2: b"]
    shown = head_comparison({"m": model}, "a b", labels=["a", "␣", "b"])
    assert list(shown.data[0].x) == list(shown.data[0].y) == ["0: a", "1: ␣", "2: b"]


def test_labels_must_match_the_bytes():
    model = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1))
    with pytest.raises(tinytf.TinyTFInputError):
        head_comparison({"m": model}, "a b", labels=["a", "b"])
