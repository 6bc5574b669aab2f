"""Figure templates for the static book's live panel: the views recomputed in the browser.

A template is one view (block stepper, attention map, residual add, FFN expansion) for one
layer and one number of tokens T: the figure as JSON whose trace-dependent values are left
out (null) plus its bindings, ``[path, recipe]`` pairs (``tinytf.viz.binding``). Everything
that is not bound depends only on T (geometry, titles, which cells the causal mask blanks),
so a template built from any T tokens, filled from the model outputs for other T tokens,
is the figure the view builds for those tokens. ``apply_template`` does that in Python; the
browser's ``_static/tinytf-bind.js`` does the same with the ONNX outputs.

``export_templates(model, key, out_dir)`` (``export_book_templates(out_dir)``: every model the book
runs in the browser) writes ``<out_dir>/<key>/index.json`` (the model's
shape, the views, the byte-label table, the outputs the figures read) and one file per view
and layer, ``<view>-L<layer>.json``, holding the templates for T = 1..max_tokens."""
from __future__ import annotations

import copy
import gzip
import json
import math
from pathlib import Path

import numpy as np
import torch

from ..errors import TinyTFInputError
from ..lab.onnx_export import book_models
from ..tokens import token_labels
from .attention_map import attention_map
from .binding import bindings_of, evaluate, recipe_outputs
from .common import clamp_domains, spec_only
from .ffn import ffn_expansion
from .residual import residual_view
from .stepper import block_stepper

FORMAT = "tinytf-figure-templates/1"
SAMPLE_TEXT = "abcdefghijklmnopqrstuvwxyz"  # the tokens a template is built from (any T tokens would do)


def panel_views(n_heads: int) -> dict:
    """{view key: builder(model, ids, layer, labels)} for every view the panel offers."""
    views = {"stepper": lambda m, ids, layer, labels: block_stepper(m, ids, layer=layer, labels=labels)}
    for h in ["all", "mean"] + list(range(n_heads)):
        views[f"attention-{h}"] = (lambda m, ids, layer, labels, h=h:
                                   attention_map(m, ids, layer=layer, heads=h, labels=labels))
    views["residual_attn"] = lambda m, ids, layer, labels: residual_view(m, ids, layer=layer, sublayer="attn",
                                                                         labels=labels)
    views["residual_ffn"] = lambda m, ids, layer, labels: residual_view(m, ids, layer=layer, sublayer="ffn",
                                                                        labels=labels)
    views["ffn"] = lambda m, ids, layer, labels: ffn_expansion(m, ids, layer=layer, labels=labels)
    return views


def plain(obj):
    """JSON-ready Python: numpy arrays and scalars as lists and floats, NaN and +-inf as None."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def figure_of(spec) -> dict:
    """A view's FigureSpec as the plain figure dict the book draws ({data, layout[, frames]})."""
    fig = {"data": spec["data"], "layout": dict(spec["layout"])}
    if spec.get("frames"):
        fig["frames"] = spec["frames"]
    fig["layout"] = {k: dict(v) if k.startswith(("xaxis", "yaxis")) else v for k, v in fig["layout"].items()}
    clamp_domains(fig["layout"])  # what make_figure does for a go.Figure
    return plain(fig)


def _set(fig, path, value):
    node = fig
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


def make_template(spec, T: int) -> dict:
    """The template of a view's FigureSpec for T tokens: the figure with its bound values left out,
    the bindings, and the model outputs they read."""
    bindings = [[list(p), r] for p, r in bindings_of(spec)]
    fig = figure_of(spec)
    for path, _ in bindings:
        _set(fig, path, None)
    outputs = set()
    for _, r in bindings:
        recipe_outputs(r, outputs)
    return {"T": T, "figure": fig, "bindings": bindings, "outputs": sorted(outputs)}


def apply_template(template: dict, outputs: dict, labels: list) -> dict:
    """The figure for new model ``outputs`` ({trace name: array [1, ...]}) and token ``labels``
    (the Python reference of tinytfBind.apply)."""
    if len(labels) != template["T"]:
        raise TinyTFInputError(f"this template is for {template['T']} tokens; got {len(labels)} labels")
    fig = copy.deepcopy(template["figure"])
    for path, recipe in template["bindings"]:
        _set(fig, path, plain(evaluate(recipe, outputs, labels)))
    return fig


def build_view(model, view: str, ids, layer: int, labels=None) -> dict:
    """The figure dict of a panel view built directly in Python."""
    views = panel_views(model.config.n_heads)
    if view not in views:
        raise TinyTFInputError(f"unknown view {view!r}; the panel offers {', '.join(views)}")
    with spec_only():
        return views[view](model, ids, layer, labels)


def template_ids(T: int, vocab_size: int) -> torch.Tensor:
    """The T tokens a template is built from."""
    ids = list(SAMPLE_TEXT.encode())[:T]
    ids += [ids[-1]] * (T - len(ids))
    if max(ids) >= vocab_size:
        ids = [i % vocab_size for i in ids]
    return torch.tensor(ids)


def byte_labels() -> list:
    """tinytf's label of every byte token 0..255 (the browser labels multi-byte characters itself)."""
    return token_labels(torch.arange(256))


def export_templates(model, key: str, out_dir, max_tokens: int = 8, layers=None, compress: bool = True) -> dict:
    """Write the templates of every panel view and layer of ``model`` for T = 1..max_tokens to
    ``out_dir/key/`` and return {file name: size in bytes}. ``compress``: the view files as
    ``.json.gz`` (gzip; the stepper's frames repeat a lot: ~25x smaller; tinytfBind.loadJSON reads them)."""
    cfg = model.config
    if not 1 <= max_tokens <= cfg.max_seq_len:
        raise TinyTFInputError(f"max_tokens must be 1..{cfg.max_seq_len} (the model's max_seq_len); got {max_tokens}")
    if not key or any(c in key for c in "/\\") or key.startswith("."):
        raise TinyTFInputError(f"the model key names a folder: letters, digits, '-', '_'; got {key!r}")
    layers = list(range(cfg.n_layers)) if layers is None else list(layers)
    out = Path(out_dir) / key
    out.mkdir(parents=True, exist_ok=True)
    views = panel_views(cfg.n_heads)
    files, outputs = {}, set()
    model = model.eval()
    for layer in layers:
        for view in views:
            templates = {}
            for T in range(1, max_tokens + 1):
                with spec_only():
                    spec = views[view](model, template_ids(T, cfg.vocab_size), layer, None)
                templates[str(T)] = make_template(spec, T)
                outputs.update(templates[str(T)]["outputs"])
            name = f"{view}-L{layer}.json" + (".gz" if compress else "")
            files[name] = _write(out / name, {"format": FORMAT, "model": key, "view": view, "layer": layer,
                                              "templates": templates})
    index = {"format": FORMAT, "model": key, "n_layers": cfg.n_layers, "n_heads": cfg.n_heads,
             "vocab_size": cfg.vocab_size, "max_tokens": max_tokens, "layers": layers, "views": list(views),
             "files": {v: {str(layer): f"{v}-L{layer}.json" + (".gz" if compress else "") for layer in layers}
                       for v in views},
             "outputs": sorted(outputs), "byte_labels": byte_labels()}
    files["index.json"] = _write(out / "index.json", index)
    return files


def export_book_templates(out_dir, max_tokens: int = 8) -> dict:
    """``export_templates`` for every model the book runs in the browser (tinytf.lab.onnx_export.book_models,
    the keys of its ONNX files): {model key: {file name: size in bytes}}."""
    return {key: export_templates(load(), key, out_dir, max_tokens=max_tokens) for key, _, load in book_models()}


def _write(path: Path, obj) -> int:
    raw = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    if path.suffix == ".gz":
        raw = gzip.compress(raw, compresslevel=9, mtime=0)  # mtime 0: the same bytes on every export
    path.write_bytes(raw)
    return len(raw)
