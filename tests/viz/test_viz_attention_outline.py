"""attention_map(outline=...): a box around exactly the (row, column) cells asked for, in every panel."""
from __future__ import annotations

import pytest

import tinytf
from tinytf import viz

SMALL = dict(d_model=16, n_heads=2, d_ff=64, n_layers=2)


def outlined(fig, panel):
    """The (row label, column label) cells boxed in one heatmap panel, read back from the shapes."""
    heat = [t for t in fig.data if t.type == "heatmap" and t.name == panel][0]
    cells = set()
    for s in fig.layout.shapes:
        if (s.xref, s.yref) != (heat.xaxis, heat.yaxis):
            continue
        assert s.type == "rect" and s.x1 - s.x0 == 1 and s.y1 - s.y0 == 1  # one whole cell
        c, r = (s.x0 + s.x1) / 2, (s.y0 + s.y1) / 2  # category axes: cell k is centred on k
        assert c == int(c) and r == int(r)
        cells.add((heat.y[int(r)], heat.x[int(c)]))
    return cells


def test_outline_boxes_exactly_the_cells_asked_for():
    tinytf.seed_everything(0)
    model = tinytf.EncoderDecoder(tinytf.TinyConfig(**SMALL)).eval()
    src, tgt = "hello", "hi!"
    L = len(tgt)
    anti = [(j, L - 1 - j) for j in range(L)]  # rows 0..2, columns 2..0
    fig = viz.attention_map(model, (src, tgt), kind="cross", outline=anti)
    for panel in ("mean of heads", "head 0", "head 1"):
        heat = [t for t in fig.data if t.type == "heatmap" and t.name == panel][0]
        assert outlined(fig, panel) == {(heat.y[r], heat.x[c]) for r, c in anti}
    assert len(fig.layout.shapes) == 3 * L  # nothing else is boxed
    # a single panel, an asymmetric cell: the row is the target position, the column the source
    one = viz.attention_map(model, (src, tgt), kind="cross", heads="mean", outline=[(0, 4)])
    heat = one.data[0]
    assert outlined(one, "mean of heads") == {(heat.y[0], heat.x[4])}
    # without outline: no shapes at all (every other map of the book is unchanged)
    assert not viz.attention_map(model, (src, tgt), kind="cross").layout.shapes


def test_outline_rejects_cells_outside_the_map():
    tinytf.seed_everything(0)
    model = tinytf.EncoderDecoder(tinytf.TinyConfig(**SMALL)).eval()
    with pytest.raises(tinytf.TinyTFInputError, match="outside the map"):
        viz.attention_map(model, ("hello", "hi!"), kind="cross", outline=[(3, 0)])  # 3 target rows: 0..2
    with pytest.raises(tinytf.TinyTFInputError, match="outside the map"):
        viz.attention_map(model, ("hello", "hi!"), kind="cross", outline=[(0, 5)])  # 5 source columns
    with pytest.raises(tinytf.TinyTFInputError, match="pairs"):
        viz.attention_map(model, ("hello", "hi!"), kind="cross", outline=[3])
