"""tinytf.viz: every number a view draws equals the model's trace; the figures have the
frames / traces / controls the book relies on; show() output is deterministic and offline."""
from __future__ import annotations

import json
import math
import re
import sys
import types

import numpy as np
import pytest
import torch

import tinytf
from tinytf import viz
from tinytf.viz import render
from tinytf.viz.common import axis_labels

SMALL = dict(d_model=16, n_heads=2, d_ff=64, n_layers=2)
PRE_NORM_STAGES = ["embed", "norm1", "qkv", "rope", "scores", "mask", "softmax", "wsum", "merge", "resid1", "norm2",
                   "up", "act", "down", "resid2"]


def model_for(seed=0, **changes):
    tinytf.seed_everything(seed)
    return tinytf.TinyTransformer(tinytf.TinyConfig(**dict(SMALL, **changes))).eval()


def trace_of(model, text):
    with torch.no_grad():
        return model.run_with_trace(tinytf.encode(text))[1]


def np_(t):
    return t.detach().double().numpy()


def frame_traces(fig, frame_name):
    """The full trace dicts shown in a frame: the figure's traces updated with the frame's
    (partial) trace dicts, exactly what plotly.animate does."""
    frame = next(f for f in fig.frames if f.name == frame_name)
    full = [dict(t.to_plotly_json()) for t in fig.data]
    for base, upd in zip(full, frame.data):
        base.update({k: v for k, v in upd.to_plotly_json().items() if k != "type"})
    return [t for t in full if t.get("visible", True) is True]


def by_name(traces, prefix):
    hits = [t for t in traces if str(t.get("name", "")).startswith(prefix)]
    assert hits, f"no trace named {prefix!r} among {[t.get('name') for t in traces]}"
    return hits


# --------------------------------------------------------------------------- show / render
def test_round_sig_and_nan():
    assert render.round_sig(0.0123456) == 0.01235
    assert render.round_sig(-123456.0) == -123500.0
    assert render.round_sig(float("nan")) is None and render.round_sig(-math.inf) is None
    arr = render._round_array(np.array([[1.23456, np.nan], [-np.inf, 0.0]]), 4)
    assert arr == [[1.235, None], [None, 0.0]]


def test_mimebundle_is_deterministic_offline_and_rounded():
    fig = viz.attention_map(model_for(), "cat")
    render.reset_ids()
    a = viz.mimebundle(fig, html=True)
    render.reset_ids()
    b = viz.mimebundle(fig, html=True)
    assert a == b
    assert set(a) == {"text/html", "application/vnd.plotly.v1+json", "text/plain"}
    html = a["text/html"]
    # no remote script, no CDN, no random uuid-style ids
    assert "http://" not in html and "https://" not in html and "<script src" not in html
    div_id = re.search(r'<div id="([^"]+)"', html).group(1)
    assert div_id == render.stable_id(viz.figure_json(fig))
    # the same figure shown twice in one kernel gets a distinct, still deterministic id
    again = viz.mimebundle(fig, html=True)["text/html"]
    assert f'id="{div_id}-2"' in again
    spec = a["application/vnd.plotly.v1+json"]
    assert spec["config"]["displaylogo"] is False and spec["config"]["responsive"] is True
    z = spec["data"][0]["z"]
    flat = [v for row in z for v in row if v is not None]
    assert all(v == render.round_sig(v) for v in flat)  # every number has <= 4 significant digits
    assert any(v is None for row in z for v in row)  # masked cells are null, not NaN (valid JSON)
    json.dumps(spec, allow_nan=False)


def shown_output(monkeypatch, fig) -> dict:
    """The notebook output ``viz.show(fig)`` writes (as nbformat stores it: keys sorted, JSON round trip)."""
    shown = []
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append((obj, raw)))
    monkeypatch.setattr("IPython.get_ipython", lambda: object())
    assert viz.show(fig) is None
    (bundle, raw), = shown
    assert raw is True
    return json.loads(json.dumps(bundle, sort_keys=True))


def test_a_shown_figure_is_stored_once(monkeypatch):
    """Issue 21 item 7: the notebook output holds the figure once, as plotly JSON (+ its title as text);
    the book draws that same JSON (render.book_html) and nbval compares it."""
    monkeypatch.setattr(render, "_html_too", False)
    fig = viz.residual_view(model_for(), "cat")
    out = shown_output(monkeypatch, fig)
    assert set(out) == {"application/vnd.plotly.v1+json", "text/plain"}
    spec = out["application/vnd.plotly.v1+json"]
    # the other part is the title alone: nothing else carries the figure's numbers
    assert out["text/plain"].startswith("<tinytf figure: ") and len(out["text/plain"]) < 300
    assert {k: v for k, v in spec.items() if k != "config"} == json.loads(viz.figure_json(fig))
    # the book's HTML for that stored JSON is exactly what the live HTML branch draws for the figure
    page = render.book_html(spec, {})
    live = viz.figure_html(fig, div_id=render.stable_id(viz.figure_json(fig)))
    inline = re.compile(r"var fig = (\{.*?\});\n", re.S)  # the figure JSON inside the script (key order aside)
    assert inline.sub("", page) == inline.sub("", live)
    assert json.loads(inline.search(page).group(1)) == json.loads(inline.search(live).group(1))
    assert "tinytf-figure" in page and "window.tinytfFigures" in page
    # repeats on one page get numbered ids, the same in every build
    seen = {}
    ids = [re.search(r'<div id="([^"]+)"', render.book_html(spec, seen)).group(1) for _ in range(2)]
    base = render.stable_id(viz.figure_json(fig))
    assert ids == [base, base + "-2"]


def test_colab_and_classic_jupyter_get_html(monkeypatch):
    fig = viz.attention_map(model_for(), "ab")
    assert "cdn.plot.ly" not in viz.figure_html(fig)
    assert "cdn.plot.ly" in viz.figure_html(fig, cdn=True)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    out = shown_output(monkeypatch, fig)  # Colab: HTML only (its frontend cannot draw plotly JSON)
    assert set(out) == {"text/html", "text/plain"} and "cdn.plot.ly" in out["text/html"]
    monkeypatch.delitem(sys.modules, "google.colab")
    monkeypatch.setattr(render, "_html_too", True)  # what init_notebook() sets for classic Jupyter
    out = shown_output(monkeypatch, fig)
    assert set(out) == {"text/html", "application/vnd.plotly.v1+json", "text/plain"}
    assert "cdn.plot.ly" not in out["text/html"]


# --------------------------------------------------------------------------- block stepper
def test_stepper_frames_controls_and_consistent_traces():
    model = model_for()
    fig = viz.block_stepper(model, "cat")
    names = [f.name for f in fig.frames]
    assert names == PRE_NORM_STAGES
    steps = fig.layout.sliders[0].steps
    assert [s.args[0][0] for s in steps] == names and all(s.method == "animate" for s in steps)
    play, pause = fig.layout.updatemenus[0].buttons
    assert play.method == "animate" and play.args[0] is None and play.args[1]["fromcurrent"] is True
    assert list(pause.args[0]) == [None]
    # every frame maps onto the same traces (same count, type and axes), else plotly.animate breaks
    base = [(t.type, t.xaxis, t.yaxis) for t in fig.data]
    for f in fig.frames:
        assert len(f.data) == len(base), f.name
    for i, f in enumerate(fig.frames):
        assert f.layout.title.text.startswith(f"<b>{i + 1}/{len(names)} · ")
    # the first frame says where RoPE is taught (the default model adds no position vector)
    assert "with RoPE (chapter 1) the positions enter later" in fig.frames[0].layout.title.text
    # plotly.animate merges annotations item by item: all frames must have the same number
    assert len({len(f.layout.annotations) for f in fig.frames}) == 1


def test_stepper_numbers_equal_the_trace():
    model = model_for()
    tr = trace_of(model, "cat")
    fig = viz.block_stepper(model, "cat")
    p = "blocks.0."
    expect = {
        "embed": [("token embedding", tr["tok_embed"][0])],
        "norm1": [("H ", tr[p + "resid_pre"][0]), ("Norm1(H)", tr[p + "norm1.out"][0])],
        "qkv": [(f"{n} head {h} ", tr[p + f"attn.{n.lower()}"][0, h]) for n in "QKV" for h in range(2)],
        "rope": [(f"Q head {h} rotated", tr[p + "attn.q_rot"][0, h]) for h in range(2)],
        "scores": [(f"head {h} ", tr[p + "attn.scores"][0, h]) for h in range(2)],
        "softmax": [(f"head {h} ", tr[p + "attn.weights"][0, h]) for h in range(2)],
        "wsum": [(f"head {h} output", tr[p + "attn.z"][0, h]) for h in range(2)],
        "merge": [("heads merged", tr[p + "attn.merged"][0]), ("Attn(·)", tr[p + "attn.out"][0])],
        "resid1": [("Attn(Norm1(H))", tr[p + "attn.out"][0]), ("U ", tr[p + "resid_mid"][0])],
        "up": [("gate", tr[p + "ffn.gate"][0]), ("up", tr[p + "ffn.up"][0])],
        "act": [("SiLU(gate)", tr[p + "ffn.act"][0]), ("= hidden", tr[p + "ffn.post"][0])],
        "down": [("FFN(x)", tr[p + "ffn.out"][0])],
        "resid2": [("FFN(Norm2(U))", tr[p + "ffn.out"][0]), ("H'", tr[p + "resid_post"][0])],
    }
    for frame, panels in expect.items():
        traces = frame_traces(fig, frame)
        for prefix, tensor in panels:
            (hm,) = [t for t in by_name(traces, prefix) if t["type"] == "heatmap" and "mask" not in t["name"]]
            z, expected = np.asarray(hm["z"], dtype=float), np_(tensor)
            if frame == "softmax":  # masked cells are drawn as gaps (NaN), the rest are the weights
                gaps = np.isneginf(np_(tr[p + "attn.masked_scores"][0, int(prefix.split()[1])]))
                np.testing.assert_array_equal(np.isnan(z), gaps)
                assert (expected[gaps] == 0).all()
                z, expected = z[~gaps], expected[~gaps]
            np.testing.assert_array_equal(z, expected, err_msg=f"{frame}: {prefix}")
            assert list(hm["y"]) == axis_labels(tinytf.token_labels(tinytf.encode("cat")), 3)


def test_stepper_mask_frame_marks_exactly_the_masked_cells():
    model = model_for()
    tr = trace_of(model, "hello")
    fig = viz.block_stepper(model, "hello")
    traces = frame_traces(fig, "mask")
    for h in range(2):
        ms = np_(tr["blocks.0.attn.masked_scores"][0, h])
        forbidden = np.isneginf(ms)
        assert forbidden.sum() == 10  # 5 tokens: 4+3+2+1 later keys
        (hm,) = [t for t in by_name(traces, f"head {h} ") if "mask" not in t["name"]]
        z = np.asarray(hm["z"], dtype=float)
        np.testing.assert_array_equal(np.isnan(z), forbidden)
        np.testing.assert_array_equal(z[~forbidden], ms[~forbidden])
        (mask,) = by_name(traces, f"head {h} mask")
        np.testing.assert_array_equal(~np.isnan(np.asarray(mask["z"], dtype=float)), forbidden)


def test_stepper_position_diagram_follows_the_attention_weights():
    model = model_for()
    fig = viz.block_stepper(model, "hello")
    T = 5
    straight = next(t for t in frame_traces(fig, "norm1") if t["name"] == "reads")
    assert len(straight["x"]) == 3 * T  # one edge (+ None gap) per token: no mixing
    for row_wise in ("mask", "softmax"):  # they work on one query's row of scores at a time: no lines across
        assert next(t for t in frame_traces(fig, row_wise) if t["name"] == "reads")["x"] == straight["x"], row_wise
    reads = next(t for t in frame_traces(fig, "wsum") if t["name"] == "reads")
    assert len(reads["x"]) == 3 * T * (T + 1) // 2  # causal: token i reads keys 0..i
    weights = next(t for t in frame_traces(fig, "wsum") if t["name"] == "weight")
    w = np_(trace_of(model, "hello")["blocks.0.attn.weights"][0]).mean(0)
    np.testing.assert_allclose(sorted(weights["marker"]["color"]), sorted(w[np.tril_indices(T)]), rtol=0, atol=0)
    scores = next(t for t in frame_traces(fig, "scores") if t["name"] == "reads")
    assert len(scores["x"]) == 3 * T * T  # every query meets every key


def test_stepper_frames_zoom_to_their_panels():
    model = model_for()
    fig = viz.block_stepper(model, "cat")
    ranges = {f.name: list(f.layout.xaxis.range) for f in fig.frames}
    assert list(fig.layout.xaxis.range) == ranges["embed"]  # the figure opens on the first frame's range
    span = {name: r[1] - r[0] for name, r in ranges.items()}
    assert span["embed"] < span["up"]  # the embedding is not drawn in the width the FFN needs
    for name, (lo, hi) in ranges.items():  # every panel lies inside its frame's range
        for t in frame_traces(fig, name):
            if t["type"] == "heatmap":
                left = t["x0"] - t["dx"] / 2
                assert lo <= left and left + len(t["z"][0]) * t["dx"] <= hi, (name, t["name"])


def test_stepper_ffn_is_drawn_to_scale_and_shapes_in_titles():
    model = model_for()
    fig = viz.block_stepper(model, "cat")
    traces = frame_traces(fig, "up")
    (x_in,) = by_name(traces, "x = Norm2(U)")
    (gate,) = by_name(traces, "gate")
    width = lambda t: len(t["z"][0]) * t["dx"]  # noqa: E731
    assert width(gate) == pytest.approx(4 * width(x_in))  # d_ff = 64 = 4 x 16
    titles = {f.name: f.layout.title.text for f in fig.frames}
    assert "shape 3 × [1, 2, 3, 8]" in titles["qkv"]
    assert "shape 2 × [1, 3, 64]" in titles["up"]
    assert "shape [1, 3, 16]" in titles["resid2"]


@pytest.mark.parametrize("changes,expected", [
    (dict(norm_position="post", ffn="relu", pos="sinusoidal", norm="layer", bias=True),
     ["embed", "qkv", "scores", "mask", "softmax", "wsum", "merge", "resid1", "up", "act", "down", "resid2"]),
    (dict(ffn="gelu", pos="learned"),
     ["embed", "norm1", "qkv", "scores", "mask", "softmax", "wsum", "merge", "resid1", "norm2", "up", "act",
      "down", "resid2"]),
])
def test_stepper_other_blocks(changes, expected):
    model = model_for(**changes)
    tr = trace_of(model, "cat")
    fig = viz.block_stepper(model, "cat")
    assert [f.name for f in fig.frames] == expected
    embed = frame_traces(fig, "embed")
    (pos,) = by_name(embed, "position vector")  # additive positions are drawn as their own panel
    np.testing.assert_array_equal(np.asarray(pos["z"]), np_(tr["pos.table"]))
    act = next(f for f in fig.frames if f.name == "act")
    assert ("ReLU" if changes["ffn"] == "relu" else "GELU") in act.layout.title.text
    if changes.get("norm_position") == "post":  # the trace alone tells post-norm apart
        from_trace = viz.block_stepper(tr, labels=list("cat"))
        assert [f.name for f in from_trace.frames] == expected


def test_stepper_from_trace_equals_from_model_and_layer_1():
    model = model_for()
    tr = trace_of(model, "cat")
    a = viz.block_stepper(model, "cat", layer=1)
    b = viz.block_stepper(tr, labels=tinytf.token_labels(tinytf.encode("cat")), layer=1)
    assert viz.figure_json(a) == viz.figure_json(b)
    (hm,) = by_name(frame_traces(a, "embed"), "H (stream into block 1)")
    np.testing.assert_array_equal(np.asarray(hm["z"]), np_(tr["blocks.1.resid_pre"][0]))
    with pytest.raises(tinytf.TinyTFInputError, match="block 5"):
        viz.block_stepper(model, "cat", layer=5)


def test_mixing_flags_are_measured_not_typed():
    # the stepper's "mixes positions?" flags agree with a perturbation measurement on real models
    for changes in ({}, dict(norm_position="post", ffn="relu"), dict(n_kv_heads=1, pos="none")):
        model = model_for(**changes)
        mixing = viz.measure_mixing(model, tinytf.encode("abcd"))
        assert {k for k, v in mixing.items() if v} == viz.MIXING_STAGES, changes


def test_measure_mixing_sees_a_non_causal_leak():
    # with the off-by-one mask, the mask stage itself still does not mix, but the weighted sum reads
    # one position further: check the measurement on the last position's row moves when the
    # *next* position is perturbed (impossible with a correct mask)
    from tinytf.viz.shapes import _moved_positions, _perturb_position

    model = model_for()
    ids = tinytf.encode("abcd")
    with torch.no_grad():
        _, base = model.run_with_trace(ids)
        _, tr = model.run_with_trace(ids, patches={"blocks.0.attn.v": _perturb_position(2)})
    assert _moved_positions(base["blocks.0.attn.z"], tr["blocks.0.attn.z"]) == {2, 3}
    with tinytf.broken_mask(model), torch.no_grad():
        _, base = model.run_with_trace(ids)
        _, tr = model.run_with_trace(ids, patches={"blocks.0.attn.v": _perturb_position(2)})
    assert 1 in _moved_positions(base["blocks.0.attn.z"], tr["blocks.0.attn.z"])


# --------------------------------------------------------------------------- attention map
def test_attention_map_values_mask_and_labels():
    model = model_for()
    tr = trace_of(model, "hello")
    fig = viz.attention_map(model, "hello")
    w = np_(tr["blocks.0.attn.weights"][0])
    forbidden = np.isneginf(np_(tr["blocks.0.attn.masked_scores"][0]))
    labels = axis_labels(tinytf.token_labels(tinytf.encode("hello")), 5)
    heat = [t for t in fig.data if t.type == "heatmap" and "masked" not in t.name]
    assert [t.name for t in heat] == ["mean of heads", "head 0", "head 1"]
    for t, expected, mask in zip(heat, [w.mean(0), w[0], w[1]], [forbidden.all(0), forbidden[0], forbidden[1]]):
        z = np.asarray(t.z, dtype=float)
        np.testing.assert_array_equal(np.isnan(z), mask)
        np.testing.assert_array_equal(z[~mask], expected[~mask])
        assert list(t.x) == labels and list(t.y) == labels
    masks = [t for t in fig.data if t.type == "heatmap" and t.name.endswith("(masked)")]
    assert len(masks) == 3 and all("masked" in t.hovertemplate for t in masks)
    np.testing.assert_array_equal(~np.isnan(np.asarray(masks[1].z, dtype=float)), forbidden[0])
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 1


def test_attention_map_masked_cells_unlike_any_weight_and_rows_apart():
    # masked cells are white with a dark mark in light and dark mode: a light grey cell read as a mid weight of
    # cividis. A pure grey mark would be lightened by the page's dark mode (figure_core.js isGrey), so it is not one.
    from tinytf.viz.attention_map import MASK_FILL, MASK_ON_WHITE, ROW_GAP_PX
    from tinytf.viz.common import SEQUENTIAL

    model = model_for()
    fig = viz.attention_map(model, "hello", cols=1)  # 3 panels, one per row
    masks = [t for t in fig.data if t.type == "heatmap" and t.name.endswith("(masked)")]
    assert masks and all({c for _, c in t.colorscale} == {MASK_FILL} for t in masks)
    assert MASK_FILL.lower() == "#ffffff" and MASK_FILL not in [c for _, c in SEQUENTIAL]
    marks = [t for t in fig.data if t.type == "scatter" and t.name.endswith("mask marks")]
    assert marks and all(t.marker.line.color == MASK_ON_WHITE for t in marks)
    r, g, b = (int(MASK_ON_WHITE[i:i + 2], 16) for i in (1, 3, 5))
    assert not r == g == b and max(r, g, b) < 100  # dark, and not a grey the dark mode would recolour
    # the gap between two rows of panels, in pixels, leaves room for the axis title and the next panel's title
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    upper, lower = fig.layout.yaxis.domain, fig.layout.yaxis2.domain
    assert (upper[0] - lower[1]) * plot_px >= ROW_GAP_PX - 0.5


def test_attention_map_single_head_and_trace_input():
    model = model_for()
    tr = trace_of(model, "cat")
    fig = viz.attention_map(tr, layer=1, heads=1, labels=list("cat"))
    (t,) = [t for t in fig.data if t.type == "heatmap" and "masked" not in t.name]
    z = np.asarray(t.z, dtype=float)
    w = np_(tr["blocks.1.attn.weights"][0, 1])
    np.testing.assert_array_equal(z[~np.isnan(z)], w[np.tril_indices(3)])
    assert list(t.y) == ["0: c", "1: a", "2: t"]
    with pytest.raises(tinytf.TinyTFInputError, match="head 7"):
        viz.attention_map(model, "cat", heads=7)
    with pytest.raises(tinytf.TinyTFInputError, match="cross-attention"):
        viz.attention_map(model, "cat", kind="cross")
    with pytest.raises(tinytf.TinyTFInputError, match="kind"):
        viz.attention_map(model, "cat", kind="sideways")


def test_attention_map_name_block():
    """name_block=True: each panel's title names the block as well as the head."""
    model = model_for()
    fig = viz.attention_map(model, "cat", layer=1, heads=("mean", 0), name_block=True)
    heat = [t for t in fig.data if t.type == "heatmap" and "masked" not in t.name]
    assert [t.name for t in heat] == ["block 1, mean of heads", "block 1, head 0"]
    titles = [a.text for a in fig.layout.annotations]
    assert any("block 1, head 0" in t for t in titles)


def test_attention_map_list_of_heads():
    """heads=("mean", 1): the mean panel, then head 1, and no other (fewer panels: a shorter figure on a phone)."""
    model = model_for()
    tr = trace_of(model, "cat")
    fig = viz.attention_map(tr, layer=1, heads=("mean", 1), labels=list("cat"))
    panels = [t for t in fig.data if t.type == "heatmap" and "masked" not in t.name]
    assert [t.name for t in panels] == ["mean of heads", "head 1"]
    w = np_(tr["blocks.1.attn.weights"][0])  # [H, T, T]
    for t, want in zip(panels, (w.mean(0), w[1])):
        z = np.asarray(t.z, dtype=float)
        np.testing.assert_allclose(z[~np.isnan(z)], want[np.tril_indices(3)], rtol=1e-6)
    assert fig.layout.height < viz.attention_map(tr, layer=1, heads="all", labels=list("cat"), cols=1).layout.height
    for bad in ([], ("mean", "all"), (0, True), ("mean", 9)):
        with pytest.raises(tinytf.TinyTFInputError, match="head"):
            viz.attention_map(model, "cat", heads=bad)


def test_cross_attention_map_target_by_source():
    tinytf.seed_everything(0)
    model = tinytf.EncoderDecoder(tinytf.TinyConfig(**SMALL)).eval()
    src, tgt = tinytf.encode("hello"), tinytf.encode("hi!")
    with torch.no_grad():
        _, tr = model.run_with_trace(src, tgt)
    fig = viz.attention_map(model, ("hello", "hi!"), kind="cross")
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert [t.name for t in heat] == ["mean of heads", "head 0", "head 1"]  # no mask in cross-attention
    w = np_(tr["decoder.blocks.0.cross_attn.weights"][0])
    np.testing.assert_array_equal(np.asarray(heat[1].z), w[0])
    np.testing.assert_array_equal(np.asarray(heat[0].z), w.mean(0))
    assert list(heat[0].x) == axis_labels(list("hello"), 5) and list(heat[0].y) == axis_labels(list("hi!"), 3)
    assert "target" in heat[0].hovertemplate and "source" in heat[0].hovertemplate
    # every source column and target row keeps its tick label (the text names columns one by one)
    assert fig.layout.xaxis.dtick == 1 and fig.layout.yaxis.dtick == 1 and fig.layout.xaxis.tickangle == 0
    long = viz.attention_map(model, ("hello world", "hi!"), kind="cross")
    assert long.layout.xaxis.dtick == 1 and long.layout.xaxis.tickangle == -90  # 11 source labels: rotated
    one = viz.attention_map(model, ("hello world", "hi!"), kind="cross", heads="mean")  # one panel: room enough
    assert one.layout.xaxis.tickangle == 0 and one.layout.height > long.layout.height / 2
    assert viz.attention_map(model_for(), "hello").layout.xaxis.dtick is None  # self-attention maps unchanged
    enc = viz.attention_map(model, ("hello", "hi!"), kind="encoder")
    np.testing.assert_array_equal(np.asarray(enc.data[1].z), np_(tr["encoder.blocks.0.attn.weights"][0, 0]))
    assert not any("masked" in t.name for t in enc.data)  # the encoder attends both ways
    with pytest.raises(tinytf.TinyTFInputError, match="src, tgt"):
        viz.attention_map(model, "hello", kind="cross")


# --------------------------------------------------------------------------- residual view
@pytest.mark.parametrize("sublayer,names", [
    ("attn", ["resid_pre", "attn.out", "resid_mid"]),
    ("ffn", ["resid_mid", "ffn.out", "resid_post"]),
])
def test_residual_view_equals_trace(sublayer, names):
    model = model_for()
    tr = trace_of(model, "cat")
    fig = viz.residual_view(model, "cat", layer=1, sublayer=sublayer)
    heat = [t for t in fig.data if t.type == "heatmap"]
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(heat) == 3 and len(bars) == 3
    for t, b, name in zip(heat, bars, names):
        x = np_(tr[f"blocks.1.{name}"][0])
        np.testing.assert_array_equal(np.asarray(t.z), x)
        np.testing.assert_allclose(np.asarray(b.y), np.linalg.norm(x, axis=-1), rtol=1e-12)
    # pre-norm: the third panel is the sum of the first two (what the reader is meant to see)
    np.testing.assert_allclose(np.asarray(heat[2].z), np.asarray(heat[0].z) + np.asarray(heat[1].z), atol=1e-6)
    assert [t.name for t in heat] == (["H", "Attn(Norm1(H))", "U"] if sublayer == "attn" else
                                      ["U", "FFN(Norm2(U))", "H'"])


def test_residual_view_post_norm_labels():
    model = model_for(norm_position="post")
    fig = viz.residual_view(model, "cat", sublayer="ffn")
    assert [t.name for t in fig.data if t.type == "heatmap"] == ["U", "FFN(U)", "H' = Norm2(U + FFN(U))"]
    with pytest.raises(tinytf.TinyTFInputError, match="sublayer"):
        viz.residual_view(model, "cat", sublayer="norm")


# --------------------------------------------------------------------------- FFN expansion
def test_ffn_expansion_relu_values_and_zero_fraction():
    model = model_for(ffn="relu")
    tr = trace_of(model, "cat")
    fig = viz.ffn_expansion(model, "cat")
    heat = [t for t in fig.data if t.type == "heatmap"]
    names = ["norm2.out", "ffn.pre", "ffn.post", "ffn.out"]
    assert len(heat) == 4
    for t, n in zip(heat, names):
        np.testing.assert_array_equal(np.asarray(t.z), np_(tr[f"blocks.0.{n}"][0]))
    h = tr["blocks.0.ffn.post"]
    exact, near = [t for t in fig.data if t.type == "bar"]
    assert exact.x[0] == pytest.approx(float((h == 0).float().mean()))
    assert near.x[0] == pytest.approx(float((h.abs() < 1e-2).float().mean()))
    assert 0.2 < exact.x[0] < 0.8  # ReLU zeroes a real share of the hidden units at init
    # hidden drawn 4x as wide as the input
    dom = lambda i: fig.layout[f"xaxis{'' if i == 0 else i + 1}"].domain  # noqa: E731
    assert (dom(1)[1] - dom(1)[0]) == pytest.approx(4 * (dom(0)[1] - dom(0)[0]), rel=1e-4)


def test_ffn_expansion_swiglu_gate_and_sparsity():
    model = model_for()
    tr = trace_of(model, "cat")
    fig = viz.ffn_expansion(model, "cat")
    heat = {t.name: t for t in fig.data if t.type == "heatmap"}
    np.testing.assert_array_equal(np.asarray(heat["SiLU(gate)"].z), np_(tr["blocks.0.ffn.act"][0]))
    np.testing.assert_array_equal(np.asarray(heat["h = SiLU(gate) ⊙ up"].z), np_(tr["blocks.0.ffn.post"][0]))
    sp = viz.ffn_sparsity(model, "cat")
    assert sp["SiLU(gate)"][0] == 0.0  # SiLU is never exactly zero here ...
    assert sp["SiLU(gate)"][1] == pytest.approx(float((tr["blocks.0.ffn.act"].abs() < 1e-2).float().mean()))
    assert sp["SiLU(gate)"][1] > 0  # ... but some units are near zero


# --------------------------------------------------------------------------- shape chain
SEED_002_TABLE = """\
stage           shape             mixes tokens?
--------------  ----------------  -------------
embed           [2, 4, 8]         no
Norm1           [2, 4, 8]         no
Q/K/V heads     3 × [2, 2, 4, 4]  no
RoPE            2 × [2, 2, 4, 4]  no
scores          [2, 2, 4, 4]      yes
causal mask     [2, 2, 4, 4]      no
softmax         [2, 2, 4, 4]      no
weights × V     [2, 2, 4, 4]      yes
merge + W_o     2 × [2, 4, 8]     no
residual add 1  [2, 4, 8]         no
Norm2           [2, 4, 8]         no
FFN up          2 × [2, 4, 32]    no
SiLU ⊙ up       2 × [2, 4, 32]    no
FFN down        [2, 4, 8]         no
residual add 2  [2, 4, 8]         no"""


def test_shape_chain_seed_002():
    rows = viz.shape_chain(B=2, T=4, C=8, n_heads=2, D=4, d_ff=32, seed=0)
    assert viz.format_shape_chain(rows) == SEED_002_TABLE
    relu = dict((r[0], r) for r in viz.shape_chain(ffn="relu"))
    assert relu["FFN up"][1] == "[2, 4, 32]" and relu["ReLU"][1] == "[2, 4, 32]"
    assert [r[0] for r in viz.shape_chain(B=1, T=3, C=12, n_heads=3, D=4, d_ff=48)][:3] == ["embed", "Norm1",
                                                                                    "Q/K/V heads"]
    assert viz.shape_chain(B=1, T=3, C=12, n_heads=3, D=4, d_ff=48)[2][1] == "3 × [1, 3, 3, 4]"
    assert viz.shape_chain(pos="learned")[0][0] == "embed + pos"  # only a learned position table is added
    with pytest.raises(tinytf.TinyTFInputError, match="n_heads \\* D"):
        viz.shape_chain(C=8, n_heads=2, D=3)


def test_shape_chain_with_key():
    """with_key puts each stage's measure_mixing key beside its label, in measure_mixing's order."""
    rows = viz.shape_chain(B=2, T=4, C=8, n_heads=2, D=4, d_ff=32, seed=0, with_key=True)
    plain = viz.shape_chain(B=2, T=4, C=8, n_heads=2, D=4, d_ff=32, seed=0)
    assert [r[:1] + r[2:] for r in rows] == plain
    assert [r[1] for r in rows][:3] == ["embed", "norm1", "qkv"] and rows[-1][1] == "resid2"
    table = viz.format_shape_chain(rows).splitlines()
    assert table[0].split() == ["stage", "key", "shape", "mixes", "tokens?"]
    assert table[4].startswith("Q/K/V heads") and " qkv " in table[4]


def test_views_reject_bad_input_clearly():
    model = model_for()
    with pytest.raises(tinytf.TinyTFInputError, match="empty"):
        viz.block_stepper(model, "")
    with pytest.raises(tinytf.TinyTFInputError, match="outside the vocabulary"):
        viz.attention_map(model, [3, 999])
    with pytest.raises(tinytf.TinyTFInputError, match="tinytf model"):
        viz.residual_view("not a model", "cat")
