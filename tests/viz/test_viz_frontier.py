"""tinytf.viz.frontier: every number a frontier figure draws equals the trace, the mask, autograd, the
recorded run or kv_cache_bytes it claims to show."""
import numpy as np
import pytest
import torch

import tinytf
from tinytf.errors import TinyTFInputError
from tinytf.lab import frontier as frontier_lab
from tinytf.viz import frontier as fv
from tinytf.viz import show

LOCAL_GLOBAL = tinytf.TinyConfig(d_model=32, n_heads=2, n_layers=3, d_ff=64,
                                 sliding_window=tinytf.SlidingWindow(size=3, layer_types=("local", "local", "global")))
MOE = tinytf.TinyConfig(d_model=32, n_heads=2, n_layers=2, d_ff=64,
                        moe=tinytf.MoEOptions(n_experts=6, experts_per_token=2, d_expert=16))


def _z(trace_obj):
    return np.asarray(trace_obj.z, dtype=float)


def test_window_masks_are_the_trace_masks_and_the_mask_function():
    torch.manual_seed(0)
    model = tinytf.TinyTransformer(LOCAL_GLOBAL).eval()
    ids = tinytf.encode("abcdefghij")
    masks = fv.window_masks(model, ids)
    _, trace = model.run_with_trace(ids)
    for i, m in enumerate(masks):
        assert np.array_equal(m, ~torch.isneginf(trace[f"blocks.{i}.attn.masked_scores"][0, 0]).numpy())
        expected = (tinytf.sliding_window_mask(10, 10, window=3) if LOCAL_GLOBAL.layer_type(i) == "local"
                    else tinytf.causal_mask(10, 10))
        assert np.array_equal(m, expected.numpy())


def test_gradient_reach_grows_one_window_per_local_layer():
    cfg = LOCAL_GLOBAL.replace(sliding_window=LOCAL_GLOBAL.sliding_window.replace(layer_types=None))  # every layer local, window 3
    torch.manual_seed(0)
    reach = frontier_lab.gradient_reach(tinytf.TinyTransformer(cfg).eval(), tinytf.encode("abcdefghijkl"))
    T = 12
    for layer in range(3):
        for q in range(T):
            lo = max(0, q - (layer + 1) * (cfg.sliding_window.size - 1))
            assert reach[layer, q].tolist() == [lo <= j <= q for j in range(T)], (layer, q)


def test_sliding_window_figure_draws_the_masks_and_the_measured_reach():
    fig = fv.sliding_window_figure(LOCAL_GLOBAL, 10)
    torch.manual_seed(0)
    model = tinytf.TinyTransformer(LOCAL_GLOBAL).eval()  # the figure builds its model with seed 0 too
    ids = tinytf.encode("abcdefghij")
    masks = fv.window_masks(model, ids)
    reach = frontier_lab.gradient_reach(model, ids)
    # one panel per run of layers with the same mask: blocks 0-1 (local, the same mask), block 2 (global)
    assert [a.text for a in fig.layout.annotations] == ["blocks 0–1: local (window 3)", "block 2: global",
                                                        "reached after each block"]
    assert np.array_equal(masks[0], masks[1]) and not np.array_equal(masks[1], masks[2])
    for panel, layer in enumerate((0, 2)):
        assert np.array_equal(_z(fig.data[panel]), masks[layer].astype(float))
    assert len(fig.frames) == 10 and [f.name for f in fig.frames] == [str(q) for q in range(10)]
    for q, frame in enumerate(fig.frames):
        assert frame.traces == (2,)
        assert np.array_equal(_z(frame.data[0]), reach[:, q, :].astype(float))
        assert f"reached by {int(reach[-1, q].sum())} of the {q + 1} positions" in frame.layout.title.text
        rect = frame.layout.shapes[0]
        assert rect.y0 == q - 0.5 and rect.y1 == q + 0.5
    assert reach[-1, -1].sum() == 10 and reach[1, -1].sum() == 5  # global last layer; two local layers of window 3
    assert [s.label for s in fig.layout.sliders[0].steps] == [str(q) for q in range(10)]
    show(fig)  # renders


def test_sliding_window_figure_takes_a_model_and_checks_its_input():
    torch.manual_seed(1)
    model = tinytf.TinyTransformer(LOCAL_GLOBAL)
    fig = fv.sliding_window_figure(model, ids=tinytf.encode("xyz"))
    assert len(fig.frames) == 3
    with pytest.raises(TinyTFInputError):
        fv.sliding_window_figure("not a model", 4)
    with pytest.raises(TinyTFInputError):
        fv.sliding_window_figure(LOCAL_GLOBAL, 0)


def test_cache_context_figure_is_kv_cache_bytes():
    cfgs = {"gqa": tinytf.TinyConfig(n_kv_heads=2), "local": tinytf.TinyConfig(sliding_window=tinytf.SlidingWindow(size=8)),
            "mla": tinytf.TinyConfig(d_model=64, n_heads=4, d_ff=96, mla=tinytf.MLAOptions(kv_rank=16, rope_dim=8),
                                     head_dim=24)}
    lengths = [1, 4, 16, 64, 256]
    fig = fv.cache_context_figure(cfgs, lengths, dtype=torch.float32, batch=2)
    assert [t.name for t in fig.data] == list(cfgs)
    for tr, cfg in zip(fig.data, cfgs.values()):
        assert list(tr.x) == lengths
        assert [round(y * 2 ** 30) for y in tr.y] == [tinytf.kv_cache_bytes(cfg, T, 2) for T in lengths]
    with pytest.raises(TinyTFInputError):
        fv.cache_context_figure({})


def test_router_figure_draws_the_router_trace():
    torch.manual_seed(0)
    model = tinytf.TinyTransformer(MOE).eval()
    ids = tinytf.encode("cat")
    fig = fv.router_figure(model, ids, layer=1)
    _, trace = model.run_with_trace(ids)
    logits = trace["blocks.1.ffn.router_logits"][0].double().numpy()
    chosen = trace["blocks.1.ffn.router_topk"]
    assert len(fig.frames) == 3
    for t, frame in enumerate(fig.frames):
        bars, load = frame.data
        assert np.allclose(np.asarray(bars.y, dtype=float), logits[t], rtol=0, atol=0)
        picked = set(chosen.ids[0, t].tolist())
        assert [c != "#b8b8b8" for c in bars.marker.color] == [e in picked for e in range(6)]
        for e, w in zip(chosen.ids[0, t].tolist(), chosen.weights[0, t].tolist()):
            assert bars.text[e] == f"w = {w:.3f}"
        expected_load = np.bincount(chosen.ids[0, : t + 1].reshape(-1).numpy(), minlength=6)
        assert list(load.y) == expected_load.tolist()
    with pytest.raises(TinyTFInputError):
        fv.router_figure(tinytf.TinyTransformer(MOE.replace(moe=MOE.moe.replace(n_dense_layers=1))), ids, layer=0)


def test_expert_load_counts_every_choice():
    torch.manual_seed(0)
    model = tinytf.TinyTransformer(MOE.replace(moe=MOE.moe.replace(n_dense_layers=1))).eval()
    ids = tinytf.encode("the quick brown fox")
    load = fv.expert_load(model, ids)
    assert list(load) == [1]
    _, trace = model.run_with_trace(ids)
    assert load[1].tolist() == np.bincount(trace["blocks.1.ffn.router_topk"].ids.reshape(-1).numpy(),
                                           minlength=6).tolist()
    assert load[1].sum() == 2 * len(ids)
    with pytest.raises(TinyTFInputError):
        fv.expert_load(tinytf.TinyTransformer(tinytf.TinyConfig(d_model=32, n_heads=2, n_layers=1, d_ff=64)), ids)


def test_logit_growth_records_the_trace_and_the_figure_draws_the_records():
    cfg = tinytf.TinyConfig(vocab_size=128, d_model=32, n_heads=2, n_layers=1, d_ff=64, max_seq_len=32)
    rec = frontier_lab.logit_growth(cfg, steps=4, lr=1e-2, seed=0, every=2, batch_size=4)
    assert rec["steps"] == [0, 2, 4] and rec["loss"][0] is None and all(v > 0 for v in rec["loss"][1:])
    # step 0 is the untrained model (seed 0) on the probe batch
    torch.manual_seed(0)
    model = tinytf.TinyTransformer(cfg).eval()
    task = tinytf.tasks.InductionTask(min_length=4, max_length=12)
    probe = task.batch(16, torch.Generator().manual_seed(10_000), length=12)[0]
    _, trace = model.run_with_trace(probe)
    assert rec["max_logit"][0] == float(trace["blocks.0.attn.scores"].abs().max())
    fig = fv.logit_growth_figure({"plain": [rec, rec], "QK-norm": [rec]})
    assert len(fig.data) == 3 and [t.showlegend for t in fig.data] == [True, False, True]
    assert list(fig.data[0].y) == rec["max_logit"] and list(fig.data[0].x) == rec["steps"]


def test_recorded_logit_growth_file_supports_the_chapter():
    recorded = frontier_lab.load_logit_growth()
    runs = recorded["runs"]
    assert set(runs) == {"plain", "QK-norm"} and all(len(r) == 3 for r in runs.values())
    assert min(r["max_logit"][-1] for r in runs["plain"]) > max(max(r["max_logit"]) for r in runs["QK-norm"])


def test_every_animated_figure_has_the_one_set_of_controls():
    """Play/Pause and the step slider of every animated figure come from one builder
    (tinytf.viz.common.animation_controls): the same two buttons, and slider steps naming the frames in order."""
    from tinytf.viz import animations
    from tinytf.viz.cache import cache_growth

    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig(d_model=32, n_heads=2, d_ff=128))
    figs = {"stepper": tinytf.viz.block_stepper(model, "cat"), "cache": cache_growth(model, tinytf.encode("ab"), 3),
            "window": fv.sliding_window_figure(LOCAL_GLOBAL, 5), "rope": animations.rope_animation(),
            "router": fv.router_figure(tinytf.TinyTransformer(MOE), tinytf.encode("abc"), layer=1)}
    for name, fig in figs.items():
        steps = fig.layout.sliders[0].steps
        assert [s.args[0][0] for s in steps] == [f.name for f in fig.frames], name
        play, pause = fig.layout.updatemenus[0].buttons
        assert (play.label, pause.label) == ("▶ Play", "❚❚ Pause"), name
        assert play.args[0] is None and play.args[1]["fromcurrent"] is True and list(pause.args[0]) == [None], name


def test_format_update_rms_heads_columns_by_block():
    """Chapter 11.5: the columns are indexed blocks, printed "block N" as in the figures (blocks count from 0)."""
    updates = {"pre-norm": {"attention": [0.1] * 8, "FFN": [0.2] * 8}}
    text = frontier_lab.format_update_rms(updates, {"pre-norm": 1.0}, 1.0)
    header = text.splitlines()[0]
    assert header.split()[2:] == ["block", "0", "block", "2", "block", "4", "block", "6"]
    assert "layer" not in text


def test_sliding_window_figure_opens_on_the_last_query():
    fig = fv.sliding_window_figure(LOCAL_GLOBAL, 10)
    assert fig.layout.sliders[0].active == 9
    assert fig.layout.title.text == fig.frames[9].layout.title.text and "query position 9" in fig.layout.title.text
    assert np.array_equal(_z(fig.data[2]), _z(fig.frames[9].data[0]))  # the reach panel shows query 9
    first = fv.sliding_window_figure(LOCAL_GLOBAL, 10, start=0)
    assert first.layout.sliders[0].active == 0 and "query position 0" in first.layout.title.text
    with pytest.raises(TinyTFInputError):
        fv.sliding_window_figure(LOCAL_GLOBAL, 10, start=10)


def test_titled_adds_a_bold_title_and_a_look_for_line_to_every_frame():
    fig = fv.titled(fv.sliding_window_figure(LOCAL_GLOBAL, 5), "Main", "the reach")
    readout = fv.sliding_window_figure(LOCAL_GLOBAL, 5).frames[2].layout.title.text
    assert len(fig.frames) == 5
    assert fig.frames[2].layout.title.text == f"<b>Main</b><br>{readout}<br><span style='font-size:12px'>look for: the reach</span>"
    assert fig.layout.title.text.startswith("<b>Main</b><br>query position 4")
    static = fv.cache_context_figure({"tiny": LOCAL_GLOBAL}, [4, 8])
    own = static.layout.title.text
    assert fv.titled(static, None, "x").layout.title.text == f"<b>{own}</b><br><span style='font-size:12px'>look for: x</span>"
    with pytest.raises(TinyTFInputError):
        fv.titled(fv.sliding_window_figure(LOCAL_GLOBAL, 5), None, "x")  # an animated figure needs its own title
    with pytest.raises(TinyTFInputError):
        fv.titled(fv.cache_context_figure({"tiny": LOCAL_GLOBAL}, [4, 8]), None, "")
