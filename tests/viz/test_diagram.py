"""tinytf.viz.diagram: block diagrams drawn by code, deterministic, offline, and saying what they should."""
from __future__ import annotations

import json

import plotly.graph_objects as go
import pytest

from tinytf.viz import diagram
from tinytf.viz.render import mimebundle


def texts(fig):
    return [a.text for a in fig.layout.annotations if a.text]


def residual_paths(fig):
    return [s for s in fig.layout.shapes if s.type == "path" and s.line.color == "#c0392b"]


def test_pre_norm_block_reads_bottom_to_top():
    fig = diagram.block_diagram("pre")
    assert isinstance(fig, go.Figure) and "pre-norm" in fig.layout.title.text
    labels = texts(fig)
    order = [next(i for i, t in enumerate(labels) if key in t)
             for key in ("stream in", "RMSNorm", "causal self-attention", "SwiGLU", "stream out")]
    assert order == sorted(order)  # placed bottom to top in this order
    assert labels.count("RMSNorm") == 2 and labels.count("+") == 2
    assert len(residual_paths(fig)) == 2


def test_post_norm_block_puts_the_norm_after_the_addition():
    fig = diagram.block_diagram("post")
    labels = texts(fig)
    assert labels.count("LayerNorm") == 2 and "ReLU" in " ".join(labels)
    ys = {t: a.y for a in fig.layout.annotations for t in [a.text] if t in ("+", "LayerNorm")}
    plus = sorted(a.y for a in fig.layout.annotations if a.text == "+")
    norms = sorted(a.y for a in fig.layout.annotations if a.text == "LayerNorm")
    assert all(n > p for p, n in zip(plus, norms)) and ys


def test_same_sublayers_differ_only_in_the_norms_place():
    pre, post = diagram.block_diagram("pre"), diagram.block_diagram("post", sublayers="llama")
    assert sorted(texts(pre)) == sorted(texts(post))  # the same boxes, RMSNorm, RoPE and SwiGLU in both
    assert "SwiGLU" in " ".join(texts(post)) and "LayerNorm" not in texts(post)
    plus = sorted(a.y for a in post.layout.annotations if a.text == "+")
    norms = sorted(a.y for a in post.layout.annotations if a.text == "RMSNorm")
    assert all(n > p for p, n in zip(plus, norms))  # post-norm: each norm above (after) its addition
    assert "Llama-3-style" in post.layout.title.text
    assert "2017" in diagram.block_diagram("pre", sublayers="2017").layout.title.text
    with pytest.raises(ValueError, match="sublayers"):
        diagram.block_diagram("post", sublayers="gpt")


def test_bad_norm_position():
    with pytest.raises(ValueError, match="norm_position"):
        diagram.block_diagram("middle")


def test_model_diagram_counts_blocks_from_zero():
    labels = " ".join(texts(diagram.model_diagram(2)))
    assert "block 0" in labels and "block 1" in labels and "block 2" not in labels and "× 2" in labels
    deep = " ".join(texts(diagram.model_diagram(32)))
    assert "block 0" in deep and "block 31" in deep and "× 32" in deep


def test_model_diagram_can_write_the_stream_shape_on_its_arrows():
    assert "[B, T, C]" not in texts(diagram.model_diagram(2))  # off by default
    fig = diagram.model_diagram(2, shapes=True)
    assert texts(fig).count("[B, T, C]") == 4  # embedding → block 0 → block 1 → final norm → LM head
    ys = sorted(a.y for a in fig.layout.annotations if a.text == "[B, T, C]")
    embed = next(a.y for a in fig.layout.annotations if a.text.startswith("embedding"))
    head = next(a.y for a in fig.layout.annotations if a.text.startswith("LM head"))
    assert embed < ys[0] and ys[-1] < head


def test_encoder_decoder_diagram_joins_the_stacks_by_cross_attention():
    fig = diagram.encoder_decoder_diagram()
    labels = " ".join(texts(fig))
    for key in ("encoder", "decoder", "self-attention (no mask)", "masked self-attention", "cross-attention",
                "memory", "LM head"):
        assert key in labels
    assert len(residual_paths(fig)) == 2 + 3  # two residual adds per encoder block, three per decoder block
    assert any(s.type == "path" and s.line.color == "#6c3fb5" for s in fig.layout.shapes)


def test_diagrams_are_deterministic_and_offline():
    for make in (diagram.block_diagram, diagram.model_diagram, diagram.encoder_decoder_diagram):
        a, b = make().to_plotly_json(), make().to_plotly_json()
        assert json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)
        html = mimebundle(make(), html=True)["text/html"]
        assert "cdn.plot.ly" not in html and "plotly-graph-div" in html


def test_encoder_decoder_diagram_has_a_narrow_layout_with_the_same_words():
    fig = diagram.encoder_decoder_diagram()
    narrow = fig.layout.meta["tinytf"]["narrow"]
    assert narrow["below"] == diagram.NARROW_BELOW and "template" not in narrow["figure"]["layout"]
    L = narrow["figure"]["layout"]
    assert L["width"] <= 400 < diagram.NARROW_BELOW <= fig.layout.width  # drawn for a phone, chosen below tablets
    # every text is one of the wide figure's, named by its index there (so a translation of the wide one serves both)
    wide = [a.text for a in fig.layout.annotations]  # the arrows too: annotations without text
    assert [wide[i] for i in narrow["text_of"]] == [a["text"] for a in L["annotations"]]
    assert sorted(a["text"] for a in L["annotations"]) == sorted(a.text for a in fig.layout.annotations)
    boxes = [a for a in L["annotations"] if a["text"] not in ("", "+", "× N")]
    assert min(a["font"]["size"] for a in boxes) >= 13  # larger than the wide figure's 12
    # one stack above the other: the decoder's every row above the encoder's
    y = {a["text"]: a["y"] for a in L["annotations"]}
    assert y["target ids"] > y["final RMSNorm<br>= memory [B, S, C]"] and y["LM head<br>→ logits [B, T, V]"] == max(y.values())


def test_the_figure_core_draws_the_narrow_layout_below_its_width():
    """tinytf/viz/figure_core.js's adapt (run in node by tests/js/adapt_runner.js), at phone and wide widths."""
    from conftest import require

    require("node")
    import subprocess
    from pathlib import Path

    from tinytf.viz.render import figure_dict

    root = Path(__file__).resolve().parents[2]
    spec = figure_dict(diagram.encoder_decoder_diagram())
    spec["layout"]["annotations"][0]["text"] = "translated"  # as another edition's catalogue would
    job = {"core": str(root / "tinytf" / "viz" / "figure_core.js"), "spec": spec,
           "widths": [343, diagram.NARROW_BELOW - 1, diagram.NARROW_BELOW, 688]}
    out = subprocess.run(["node", str(root / "tests" / "js" / "adapt_runner.js")], input=json.dumps(job),
                         capture_output=True, text=True, check=True)
    phone, below, at, wide = json.loads(out.stdout)
    narrow_width = spec["layout"]["meta"]["tinytf"]["narrow"]["figure"]["layout"]["width"]
    assert phone["width"] == below["width"] == narrow_width and at["width"] == wide["width"] == 760
    assert phone["height"] > wide["height"] and phone["template"]  # taller, with the wide figure's template
    assert "translated" in phone["annotations"] and "source ids" not in phone["annotations"]
    assert sorted(phone["annotations"]) == sorted(wide["annotations"])
