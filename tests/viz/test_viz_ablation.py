"""tinytf.viz.ablation: the figures draw the measured numbers as given (bar heights = summarised per-window
bits, whiskers = the range over groups; lens lines = lens_agreement's lists) and reject other input."""
from __future__ import annotations

import pytest

from tinytf.errors import TinyTFInputError
from tinytf.lab.ablation import summarise
from tinytf.viz.ablation import ablation_figure, lens_figure


def _result():
    labels = ["intact", "attn zero", "attn mean", "ffn zero", "ffn mean"]
    labels += [f"block {b} {s} {m}" for b in range(2) for s in ("attn", "ffn") for m in ("zero", "mean")]
    return {"bits": {lab: [1.0 + i + 0.1 * w for w in range(8)] for i, lab in enumerate(labels)}}


def test_ablation_bars_are_the_summarised_measurements():
    res = _result()
    fig = ablation_figure(res, groups=4, baselines={"bigram": 3.9})
    summary = summarise(res["bits"], 4)
    bars = {(t.legendgroup, t.x[0]): t for t in fig.data if t.type == "bar"}
    assert len(bars) == 4 * (1 + 2)  # 4 styles x (all blocks + 2 blocks)
    bar = bars[("FFN mean-ablated", "block 1")]
    s = summary["block 1 ffn mean"]
    assert bar.y[0] == pytest.approx(s["mean"])
    assert bar.y[0] + bar.error_y.array[0] == pytest.approx(max(s["groups"]))
    assert bar.y[0] - bar.error_y.arrayminus[0] == pytest.approx(min(s["groups"]))
    assert bars[("attention zeroed", "all blocks")].y[0] == pytest.approx(summary["attn zero"]["mean"])
    assert all(a.text for a in fig.layout.annotations)  # no annotation without text (Plotly shows "new text")
    # every reference line is drawn in both panels and named, with its value, in the legend
    assert {t.name for t in fig.data if t.type == "scatter"} == {f"intact model {summary['intact']['mean']:.2f}",
                                                                  "bigram 3.90"}
    assert sorted(round(s.y0, 2) for s in fig.layout.shapes) == sorted([round(summary["intact"]["mean"], 2)] * 2 + [3.9] * 2)
    # the two panels are stacked, each the full width (side by side, the left one was too narrow)
    assert tuple(fig.layout.xaxis.domain) == tuple(fig.layout.xaxis2.domain) == (0.0, 1.0)


def test_lens_lines_are_the_readings():
    readings = {"quarter 0": {"agree": [0.1, 0.3, 1.0], "bits": [8.5, 3.0, 2.0]},
                "quarter 1": {"agree": [0.2, 0.4, 1.0], "bits": [8.4, 3.1, 2.1]}}
    fig = lens_figure(readings)
    assert len(fig.data) == 4
    assert list(fig.data[0].y) == [0.1, 0.3, 1.0] and list(fig.data[1].y) == [8.5, 3.0, 2.0]
    assert list(fig.data[0].x) == ["embedding", "after block 0", "after block 1"]
    with_baselines = lens_figure(readings, baselines={"unigram": 4.8, "bigram": 3.88})
    texts = [a.text for a in with_baselines.layout.annotations]
    assert "unigram, 4.80" in texts and "bigram, 3.88" in texts and len(with_baselines.data) == 4


@pytest.mark.parametrize("call", [lambda: ablation_figure({}), lambda: ablation_figure({"bits": {"x": [1.0]}}),
                                  lambda: ablation_figure(_result(), groups=3), lambda: lens_figure({}),
                                  lambda: lens_figure({"a": {"agree": [1.0]}})])
def test_bad_input(call):
    with pytest.raises(TinyTFInputError):
        call()
