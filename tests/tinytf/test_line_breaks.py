"""tinytf.lab.line_breaks: the share of a head's weight on line breaks (chapter 12)."""
import pytest
import torch

from tinytf.lab.line_breaks import line_break_weight


def test_counts_on_a_hand_made_map():
    ids = list(b"ab\n\ncd\nef")  # line breaks at 2, 3 and 6
    T = len(ids)
    w = torch.zeros(T, T)
    w[:, 0] = 1.0  # default: every row on key 0
    w[4, 3] = 1.0; w[4, 0] = 0.0  # row 4 -> break 3, one of the two latest (2, 3)
    w[7, 2], w[7, 0] = 0.6, 0.4  # row 7 -> break 2: breaks so far 2, 3, 6; latest two are 3, 6
    w[8, 6], w[8, 3], w[8, 0] = 0.5, 0.3, 0.2  # row 8 -> break 6 (latest), 0.8 on breaks
    lb = line_break_weight(w, ids, first_row=4)
    assert lb.breaks == [2, 3, 6]
    assert lb.rows == 5 and lb.on_break == 3 and lb.latest == 2
    # per row on breaks: rows 4..8 -> 1.0, 0.0, 0.0, 0.6, 0.8; lower middle of 5 values = 0.6
    assert lb.median == pytest.approx(0.6) and lb.largest == pytest.approx(1.0)


def test_median_is_the_lower_middle_for_an_even_count():
    ids = list(b"\nxyz")
    w = torch.eye(4)
    w[1, 1], w[1, 0] = 0.7, 0.3  # rows on the break: 1.0, 0.3, 0.0, 0.0
    lb = line_break_weight(w, ids)
    assert lb.median == pytest.approx(0.0) and lb.largest == pytest.approx(1.0)


def test_shape_is_checked():
    with pytest.raises(ValueError):
        line_break_weight(torch.zeros(3, 4), [10, 10, 10])
