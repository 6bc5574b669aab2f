"""The gap the figure core (tinytf/viz/figure_core.js, run in node by tests/js/adapt_runner.js) leaves left of a
subplot is sized for every y label the subplot can draw: the labels of later animation frames and the axis's
category array, not only frame 0's data. (Chapter 9's swap animation draws one short label in frame 0 and longer
ones later; sized from frame 0, the later labels ran into the panel on their left.)"""
from __future__ import annotations

import copy
import json
import subprocess

from conftest import ROOT, require

SHORT, LONG = "2017 block", "ReLU 4x -> SwiGLU 8/3 and more"


def figure(frame_labels: list[list[str]], categoryarray: list[str] | None = None) -> dict:
    """Two panels side by side; the right one's y labels are frame_labels[0] in the figure, frame_labels[k] in
    frame k."""
    def traces(labels):
        return [{"type": "bar", "orientation": "h", "x": [1, 2], "y": ["attention", "FFN"]},
                {"type": "bar", "orientation": "h", "x": [1] * len(labels), "y": labels, "xaxis": "x2", "yaxis": "y2"}]
    y2 = {"anchor": "x2", "type": "category"}
    if categoryarray:
        y2.update(categoryorder="array", categoryarray=categoryarray)
    return {"data": traces(frame_labels[0]),
            "layout": {"height": 400, "xaxis": {"domain": [0, 0.42]}, "yaxis": {},
                       "xaxis2": {"domain": [0.7, 1], "anchor": "y2"}, "yaxis2": y2},
            "frames": [{"name": str(k), "data": traces(labels)} for k, labels in enumerate(frame_labels)]}


def domains(spec: dict, width: int = 1280) -> dict:
    require("node")
    job = {"core": str(ROOT / "tinytf" / "viz" / "figure_core.js"), "spec": spec, "widths": [width]}
    out = subprocess.run(["node", str(ROOT / "tests" / "js" / "adapt_runner.js")], input=json.dumps(job),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)[0]["domains"]


def gap(d: dict) -> float:
    return d["xaxis2"][0] - d["xaxis"][1]


def test_the_gap_fits_a_label_that_only_a_later_frame_draws():
    short_only = domains(figure([[SHORT], [SHORT]]))
    long_first = domains(figure([[SHORT, LONG], [SHORT, LONG]]))
    long_later = domains(figure([[SHORT], [SHORT, LONG]]))
    assert gap(long_first) > gap(short_only) + 0.02  # the long label needs more room (at 1280 px)
    assert long_later == long_first


def test_the_gap_fits_the_category_array_and_frames_that_name_their_traces():
    long_first = domains(figure([[SHORT, LONG]]))
    assert domains(figure([[SHORT]], categoryarray=[SHORT, LONG])) == long_first
    named = figure([[SHORT], [SHORT]])
    named["frames"][1] = {"name": "1", "traces": [1], "data": [copy.deepcopy(named["data"][1])]}
    named["frames"][1]["data"][0]["y"] = [SHORT, LONG]
    del named["frames"][1]["data"][0]["yaxis"]  # the axis comes from the figure's trace 1
    assert domains(named) == long_first


def test_array_ticks_are_what_is_drawn_on_either_axis():
    """One rule for x and y: where an axis has array ticks (tickvals + ticktext, with or without
    tickmode="array", as a log axis labelled 0.1, 0.2, 0.5 ... or a numeric axis labelled by name), the gap is
    sized for their text, not for the traces' values."""
    long_first = domains(figure([[SHORT, LONG]]))
    numeric = figure([[SHORT]])
    numeric["frames"] = []
    numeric["data"][1]["y"] = [0, 1]
    numeric["layout"]["yaxis2"] = {"anchor": "x2", "tickvals": [0, 1], "ticktext": [SHORT, LONG]}
    assert domains(numeric) == long_first
    numeric["layout"]["yaxis2"]["tickmode"] = "array"
    assert domains(numeric) == long_first
    # a frame's own ticktext counts too
    later = copy.deepcopy(numeric)
    later["layout"]["yaxis2"]["ticktext"] = [SHORT, SHORT]
    later["frames"] = [{"name": "0", "data": copy.deepcopy(later["data"])},
                       {"name": "1", "data": copy.deepcopy(later["data"]),
                        "layout": {"yaxis2": {"tickvals": [0, 1], "ticktext": [SHORT, LONG]}}}]
    assert domains(later) == long_first
