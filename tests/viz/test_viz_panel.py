"""tinytf.viz.live_panel: driving the widgets programmatically redraws the figure from a new
trace; bad input becomes a message in the panel, never a traceback."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tinytf
from tinytf import viz
from tinytf.viz.panel import RANDOM, LivePanel

SMALL = tinytf.TinyConfig(d_model=16, n_heads=2, d_ff=64, n_layers=2)


def first_heatmap(fig):
    return np.asarray(next(t for t in fig.data if t.type == "heatmap" and t.visible is not False).z, dtype=float)


def traced(panel, text):
    with torch.no_grad():
        return panel.model().run_with_trace(tinytf.encode(text))[1]


@pytest.fixture
def panel(capsys):
    p = viz.live_panel(text="cat", config=SMALL)
    yield p
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err  # nothing leaked out of the panel


def test_panel_starts_with_a_real_figure(panel):
    assert isinstance(panel, LivePanel)
    assert panel.message.value == ""
    assert [f.name for f in panel.figure.frames][:3] == ["embed", "norm1", "qkv"]
    np.testing.assert_array_equal(first_heatmap(panel.figure), traced(panel, "cat")["tok_embed"][0].double().numpy())


def test_text_change_retraces(panel):
    before = panel.figure
    panel.text.value = "dog"
    assert panel.figure is not before and panel.message.value == ""
    np.testing.assert_array_equal(first_heatmap(panel.figure), traced(panel, "dog")["tok_embed"][0].double().numpy())
    assert list(panel.figure.data[0].y) == ["0: d", "1: o", "2: g"]


def test_seed_norm_position_and_ffn_rebuild_the_model(panel):
    model0 = panel.model()
    panel.seed.value = 3
    assert panel.model() is not model0
    tinytf.seed_everything(3)
    np.testing.assert_array_equal(panel.model().embed.weight.detach().numpy(),
                                  tinytf.TinyTransformer(SMALL).embed.weight.detach().numpy())
    panel.norm.value = "layer"
    assert isinstance(panel.model().blocks[0].norm1, tinytf.LayerNorm)
    panel.norm_position.value = "post"
    assert "norm1" not in [f.name for f in panel.figure.frames]  # post-norm: the norm sits after the add
    panel.ffn.value = "relu"
    act = next(f for f in panel.figure.frames if f.name == "act")
    assert "ReLU" in act.layout.title.text
    post = traced(panel, "cat")["blocks.0.ffn.post"][0].double().numpy()
    (hm,) = [t for t in act.data if t.name and t.name.startswith("ReLU(x·W1)")]
    np.testing.assert_array_equal(np.asarray(hm.z), post)


def test_view_head_and_layer_selectors(panel):
    panel.view.value = "attention"
    names = [t.name for t in panel.figure.data if t.type == "heatmap" and "masked" not in t.name]
    assert names == ["mean of heads", "head 0", "head 1"]
    panel.head.value = 1
    (t,) = [t for t in panel.figure.data if t.type == "heatmap" and "masked" not in t.name]
    w = traced(panel, "cat")["blocks.0.attn.weights"][0, 1].double().numpy()
    z = np.asarray(t.z, dtype=float)
    np.testing.assert_array_equal(z[~np.isnan(z)], w[np.tril_indices(3)])
    panel.layer.value = 1
    (t,) = [t for t in panel.figure.data if t.type == "heatmap" and "masked" not in t.name]
    w = traced(panel, "cat")["blocks.1.attn.weights"][0, 1].double().numpy()
    np.testing.assert_array_equal(np.asarray(t.z, dtype=float)[~np.isnan(z)], w[np.tril_indices(3)])
    panel.view.value = "residual_ffn"
    heat = [t for t in panel.figure.data if t.type == "heatmap"]
    np.testing.assert_array_equal(np.asarray(heat[2].z), traced(panel, "cat")["blocks.1.resid_post"][0].double().numpy())
    panel.view.value = "ffn"
    assert "FFN" in panel.figure.layout.title.text
    panel.view.value = "residual_attn"
    assert "attention sublayer" in panel.figure.layout.title.text


@pytest.mark.parametrize("text,config,expected", [
    ("", SMALL, "empty"),
    ("abcdef", SMALL.replace(max_seq_len=4), "max_seq_len is 4"),
    ("caf\u00e9", SMALL.replace(vocab_size=128), "vocabulary has 128 byte tokens"),
    ("x" * 40, SMALL, "at most 32 tokens"),
])
def test_bad_input_is_a_message(capsys, text, config, expected):
    p = viz.live_panel(text="ok", config=config)
    good = p.figure
    assert good is not None and p.message.value == ""
    p.text.value = text
    assert expected in p.message.value
    assert "still shows the last valid input" in p.message.value
    assert p.figure is good  # the last good figure stays
    p.text.value = "ok"  # and the panel recovers
    assert p.message.value == "" and p.figure is not good
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err


def test_impossible_settings_and_errors_are_messages(capsys):
    p = viz.live_panel(text="hi", config=SMALL)

    def broken():
        raise RuntimeError("checkpoint file is corrupt")

    p.checkpoints["broken"] = broken
    p.weights.options = [RANDOM, "broken"]
    p.weights.value = "broken"
    assert "RuntimeError: checkpoint file is corrupt" in p.message.value
    assert "Traceback" not in capsys.readouterr().out


def test_trained_checkpoint_hook():
    tiny = tinytf.TinyConfig(d_model=12, n_heads=3, d_ff=48, n_layers=1)

    def load():
        tinytf.seed_everything(7)
        return tinytf.TinyTransformer(tiny)

    p = viz.live_panel(text="cat", config=SMALL, checkpoints={"trained: toy": load}, view="attention")
    assert list(p.weights.options) == [RANDOM, "trained: toy"]
    p.weights.value = "trained: toy"
    assert p.message.value == ""
    assert p.model().config == tiny
    assert p.norm.disabled and p.ffn.disabled and p.norm_position.disabled  # the checkpoint fixes them
    assert [v for _, v in p.head.options] == ["all", "mean", 0, 1, 2]
    names = [t.name for t in p.figure.data if t.type == "heatmap" and "masked" not in t.name]
    assert names == ["mean of heads", "head 0", "head 1", "head 2"]
    p.weights.value = RANDOM
    assert not p.norm.disabled and p.model().config == SMALL.replace(norm="rms")


def test_static_book_fallback_note():
    p = viz.live_panel(text="ab", config=SMALL)
    bundle = p._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    page = bundle["text/html"]
    assert page.startswith('<div class="tinytf-static-panel" data-panel="')  # the book's page runs it in the browser
    assert "In Jupyter: run this cell" in page and "Binder or Colab" in page  # the note until a script replaces it
    import html
    import json
    import re

    state = json.loads(html.unescape(re.search(r'data-panel="([^"]*)"', page).group(1)))
    assert state["text"] == "ab" and state["view"] == "stepper" and state["max_tokens"] == p.max_tokens
    assert "untrained" not in state["models"]  # a custom config: the page's random init is the default config's
    assert viz.live_panel(text="ab", checkpoints={"trained: x-1l (English bytes)": None}).static_state()["models"] \
        == ["untrained", "x-1l"]
    assert bundle["text/plain"] == "tinytf live panel"


def test_shipped_checkpoints_are_offered(monkeypatch):
    import tinytf.pretrained as pretrained

    tiny = tinytf.TinyConfig(d_model=8, n_heads=2, d_ff=32, n_layers=1)
    asked = []

    def names(kind=None):
        asked.append(kind)
        return ["toy-decoder"]

    def load(name):
        assert name == "toy-decoder"
        return tinytf.TinyTransformer(tiny).eval()

    monkeypatch.setattr(pretrained, "names", names)
    monkeypatch.setattr(pretrained, "load", load)
    p = viz.live_panel(text="cat", config=SMALL)
    assert asked == ["decoder", "text"]  # seq2seq checkpoints do not fit the block views
    assert list(p.weights.options) == [RANDOM, "trained: toy-decoder"]
    p.weights.value = "trained: toy-decoder"
    assert p.message.value == "" and p.model().config == tiny


def test_text_model_is_offered():
    """The byte-level text model (tinytf.pretrained "text-4l") is in the weights menu with its own label."""
    label = "trained: text-4l (English bytes)"
    p = viz.live_panel(text="The cat", config=SMALL, view="attention")
    assert label in p.weights.options
    assert "trained: text-4l" not in p.weights.options  # listed once, as a text model
    assert list(p.weights.options).index(label) > list(p.weights.options).index(RANDOM)
    p.weights.value = label
    assert p.message.value == ""
    assert p.model().config == tinytf.pretrained("text-4l").config


def test_out_of_range_numbers_get_a_message(panel):
    panel.seed.value = -5
    assert "seed must be a whole number from 0" in panel.message.value and "-5" in panel.message.value
    panel.seed.value = 1
    assert panel.message.value == ""
    panel.layer.value = 7
    assert "block 7 does not exist" in panel.message.value
    panel.layer.value = 1
    assert panel.message.value == ""


def test_multibyte_characters_get_readable_labels(panel):
    panel.text.value = "a你"
    assert panel.message.value == ""
    assert list(panel.figure.data[0].y) == ["0: a", "1: 你¹", "2: 你²", "3: 你³"]


def test_panel_figure_has_the_cell_figures_template(panel):
    import plotly.io as pio

    assert panel._spec["layout"]["template"] == pio.templates[pio.templates.default].to_plotly_json()


def test_note_makes_sense_in_jupyter_too():
    from tinytf.viz.panel import STATIC_NOTE

    assert "In Jupyter: run this cell" in STATIC_NOTE and "Binder or Colab" in STATIC_NOTE
    assert "color:#1b1b1b" in STATIC_NOTE  # readable on its light background in a dark JupyterLab too


def test_toggle_buttons_fit_their_labels(panel):
    assert panel.norm.style.button_width == "110px"  # "LayerNorm" was cut to "LayerNo…" at 90px


def test_the_live_panel_chapter_executes_under_a_time_limit(tmp_path):
    """Chapter 6 (its live panel included) executes with nbclient, on a copy, within the chapter time
    limit of scripts/execute_chapters.py: the panel must not keep nbclient waiting."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    copy = tmp_path / "06_decoder_block.ipynb"
    shutil.copy(root / "chapters" / "06_decoder_block.ipynb", copy)
    proc = subprocess.run([sys.executable, str(root / "scripts" / "execute_chapters.py"), "--chapter-timeout", "180",
                           str(copy)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "live panel" in copy.read_text(encoding="utf-8")
