"""head_comparison labels its axes as snapshot_attention does (a space as "␣", a line break as "↵", the one
mapping ``visible_labels``); its optional ``labels`` replace them on both axes of every panel."""
import pytest

import tinytf
from tinytf.viz import visible_labels
from tinytf.viz.snapshots import head_comparison, snapshot_attention


def test_default_labels_show_spaces_and_line_breaks():
    model = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1))
    assert visible_labels(tinytf.encode("a b\n")) == ["a", "␣", "b", "↵"]
    default = head_comparison({"m": model, "n": model}, "a b\n")
    for panel in default.data:
        assert list(panel.x) == list(panel.y) == ["0: a", "1: ␣", "2: b", "3: ↵"]
    animated = snapshot_attention({0: model}, "a b\n")
    assert list(animated.data[0].x) == list(default.data[0].x)


def test_labels_replace_the_byte_labels():
    model = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1))
    shown = head_comparison({"m": model}, "a b", labels=["x", "_", "y"])
    assert list(shown.data[0].x) == list(shown.data[0].y) == ["0: x", "1: _", "2: y"]


def test_labels_must_match_the_bytes():
    model = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1))
    with pytest.raises(tinytf.TinyTFInputError):
        head_comparison({"m": model}, "a b", labels=["a", "b"])
