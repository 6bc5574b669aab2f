"""Options of two frontier figures: the logit figure's log axis and bound line, the cache figure's context cut."""
import numpy as np
import pytest
import torch

import tinytf
from tinytf.errors import TinyTFInputError
from tinytf.lab.cache_memory import kv_cache_bytes
from tinytf.viz import frontier as fv

REC = {"steps": [0, 10, 20], "max_logit": [0.1, 2.0, 50.0], "loss": [None, 3.0, 2.0]}


def test_logit_figure_log_axis_and_bound_line():
    plain = fv.logit_growth_figure({"plain": [REC]})
    assert plain.layout.yaxis.type in (None, "linear") and len(plain.data) == 1
    fig = fv.logit_growth_figure({"plain": [REC]}, log_y=True, bound=4)
    assert fig.layout.yaxis.type == "log" and list(fig.data[0].y) == REC["max_logit"]
    line = fig.data[-1]
    assert list(line.y) == [4, 4] and list(line.x) == [0, 20] and line.line.dash == "dash" and line.name == "√D = 4"
    with pytest.raises(TinyTFInputError, match="bound"):
        fv.logit_growth_figure({"plain": [REC]}, bound=-1)


def test_cache_figure_ends_each_line_at_its_context():
    cfg = tinytf.TinyConfig(d_model=32, n_heads=2, n_layers=2, d_ff=64)
    lengths = [16, 32, 64, 128]
    fig = fv.cache_context_figure({"a": cfg, "b": cfg}, lengths, dtype=torch.float32, contexts={"a": 32})
    a_in, a_past, b = fig.data
    assert list(a_in.x) == [16, 32] and list(a_past.x) == [32, 64, 128] and list(b.x) == lengths
    assert a_past.showlegend is False and a_past.line.dash == "dot" and a_past.opacity < 1
    expected = [kv_cache_bytes(cfg, T, 1, torch.float32) / 2 ** 30 for T in lengths]
    assert np.allclose(list(a_in.y) + list(a_past.y)[1:], expected) and np.allclose(list(b.y), expected)
    with pytest.raises(TinyTFInputError, match="not in configs"):
        fv.cache_context_figure({"a": cfg}, lengths, contexts={"z": 32})
    with pytest.raises(TinyTFInputError, match="positive int"):
        fv.cache_context_figure({"a": cfg}, lengths, contexts={"a": 0})


def test_cache_figure_keeps_the_dotted_style_for_lines_past_a_context():
    # a model's own line never uses "dot", the style of every past-the-context segment
    cfg = tinytf.TinyConfig(d_model=32, n_heads=2, n_layers=2, d_ff=64)
    configs = {f"m{i}": cfg for i in range(8)}
    fig = fv.cache_context_figure(configs, [16, 32, 64], dtype=torch.float32, contexts={"m2": 16})
    own = [t for t in fig.data if t.showlegend is not False]
    past = [t for t in fig.data if t.showlegend is False]
    assert len(own) == 8 and all(t.line.dash != "dot" for t in own)
    assert len(past) == 1 and past[0].line.dash == "dot"


def test_logit_figure_draws_each_qk_norm_run_against_its_own_bound():
    """The recorded QK-norm runs carry the bound their gains allow at every recorded step: the figure draws it per
    run, dashed, in the run's colour and with its seed's marker (open); every logit lies under its own bound."""
    from tinytf.lab import frontier as frontier_lab

    runs = frontier_lab.load_logit_growth()["runs"]
    fig = fv.logit_growth_figure(runs, log_y=True)
    curves = {(t.name, t.marker.symbol): t for t in fig.data if t.line.dash is None}
    bounds = [t for t in fig.data if t.line.dash == "dash"]
    assert len(curves) == 6 and len(bounds) == len(runs["QK-norm"]) == 3  # the plain runs have no bound
    assert [t.showlegend for t in bounds] == [True, False, False]
    for seed, (rec, line) in enumerate(zip(runs["QK-norm"], bounds)):
        curve = curves[("QK-norm", line.marker.symbol.removesuffix("-open"))]
        assert list(line.y) == rec["bound"] and list(line.x) == rec["steps"] == list(curve.x)
        assert line.line.color == curve.line.color and f"seed {seed}" in line.hovertemplate
        assert all(m <= b for m, b in zip(curve.y, line.y))
    assert fig.layout.legend.yanchor == "bottom"  # on the log axis the legend sits where no curve falls


def test_cache_figure_names_a_line_that_lies_on_an_earlier_one():
    """Two models with the same cache per token up to a window: the later one's legend entry says where the
    lines coincide, the covered line is drawn wider, and each model has its own marker."""
    full = tinytf.TinyConfig(d_model=32, n_heads=2, n_layers=2, d_ff=64)
    local = full.replace(sliding_window=tinytf.SlidingWindow(size=1025))
    other = full.replace(n_layers=4)
    lengths = [256, 512, 1024, 2048, 4096]
    fig = fv.cache_context_figure({"full": full, "local": local, "other": other}, lengths, dtype=torch.float32)
    a, b, c = fig.data
    assert [a.name, b.name, c.name] == ["full", "local (= full up to 1k)", "other"]
    assert a.line.width > b.line.width == c.line.width
    assert len({a.marker.symbol, b.marker.symbol, c.marker.symbol}) == 3
