"""tinytf.viz.lab: the lab's attention templates fill to the figure Python builds, for any prompt length;
the landing page embeds the lab's current state."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import tinytf
from tinytf.errors import TinyTFInputError
from tinytf.lab import browser_lab as lab
from tinytf.viz import lab as views
from tinytf.viz.templates import byte_labels, plain

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model():
    return tinytf.pretrained("text-4l")


def _labels(ids):
    table = byte_labels()
    return [table[i] for i in ids]


def test_a_template_fills_to_the_view_for_any_length(model):
    sample = list(b"abc")
    tpls = views.attention_templates(4, 6, {"attn": lab.run_lab(model, sample)["attn"].numpy()}, _labels(sample))
    assert {f"{l}-{h}" for l in range(4) for h in range(6)} <= set(tpls)
    assert tpls["1-2"]["outputs"] == ["attn"]
    for text in ("x", "The model reads bytes.", "a" * 128):
        ids = list(text.encode())
        out = {"attn": lab.run_lab(model, ids)["attn"].numpy()}
        for key in ("0-0", "3-5"):
            layer, head = map(int, key.split("-"))
            want = plain(views.figure_of(views.attention_view(out, _labels(ids), layer, head)))
            assert views.apply(tpls[key], out, _labels(ids)) == want
            z = np.array(want["data"][0]["z"])
            assert z.shape == (len(ids), len(ids)) and np.allclose(z.sum(-1), 1, atol=1e-5)
            assert np.all(np.triu(z, 1) == 0)  # the causal mask: no later byte is read


def test_a_switched_off_head_says_so(model):
    """A head switched off keeps its weights (only its output is multiplied by 0): the same map, drawn faded,
    with a title that says so."""
    sample = list(b"abc")
    tpls = views.attention_templates(4, 6, {"attn": lab.run_lab(model, sample)["attn"].numpy()}, _labels(sample))
    assert sorted(tpls) == sorted(f"{l}-{h}{s}" for l in range(4) for h in range(6) for s in ("", "-off"))
    ids = list(b"The model reads bytes.")
    out = {"attn": lab.run_lab(model, ids)["attn"].numpy()}
    on = plain(views.figure_of(views.attention_view(out, _labels(ids), 2, 3)))
    off = plain(views.figure_of(views.attention_view(out, _labels(ids), 2, 3, switched_off=True)))
    assert views.apply(tpls["2-3-off"], out, _labels(ids)) == off
    assert off["data"][0]["z"] == on["data"][0]["z"]  # the same weights
    assert off["data"][0]["opacity"] < 1 and "opacity" not in on["data"][0]
    title = off["layout"]["title"]["text"]
    assert "switched off" in title and views.SWITCHED_OFF in title and "switched off" not in on["layout"]["title"]["text"]


def test_the_maps_cell_lines_go_when_the_rows_are_many(model):
    """Up to GAP_ROWS rows the map has 1 px lines between its cells; above, none (at 128 x 128 the lines hid the
    cells): bound to the number of rows, so the one template gives both."""
    sample = list(b"abc")
    tpl = views.template(views.attention_view({"attn": lab.run_lab(model, sample)["attn"].numpy()},
                                              _labels(sample), 0, 0))
    for n, gap in ((1, 1), (views.GAP_ROWS, 1), (views.GAP_ROWS + 1, 0), (128, 0)):
        ids = list(b"The model reads bytes, one at a time. " * 4)[:n]
        out = {"attn": lab.run_lab(model, ids)["attn"].numpy()}
        want = plain(views.figure_of(views.attention_view(out, _labels(ids), 0, 0)))
        assert (want["data"][0]["xgap"], want["data"][0]["ygap"]) == (gap, gap), n
        assert views.apply(tpl, out, _labels(ids)) == want


def _lens_python(model, ids, last):
    """Python's own lens, for comparison: softmax of the lens output, its argmax and max, the last positions."""
    probs = torch.softmax(lab.run_lab(model, ids)["lens"].double(), -1)[:, -last:]
    return probs.argmax(-1), probs.max(-1).values


def test_the_lens_template_fills_to_the_view_for_any_length(model):
    sample = list(b"abc")
    tpls = views.lens_templates({"lens": lab.run_lab(model, sample)["lens"].numpy()}, _labels(sample))
    assert sorted(tpls, key=int) == [str(n) for n in views.LENS_WINDOWS]
    assert all(t["outputs"] == ["lens"] for t in tpls.values())
    for text in ("x", "the quick brown f", "The model reads bytes, one at a time. " * 4, "def f(x):\n    return"):
        ids = list(text.encode())[-128:]
        out = {"lens": lab.run_lab(model, ids)["lens"].numpy()}
        for n in views.LENS_WINDOWS:
            want = plain(views.figure_of(views.lens_view(out, _labels(ids), last=n)))
            assert views.apply(tpls[str(n)], out, _labels(ids)) == want
            heat, truth = want["data"]
            shown = min(n, len(ids))
            guess, prob = _lens_python(model, ids, shown)
            assert np.array(heat["z"]).shape == (4, shown)
            assert np.abs(np.array(heat["z"]) - prob.numpy()).max() < 1e-6
            visible = [{" ": "␣", "\n": "↵"}.get(c, c) for c in text[-128:]]
            assert heat["text"] == [[views.GUESS_LABELS[b] for b in row] for row in guess.tolist()]
            assert heat["x"] == [f"{i}: {c}" for i, c in enumerate(visible)][-shown:]
            assert want["layout"]["xaxis"]["ticktext"] == visible[-shown:]
            assert truth["text"] == (visible[1:] + ["?"])[-shown:] and set(truth["y"]) == {"really next"}
    # a space and a new line as the next-byte table draws them (_static/tinytf-lab.js, byteName)
    assert (views.GUESS_LABELS[32], views.GUESS_LABELS[10], views.GUESS_LABELS[65]) == ("␣", "↵", "A")


def test_lens_view_names_bad_input(model):
    out = {"lens": lab.run_lab(model, [97, 98])["lens"].numpy()}
    with pytest.raises(TinyTFInputError, match="1 labels for 2 positions"):
        views.lens_view(out, ["a"])
    with pytest.raises(TinyTFInputError, match="last must be"):
        views.lens_view(out, ["a", "b"], last=0)
    with pytest.raises(TinyTFInputError, match="no 'lens'"):
        views.lens_view({}, ["a"])


def test_view_names_bad_layer_or_head(model):
    out = {"attn": lab.run_lab(model, [97])["attn"].numpy()}
    with pytest.raises(TinyTFInputError, match="layer 0..3 and head 0..5"):
        views.attention_view(out, ["a"], 4, 0)
    with pytest.raises(TinyTFInputError, match="no 'attn'"):
        views.attention_view({}, ["a"], 0, 0)


def test_the_landing_page_embeds_the_lab():
    intro = (ROOT / "intro.md").read_text(encoding="utf-8")
    assert intro.count('class="tinytf-lab"') == 1
    assert lab.lab_html() in intro  # the page's state is the module's (rerun lab_html() after a change)


def test_page_state_and_limits_agree():
    state = lab.page_state()
    assert set(state["limits"]) == set(state["rules"]) == set(state["names"])
    for name, (low, high, whole, may_be_empty) in state["limits"].items():
        d = state["defaults"][name]
        assert low <= d <= high and (not whole or d == int(d)), name


@pytest.mark.parametrize("chapter,view", [("10_generation_kv_cache", "sampling"), ("12_misconceptions", "parts")])
def test_chapters_embed_the_lab_with_their_view(chapter, view):
    import json

    nb = json.loads((ROOT / "chapters" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    found = [c for c in nb["cells"] if c["cell_type"] == "markdown" and 'class="tinytf-lab"' in "".join(c["source"])]
    assert len(found) == 1
    assert lab.lab_html(view) in "".join(found[0]["source"])
