"""tinytf.experiments (chapter 5's measurements) and tinytf.viz.gradients (its figures)."""
from __future__ import annotations

import math

import pytest

from conftest import require_module
import torch
import torch.nn.functional as F

import tinytf
from tinytf import experiments as ex

SMALL = tinytf.TinyConfig(d_model=32, n_heads=4, d_ff=128, n_layers=3)


def _model(cfg=SMALL, seed=0):
    torch.manual_seed(seed)
    return tinytf.TinyTransformer(cfg)


def test_measure_layers_matches_a_plain_backward_pass():
    model = _model()
    ids, targets = torch.randint(0, 256, (2, 5)), torch.randint(0, 256, (2, 5))
    m = ex.measure_layers(model, ids, targets)
    assert all(p.grad is None for p in model.parameters()), "measure_layers leaves no gradients behind"
    # the same loss and gradients, computed without the measurement code
    loss = F.cross_entropy(model(ids).flatten(0, 1), targets.flatten())
    loss.backward()
    expected = [math.sqrt(sum(float(p.grad.pow(2).sum()) for p in b.parameters())) for b in model.blocks]
    assert m.loss == pytest.approx(loss.item(), rel=1e-6)
    assert m.grad_norm == pytest.approx(expected, rel=1e-5)
    _, trace = model.run_with_trace(ids)
    rms = [trace[f"blocks.{i}.resid_post"].pow(2).mean(-1).sqrt().mean().item() for i in range(3)]
    assert m.activation_rms == pytest.approx(rms, rel=1e-6)


def test_stream_replaces_the_embeddings():
    model = _model()
    stream = torch.randn(2, 5, 32)
    targets = torch.randint(0, 256, (2, 5))
    a = ex.measure_layers(model, torch.randint(0, 256, (2, 5)), targets, stream)
    b = ex.measure_layers(model, torch.randint(0, 256, (2, 5)), targets, stream)
    assert a.grad_norm == b.grad_norm and a.activation_rms == b.activation_rms  # the ids no longer matter
    c = ex.measure_layers(model, torch.randint(0, 256, (2, 5)), targets, 2 * stream)
    assert c.activation_rms != a.activation_rms


def test_token_similarity():
    same = torch.ones(1, 4, 8)
    assert ex.token_similarity(same) == pytest.approx(1.0)
    orthogonal = torch.eye(4)[None]  # 4 positions, 4 features, pairwise orthogonal
    assert ex.token_similarity(orthogonal) == pytest.approx(0.0, abs=1e-7)
    with pytest.raises(tinytf.TinyTFInputError):
        ex.token_similarity(torch.ones(1, 1, 8))


def test_layer_profile_is_deterministic_averages_seeds_and_keeps_the_rng():
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    p1 = ex.layer_profile(SMALL, seeds=(0, 1), batch=2, seq_len=4)
    assert torch.equal(torch.rand(3), expected_next), "layer_profile must not move the caller's RNG"
    ex._MEASURED.clear()  # measure again rather than return the stored result
    p2 = ex.layer_profile(SMALL, seeds=(0, 1), batch=2, seq_len=4)
    assert p1.grad_norm == p2.grad_norm and p1 is not p2
    p3 = ex.layer_profile(SMALL, seeds=(0, 1), batch=2, seq_len=4, label="again")
    assert p3.label == "again" and p3.grad_norm == p1.grad_norm
    geo = [math.sqrt(a * b) for a, b in zip(p1.per_seed[0].grad_norm, p1.per_seed[1].grad_norm)]
    assert p1.grad_norm == pytest.approx(geo, rel=1e-9)
    assert p1.depth == 3 and p1.grad_ratio == pytest.approx(p1.grad_norm[0] / p1.grad_norm[-1])
    assert p1.per_layer_factor == pytest.approx(p1.grad_ratio ** 0.5)
    assert p1.label == "3 blocks, pre-norm, residual"
    assert torch.get_num_threads() >= 1


def test_chapter_5_findings_hold():
    """The measured facts chapter 5's prose relies on, at a cheap size."""
    base = tinytf.TinyConfig(d_model=64, n_heads=4, d_ff=256, n_layers=12)
    kw = dict(seeds=(0, 1), batch=2, seq_len=8)
    residual = ex.layer_profile(base, **kw)
    plain = ex.layer_profile(base.replace(residual=False), **kw)
    assert 0.5 < residual.grad_ratio < 2  # the highway: first block's gradient ~ last block's
    assert plain.grad_ratio > 10  # without it, a product of per-layer factors
    assert plain.token_similarity[-1] > 0.95 > residual.token_similarity[-1]  # positions collapse
    post = ex.layer_profile(base.replace(norm_position="post"), init_std=64 ** -0.5, **kw)
    assert post.activation_rms == pytest.approx([1.0] * 12, abs=1e-3)  # post-norm cannot explode
    pre = ex.layer_profile(base, init_std=64 ** -0.5, **kw)
    assert pre.activation_rms[-1] > 2 * pre.activation_rms[0]  # the pre-norm stream grows


def test_depth_sweep_and_table():
    profiles = ex.depth_sweep(SMALL, depths=(2, 3), seeds=(0,), batch=2, seq_len=4)
    assert [p.depth for p in profiles] == [2, 3]
    table = ex.format_profiles(profiles, columns=("grad_ratio", "similarity_last"))
    lines = table.splitlines()
    assert len(lines) == 4 and "first/last" in lines[0] and lines[2].startswith("2 blocks")
    assert f"{profiles[1].grad_ratio:.3g}" in lines[3]
    with pytest.raises(tinytf.TinyTFInputError, match="unknown column"):
        ex.format_profiles(profiles, columns=("nope",))


@pytest.mark.parametrize("call, message", [
    (lambda m: ex.measure_layers(m, torch.zeros(2, 5, dtype=torch.long), torch.zeros(2, 4, dtype=torch.long)),
     "targets have shape"),
    (lambda m: ex.measure_layers(m, torch.zeros(2, 5, dtype=torch.long), torch.zeros(2, 5, dtype=torch.long),
                                 torch.zeros(2, 5, 7)), "stream has shape"),
    (lambda m: ex.measure_layers(m, torch.tensor([[300]]), torch.tensor([[0]])), "outside the vocabulary"),
    (lambda m: ex.layer_profile(SMALL, seeds=()), "at least one seed"),
    (lambda m: ex.layer_profile(SMALL.replace(max_seq_len=4), seq_len=8), "max_seq_len"),
])
def test_bad_input_gets_a_clear_message(call, message):
    with pytest.raises(tinytf.TinyTFInputError, match=message):
        call(_model())


def test_gradient_figure_draws_the_measured_numbers():
    require_module("plotly")
    from tinytf.viz.gradients import layer_profile_figure

    profiles = ex.depth_sweep(SMALL, depths=(2, 3), seeds=(0,), batch=2, seq_len=4)
    fig = layer_profile_figure(profiles, quantities=("activation_rms", "grad_norm"))
    assert len(fig.data) == 4  # one line per profile per panel
    assert list(fig.data[0].y) == profiles[0].activation_rms and list(fig.data[3].y) == profiles[1].grad_norm
    assert list(fig.data[1].x) == [0, 1, 2]  # blocks count from 0, as in the trace
    assert fig.layout.yaxis2.type == "log" and fig.layout.yaxis.type == "linear"
    assert fig.data[0].line.color != fig.data[1].line.color  # colour by depth
    with pytest.raises(tinytf.TinyTFInputError):
        layer_profile_figure(profiles, quantities=("loss",))
    with pytest.raises(tinytf.TinyTFInputError):
        layer_profile_figure([])


def test_gradient_figure_compact_legend_names_colours_and_dashes():
    require_module("plotly")
    from tinytf.viz.gradients import layer_profile_figure

    profiles = ex.depth_sweep(SMALL, depths=(2, 3), seeds=(0,), batch=2, seq_len=4)
    profiles += ex.depth_sweep(SMALL.replace(residual=False), depths=(2,), seeds=(0,), batch=2, seq_len=4)
    fig = layer_profile_figure(profiles, legend="keys", key_names={False: "without the skip"})
    lines, keys = fig.data[:3], fig.data[3:]
    assert not any(t.showlegend for t in lines)  # the lines keep their names for hover, out of the legend
    assert [t.name for t in keys] == ["2 blocks", "3 blocks", "residual", "without the skip"]
    assert keys[0].line.color == lines[0].line.color and keys[3].line.dash == lines[2].line.dash
    assert all(list(t.y) == [None] for t in keys)  # no data: the entries only name the styles
    with pytest.raises(tinytf.TinyTFInputError, match="legend"):
        layer_profile_figure(profiles, legend="short")


@pytest.mark.parametrize("cfg", [
    SMALL,  # pre-norm, RMSNorm
    SMALL.replace(norm_position="post"),  # post-norm
    tinytf.config_2017(d_model=32, n_heads=4, n_layers=2),  # the 2017 block: post-norm, LayerNorm with beta
    SMALL.replace(norm_position="sandwich", norm="rms_offset"),  # Gemma: two offset RMSNorms per sublayer
], ids=["pre-norm", "post-norm", "2017", "sandwich"])
def test_non_norm_parameters_leave_out_every_norm(cfg):
    """``_non_norm_parameters`` and ``norms.is_norm`` share one list of norm classes (``norms.NORM_TYPES``):
    the norms found are exactly the block's own (norm1, norm2, or their pre/post pairs), gains and betas."""
    from tinytf.lab.experiments import _non_norm_parameters
    from tinytf.norms import NORM_TYPES, is_norm

    block = _model(cfg).blocks[0]
    expected = [block.norm1, block.norm2]
    if cfg.norm_position == "sandwich":
        expected = [n for pair in expected for n in (pair.pre, pair.post)]
    assert all(isinstance(n, NORM_TYPES) for n in expected)
    assert {id(m) for m in block.modules() if is_norm(m)} == {id(n) for n in expected}
    norm_params = {id(p) for n in expected for p in n.parameters()}
    kept = _non_norm_parameters(block)
    assert {id(p) for p in kept} == {id(p) for p in block.parameters()} - norm_params
    if cfg.norm == "layer" and cfg.bias:
        assert any(n.bias is not None for n in expected)  # the betas are left out too


@pytest.mark.parametrize("norm", ["rms", "layer", "rms_offset"])
def test_every_norm_make_norm_builds_is_a_norm(norm):
    from tinytf.norms import is_norm, make_norm

    assert is_norm(make_norm(SMALL.replace(norm=norm)))


@pytest.mark.parametrize("value, seeds, spec, printed", [
    (1.27, [1.2, 1.4], ".2f", "1.3"),  # the seeds disagree in the first decimal
    (1.45, [1.42, 1.48], ".2f", "1.45"),
    (1.0001, [1.0000, 1.0002], ".2f", "1.00"),  # never more decimals than the format gives
    (14.1, [12.0, 17.0], "#.3g", "14"),
    (107.0, [80.0, 140.0], "#.3g", "110"),
    (0.0193, [0.0186, 0.0201], "#.3g", "0.019"),
    (0.0193, [0.01930, 0.01931], "#.3g", "0.0193"),  # at most 3 significant digits
    (2.0, [0.5, 9.0], "#.3g", "2"),  # at least 1
    (0.859, [0.80, 0.90], ".3f", "0.9"),
    (1.27, [1.27], ".2f", "1.27"),  # one seed: no spread to go by, the format's own digits
    (107.0, [107.0], "#.3g", "107"),
])
def test_values_without_their_range_are_rounded_to_the_seeds(value, seeds, spec, printed):
    from tinytf.lab.experiments import round_to_seeds

    assert round_to_seeds(value, seeds, spec) == printed


def test_table_rounds_only_values_printed_without_their_range():
    profile = ex.layer_profile(SMALL, seeds=(0, 1, 2), batch=2, seq_len=4)
    with_range = ex.format_profiles([profile], columns=("grad_ratio", "ratio_spread")).splitlines()[-1]
    assert f"{profile.grad_ratio:#.3g}".rstrip(".") in with_range
    alone = ex.format_profiles([profile], columns=("grad_ratio",)).splitlines()[-1]
    seeds = [r.grad_norm[0] / r.grad_norm[-1] for r in profile.per_seed]
    from tinytf.lab.experiments import round_to_seeds

    assert alone.split()[-1] == round_to_seeds(profile.grad_ratio, seeds, "#.3g")


def test_table_formats_replace_a_columns_digits():
    profile = ex.layer_profile(SMALL, seeds=(0, 1, 2), batch=2, seq_len=4)
    cosines = [r.token_similarity[-1] for r in profile.per_seed]
    from tinytf.lab.experiments import round_to_seeds

    row = ex.format_profiles([profile], columns=("similarity_last",), formats={"similarity_last": ".2f"})
    assert row.splitlines()[-1].split()[-1] == round_to_seeds(profile.token_similarity[-1], cosines, ".2f")
    with pytest.raises(tinytf.TinyTFInputError, match="unknown column"):
        ex.format_profiles([profile], columns=("grad_ratio",), formats={"nope": ".2f"})


SETUP_SUMMARIES = {"large updates": "pre-norm's stream grows; block 0's gradient larger in both",
                   "small updates": "neither stream grows; both balanced",
                   "own embeddings": "pre-norm's stream grows; block 0's gradient larger in pre-norm"}


def _setup_runs(cfg):
    """Chapter 5's three set-ups, each a pair (pre-norm, post-norm) of ``cfg``'s stacks."""
    setups = {"large updates": dict(init_std=cfg.d_model ** -0.5), "small updates": {},
              "own embeddings": dict(random_stream=False)}
    return {name: [ex.layer_profile(cfg.replace(norm_position=where), label=f"{where}-norm", **kw)
                   for where in ("pre", "post")] for name, kw in setups.items()}


def test_setup_table_prints_chapter_5s_table():
    """The table of section 5.4, on its own runs: the text the chapter prints."""
    runs = _setup_runs(tinytf.TinyConfig(d_model=64, n_heads=4, d_ff=256, n_layers=12))
    assert ex.format_setups(runs, SETUP_SUMMARIES) == "\n".join([
        "                  stream RMS, pre-norm   post-norm  first/last  first/last",
        "set-up            leaving block 0 → 11  leaving 11    pre-norm   post-norm  in one line",
        "large updates               1.65 → 4.8       1.000         8.3          15  "
        "pre-norm's stream grows; block 0's gradient larger in both",
        "small updates              1.00 → 1.00        1.00        0.98        1.00  neither stream grows; both balanced",
        "own embeddings          0.0233 → 0.074        1.00         2.4        0.99  "
        "pre-norm's stream grows; block 0's gradient larger in pre-norm"])


def test_setup_table_rounds_each_value_to_its_seeds():
    runs = _setup_runs(SMALL)
    rows = ex.format_setups(runs, SETUP_SUMMARIES).splitlines()
    assert "leaving block 0 → 2" in rows[1] and "leaving 2" in rows[1]  # the last block of a 3-block stack
    for row, (name, (pre, post)) in zip(rows[2:], runs.items()):
        def agreed(p, column):
            return ex.round_to_seeds(ex.COLUMNS[column][1](p), [ex.SEED_VALUES[column](p, r) for r in p.per_seed],
                                     ex.COLUMNS[column][2])
        expected = [agreed(pre, "rms_first"), "→", agreed(pre, "rms_last"), agreed(post, "rms_last"),
                    agreed(pre, "grad_ratio"), agreed(post, "grad_ratio")]
        assert row.startswith(name) and row.endswith("  " + SETUP_SUMMARIES[name])
        assert row[len(name):-len(SETUP_SUMMARIES[name])].split() == expected


def test_setup_table_rejects_mismatched_runs():
    runs = _setup_runs(SMALL)
    with pytest.raises(tinytf.TinyTFInputError, match="no summary"):
        ex.format_setups(runs, {"large updates": "x"})
    with pytest.raises(tinytf.TinyTFInputError, match="pair"):
        ex.format_setups({"swapped": runs["small updates"][::-1]}, {"swapped": "x"})
    deeper = ex.layer_profile(SMALL.replace(n_layers=4), seeds=(0,), batch=2, seq_len=4)
    with pytest.raises(tinytf.TinyTFInputError, match="same depth"):
        ex.format_setups({"a": runs["small updates"], "b": [deeper, runs["small updates"][1]]}, {"a": "x", "b": "y"})


def test_relative_gain_is_one_for_a_linear_map_and_about_sqrt2_for_a_product():
    from tinytf.lab import experiments as ex

    torch.manual_seed(0)
    gain, rms = ex.relative_gain(lambda x: 3.0 * x, 64)
    assert abs(gain - 1.0) < 1e-6 and abs(rms - 3.0) < 1e-9  # inputs of RMS 1, scaled by 3
    a, b = torch.randn(256, 256, dtype=torch.float64), torch.randn(256, 256, dtype=torch.float64)
    gain, _ = ex.relative_gain(lambda x: (x @ a) * (x @ b), 256)  # a change reaches the product through both
    assert abs(gain - 2 ** 0.5) < 0.05
    gain, _ = ex.relative_gain(lambda x: torch.relu(x @ a), 256)  # one map, piece by piece linear
    assert abs(gain - 1.0) < 0.05
    with pytest.raises(tinytf.TinyTFInputError, match="rel"):
        ex.relative_gain(lambda x: x, 64, rel=0)
