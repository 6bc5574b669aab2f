"""The text alternative of a figure (tinytf/viz/figure_core.js, describeTrace, run in node by
tests/js/describe_runner.js): a horizontal dot plot (categorical y, numeric x) and a horizontal bar trace name
their labels and values; the vertical traces' descriptions are what they were."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from conftest import require

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "tinytf" / "viz" / "figure_core.js"
RUNNER = ROOT / "tests" / "js" / "describe_runner.js"

NORM, GQA = "(1) norm position", "(3) GQA"
DOTS = {"type": "scatter", "mode": "markers", "name": "one seed", "x": [-0.08324, 0.02806, 0.3624, 0.5237, -0.1863],
        "y": [NORM, NORM, NORM, GQA, GQA], "hovertemplate": "%{y}<br>a − b %{x:.2f}<extra></extra>"}
DOTS_TEXT = "one seed: (1) norm position: −0.0832, 0.0281, 0.362; (3) GQA: 0.524, −0.186"


def describe(*traces, strings=None) -> list:
    require("node")
    job = {"core": str(CORE), "strings": strings, "traces": list(traces)}
    out = subprocess.run(["node", str(RUNNER)], input=json.dumps(job), capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_a_horizontal_dot_plot_names_each_label_and_value():
    mean = {"type": "scatter", "mode": "markers", "name": "mean, 95% interval", "x": [0.000242], "y": [GQA],
            "orientation": "h"}
    assert describe(DOTS, dict(DOTS, orientation="h"), mean) == [DOTS_TEXT, DOTS_TEXT,
                                                                  "mean, 95% interval: (3) GQA: 2.42e−4"]


def test_a_dot_plot_says_only_the_points_drawn_and_at_most_16():
    gaps = dict(DOTS, x=[None, 1.5, None, 2], y=["a", "a", "b", "b"])  # a NaN is null in plotly's JSON
    many = dict(DOTS, x=list(range(20)), y=[f"row {i // 5}" for i in range(20)])
    nothing = dict(DOTS, x=[None, None], y=["a", "b"])
    words = dict(DOTS, x=["low", "high"], y=["a", "b"])  # categorical on both axes: no numbers to say
    got = describe(gaps, many, nothing, words)
    assert got[0] == "one seed: a: 1.5; b: 2"
    assert got[1] == "one seed: " + "; ".join(f"row {r}: " + ", ".join(str(5 * r + i) for i in range(5))
                                                for r in range(3)) + "; row 3: 15; and 4 more"
    assert got[2:] == [None, None]


def test_a_horizontal_bar_trace_names_each_label_and_value():
    bars = {"type": "bar", "orientation": "h", "name": "largest weight", "x": [0.5314, -1.25], "y": ["attention", "FFN"]}
    only_x = {"type": "bar", "x": [3, 4]}  # plotly draws a bar with x and no y horizontally
    assert describe(bars, only_x) == ["largest weight: attention 0.531; FFN −1.25", "bars: 0 3; 1 4"]


def test_past_16_bars_the_description_says_how_many_more():
    many = {"type": "bar", "name": "loss", "x": [f"seed {i}" for i in range(1020)], "y": [1] * 1020}
    sixteen = dict(many, x=many["x"][:16], y=[1] * 16)
    got, exact = describe(many, sixteen)
    assert got == exact + "; and 1,004 more"
    assert not exact.endswith("more")
    zh = describe(many, strings={"and {n} more": "另有 {n} 个"})[0]
    assert zh.endswith("; 另有 1,004 个")


def test_vertical_traces_are_described_as_before():
    line = {"type": "scatter", "mode": "lines", "name": "eval loss", "x": [0, 100, 200], "y": [3.2, 2.114, 1.9]}
    labelled = {"type": "scatter", "mode": "markers", "name": "one seed", "x": [NORM, GQA], "y": [0.3889, -0.02873]}
    bars = {"type": "bar", "x": ["a", "b"], "y": [1.5, 20000]}
    gap_first = {"type": "scatter", "name": "late", "x": [0, 1], "y": [None, 2.0]}
    assert describe(line, labelled, bars, gap_first) == [
        "eval loss: 3 points, from 3.2 at x = 0 to 1.9 at x = 200 (min 1.9, max 3.2)",
        "one seed: 2 points, from 0.389 at x = (1) norm position to −0.0287 at x = (3) GQA (min −0.0287, max 0.389)",
        "bars: a 1.5; b 2.00e+4",
        None]


def test_a_chinese_page_dot_plot_adds_no_english_word():
    """The labels and name come translated in the figure (scripts/book_offline.py); the core adds only numbers and
    punctuation, so the description needs no new entry in figures.po."""
    zh = dict(DOTS, name="单个种子", y=["(1) 归一化位置"] * 3 + ["(3) GQA"] * 2)
    strings = {"{n} points, from {first} at x = {x0} to {last} at x = {x1} (min {min}, max {max})":
               "{n} 个点，从 x = {x0} 处的 {first} 到 x = {x1} 处的 {last}（最小 {min}，最大 {max}）"}
    line = {"type": "scatter", "name": "损失", "x": [0, 1], "y": [2.0, 1.0]}
    dots, vertical = describe(zh, line, strings=strings)
    assert dots == "单个种子: (1) 归一化位置: −0.0832, 0.0281, 0.362; (3) GQA: 0.524, −0.186"
    assert not re.search(r"[A-Za-z]", dots.replace("GQA", ""))
    assert vertical == "损失: 2 个点，从 x = 0 处的 2 到 x = 1 处的 1（最小 1，最大 2）"


def test_counts_are_said_exactly_with_thousands_separators():
    """A trace of whole numbers (chapter 9's parameters per block: 49,152 on the bar) is described as its bars and
    tables print it, not as 4.92e+4; a trace with any fraction keeps three significant digits."""
    params = {"type": "bar", "orientation": "h", "name": "parameters per block", "x": [49152, 130944, 256],
              "y": ["attention", "FFN", "norms"]}
    gaps = {"type": "bar", "orientation": "h", "name": "differences", "x": [6, 5], "y": ["2017 block", "pre-norm"]}
    cache = {"type": "scatter", "mode": "lines", "name": "bytes", "x": [1, 2], "y": [1234, -1234567]}
    dots = dict(DOTS, x=[12000, 3], y=["a", "b"])
    assert describe(params, gaps, cache, dots) == [
        "parameters per block: attention 49,152; FFN 130,944; norms 256",
        "differences: 2017 block 6; pre-norm 5",
        "bytes: 2 points, from 1,234 at x = 1 to −1,234,567 at x = 2 (min −1,234,567, max 1,234)",
        "one seed: a: 12,000; b: 3"]
