"""The live panel on a static page: what a panel cell leaves in the HTML book.

In Jupyter the panel is an ipywidgets widget (``tinytf.viz.panel``). The book has no kernel, so the
cell's HTML part is a ``<div class="tinytf-static-panel">`` that ``_static/tinytf-panel.js`` turns
into a working panel: the model runs in the reader's browser (the ONNX files of
``tinytf.onnx_export``, onnxruntime-web) and the figures are recomputed from its outputs by the
bindings of ``tinytf.viz.binding`` — the same views, layouts and numbers as in Python. Until the
script runs (in Jupyter before the cell has run, or with scripts off) the div shows a note.

Everything the page needs to say or offer comes from here, so the two panels cannot drift apart:
the views and their names, the message templates (the Python panel formats the same ones), the
models (the page's manifest labels them as the Python panel's "weights" menu does).
"""
from __future__ import annotations

import html
import json

from ..tokens import EMPTY_TEXT, NOT_IN_VOCAB

# Messages of the panel, as templates (str.format names; the page fills them the same way).
TOO_MANY = "{n} tokens given ({text} is {n} bytes), but {why}; type at most {limit} characters"
WHY_MODEL = "the model's max_seq_len is {max_seq_len}"
WHY_PANEL = "the panel draws at most {max_tokens} tokens"
KEPT = " The figure below still shows the last valid input."
MESSAGES = {"empty": EMPTY_TEXT, "vocab": NOT_IN_VOCAB, "too_many": TOO_MANY, "why_model": WHY_MODEL,
            "why_panel": WHY_PANEL, "kept": KEPT}

NOTE = (
    "<b>Live panel.</b> In Jupyter: run this cell and its controls appear here. "
    "On the book's web page the panel runs the model in your browser (it needs JavaScript); "
    "or launch the chapter in Binder or Colab (buttons at the top of the page)."
)
STYLE = "border-left:4px solid #0072B2;padding:6px 10px;background:#f3f7fb;color:#1b1b1b;"


def model_key(menu_name: str) -> str:
    """The page's model key for a name of the Python panel's weights menu:
    "trained: text-4l (English bytes)" -> "text-4l"; the random init -> "untrained"."""
    if not menu_name.startswith("trained: "):
        return "untrained"
    return menu_name[len("trained: "):].split(" (", 1)[0]


def panel_state(text: str, view: str, head, layer: int, max_tokens: int, models: list, views: dict) -> dict:
    """What the page's panel starts from (JSON): the text, view, head and layer shown, the models offered
    (page keys, the random init as "untrained": the page has its seed-0 weights), the views and messages."""
    return {"text": text, "view": view, "head": head if head in ("all", "mean") else int(head), "layer": int(layer),
            "max_tokens": int(max_tokens), "models": list(models), "views": dict(views), "messages": MESSAGES}


def static_panel_html(state: dict) -> str:
    """The HTML part of a panel cell's output: the note, inside the div the page's script replaces."""
    data = html.escape(json.dumps(state, ensure_ascii=True, sort_keys=True), quote=True)
    return (f'<div class="tinytf-static-panel" data-panel="{data}">'
            f'<div class="tinytf-live-note" style="{STYLE}">{NOTE}</div></div>')
