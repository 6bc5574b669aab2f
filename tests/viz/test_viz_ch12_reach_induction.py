"""tinytf.viz.ablation's chapter 12 figures for 12.6 and 12.7: they draw the given numbers as they are, mark the
induction diagonal where an induction head would look, and reject bad input with a clear error."""
from __future__ import annotations

import pytest
import torch

from tinytf.errors import TinyTFInputError
from tinytf.viz.ablation import head_scores_figure, induction_map_figure, reach_figure


def test_reach_figure_draws_the_values_on_a_log_axis():
    fig = reach_figure([1, 2, 4, 8], [0.73, 0.59, 0.23, 0.06], [2.45, 1.17, 0.14, 0.04])
    flips, top = fig.data
    assert list(flips.x) == [1, 2, 4, 8] and list(flips.y) == [0.73, 0.59, 0.23, 0.06]
    assert list(top.y) == [2.45, 1.17, 0.14, 0.04]
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis2.type == "log"
    assert fig.layout.width is None  # responsive: the page decides the width (phones)


@pytest.mark.parametrize("args", [([], [], []), ([1, 2], [0.5], [0.1, 0.2]), ([0, 2], [0.1, 0.2], [0.1, 0.2]),
                                  ([1, 2], [0.5, 1.5], [0.1, 0.2])])
def test_reach_figure_rejects_bad_input(args):
    with pytest.raises(TinyTFInputError, match="reach_figure"):
        reach_figure(*args)


def test_induction_map_marks_i_minus_period_plus_one():
    T, period = 8, 4
    w = torch.zeros(T, T)
    for q in range(T):
        w[q, max(q - period + 1, 0) if q >= period else q] = 1.0  # a perfect induction head on the second copy
    fig = induction_map_figure(w, period, label="block 0 head 1")
    heat, diag = fig.data
    assert list(heat.y) == [4, 5, 6, 7] and len(heat.z) == 4 and len(heat.z[0]) == T
    assert list(diag.x) == [1, 2, 3, 4] and list(diag.y) == [4, 5, 6, 7]
    assert all(heat.z[r][k] == 1.0 for r, k in zip(range(4), diag.x))  # the head's weight lies on the mark
    assert "block 0 head 1" in fig.layout.title.text and fig.layout.width is None


def test_induction_map_rejects_bad_input():
    with pytest.raises(TinyTFInputError, match="weights"):
        induction_map_figure(torch.zeros(2, 4, 4), 2)
    with pytest.raises(TinyTFInputError, match="period"):
        induction_map_figure(torch.zeros(4, 4), 4)
    with pytest.raises(TinyTFInputError, match="marked_keys"):
        induction_map_figure(torch.zeros(4, 4), 2, marked_keys=[4])


def test_induction_map_marks_the_given_keys_as_vertical_lines():
    fig = induction_map_figure(torch.full((8, 8), 1 / 8), 4, marked_keys=[2, 6], marked_label="line breaks")
    heat, diag, marks = fig.data
    assert list(marks.x) == [2, 2, None, 6, 6, None]  # one vertical segment per key, over the rows shown
    assert list(marks.y) == [3.5, 7.5, None, 3.5, 7.5, None] and marks.name == "line breaks"
    assert len(induction_map_figure(torch.full((8, 8), 1 / 8), 4).data) == 2  # unmarked: as before


def test_reach_figure_labels_only_distances_far_enough_apart():
    # on a log axis 127 and 128 sit on top of each other: only one of them gets a label, every point is still drawn
    d = [1, 2, 4, 8, 16, 32, 64, 127, 128]
    fig = reach_figure(d, [0.5] * len(d), [0.1] * len(d))
    assert list(fig.data[0].x) == d
    assert list(fig.layout.xaxis2.tickvals) == [1, 2, 4, 8, 16, 32, 64, 128]
    assert [str(v) for v in fig.layout.xaxis2.tickvals] == list(fig.layout.xaxis2.ticktext)


def test_induction_map_shows_only_the_second_copy_first_query_on_top():
    fig = induction_map_figure(torch.full((8, 8), 1 / 8), 4)
    assert tuple(fig.layout.yaxis.range) == (7.5, 3.5)  # reversed, and no tick below the last query's row
    assert fig.layout.height == 520
    assert induction_map_figure(torch.full((8, 8), 1 / 8), 4, height=300).layout.height == 300  # a thumbnail


def _table(prev):
    return [{"layer": 0, "head": 0, "previous": prev, "word_start": 0.1, "first": 0.0},
            {"layer": 0, "head": 1, "previous": 0.2, "word_start": 0.3, "first": 0.05}]


def test_head_scores_figure_draws_means_and_passage_ranges():
    fig = head_scores_figure([_table(0.6), _table(0.8)])
    prev, word, first = fig.data
    assert list(prev.x) == ["0.0", "0.1"] and prev.y[0] == pytest.approx(0.7) and prev.y[1] == pytest.approx(0.2)
    assert prev.error_y.array[0] == pytest.approx(0.1) and prev.error_y.arrayminus[0] == pytest.approx(0.1)
    assert list(word.y) == pytest.approx([0.1, 0.3]) and prev.name == "previous byte"
    assert "2 held-out passages" in fig.layout.title.text and fig.layout.width is None


def test_head_scores_figure_rejects_bad_input():
    with pytest.raises(TinyTFInputError, match="head_scores_figure"):
        head_scores_figure([])
    with pytest.raises(TinyTFInputError, match="same heads"):
        head_scores_figure([_table(0.6), _table(0.6)[::-1]])
    with pytest.raises(TinyTFInputError, match="scores"):
        head_scores_figure([[{"layer": 0, "head": 0, "previous": 0.5}]])


def test_reach_figure_draws_the_share_standard_errors_as_bars():
    fig = reach_figure([1, 2, 127], [0.73, 0.59, 0.01], [2.45, 1.17, 0.0], top_changes_se=[0.03, 0.03, 0.006])
    assert list(fig.data[0].error_y.array) == [0.03, 0.03, 0.006]
    assert fig.data[1].error_y.array is None  # the median change carries no bars
    with pytest.raises(TinyTFInputError, match="top_changes_se"):
        reach_figure([1, 2], [0.5, 0.4], [0.1, 0.2], top_changes_se=[0.01])


def test_head_scores_figure_labels_every_head():
    fig = head_scores_figure([_table(0.6), _table(0.8)])
    assert fig.layout.xaxis.dtick == 1 and fig.layout.xaxis.tickmode == "linear"
