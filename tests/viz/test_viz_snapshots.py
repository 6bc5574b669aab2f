"""tinytf.viz.snapshots: one head's attention map across the training snapshots; every frame is a trace."""
import numpy as np
import pytest
import torch

import tinytf
from tinytf import heads
from tinytf.viz import snapshot_attention
from tinytf.viz.snapshots import snapshot_models

TEXT = "The cat sat on the mat."


@pytest.fixture(scope="module")
def models():
    return snapshot_models("text-4l")


def test_frames_are_the_snapshots_traces(models):
    assert list(models) == list(tinytf.pretrained.snapshots("text-4l"))
    layer, head = 1, 1
    fig = snapshot_attention(models, TEXT, layer=layer, head=head)
    assert [f.name for f in fig.frames] == [str(s) for s in models]
    ids = tinytf.encode(TEXT)
    T = len(ids)
    upper = np.triu(np.ones((T, T), dtype=bool), k=1)
    for frame, (step, model) in zip(fig.frames, models.items()):
        with torch.no_grad():
            _, trace = model.run_with_trace(ids)
        w = trace[f"blocks.{layer}.attn.weights"][0, head].double().numpy()
        z = np.array(frame.data[0].z, dtype=float)
        assert np.isnan(z[upper]).all()  # the causal mask: later keys are blank
        np.testing.assert_array_equal(z[~upper], w[~upper])
        bars = np.array(frame.data[1].y)
        assert bars[list(models).index(step)] == pytest.approx(
            heads.previous_token_score(trace[f"blocks.{layer}.attn.weights"])[head].item())
    # the first frame is the figure's own data; the slider has one step per snapshot
    np.testing.assert_array_equal(np.array(fig.data[0].z, dtype=float), np.array(fig.frames[0].data[0].z, dtype=float))
    assert len(fig.layout.sliders[0].steps) == len(models)
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == ["▶ Play", "❚❚ Pause"]


def test_spaces_and_new_lines_are_visible_ticks(models):
    fig = snapshot_attention(models, "a b\nc", layer=0, head=0)
    assert list(fig.data[0].x) == ["0: a", "1: ␣", "2: b", "3: ↵", "4: c"]
    assert list(fig.layout.yaxis.categoryarray) == list(fig.data[0].x)


def test_by_name_and_bad_input(models):
    fig = snapshot_attention("text-4l", "ab cd", layer=0, head=0)
    assert len(fig.frames) == len(models)
    with pytest.raises(tinytf.TinyTFInputError):
        snapshot_attention(models, TEXT, layer=9)
    with pytest.raises(tinytf.TinyTFInputError):
        snapshot_attention(models, TEXT, head=6)
    with pytest.raises(tinytf.TinyTFInputError):
        snapshot_attention({}, TEXT)


def test_head_comparison_panels_are_the_models_traces():
    from tinytf.viz import head_comparison

    models = {"trained": tinytf.pretrained("text-4l"), "untrained twin": tinytf.pretrained.untrained("text-4l")}
    fig = head_comparison(models, TEXT, layer=1, head=1)
    ids = tinytf.encode(TEXT)
    T = len(ids)
    upper = np.triu(np.ones((T, T), dtype=bool), k=1)
    assert [t.name for t in fig.data] == list(models)
    for trace_fig, model in zip(fig.data, models.values()):
        with torch.no_grad():
            _, trace = model.run_with_trace(ids)
        w = trace["blocks.1.attn.weights"][0, 1].double().numpy()
        z = np.array(trace_fig.z, dtype=float)
        assert np.isnan(z[upper]).all()
        np.testing.assert_array_equal(z[~upper], w[~upper])
    with pytest.raises(tinytf.TinyTFInputError):
        head_comparison({}, TEXT)
    with pytest.raises(tinytf.TinyTFInputError):
        head_comparison(models, TEXT, head=7)


def test_head_comparison_has_a_short_narrow_layout_with_the_same_maps_and_words():
    """On a phone the maps stand one above the other, each PHONE_MAP_PX tall (at their wide height, T * 16 px
    each, two maps made the figure about 1,800 px tall); the same traced maps, the wide figure's panel names."""
    from tinytf.viz import snapshots
    from tinytf.viz.render import figure_dict

    models = {"trained": tinytf.pretrained("text-4l"), "untrained twin": tinytf.pretrained.untrained("text-4l")}
    fig = snapshots.head_comparison(models, TEXT, layer=1, head=1)
    narrow = fig.layout.meta["tinytf"]["narrow"]
    assert narrow["below"] == snapshots.NARROW_BELOW
    N = narrow["figure"]
    assert [t["name"] for t in N["data"]] == list(models)
    for wide_map, narrow_map in zip(fig.data, N["data"]):
        np.testing.assert_array_equal(np.array(wide_map.z, dtype=float), np.asarray(narrow_map["z"], dtype=float))
    wide_names = [a.text for a in fig.layout.annotations]
    assert [wide_names[i] for i in narrow["text_of"]] == [a["text"] for a in N["layout"]["annotations"]]
    L = N["layout"]
    plot_h = L["height"] - L["margin"]["t"] - L["margin"]["b"]
    y_domains = [L["yaxis"]["domain"], L["yaxis2"]["domain"]]
    assert y_domains[0][0] > y_domains[1][1]  # the first model on top, the panels apart
    for lo, hi in y_domains:
        assert abs((hi - lo) * plot_h - snapshots.PHONE_MAP_PX) <= 1
    assert L["xaxis"]["domain"] == L["xaxis2"]["domain"] == [0, 1]
    spec = figure_dict(fig)  # the maps of both layouts travel as typed arrays
    assert "bdata" in spec["layout"]["meta"]["tinytf"]["narrow"]["figure"]["data"][0]["z"]
