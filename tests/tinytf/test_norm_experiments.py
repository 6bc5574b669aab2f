"""tinytf.lab.norm_experiments: chapter 3's measurements (norms in a deep stack, the mean LayerNorm removes)."""
from __future__ import annotations

import math

import pytest
import torch

import tinytf
from tinytf.lab import norm_experiments as ne

SMALL = tinytf.TinyConfig(d_model=32, n_heads=4, d_ff=128, n_layers=3)


def _model(cfg=SMALL, seed=0):
    torch.manual_seed(seed)
    return tinytf.TinyTransformer(cfg)


def test_remove_norms_replaces_every_norm_by_the_identity():
    model = ne.remove_norms(_model())
    assert not any(isinstance(m, (tinytf.RMSNorm, tinytf.LayerNorm)) for m in model.modules())
    x = torch.randn(2, 3, 32)
    assert torch.equal(model.blocks[0].norm1(x), x) and torch.equal(model.final_norm(x), x)
    _, trace = model.run_with_trace(torch.tensor([[1, 2, 3]]))
    assert "blocks.0.norm1.out" in trace  # the hook a norm has is still there


def test_remove_norms_can_keep_the_final_norm():
    model = _model()
    final = model.final_norm
    assert ne.remove_norms(model, keep_final=True) is model
    assert model.final_norm is final  # the same module, with its trained gamma
    assert all(isinstance(getattr(b, n), ne.NoNorm) for b in model.blocks for n in ("norm1", "norm2"))
    assert sum(isinstance(m, (tinytf.RMSNorm, tinytf.LayerNorm)) for m in model.modules()) == 1
    ids = torch.tensor([[1, 2, 3]])
    logits, trace = model.run_with_trace(ids)
    x = trace[f"blocks.{SMALL.n_layers - 1}.resid_post"]
    assert torch.allclose(logits, model.lm_head(final(x)), atol=1e-6)  # the LM head reads the normalised stream
    assert torch.equal(trace["blocks.0.norm1.out"], trace["embed"])  # block 0 reads the raw stream


def test_build_stack_chooses_the_norm():
    for norm, kind in (("rms", tinytf.RMSNorm), ("layer", tinytf.LayerNorm), ("none", ne.NoNorm)):
        model = ne.build_stack(norm, 2, d_model=32)
        assert isinstance(model.blocks[1].norm2, kind) and isinstance(model.final_norm, kind)
    # same seed, same weights whatever the norm (the norms have gamma = 1 and no beta)
    a, b = ne.build_stack("rms", 2, seed=3, d_model=32), ne.build_stack("none", 2, seed=3, d_model=32)
    assert torch.equal(a.blocks[0].ffn.gate.weight, b.blocks[0].ffn.gate.weight)


def test_build_stack_and_depth_profile_take_a_relu_mlp_as_a_control():
    model = ne.build_stack("none", 2, d_model=32, ffn="relu")
    assert isinstance(model.blocks[0].ffn, tinytf.MLP) and model.blocks[0].ffn.up.bias is None
    assert model.blocks[0].ffn.up.out_features == 4 * 32
    relu = ne.depth_profile("none", n_layers=8, seeds=(0,), init_std=1 / 8, batch=2, seq_len=8, ffn="relu")
    swiglu = ne.depth_profile("none", n_layers=8, seeds=(0,), init_std=1 / 8, batch=2, seq_len=8)
    assert relu.first_overflow() is None and swiglu.first_overflow() is not None  # linear vs quadratic growth
    assert relu.activation_rms[0][7] > 10 * relu.activation_rms[0][0]  # still growing without a norm


def test_swap_norms_keeps_gamma_and_changes_only_the_centring():
    model = _model()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, tinytf.RMSNorm):
                m.weight.normal_()
    swapped = ne.swap_norms(model, "layer")
    assert isinstance(model.blocks[0].norm1, tinytf.RMSNorm), "the original is left alone"
    ln, rms = swapped.blocks[0].norm1, model.blocks[0].norm1
    assert isinstance(ln, tinytf.LayerNorm) and ln.bias is None and torch.equal(ln.weight, rms.weight)
    x = torch.randn(4, 32) + 0.5
    with torch.no_grad():
        assert torch.allclose(ln(x), rms(x - x.mean(-1, keepdim=True)), atol=1e-5)
    back = ne.swap_norms(swapped, "rms")
    assert isinstance(back.final_norm, tinytf.RMSNorm)
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        assert torch.allclose(back(ids), model(ids), atol=1e-6)


def test_depth_profile_measures_what_measure_layers_measures():
    p = ne.depth_profile("rms", n_layers=3, seeds=(0, 1), d_model=32, batch=2, seq_len=4)
    assert len(p.activation_rms) == 2 and len(p.activation_rms[0]) == 3
    model = ne.build_stack("rms", 3, seed=1, d_model=32)
    torch.manual_seed(10_001)
    ids, targets = torch.randint(0, 256, (2, 4)), torch.randint(0, 256, (2, 4))
    stream = torch.randn(2, 4, 32)
    m = tinytf.experiments.measure_layers(model, ids, targets, stream)
    assert p.grad_norm[1] == pytest.approx(m.grad_norm, rel=1e-6)
    assert p.input_rms[1] == pytest.approx(ne.stream_rms(stream), rel=1e-9)  # the stream entering block 0
    assert p.median("activation_rms") == pytest.approx(
        [0.5 * (a + b) for a, b in zip(*p.activation_rms)], rel=1e-9)


def test_without_a_norm_a_large_init_overflows_and_with_one_it_does_not():
    none = ne.depth_profile("none", n_layers=8, seeds=(0,), init_std=1 / 8, batch=2, seq_len=8)
    rms = ne.depth_profile("rms", n_layers=8, seeds=(0,), init_std=1 / 8, batch=2, seq_len=8)
    assert none.first_overflow() is not None and rms.first_overflow() is None
    assert all(math.isfinite(g) for g in rms.grad_norm[0])
    table = ne.format_depth_table([none, rms], "activation_rms", blocks=(0, 7))
    assert "inf" in table or "nan" in table
    assert table.splitlines()[0].split() == ["after", "block", "no", "norm", "RMSNorm"]


def test_a_finite_stream_past_the_float32_square_limit_has_a_finite_rms():
    h = torch.full((1, 2, 4), 1e29)  # finite in float32, but 1e29 ** 2 is not
    assert tinytf.experiments.stream_rms(h) == pytest.approx(1e29, rel=1e-6)
    assert math.isinf(tinytf.experiments.stream_rms(torch.full((1, 2, 4), float("inf"))))


def test_spread_factor_and_the_table_show_how_far_the_seeds_are_apart():
    p = ne.DepthProfile("none", 2, 0.1, (0, 1, 2), activation_rms=[[1.0, 10.0], [2.0, 1e3], [4.0, float("nan")]])
    assert p.spread_factor("activation_rms", (0,)) == pytest.approx(2.0)
    assert p.first_overflow() == 1
    table = ne.format_depth_table([p], "activation_rms", (0,))
    assert table.splitlines()[1].split() == ["0", "2.0"] and table.splitlines()[-1].split() == ["seeds", "within", "×2"]
    short = ne.format_depth_table([p], "activation_rms", (0,), spread=False)  # the same rows, no spread line
    assert short.splitlines() == table.splitlines()[:-1]


def test_mean_shares_of_random_vectors_match_the_formula():
    model = _model(tinytf.TinyConfig(d_model=256, n_heads=4, d_ff=64, n_layers=1))
    shares = ne.mean_shares(model, torch.randint(0, 256, (4, 64)))
    assert set(shares) == {"blocks.0.norm1", "blocks.0.norm2", "final_norm"}
    # embeddings are random N(0, 0.02^2) vectors: |mean| / RMS is about sqrt(2 / (pi C))
    assert shares["blocks.0.norm1"]["mean_share"] == pytest.approx(math.sqrt(2 / (math.pi * 256)), rel=0.15)
    assert shares["blocks.0.norm1"]["rms"] == pytest.approx(0.02, rel=0.1)


def test_offset_share_detects_an_offset_shared_by_all_tokens():
    torch.manual_seed(0)
    norm = torch.nn.Sequential(tinytf.RMSNorm(64))
    noise = torch.randn(1, 4096, 64)  # no shared offset: the average vector is about 1/sqrt(4096) of a token
    assert ne.mean_shares(norm, noise)["0"]["offset_share"] < 0.03
    offset = torch.zeros(64)
    offset[3] = 8.0  # one large feature shared by every token: the offset's RMS is 1, like the noise's
    s = ne.mean_shares(norm, noise + offset)["0"]
    assert s["offset_share"] == pytest.approx(1 / s["rms"], rel=0.05) and s["offset_share"] > 0.6


def test_fixed_scale_norms_divide_by_the_average_size():
    model = _model()
    ids = torch.randint(0, 256, (2, 6))
    fixed = ne.fixed_scale_norms(model, ids)
    norm = fixed.blocks[0].norm1
    assert isinstance(norm, ne.FixedScaleNorm)
    _, trace = model.run_with_trace(ids)
    stream = trace["embed"] if "embed" in trace else None
    if stream is not None:
        expected = (stream.pow(2).mean(-1) + 1e-5).sqrt().mean().item()
        assert norm.scale == pytest.approx(expected, rel=1e-5)
    x = torch.randn(3, 32)
    with torch.no_grad():
        assert torch.allclose(norm(x), x / norm.scale, atol=1e-6)


def test_sequential_fixed_scale_calibrates_each_norm_on_what_it_receives():
    model = _model()
    ids = torch.randint(0, 256, (2, 6))
    one_pass, seq = ne.fixed_scale_norms(model, ids), ne.fixed_scale_norms(model, ids, sequential=True)
    names = [n for n, m in seq.named_modules() if isinstance(m, ne.FixedScaleNorm)]
    assert names == [n for n, m in one_pass.named_modules() if isinstance(m, ne.FixedScaleNorm)] and len(names) > 2
    first = names[0]  # the first norm called sees the same input in both
    assert seq.get_submodule(first).scale == pytest.approx(one_pass.get_submodule(first).scale, rel=1e-6)
    # every norm's constant is the average size of the input it receives in the sequential copy itself
    received = {}

    def record(mod, inp, out, n):  # returns None: the output is unchanged
        received.setdefault(n, (inp[0].pow(2).mean(-1) + 1e-5).sqrt().mean().item())

    hooks = [seq.get_submodule(n).register_forward_hook(lambda mod, inp, out, n=n: record(mod, inp, out, n))
             for n in names]
    with torch.no_grad():
        seq(ids)
    for h in hooks:
        h.remove()
    for n in names:
        assert seq.get_submodule(n).scale == pytest.approx(received[n], rel=1e-4)


@pytest.mark.parametrize("call, message", [
    (lambda: ne.build_stack("batch", 2), "norm must be one of"),
    (lambda: ne.depth_profile("rms", 2, seeds=()), "at least one seed"),
    (lambda: ne.depth_profile("rms", 0), "positive integer"),
    (lambda: ne.swap_norms(_model(), "batch"), "'layer' or 'rms'"),
    (lambda: ne.format_depth_table([], "grad_norm"), "at least one profile"),
    (lambda: ne.format_depth_table([ne.depth_profile("rms", 2, seeds=(0,), d_model=32, batch=1, seq_len=2)],
                                   "loss"), "activation_rms"),
    (lambda: ne.mean_shares(torch.nn.Linear(2, 2), torch.zeros(1, 2)), "no RMSNorm or LayerNorm"),
])
def test_bad_input_gets_a_clear_message(call, message):
    with pytest.raises(tinytf.TinyTFInputError, match=message):
        call()


def test_ms_fit_recovers_a_straight_line_in_the_squared_rms():
    from types import SimpleNamespace

    from tinytf.viz.norms import depth_ms_figure, ms_fit
    rms = [math.sqrt(2.0 + 1.9 * b) for b in range(10)]  # squared RMS = 2 + 1.9 b
    prof = SimpleNamespace(norm="rms", median=lambda what: rms)
    slope, intercept = ms_fit(prof)
    assert slope == pytest.approx(1.9) and intercept == pytest.approx(2.0)
    names = [t.name for t in depth_ms_figure([prof]).data]
    assert names == ["RMSNorm", "RMSNorm: straight line, +1.9 per block"]


def test_ffn_expansion_can_give_h_its_own_colour_scale_and_rename_the_input():
    from tinytf.viz import ffn_expansion
    model = tinytf.TinyTransformer(tinytf.TinyConfig(d_model=16, n_heads=2, n_layers=1, d_ff=64))
    fig = ffn_expansion(model, "cat", x_label="FFN input x", h_own_scale=True)
    heat = {t.name: t.coloraxis for t in fig.data if t.type == "heatmap"}
    assert heat["FFN input x"] == "coloraxis" and heat["h = SiLU(gate) ⊙ up"] == "coloraxis4"
    assert heat["gate = x·W_gate"] == heat["SiLU(gate)"] == "coloraxis2"
    assert fig.layout.coloraxis4.cmax < fig.layout.coloraxis2.cmax  # h's own, smaller range
    plain = ffn_expansion(model, "cat")
    assert {t.coloraxis for t in plain.data if t.type == "heatmap"} == {"coloraxis", "coloraxis2", "coloraxis3"}


def test_paired_strip_figure_puts_every_window_on_a_signed_log_axis():
    from tinytf.viz.norms import _symlog, paired_strip_figure
    diffs = {"small": torch.tensor([-0.002, 0.0, 0.011]), "large": torch.tensor([142.0, 295.0, 1269.0])}
    fig = paired_strip_figure(diffs)
    assert [t.name for t in fig.data] == ["small", "large"] and all(len(t.x) == 3 for t in fig.data)
    assert list(fig.data[1].customdata) == [142.0, 295.0, 1269.0]  # hover shows the exact change
    assert _symlog(0.0, 0.01) == 0.0 and _symlog(-0.01, 0.01) == -_symlog(0.01, 0.01)
    assert _symlog(1000, 0.01) - _symlog(100, 0.01) == pytest.approx(1.0, abs=1e-4)  # a factor 10 per unit
    assert fig.layout.xaxis.range[1] > _symlog(1269.0, 0.01)  # the largest change is on the axis
    low = paired_strip_figure({"below zero": torch.tensor([-0.1, 0.0, 0.05])})
    assert low.layout.xaxis.range[0] < _symlog(-0.1, 0.01) - 0.2  # the lowest point clears the row labels
    assert -0.1 in [round(v, 6) for v in (0.01 * (10 ** abs(t) - 1) * (-1 if t < 0 else 1)
                                          for t in low.layout.xaxis.tickvals)]


def test_ffn_expansion_names_the_shared_hidden_scale_and_can_shorten_the_bar_axis():
    from tinytf.viz import ffn_expansion
    model = tinytf.TinyTransformer(tinytf.TinyConfig(d_model=16, n_heads=2, n_layers=1, d_ff=64))
    own = ffn_expansion(model, "cat", h_own_scale=True, bar_max=0.6)
    assert own.layout.coloraxis2.colorbar.title.text == "hidden: gate, up, SiLU(gate)"
    bar_axis = [ax for name, ax in own.layout.to_plotly_json().items() if name.startswith("xaxis") and ax.get("range")]
    assert [ax["range"] for ax in bar_axis] == [[0, 0.6]] and bar_axis[0]["tickvals"] == [0, 0.5]
    plain = ffn_expansion(model, "cat")  # the defaults are unchanged
    assert plain.layout.coloraxis2.colorbar.title.text == "hidden"
    assert [ax["range"] for name, ax in plain.layout.to_plotly_json().items()
            if name.startswith("xaxis") and ax.get("range")] == [[0, 1.25]]


def test_seed_case_reproduces_depth_profile_for_that_seed():
    kw = dict(n_layers=6, init_std=1 / 8, d_model=32, batch=2, seq_len=8)
    before = torch.get_rng_state()
    stack, ids, stream = ne.seed_case("none", seed=1, **kw)
    assert torch.equal(torch.get_rng_state(), before), "the caller's random state is left alone"
    assert list(ids.shape) == [2, 8] and list(stream.shape) == [2, 8, 32]
    assert torch.equal(stack.blocks[0].ffn.gate.weight, ne.build_stack("none", 6, seed=1, init_std=1 / 8,
                                                                       d_model=32).blocks[0].ffn.gate.weight)
    prof = ne.depth_profile("none", seeds=(1,), **kw)
    assert prof.input_rms[0] == pytest.approx(float(stream.pow(2).mean(-1).sqrt().mean()), rel=1e-6)
    with torch.no_grad():
        _, trace = tinytf.run_with_trace(stack, ids, patches={"embed": lambda _: stream})
    assert torch.equal(trace["embed"], stream)
    for b in range(6):  # the same stream RMS after every block as depth_profile recorded
        rms = float(trace[f"blocks.{b}.resid_post"].double().pow(2).mean(-1).sqrt().mean())
        assert rms == pytest.approx(prof.activation_rms[0][b], rel=1e-5, nan_ok=True)


def test_shifted_norms_centre_each_token_and_keep_the_rms_divisor():
    model = _model()
    torch.nn.init.normal_(model.blocks[0].norm1.weight, 1.0, 0.1)
    centred = ne.shifted_norms(model)
    assert isinstance(model.blocks[0].norm1, tinytf.RMSNorm)  # the original is not touched
    x = torch.randn(2, 3, 32) + 0.7  # an offset shared by the features: a clear mean to remove
    norm, gamma = model.blocks[0].norm1, model.blocks[0].norm1.weight
    rms = x.pow(2).mean(-1, keepdim=True).add(norm.eps).sqrt()
    want = (x - x.mean(-1, keepdim=True)) / rms * gamma
    torch.testing.assert_close(centred.blocks[0].norm1(x), want, rtol=1e-5, atol=1e-6)
    _, trace = centred.run_with_trace(torch.tensor([[1, 2, 3]]))
    assert "blocks.0.norm1.out" in trace


def test_shifted_norms_with_a_seed_remove_as_much_along_a_random_direction():
    model = _model()
    x = torch.randn(2, 3, 32) + 0.7
    centred, control = ne.shifted_norms(model), ne.shifted_norms(model, random_seed=3)
    norm = model.blocks[0].norm1
    rms = x.pow(2).mean(-1, keepdim=True).add(norm.eps).sqrt()
    as_is = x / rms * norm.weight
    removed_mean = (as_is - centred.blocks[0].norm1(x)) * rms / norm.weight
    removed_random = (as_is - control.blocks[0].norm1(x)) * rms / norm.weight
    # the same length per token, but not the same vector
    torch.testing.assert_close(removed_random.norm(dim=-1), removed_mean.norm(dim=-1), rtol=1e-4, atol=1e-5)
    assert not torch.allclose(removed_random, removed_mean, atol=1e-3)
    # the same seed draws the same directions; each norm draws its own
    again = ne.shifted_norms(model, random_seed=3)
    assert torch.equal(again.blocks[0].norm1.d, control.blocks[0].norm1.d)
    assert not torch.equal(control.blocks[0].norm1.d, control.blocks[0].norm2.d)
    torch.testing.assert_close(control.blocks[0].norm1.d.norm(), torch.tensor(1.0))
