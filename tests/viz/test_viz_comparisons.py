"""tinytf.viz.comparisons.forest_figure: every point and bar it draws is the mean and interval of the Paired it
was given (nothing recomputed), the marked rows are those whose interval excludes 0, planned apart from post hoc,
and bad input is refused clearly."""
import pytest

from tinytf.errors import TinyTFInputError
from tinytf.lab import block_comparison as bc
from tinytf.viz import show
from tinytf.viz.comparisons import CORRECTED, FOCUS, PLAIN, POST_HOC, forest_figure

SEEDS = [3, 4, 5, 6]


def _results(losses: dict) -> dict:
    """A minimal results dict in the layout of scripts/compare_blocks.py: one cell per variant."""
    runs = {name: [{"seed": s, "lr": 0.008, "warmup": 100, "metrics": {"loss": x}, "val": {"loss": x}}
                   for s, x in zip(SEEDS, xs)] for name, xs in losses.items()}
    return {"runs": runs, "settings": {"seeds": SEEDS, "lrs": [0.008], "warmups": [100]}}


@pytest.fixture(scope="module")
def pairs():
    res = _results({"old": [1.0, 1.2, 0.9, 1.1], "new": [0.6, 0.9, 0.7, 0.6], "same": [1.1, 1.1, 0.8, 1.2]})
    cells = bc.cells_of(res)
    p1 = bc.paired_stats(res, "old", "new", cells)
    c1 = bc.paired_stats(res, "old", "new", cells, n_intervals=2)
    p2 = bc.paired_stats(res, "old", "same", cells)
    c2 = bc.paired_stats(res, "old", "same", cells, n_intervals=2)
    return p1, c1, p2, c2


def _traces(fig, name):
    return [t for t in fig.data if t.name == name]


def test_points_and_bars_are_the_given_means_and_intervals(pairs):
    p1, c1, p2, c2 = pairs
    fig = forest_figure([("A", [("(1)", p1, c1), ("(2)", p2, c2)]), ("B", [("(1)", p2)])])
    means = [(y, x) for t in _traces(fig, "mean") for x, y in zip(t.x, t.y)]
    assert ("<b>(1)</b>", p1.mean) in means and ("(2)", p2.mean) in means and ("(1)", p2.mean) in means
    pts = {y: (t.text[i], list(t.customdata[i])) for t in _traces(fig, "mean") for i, y in enumerate(t.y)}
    assert pts["<b>(1)</b>"] == ("old vs new", [p1.lo, p1.hi])  # the hover: the pair and its interval
    plain = _traces(fig, "95% interval")
    focus = _traces(fig, "95% interval excludes 0 (planned)")
    assert p1.lo > 0 and p2.lo < 0 < p2.hi  # (1) excludes 0 and is marked; (2) does not
    assert list(focus[0].x) == [p1.lo, p1.hi, None] and focus[0].line.color == FOCUS
    assert list(plain[0].x) == [p2.lo, p2.hi, None] and plain[0].line.color == PLAIN
    corr = _traces(fig, "corrected interval (Bonferroni)")
    assert len(corr) == 1 and list(corr[0].x) == [c1.lo, c1.hi, None, c2.lo, c2.hi, None]
    assert corr[0].line.color == CORRECTED and c1.lo < p1.lo and c1.hi > p1.hi  # wider than the 95% bar
    # one legend entry per kind, a dotted line at 0 across every panel, the x range holds every bar
    assert sum(bool(t.showlegend) for t in fig.data) == 3
    assert any(s.x0 == 0 and s.x1 == 0 for s in fig.layout.shapes)
    lo, hi = fig.layout.xaxis2.range  # the last panel's axis, shared by all
    assert lo < min(c1.lo, c2.lo, 0) and hi > max(c1.hi, c2.hi)


def test_post_hoc_rows_are_marked_apart_and_only_where_the_interval_excludes_0(pairs):
    p1, _, p2, _ = pairs
    fig = forest_figure([("A", [("(1)", p1)]), ("B", [("(1)", p1), ("(2)", p2)])],
                        post_hoc=[("B", "(1)"), ("B", "(2)")])
    planned = _traces(fig, "95% interval excludes 0 (planned)")
    later = _traces(fig, "95% interval excludes 0 (post hoc)")
    plain = _traces(fig, "95% interval")
    assert len(planned) == len(later) == len(plain) == 1
    assert list(planned[0].x) == list(later[0].x) == [p1.lo, p1.hi, None]  # the same Paired, two questions
    assert later[0].line.color == POST_HOC != FOCUS and list(plain[0].x) == [p2.lo, p2.hi, None]
    pts = {(t.marker.color, y): t.marker.symbol for t in _traces(fig, "mean") for y in t.y}
    assert pts[POST_HOC, "<b>(1)</b>"] == "circle-open" and pts[FOCUS, "<b>(1)</b>"] == "circle"
    assert pts[PLAIN, "(2)"] == "circle"  # post hoc but its interval holds 0: not marked


def test_the_figure_is_shown_as_plotly_json(pairs, capsys):
    p1, *_ = pairs
    show(forest_figure([("A", [("(1)", p1)])], title="T"))
    assert "<tinytf figure: T>" in capsys.readouterr().out


@pytest.mark.parametrize("panels, post_hoc, message", [
    ([], (), "non-empty"),
    ([("A", [])], (), "non-empty"),
    ([("A", [("(1)", "not a Paired")])], (), "expected a Paired"),
    ([("A", [("(1)", None)])], (), "missing"),
    ("LATER", (), "its own label"),
    ("LATER1", [("A", "(9)")], "no such"),
])
def test_bad_input_is_refused_with_a_clear_message(pairs, panels, post_hoc, message):
    p1, *_ = pairs
    if panels == "LATER":
        panels = [("A", [("(1)", p1), ("(1)", p1)])]
    elif panels == "LATER1":
        panels = [("A", [("(1)", p1)])]
    with pytest.raises(TinyTFInputError, match=message):
        forest_figure(panels, post_hoc=post_hoc)
