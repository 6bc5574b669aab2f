"""The figures of the landing page's lab (``tinytf.lab.browser_lab``), as specs with bindings.

The lab's graph outputs ``attn`` [L, H, T, T] (and ``lens`` [L, T, V]); a view here reads them through
``tinytf.viz.binding`` so the page (``_static/tinytf-lab.js`` with ``tinytfBind.apply``) fills the same
figure from the ONNX outputs. Unlike the chapter 6 panel's templates, these depend on no length: one
template per layer and head serves every prompt of 1..max_seq_len bytes (the height is fixed; a causal
mask's cells are the weights 0 the model computes).

    spec = attention_view({"attn": out["attn"]}, labels, layer=2, head=5)   # FigureSpec (plotly dict)
    tpl = template(spec)                                                    # {"figure", "bindings", "outputs"}
    apply(tpl, {"attn": other_attn}, other_labels) == figure_of(attention_view(...))
"""
from __future__ import annotations

import copy
import hashlib
import json
import tempfile
from pathlib import Path

import numpy as np
import torch

from ..errors import TinyTFInputError
from ..lab import pretrained
from ..lab.browser_lab import (INPUTS, KEY_FILE, LAB_FORMAT, LAB_JSON, OUTPUTS, export_lab_onnx, file_name,
                               lab_config, run_lab, snapshot_models)
from . import binding as bnd
from .common import FONT, SEQUENTIAL, make_figure, spec_only
from .templates import _set, byte_labels, figure_of, plain

HEIGHT = 440


def _out(outputs: dict, name: str) -> bnd.Bound:
    if name not in outputs:
        raise TinyTFInputError(f"lab view: the outputs have no {name!r}")
    return bnd.Bound(np.asarray(outputs[name], dtype=np.float32).astype(np.float64), ["out", name])


def attention_view(outputs: dict, labels: list, layer: int, head: int):
    """Heatmap of the attention weights of ``head`` in ``layer``: query (rows) x key (columns), one 0..1
    colour scale. ``outputs``: {"attn": [L, H, T, T]} (the lab graph's output for a prompt)."""
    w = _out(outputs, "attn")
    L, H, T, S = w.shape
    if not (0 <= layer < L and 0 <= head < H):
        raise TinyTFInputError(f"lab view: layer 0..{L - 1} and head 0..{H - 1}; got layer {layer}, head {head}")
    z = w[layer, head]
    lab = bnd.token_axis_labels(labels, T)
    data = [dict(type="heatmap", z=z, x=lab, y=lab, coloraxis="coloraxis", xgap=1, ygap=1,
                 name=f"layer {layer} head {head}",
                 hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>")]
    layout = dict(
        font=FONT, height=HEIGHT, margin=dict(l=70, r=70, t=86, b=60), plot_bgcolor="white",
        title=dict(text=(f"<b>Layer {layer}, head {head}: which earlier byte each byte reads</b>"
                         "<br><span style='font-size:12px'>each row sums to 1; above the diagonal: later bytes, "
                         "weight 0 (the causal mask)</span>"), x=0.01, xanchor="left"),
        xaxis=dict(type="category", title=dict(text="key (the byte read)", font=dict(size=11)), fixedrange=True,
                   tickfont=dict(size=10), tickangle=0),
        yaxis=dict(type="category", autorange="reversed", title=dict(text="query (the byte reading)",
                                                                      font=dict(size=11)),
                   fixedrange=True, tickfont=dict(size=10)),
        coloraxis=dict(colorscale=SEQUENTIAL, cmin=0, cmax=1,
                       colorbar=dict(title=dict(text="weight"), thickness=12, len=0.9)),
        showlegend=False,
    )
    with spec_only():
        return make_figure(data, layout)


def template(spec) -> dict:
    """A view's spec with its bound values left out (null), the bindings and the outputs they read."""
    bindings = [[list(p), r] for p, r in bnd.bindings_of(spec)]
    fig = figure_of(spec)
    for path, _ in bindings:
        _set(fig, path, None)
    outputs = set()
    for _, r in bindings:
        bnd.recipe_outputs(r, outputs)
    return {"figure": fig, "bindings": bindings, "outputs": sorted(outputs)}


def apply(tpl: dict, outputs: dict, labels: list) -> dict:
    """The figure of a template for other outputs and labels (what tinytfBind.apply does on the page)."""
    fig = copy.deepcopy(tpl["figure"])
    for path, recipe in tpl["bindings"]:
        _set(fig, path, plain(bnd.evaluate(recipe, outputs, labels)))
    return fig


def attention_templates(n_layers: int, n_heads: int, sample: dict, labels: list) -> dict:
    """{"<layer>-<head>": template} for every layer and head, built from one sample of outputs."""
    return {f"{l}-{h}": template(attention_view(sample, labels, l, h)) for l in range(n_layers) for h in range(n_heads)}


# ------------------------------------------------------------------ the lab's files in _static/lab
def _assets_key(root: Path) -> str:
    h = hashlib.sha256(LAB_FORMAT.encode())
    for pattern in ("tinytf/**/*.py", "tinytf/checkpoints/text-4l*"):
        for path in sorted(root.glob(pattern)):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def build_assets(directory) -> dict:
    """{file name: bytes} of the lab: one ONNX graph per snapshot and lab.json (models, shape, the byte
    labels, the attention templates)."""
    files, models = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for key, label, step in snapshot_models():
            model = pretrained.load(key).float().eval()
            path = Path(tmp) / file_name(key)
            export_lab_onnx(model, path)
            data = path.read_bytes()
            files[path.name] = data
            models.append({"key": key, "label": label, "step": step, "file": path.name, "bytes": len(data),
                           "sha256": hashlib.sha256(data).hexdigest()})
    final = pretrained.load("text-4l").float().eval()
    sample = list(b"abc")
    out = run_lab(final, sample)
    cfg = lab_config(final)
    manifest = {"format": LAB_FORMAT, "models": models, "config": cfg, "outputs": list(OUTPUTS),
                "inputs": list(INPUTS), "byte_labels": byte_labels(),
                "attention": attention_templates(cfg["n_layers"], cfg["n_heads"], {"attn": out["attn"].numpy()},
                                                 [chr(b) for b in sample])}
    files[LAB_JSON] = (json.dumps(manifest, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
    return files


def write_assets(directory, root=None) -> tuple:
    """Write the lab's files into ``directory`` (``_static/lab``) unless the key of tinytf's code and the
    checkpoints is unchanged; remove others. Returns (written, removed) paths."""
    directory = Path(directory)
    root = Path(root) if root else Path(__file__).resolve().parents[2]
    key = _assets_key(root)
    stamp = directory / KEY_FILE
    if stamp.is_file() and stamp.read_text().strip() == key and (directory / LAB_JSON).is_file():
        return [], []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        files = build_assets(directory)
    finally:
        torch.set_num_threads(threads)
    directory.mkdir(parents=True, exist_ok=True)
    written, removed = [], []
    for name, data in files.items():
        path = directory / name
        if not (path.is_file() and path.read_bytes() == data):
            tmp = path.with_name(name + ".tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
            written.append(path)
    for path in sorted(directory.iterdir()):
        if path.name not in files and path.name != KEY_FILE and path.is_file():
            path.unlink()
            removed.append(path)
    stamp.write_text(key + "\n")
    return written, removed
