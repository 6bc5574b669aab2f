"""tinytf.viz.figure_view: the live panel's plot widget sends the whole figure only when its structure
changes, otherwise the changed values; applying them gives exactly the new figure."""
from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path

import pytest

import tinytf
from tinytf import viz
from tinytf.viz.figure_view import FigureView, apply_patch, figure_patch

SMALL = tinytf.TinyConfig(d_model=16, n_heads=2, d_ff=64, n_layers=2)
ROOT = Path(__file__).resolve().parents[2]


def size(msg) -> int:
    return len(json.dumps(msg, separators=(",", ":"), ensure_ascii=False))


@pytest.fixture
def panel():
    return viz.live_panel(text="cat", config=SMALL, checkpoints={})


def test_first_figure_is_sent_whole(panel):
    msg = panel.plot.last_message
    assert msg["type"] == "full" and msg["rev"] == panel.plot.revision == 1
    assert [f["name"] for f in msg["fig"]["frames"]][:3] == ["embed", "norm1", "qkv"]
    assert msg["fig"]["layout"]["template"]  # the cell figures' look travels with it


@pytest.mark.parametrize("control,value", [("seed", 5), ("norm", "layer"), ("text", "dog"), ("layer", 1)])
def test_same_structure_sends_only_what_changed(panel, control, value):
    held = copy.deepcopy(panel.plot.shown)  # what the browser holds
    full = size({"type": "full", "fig": held})
    getattr(panel, control).value = value
    msg = panel.plot.last_message
    assert msg["type"] == "patch" and msg["base"] == msg["rev"] - 1 == 1
    assert msg["ops"], "nothing was sent although the numbers changed"
    assert apply_patch(held, msg["ops"]) == panel.plot.shown  # the browser ends with exactly the new figure
    assert not any(op[0][:1] == ["layout"] and op[0][1:2] == ["template"] for op in msg["ops"])
    assert size(msg) < 0.75 * full


def test_new_structure_sends_the_whole_figure(panel):
    panel.text.value = "cats"  # another token count: every array has another shape
    assert panel.plot.last_message["type"] == "full"
    panel.view.value = "attention"  # another view
    assert panel.plot.last_message["type"] == "full"
    panel.head.value = 1  # one heatmap instead of one per head
    assert panel.plot.last_message["type"] == "full"
    panel.norm_position.value = "post"  # same view, other traces and frames
    panel.view.value = "stepper"
    panel.norm_position.value = "pre"
    assert panel.plot.last_message["type"] == "full"
    assert "norm1" in [f["name"] for f in panel.plot.last_message["fig"]["frames"]]


def test_bad_input_sends_nothing(panel):
    msg = panel.plot.last_message
    panel.text.value = ""
    assert panel.plot.last_message is msg and "empty" in panel.message.value


def test_figure_patch_operations():
    old = {"data": [{"z": {"dtype": "f4", "bdata": "AAAA"}, "name": "a", "x": [1, 2]}], "layout": {"t": 1, "u": 2}}
    new = {"data": [{"z": {"dtype": "f4", "bdata": "AACA"}, "name": "a", "x": [1, 2, 3]}], "layout": {"t": 1, "v": 3}}
    ops = figure_patch(old, new)
    assert ops == [[["data", 0, "z"], {"dtype": "f4", "bdata": "AACA"}], [["data", 0, "x"], [1, 2, 3]],
                   [["layout", "v"], 3], [["layout", "u"]]]
    assert apply_patch(copy.deepcopy(old), ops) == new
    assert figure_patch(new, copy.deepcopy(new)) == []


def test_a_view_that_missed_messages_gets_the_whole_figure(monkeypatch):
    view = FigureView({"data": [{"type": "bar", "y": [1, 2]}], "layout": {}})
    view.set_figure({"data": [{"type": "bar", "y": [1, 3]}], "layout": {}})
    sent = []
    monkeypatch.setattr(view, "send", lambda msg, buffers=None: sent.append((msg, buffers)))
    view._on_frontend_message(view, {"type": "need_full"}, [])
    (msg, _), = sent
    assert msg["type"] == "full" and msg["rev"] == view.revision == 2 and msg["fig"]["data"][0]["y"] == [1, 3]


def test_plotly_js_comes_from_the_installed_package(monkeypatch):
    from plotly.offline import get_plotlyjs_version

    view = FigureView()
    sent = []
    monkeypatch.setattr(view, "send", lambda msg, buffers=None: sent.append((msg, buffers)))
    view._on_frontend_message(view, {"type": "need_plotly"}, [])
    (msg, buffers), = sent
    assert msg == {"type": "plotly", "version": get_plotlyjs_version()}
    assert f"plotly.js v{get_plotlyjs_version()}".encode() in bytes(buffers[0][:200])
    js = (ROOT / "tinytf" / "viz" / "figure_view.js").read_text(encoding="utf-8")
    assert "http" not in js.replace("https://", "http")  # no URL of another host in the widget


def test_widget_code_is_package_data():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    assert "viz/*.js" in data["tinytf"]
    js = (ROOT / "tinytf" / "viz" / "figure_view.js").read_text(encoding="utf-8")
    # one div, drawn and redrawn in place by the figure core (its controls, theme and resize), not by plotly itself
    assert "tinytfCore.draw(div" in js and "tinytfCore.update(div" in js
    assert "Plotly.react(" not in js and "newPlot" not in js and "sliders" not in js
