"""The static page's panel (_static/tinytf-panel.js) says what the Python panel says.

Its messages are Python's templates (tinytf.viz.static_panel.MESSAGES, shipped in the page), filled in
JavaScript; the reader's text is quoted as Python's repr() quotes it. These tests run the page script
in Chromium (no network, no book needed) and compare with Python, string for string.
"""
from __future__ import annotations

import json

import pytest

from conftest import ROOT
from tinytf import TinyConfig
from tinytf.viz.panel import LivePanel
from tinytf.viz.static_panel import MESSAGES, model_key, panel_state, static_panel_html

PANEL_JS = (ROOT / "_static" / "tinytf-panel.js").read_text(encoding="utf-8")

STRINGS = ["cat", "", "it's", 'say "hi"', "both ' and \"", "back\\slash", "tab\there", "new\nline", "\x00\x07\x7f",
           "é", "你好", "🙂", "\u200b zero width", "\u00a0nbsp", "\u2028", "\ud7ff", "mixed 'é' \"你\" \t🙂"]


@pytest.fixture(scope="module")
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_content("<!doctype html><html><head><title>t</title></head><body></body></html>")
    page.add_script_tag(content=PANEL_JS)
    yield page
    context.close()


def test_repr_of_python(page):
    got = page.evaluate("(xs) => xs.map(window.tinytfPanel.pyRepr)", STRINGS)
    assert got == [repr(s) for s in STRINGS]


def python_message(text: str, vocab_size: int = 256, max_seq_len: int = 512, max_tokens: int = 8) -> str:
    """The message the Python panel shows for this text (its own code path, a random-init model)."""
    cfg = TinyConfig(vocab_size=vocab_size, max_seq_len=max_seq_len, d_model=16, n_heads=2, d_ff=32, n_layers=1)
    panel = LivePanel(text="a", config=cfg, checkpoints={}, max_tokens=max_tokens)
    panel.text.value = text
    return panel.message.value


CASES = [  # (text, vocab_size, max_seq_len, max_tokens)
    ("", 256, 512, 8), ("cat", 100, 512, 8), ("éx'\"", 100, 512, 8), ("abcdefghij", 256, 512, 8),
    ("abcdefghij", 256, 6, 8), ("你好", 256, 512, 4), ("it's too long", 256, 512, 8), ("ok", 256, 512, 8),
]


@pytest.mark.parametrize("text,vocab,max_seq_len,max_tokens", CASES)
def test_messages_equal_the_python_panel(page, text, vocab, max_seq_len, max_tokens):
    import html
    import re

    expected_html = python_message(text, vocab, max_seq_len, max_tokens)
    expected = html.unescape(re.sub(r"<[^>]+>", "", expected_html))
    state = {"max_tokens": max_tokens, "messages": MESSAGES}
    entry = {"vocab_size": vocab, "max_seq_len": max_seq_len}
    got = page.evaluate("([s, t, e]) => window.tinytfPanel.encode(s, t, e)", [state, text, entry])
    if not expected:
        assert "error" not in got and got["ids"] == list(text.encode("utf-8"))
        return
    # shown as the Python panel shows it, which already had a figure (for "a"): it says the figure stays
    shown = "⚠ " + got["error"].rstrip(".") + "." + MESSAGES["kept"]
    assert shown == expected


def test_static_html_carries_the_state():
    state = panel_state("cat", "stepper", "all", 0, 8, ["untrained", "induction-2l"], {"stepper": "block stepper"})
    out = static_panel_html(state)
    assert out.startswith('<div class="tinytf-static-panel" data-panel="')
    import html
    import re

    data = json.loads(html.unescape(re.search(r'data-panel="([^"]*)"', out).group(1)))
    assert data == json.loads(json.dumps(state))
    assert "tinytf-live-note" in out
    assert model_key("trained: text-4l (English bytes)") == "text-4l"
    assert model_key("random init (seed)") == "untrained"
