"""Figures of chapters 1, 3 and 4 (tinytf.viz.positions / norms / activations): the numbers drawn
are the numbers tinytf computes, and each figure has the traces it promises."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

import tinytf
from tinytf.viz.activations import activation_curves, activation_figure
from tinytf.viz.norms import norm_scatter_figure
from tinytf.viz.positions import offset_figure, rope_pair_paths, rope_rotation_figure, sinusoidal_figure


def test_sinusoidal_figure_draws_the_table():
    fig = sinusoidal_figure(n_positions=16, d_model=32, dims=(0, 5))
    table = tinytf.sinusoidal_table(16, 32)
    assert np.allclose(np.array(fig.data[0].z), table.numpy())
    assert [t.name for t in fig.data[1:]] == ["dimension 0", "dimension 5"]
    assert np.allclose(fig.data[2].y, table[:, 5].numpy())


def test_rope_pairs_are_rotations_by_position_times_frequency():
    paths = rope_pair_paths(d_head=8, n_positions=6, pairs=(0, 3), theta=10000.0)
    for i, xy in paths.items():
        freq = 10000.0 ** (-2 * i / 8)
        angle = torch.atan2(xy[:, 1], xy[:, 0])
        expected = torch.atan2(torch.sin(torch.arange(6) * freq), torch.cos(torch.arange(6) * freq))
        assert torch.allclose(angle, expected, atol=1e-5)
        assert torch.allclose(xy.norm(dim=-1), torch.ones(6), atol=1e-6)  # rotation keeps length
    fig = rope_rotation_figure(d_head=8, n_positions=6, pairs=(0, 3))
    assert len(fig.data) == 2 and np.allclose(fig.data[1].x, paths[3][:, 0].numpy())


def test_offset_figure_shows_the_given_scores_and_rope_scores_are_toeplitz():
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig())
    _, tr = model.run_with_trace(tinytf.encode("a" * 8))
    S = tr["blocks.0.attn.scores"][0, 0]
    for k in range(-7, 8):
        d = torch.diagonal(S, k)
        assert (d.max() - d.min()).abs() < 1e-6
    fig = offset_figure({"RoPE": S})
    assert np.allclose(np.array(fig.data[0].z), S.numpy())


def test_norm_scatter_figure_plots_the_modules_outputs():
    torch.manual_seed(0)
    x = torch.randn(8)
    ln, rms = tinytf.LayerNorm(8), tinytf.RMSNorm(8)
    fig = norm_scatter_figure({"x": x}, {"LayerNorm": ln, "RMSNorm": rms})
    order = torch.argsort(x)
    with torch.no_grad():
        assert np.allclose(fig.data[0].y, ln(x)[order].numpy(), atol=1e-6)
        assert np.allclose(fig.data[1].y, rms(x)[order].numpy(), atol=1e-6)
    assert np.allclose(fig.data[0].x, x[order].numpy())
    assert len(fig.data) == 2  # the values straddle 0: no extension
    fig = norm_scatter_figure({"x + 3": x - x.min() + 1}, {"LayerNorm": ln, "RMSNorm": rms})  # all values >= 1
    assert len(fig.data) == 4  # each line extended, dotted, to input 0
    assert fig.data[3].x[0] == 0.0 and abs(fig.data[3].y[0]) < 1e-6  # RMSNorm's line reaches the origin
    assert fig.data[2].line.dash == "dot" and fig.data[2].y[0] < 0  # LayerNorm's is negative at input 0


def test_activation_curves_and_slopes():
    curves = activation_curves(-3.0, 3.0, 61)
    z, y, slope = curves["SiLU (SwiGLU's gate)"]
    assert torch.allclose(y, F.silu(z)) and torch.allclose(slope, torch.sigmoid(z) * (1 + z * (1 - torch.sigmoid(z))),
                                                           atol=1e-6)
    z, y, slope = curves["ReLU (2017 MLP)"]
    assert torch.equal(y, torch.relu(z)) and bool((slope[z < 0] == 0).all()) and bool((slope[z > 0] == 1).all())
    fig = activation_figure()
    assert len(fig.data) == 6  # value and slope for each of the three
    assert any(a.text == "SiLU's minimum<br>−0.278 at z = −1.28" for a in fig.layout.annotations)


def test_depth_rms_figure_draws_the_median_and_stops_at_the_overflow():
    from tinytf.lab import norm_experiments as ne
    from tinytf.viz.norms import depth_rms_figure

    profiles = [ne.depth_profile(norm, n_layers=8, seeds=(0,), init_std=1 / 8) for norm in ("none", "rms")]
    fig = depth_rms_figure(profiles)
    for trace, p in zip(fig.data, profiles):
        median = p.median("activation_rms")
        finite = [v for v in median if np.isfinite(v)]
        assert len(trace.y) == len(finite) == 1 + max(i for i, v in enumerate(median) if np.isfinite(v))
        assert np.allclose(trace.y, finite)
    assert len(fig.data[0].y) < 8 and len(fig.data[1].y) == 8  # no norm: overflows within 8 blocks
    assert fig.layout.yaxis.type == "log"


def test_depth_rms_figure_coinciding_curves_take_turns_with_their_markers():
    from tinytf.lab import norm_experiments as ne
    from tinytf.viz.norms import depth_rms_figure

    profiles = [ne.depth_profile(norm, n_layers=8, seeds=(0,), init_std=1 / 8) for norm in ("none", "layer", "rms")]
    fig = depth_rms_figure(profiles)
    none, ln, rms = (list(t.marker.size) for t in fig.data)
    assert all(s > 0 for s in none)  # no other curve on top of it: every marker shown
    assert all((a > 0) != (b > 0) for a, b in zip(ln, rms))  # LayerNorm and RMSNorm coincide: one marker each block
    assert "no norm, init std 1/8: block" in fig.layout.title.text


def test_rope_turns_figure_draws_the_table_and_labels_the_line_on_it():
    from tinytf.lab.context_length import rope_angle_table
    from tinytf.viz.positions import rope_turns_figure

    cfg = tinytf.TinyConfig(d_model=128, n_heads=4)  # d_head 32: 16 pairs
    angles = rope_angle_table(cfg, [127])
    fig = rope_turns_figure(angles, 127)
    assert list(fig.data[0].x) == list(range(16))
    assert np.allclose(fig.data[0].y, [t[0] for _, _, t in angles])
    assert fig.layout.yaxis.type == "log"
    (line,) = fig.layout.shapes
    assert line.y0 == line.y1 == 1
    assert line.line.color == "#444444"  # a grey the page theme recolours in dark mode (plotly's default did not)
    # on a log axis an annotation's y is log10 of the value: the label must sit on the line at 1 turn, not at 10
    (label,) = fig.layout.annotations
    assert label.text == "one full turn" and label.yref == "y" and label.y == 0
    slow = [i for i, _, t in angles if t[0] < 1]
    assert f"pairs {slow[0]}-{slow[-1]} stay below one turn" in fig.layout.title.text
