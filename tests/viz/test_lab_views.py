"""tinytf.viz.lab: the lab's attention templates fill to the figure Python builds, for any prompt length;
the landing page embeds the lab's current state."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

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
    assert sorted(tpls) == sorted(f"{l}-{h}" for l in range(4) for h in range(6))
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


@pytest.mark.parametrize("chapter,view", [("11_generation_kv_cache", "sampling"), ("12_misconceptions", "parts")])
def test_chapters_embed_the_lab_with_their_view(chapter, view):
    import json

    nb = json.loads((ROOT / "chapters" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    found = [c for c in nb["cells"] if c["cell_type"] == "markdown" and 'class="tinytf-lab"' in "".join(c["source"])]
    assert len(found) == 1
    assert lab.lab_html(view) in "".join(found[0]["source"])
