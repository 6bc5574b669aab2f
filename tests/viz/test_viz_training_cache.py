"""tinytf.viz.training (loss curves with spread) and tinytf.viz.cache (the KV cache growing)."""
import pytest
import torch

import tinytf
from tinytf import block_comparison as bc
from tinytf.cache_memory import kv_cache_bytes
from tinytf.tokens import token_labels
from tinytf.viz.cache import cache_growth, cache_snapshots
from tinytf.viz.training import loss_curves, lr_schedule_figure


def runs():
    return {"A": [{"seed": s, "losses": [4.0 - s, 3.0, 2.0 + s]} for s in (0, 1, 2)],
            "B": [{"seed": s, "losses": [1.0, 1.0 + s, 0.5]} for s in (0, 1)]}


def test_loss_curves_draw_the_band_mean_and_seeds():
    fig = loss_curves(runs(), window=1)
    by_name = {t.name: t for t in fig.data if t.name.endswith("min-max over 3 seeds") or t.name.endswith("min-max over 2 seeds")
               or t.showlegend is not False}
    assert all(t.showlegend is False for t in fig.data if "min-max" in t.name)  # a narrow legend: the band has none
    band = bc.curve_band(runs()["A"], window=1)
    assert list(by_name["A: mean"].y) == band["mean"]
    assert list(by_name["A: min-max over 3 seeds"].y) == band["max"] + band["min"][::-1]
    seeds_a = [t for t in fig.data if t.legendgroup == "A seeds"]
    assert [list(t.y) for t in seeds_a] == [[4.0, 3.0, 2.0], [3.0, 3.0, 3.0], [2.0, 3.0, 4.0]]
    assert all(t.visible == "legendonly" for t in seeds_a) and [t.showlegend for t in seeds_a] == [True, False, False]
    assert "B: min-max over 2 seeds" in by_name
    assert len(fig.data) == 2 * 2 + 3 + 2  # band + mean per variant, one line per seed


def test_loss_curves_bad_input():
    with pytest.raises(tinytf.TinyTFInputError):
        loss_curves({})
    with pytest.raises(tinytf.TinyTFInputError, match="'A' has no runs"):
        loss_curves({"A": []})



def test_lr_schedule_figure_draws_the_training_schedule():
    fig = lr_schedule_figure(50, 3e-3, 5)
    rates = list(fig.data[0].y)
    assert list(fig.data[0].x) == list(range(50))
    assert rates == [tinytf.train.lr_at(s, 50, 3e-3, 5, "cosine") for s in range(50)]  # the loop's own function
    assert rates[4] == 3e-3 and rates[0] == 3e-3 / 5 and abs(rates[-1] - 3e-4) < 1e-5  # warm-up, peak, 10%
    assert [a.text for a in fig.layout.annotations] == ["10% of the peak", "warm-up ends: step 4"]  # step 4 is the fifth
    note = fig.layout.annotations[1]  # at the peak in data coordinates (plotly's default would be the paper)
    assert (note.xref, note.yref, note.x, note.y) == ("x", "y", 4, 3e-3)
    assert list(fig.layout.yaxis.tickvals) == pytest.approx([1e-3, 2e-3, 3e-3])  # no "0" to meet the x axis's
    assert list(lr_schedule_figure(20, 1e-3, 2).layout.yaxis.tickvals) == pytest.approx([5e-4, 1e-3])
    flat = lr_schedule_figure(20, 1e-3, 0, schedule="constant")
    assert set(flat.data[0].y) == {1e-3} and not flat.layout.annotations
    with pytest.raises(tinytf.TinyTFInputError, match="schedule"):
        lr_schedule_figure(20, 1e-3, 2, schedule="linear")
    with pytest.raises(tinytf.TinyTFInputError, match="steps"):
        lr_schedule_figure(0, 1e-3, 2)
    for bad in (0, -1e-3, float("nan"), "3e-3"):  # a clear message, not a math domain error
        with pytest.raises(tinytf.TinyTFInputError, match="lr"):
            lr_schedule_figure(20, bad, 2)

@pytest.fixture(scope="module")
def model():
    tinytf.seed_everything(0)
    return tinytf.TinyTransformer(tinytf.TinyConfig(d_model=32, n_heads=2, d_ff=64)).eval()


def test_snapshots_follow_a_real_cached_generation(model):
    prompt = tinytf.encode("abc")
    snaps = cache_snapshots(model, prompt, 4)
    gen = tinytf.generate(model, prompt, 5)
    assert [s["next"] for s in snaps] == gen.tokens[3:].tolist()  # the same greedy tokens
    assert [s["length"] for s in snaps] == [3, 4, 5, 6, 7]
    per_token = kv_cache_bytes(model.config, 1)
    assert [s["nbytes"] for s in snaps] == [per_token * n for n in (3, 4, 5, 6, 7)]
    assert snaps[2]["positions"] == [4] and snaps[0]["positions"] == [0, 1, 2]
    # the norms are those of the cache itself: rerun and compare the last snapshot
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.tensor(gen.tokens[:7].tolist())[None], cache=cache)
    expected = cache.layers[1].k[0].norm(dim=-1).mean(0)
    assert torch.allclose(torch.tensor(snaps[-1]["norms"][1][0]), expected, atol=1e-5)


def test_cache_growth_frames(model):
    prompt = tinytf.encode("hi")
    snaps = cache_snapshots(model, prompt, 3)
    fig = cache_growth(model, prompt, snapshots=snaps)
    assert len(fig.frames) == 4 and len(fig.layout.sliders[0].steps) == 4
    heat = fig.frames[-1].data[0]  # rows: layer 0 K, layer 0 V, layer 1 K, ...
    width = snaps[-1]["length"]
    assert len(heat.z) == 2 * model.config.n_layers and len(heat.z[0]) == width
    assert list(heat.z[0]) == [0, 0, 1, 2, 3]  # the prompt's 2 positions at step 0, then one per step
    assert list(heat.customdata[2]) == pytest.approx(snaps[-1]["norms"][1][0])  # row 2 = layer 1 K
    first = fig.frames[0].data[0]
    assert list(first.z[0]) == [0, 0, None, None, None]
    assert list(first.customdata[1][:2]) == pytest.approx(snaps[0]["norms"][0][1])
    assert list(fig.frames[-1].data[1].y) == [s["nbytes"] / 1024 for s in snaps]
    assert "new token" in fig.frames[1].layout.title.text
    assert "runs through every block at once" in fig.frames[0].layout.title.text  # not "all 2 blocks"
    assert fig.frames[2].layout.shapes[0].x0 == 2.5  # the column written at step 2 (position 3) is outlined


def test_cache_growth_frames_keep_colour_bar(model):
    """The colour scale is the layout's coloraxis, defined once for every frame; a frame changes the
    heatmap's z and customdata only: a frame that carried the colour bar again (title, len, y) would
    replace the one the page placed (in pixels) and collapse it after frame 1."""
    fig = cache_growth(model, tinytf.encode("hi"), 3)
    assert fig.data[0].coloraxis == "coloraxis"
    axis = fig.layout.coloraxis
    bar = axis.colorbar
    assert bar.title.text == "written<br>at step" and bar.len == 0.55
    zmin, zmax = axis.cmin, axis.cmax
    assert (zmin, zmax) == (-0.5, 3.5)  # the steps 0 to 3, one band each
    bands = [c for _, c in axis.colorscale][::2]  # one flat colour per step, each its own
    assert len(bands) == 4 and len(set(bands)) == 4, axis.colorscale
    assert list(bar.tickvals) == [0, 1, 2, 3]
    for frame in fig.frames:
        heat = frame.data[0].to_plotly_json()
        assert set(heat) == {"type", "z", "customdata"}, set(heat)
        assert "coloraxis" not in frame.layout.to_plotly_json()
        assert max(v for row in heat["z"] for v in row if v is not None) <= zmax
        assert min(v for row in heat["z"] for v in row if v is not None) >= zmin


def test_cache_growth_bad_input(model):
    with pytest.raises(tinytf.TinyTFInputError):
        cache_snapshots(model, tinytf.encode("hi"), -1)
    with pytest.raises(tinytf.TinyTFInputError, match="TinyTransformer"):
        cache_snapshots(tinytf.EncoderDecoder(tinytf.TinyConfig(d_model=32, n_heads=2)), tinytf.encode("hi"), 2)
    with pytest.raises(tinytf.TinyTFInputError):
        cache_snapshots(model, [], 2)


def test_cache_growth_axis_names_each_token_once_written(model):
    """The axis names the prompt's tokens from frame 1 on, and each generated token from the frame that
    writes it on ("2: x"); before that its column carries its number only, so frame 1 does not show the
    tokens still to come."""
    prompt = tinytf.encode("hi")
    snaps = cache_snapshots(model, prompt, 3)
    fig = cache_growth(model, prompt, snapshots=snaps)
    assert list(fig.data[0].x) == [0, 1, 2, 3, 4] and list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3, 4]
    assert list(fig.layout.xaxis.ticktext) == ["0: h", "1: i", "2", "3", "4"]
    assert list(fig.frames[0].layout.xaxis.ticktext) == ["0: h", "1: i", "2", "3", "4"]
    written = token_labels([s["fed"][0] for s in snaps[1:]])  # the tokens fed at steps 1 to 3
    assert list(fig.frames[2].layout.xaxis.ticktext) == ["0: h", "1: i", f"2: {written[0]}",
                                                          f"3: {written[1]}", "4"]
    assert list(fig.frames[-1].layout.xaxis.ticktext)[-1] == f"4: {written[2]}"
    assert "new token" in fig.frames[1].layout.title.text and "position 2" in fig.frames[1].layout.title.text
