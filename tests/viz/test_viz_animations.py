"""The animations of tinytf.viz.animations draw what tinytf computes: every frame is read from a
trace, RoPE.rotate, exact_layer_params or the reviewer (issue #13, requirement 7)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tinytf
from tinytf.errors import TinyTFInputError
from tinytf.viz import figure_json
from tinytf.viz.animations import depth_animation, rope_animation, swap_animation, temperature_animation
from tinytf.viz.positions import rope_pair_paths


def _z(trace):
    return np.asarray(trace["z"], dtype=float)


def test_rope_animation_frames_follow_rope_rotate():
    fig = rope_animation(d_head=16, n_positions=6, pairs=(0, 7))
    assert [f.name for f in fig.frames] == [str(t) for t in range(6)]
    paths = rope_pair_paths(16, 6, (0, 7))
    for t, frame in enumerate(fig.frames):
        arrows = [d for d in frame.data if d.name and " at position " in d.name]
        for arrow, i in zip(arrows, (0, 7)):
            assert np.allclose([arrow.x[1], arrow.y[1]], paths[i][t].numpy(), atol=1e-6)
    assert fig.layout.sliders and fig.layout.updatemenus  # controls for JupyterLab; the book swaps them
    figure_json(fig)


def test_temperature_one_is_the_models_own_attention():
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer().eval()
    ids = tinytf.encode("the cat")
    fig = temperature_animation(model, ids, layer=1, head=2, temperatures=(2.0, 1.0, 0.5))
    _, trace = model.run_with_trace(ids)
    w = trace["blocks.1.attn.weights"][0, 2].double().numpy()
    one = _z(fig.frames[1].data[0])
    mask = np.isnan(one)
    assert np.array_equal(mask, w == 0) or mask.sum() == np.triu(np.ones_like(w), 1).sum()
    assert np.allclose(one[~mask], w[~mask], atol=1e-6)
    sharp, flat = _z(fig.frames[2].data[0]), _z(fig.frames[0].data[0])
    assert np.nanmax(sharp, -1).mean() > np.nanmax(one, -1).mean() > np.nanmax(flat, -1).mean()
    with pytest.raises(TinyTFInputError):
        temperature_animation(model, ids, head=9)
    with pytest.raises(TinyTFInputError):
        temperature_animation(model, ids, temperatures=(0,))


def test_depth_animation_reads_the_stream_from_the_trace():
    tinytf.seed_everything(0)
    pre = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=3)).eval()
    tinytf.seed_everything(0)
    post = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=3, norm_position="post")).eval()
    fig = depth_animation({"pre": pre, "post": post}, "cat")
    assert len(fig.frames) == 1 + 2 * 3
    _, trace = post.run_with_trace(tinytf.encode("cat"))
    last = fig.frames[-1].data[2]  # post: heatmap
    stream = trace["blocks.2.resid_post"][0].double().numpy()
    direction = stream / np.sqrt((stream ** 2).mean(-1, keepdims=True))  # each token divided by its RMS
    assert np.allclose(_z(last), direction, atol=1e-5)
    assert np.allclose(np.sqrt((_z(fig.frames[0].data[0]) ** 2).mean(-1)), 1.0, atol=1e-5)  # small stream: RMS 1 too
    assert np.allclose(fig.frames[-1].data[3].x, np.sqrt((stream ** 2).mean(-1)), atol=1e-6)  # bars: the real RMS
    with pytest.raises(TinyTFInputError):
        depth_animation({"a": pre, "b": tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=2))}, "cat")


def test_swap_animation_counts_parameters_and_gaps():
    cfg = tinytf.config_2017()
    steps = [("2017", cfg), ("pre-norm", cfg.replace(norm_position="pre")),
             ("RMSNorm", cfg.replace(norm_position="pre", norm="rms"))]
    fig = swap_animation(steps)
    assert len(fig.frames) == 3
    for k, ((name, c), frame) in enumerate(zip(steps, fig.frames)):
        exact = tinytf.exact_layer_params(c)
        assert list(frame.data[0].x) == [exact["attention"], exact["ffn"], exact["norms"]]
        assert f"{exact['total']:,}" in frame.layout.title.text
        assert f"Swap {k}: {name} " in frame.layout.title.text  # swap 0: the block before any swap
    assert [step.label for step in fig.layout.sliders[0].steps] == [name for name, _ in steps]
    from tinytf.review import review

    assert list(fig.frames[-1].data[1].x) == [len(review(c)) for _, c in steps]
    with pytest.raises(TinyTFInputError):
        swap_animation([])


def test_swap_animation_axis_ranges_cover_every_frame():
    """Plotly's animate keeps the axis ranges of the first frame: each axis has a fixed range (no
    autorange) that holds every frame's bars, so the last frame's seven rows of differences all show."""
    cfg = tinytf.config_2017()
    steps = [("2017", cfg), ("pre-norm", cfg.replace(norm_position="pre")),
             ("RMSNorm", cfg.replace(norm_position="pre", norm="rms")),
             ("no biases", cfg.replace(norm_position="pre", norm="rms", bias=False))]
    fig = swap_animation(steps)
    lay = fig.layout
    for ax in (lay.xaxis, lay.yaxis2, lay.xaxis2):
        assert ax.autorange in (None, False) and ax.range is not None
    rows = list(lay.yaxis2.categoryarray)
    assert rows == [name for name, _ in steps]
    low, high = sorted(lay.yaxis2.range)
    for frame in fig.frames:
        params, gaps = frame.data  # the figure core sizes the labels' gap from the category array (all rows)
        assert all(0 <= x <= max(lay.xaxis.range) for x in params.x)
        assert all(low < rows.index(y) < high for y in gaps.y)  # every row of this frame is inside the axis
        assert all(0 <= x < max(lay.xaxis2.range) for x in gaps.x)
    assert list(fig.frames[-1].data[1].y) == rows


def test_animated_figures_in_the_book():
    """At least six animated figures across the chapters (the stepper, the KV cache, and one more
    in each of chapters 1, 2, 5 and 9)."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    animated = {}
    for nb in sorted((root / "chapters").glob("*.ipynb")):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            for out in cell.get("outputs", []):
                spec = out.get("data", {}).get("application/vnd.plotly.v1+json")
                if spec and spec.get("frames"):
                    animated[nb.stem] = animated.get(nb.stem, 0) + 1
    assert sum(animated.values()) >= 6, animated
    for stem in ("01_tokens_embeddings_positions", "02_causal_self_attention", "05_residuals_pre_post_norm",
                 "09_2017_to_2026"):  # the chapter's page or its lab notes (chapter 2's temperature animation)
        src = "".join((root / "chapters" / f"{name}.ipynb").read_text(encoding="utf-8")
                      for name in (stem, f"{stem}_notes"))
        assert "tinytf.viz.animations import" in src, stem
    torch.set_num_threads(torch.get_num_threads())
