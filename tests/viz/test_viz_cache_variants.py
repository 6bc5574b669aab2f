"""The KV-cache figure (tinytf.viz.cache) is drawn from what ``tinytf.generate`` reports after each step
(``on_step``), so it shows what the cache of every attention variant holds: full, grouped-query,
sliding-window (local and local/global), and MLA's latent cache."""
import pytest
import torch

import tinytf
from tinytf.viz.cache import cache_growth, cache_snapshots

VARIANTS = {
    "full": dict(),
    "grouped": dict(n_heads=4, n_kv_heads=2),
    "sliding": dict(sliding_window=tinytf.SlidingWindow(size=3)),
    "local/global": dict(sliding_window=tinytf.SlidingWindow(size=3, layer_types=("local", "global"))),
    "mla": dict(n_heads=2, mla=tinytf.MLAOptions(kv_rank=8, rope_dim=4)),
}


def model_for(**kw):
    tinytf.seed_everything(0)
    cfg = dict(d_model=32, n_heads=2, d_ff=64, n_layers=2)
    cfg.update(kw)
    return tinytf.TinyTransformer(tinytf.TinyConfig(**cfg)).eval()


def cached_columns(heat_z):
    """Per row of the heatmap, the positions drawn as cached (a non-empty cell)."""
    return [[p for p, z in enumerate(row) if z is not None] for row in heat_z]


def test_sliding_window_figure_marks_only_what_the_cache_holds():
    # regression (issue 21, bug 1): the figure marked all 8 positions as cached, the cache holds 2 per layer
    model = model_for(sliding_window=tinytf.SlidingWindow(size=3))
    prompt = tinytf.encode("abcd")
    snaps = cache_snapshots(model, prompt, 4)
    fig = cache_growth(model, prompt, snapshots=snaps)
    last = fig.frames[-1].data[0]
    assert len(last.z[0]) == 8  # 4 prompt positions + 4 new tokens fed back
    cache = model.new_cache()  # the same 8 tokens through a real cache: what does it hold?
    with torch.no_grad():
        model(tinytf.generate(model, prompt, 5).tokens[None, :8], cache=cache)
    assert [layer.k.shape[-2] for layer in cache.layers] == [2, 2]  # window 3: the newest window - 1 = 2 kept
    held = [[6, 7], [6, 7]]
    assert cached_columns(last.z) == [held[0], held[0], held[1], held[1]]
    assert all(len(cols) < 8 for cols in cached_columns(last.z))


def test_mla_cache_figure_draws_the_latent_cache():
    # regression (issue 21, bug 1): an MLA model raised AttributeError ('LatentCache' has no '.k')
    model = model_for(**VARIANTS["mla"])
    prompt = tinytf.encode("hi")
    snaps = cache_snapshots(model, prompt, 3)
    fig = cache_growth(model, prompt, snapshots=snaps)
    assert list(fig.data[0].y) == ["block 0 latent", "block 0 k_rope", "block 1 latent", "block 1 k_rope"]
    # the rows are the figure's; a frame changes only what each row holds
    assert cached_columns(fig.frames[-1].data[0].z) == [list(range(5))] * 4


@pytest.mark.parametrize("name", list(VARIANTS))
def test_cache_figure_follows_generate_for_every_variant(name):
    model = model_for(**VARIANTS[name])
    prompt = tinytf.encode("abcd")
    steps = []
    gen = tinytf.generate(model, prompt, 5, on_step=steps.append)
    snaps = cache_snapshots(model, prompt, 4)
    assert [s["next"] for s in snaps] == gen.tokens[4:].tolist()
    assert [s["held"] for s in snaps] == [st.held for st in steps]
    assert [s["nbytes"] for s in snaps] == [st.nbytes for st in steps]
    fig = cache_growth(model, prompt, snapshots=snaps)
    for k, frame in enumerate(fig.frames):
        cols = cached_columns(frame.data[0].z)
        assert cols == [h for h in snaps[k]["held"] for _ in range(2)]  # two rows per layer, what it holds
        custom = frame.data[0].customdata
        for row, layer in zip(range(0, len(cols), 2), range(model.config.n_layers)):
            drawn = [custom[row][p] for p in cols[row]]
            assert drawn == pytest.approx(snaps[k]["norms"][layer][0])


def test_step_times_figure_draws_the_medians_and_iqr_of_every_step():
    from tinytf.lab.prefill_decode import StepTimes
    from tinytf.viz.cache import step_times_figure
    st = StepTimes([10, 20], {"naive": [[2e-3, 4e-3], [4e-3, 8e-3], [3e-3, 6e-3]], "cached": [[1e-3, 1e-3]] * 3})
    fig = step_times_figure(st, "Step times", "byte", look_for="naive climbs")
    naive, cached = fig.data
    assert (naive.name, cached.name) == ("naive", "cached")
    assert list(naive.x) == [10, 20] and list(naive.y) == pytest.approx([3.0, 6.0])
    assert list(naive.error_y.array) == pytest.approx([0.5, 1.0])  # q3 - median (inclusive quartiles)
    assert list(naive.error_y.arrayminus) == pytest.approx([0.5, 1.0])
    assert list(cached.y) == pytest.approx([1.0, 1.0])
    assert fig.layout.yaxis.rangemode == "tozero"
    assert fig.layout.yaxis.title.text == "milliseconds per byte (processor time)"
    assert "look for: naive climbs" in fig.layout.title.text
    assert step_times_figure(st, "Step times", "token").layout.title.text == "Step times"
