"""The figures of the landing page's lab (``tinytf.lab.browser_lab``), as specs with bindings.

The lab's graph outputs ``attn`` [L, H, T, T] (and ``lens`` [L, T, V]); a view here reads them through
``tinytf.viz.binding`` so the page (``_static/tinytf-lab.js`` with ``tinytfBind.apply``) fills the same
figure from the ONNX outputs. Unlike the chapter 6 panel's templates, these depend on no length: one
template per layer and head serves every prompt of 1..max_seq_len bytes (the height is fixed; a causal
mask's cells are the weights 0 the model computes).

    spec = attention_view({"attn": out["attn"]}, labels, layer=2, head=5)   # FigureSpec (plotly dict)
    tpl = template(spec)                                                    # {"figure", "bindings", "outputs"}
    apply(tpl, {"attn": other_attn}, other_labels) == figure_of(attention_view(...))
    lens_view({"lens": out["lens"]}, labels, last=32)   # the logit lens: block x position, the guess and its probability

A head switched off (``switched_off=True``) has its own template: its weights are still computed (only its
output is multiplied by 0 before W_o), so its map is the same; the figure says so and is drawn faded.

The logit lens (``lens_view``) shows the last ``last`` positions of the prompt (``LENS_WINDOWS``: the page takes
10 on a narrow screen, 32 on a wide one): the guess after each block (the byte of the largest probability of
the final norm and LM head applied to the stream leaving the block) as the cell's text, its probability as the
colour, and the byte that really comes next in the last row. Softmax, maximum and argmax are binding
operations, so the page computes them from the graph's ``lens`` output by the same recipe.
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
LENS_WINDOWS = (10, 32)  # positions the lens shows: a narrow screen, a wide one
LENS_HEIGHT = 300
# the attention map's white lines between cells (xgap, ygap: 1 px) up to this many rows; above, none: at 48 rows
# the lines already take as much room as the cells on a phone (a 128 x 128 map was a white mesh)
GAP_ROWS = 32
# a byte as the lens draws it, in its cells, its "really next" row and its axis: tinytf's byte label, with a space
# and a new line as the glyphs the lab's next-byte table uses for them (␣, ↵) instead of " " and "#10"
VISIBLE = {" ": "␣", "#10": "↵"}
GUESS_LABELS = [VISIBLE.get(lab, lab) for lab in byte_labels()]
SWITCHED_OFF = "head switched off: its weights are still computed, but its output is multiplied by 0"


def _out(outputs: dict, name: str) -> bnd.Bound:
    if name not in outputs:
        raise TinyTFInputError(f"lab view: the outputs have no {name!r}")
    return bnd.Bound(np.asarray(outputs[name], dtype=np.float32).astype(np.float64), ["out", name])


def attention_view(outputs: dict, labels: list, layer: int, head: int, switched_off: bool = False):
    """Heatmap of the attention weights of ``head`` in ``layer``: query (rows) x key (columns), one 0..1
    colour scale, with 1 px lines between the cells up to ``GAP_ROWS`` rows (none above: they would hide the
    cells). ``outputs``: {"attn": [L, H, T, T]} (the lab graph's output for a prompt). ``switched_off``:
    the head's output is multiplied by 0 (the lab's head mask); its weights, and so the map, are unchanged, and
    the figure says so (drawn faded)."""
    w = _out(outputs, "attn")
    L, H, T, S = w.shape
    if not (0 <= layer < L and 0 <= head < H):
        raise TinyTFInputError(f"lab view: layer 0..{L - 1} and head 0..{H - 1}; got layer {layer}, head {head}")
    z = w[layer, head]
    lab = bnd.token_axis_labels(labels, T)
    gap = bnd.op("at_most", bnd.op("len", lab), GAP_ROWS, 1, 0)  # lines between cells only while they are few
    data = [dict(type="heatmap", z=z, x=lab, y=lab, coloraxis="coloraxis", xgap=gap, ygap=gap,
                 name=f"block {layer} head {head}" + (" (switched off)" if switched_off else ""),
                 hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>")]
    sub = "each row sums to 1; above the diagonal: later bytes, weight 0 (the causal mask)"
    head_line = f"<b>Block {layer}, head {head}: which earlier byte each byte reads</b>"
    if switched_off:
        data[0]["opacity"] = 0.45
        head_line = (f"<b>Block {layer}, head {head} (switched off): which earlier byte each byte reads</b>"
                     f"<br><span style='font-size:12px'>{SWITCHED_OFF}; the map is the same, only what the "
                     "head passes on is gone</span>")
    layout = dict(
        font=FONT, height=HEIGHT, margin=dict(l=70, r=70, t=86, b=60), plot_bgcolor="white",
        title=dict(text=f"{head_line}<br><span style='font-size:12px'>{sub}</span>", x=0.01, xanchor="left"),
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


def lens_view(outputs: dict, labels: list, last=None):
    """The logit lens of a prompt, one column per position: the byte read there (under the column); for each
    block, from the bottom up, the byte the model would guess next if it stopped after that block (the cell's
    text) and its probability (the colour, 0..1); the byte that really comes next (top row; "?" after the last). ``outputs``:
    {"lens": [L, T, V]} (the lab graph's output: final norm + LM head on the stream leaving each block);
    ``last``: show only the last ``last`` positions (None: every one)."""
    lens = _out(outputs, "lens")
    L, T, V = lens.shape
    if len(labels) != T:
        raise TinyTFInputError(f"lens view: {len(labels)} labels for {T} positions")
    if last is not None and (not isinstance(last, int) or last < 1):
        raise TinyTFInputError(f"lens view: last must be a whole number >= 1 or None; got {last!r}")
    start = None if last is None else -last
    shown = bnd.op("slice", lens, 1, start, None)          # [L, n, V]
    prob = bnd.op("max", bnd.op("softmax", shown, -1), -1)  # [L, n]
    guess = bnd.op("lookup", GUESS_LABELS, bnd.op("argmax", shown, -1))
    visible = bnd.op("relabel", bnd.Bound(list(labels), ["labels"]), VISIBLE)
    x = bnd.op("slice", bnd.op("axis_labels", visible), 0, start, None)  # "7: c": one column per position
    read = bnd.op("slice", visible, 0, start, None)
    truth = bnd.op("slice", bnd.op("concat", [bnd.op("slice", visible, 0, 1, None), ["?"]]), 0, start, None)
    blocks = [f"block {l}" for l in range(L)]
    # rows from the bottom: the blocks in the order the stream passes them, then the byte that really comes next;
    # the heatmap's rows are the first categories of the axis (plotly places a heatmap's texts by row index)
    data = [dict(type="heatmap", z=prob, x=x, y=blocks, text=guess, texttemplate="%{text}", coloraxis="coloraxis",
                 xgap=1, ygap=1, name="guess after each block",
                 hovertemplate="%{y}, position %{x}<br>guess %{text}: probability %{z:.1%}<extra></extra>"),
            dict(type="scatter", mode="text", x=x, y=bnd.op("fill", x, bnd.op("format", "really next", [])),
                 text=truth, textfont=dict(size=12), name="really next", showlegend=False,
                 hovertemplate="position %{x}: really followed by %{text}<extra></extra>")]
    layout = dict(
        font=FONT, height=LENS_HEIGHT, margin=dict(l=90, r=70, t=80, b=50), plot_bgcolor="white",
        title=dict(text=("<b>Logit lens: the next byte each block would guess</b><br><span style='font-size:12px'>"
                         "one column per position of the prompt, read from the bottom up; a cell: the guessed byte "
                         "(␣ = space, ↵ = new line), coloured by its probability</span>"), x=0.01, xanchor="left"),
        xaxis=dict(type="category", tickvals=x, ticktext=read, tickangle=0, fixedrange=True, tickfont=dict(size=12),
                   title=dict(text="the byte read at each position", font=dict(size=11))),
        yaxis=dict(type="category", fixedrange=True, tickfont=dict(size=11),
                   categoryorder="array", categoryarray=[*blocks, "really next"]),
        coloraxis=dict(colorscale=SEQUENTIAL, cmin=0, cmax=1,
                       colorbar=dict(title=dict(text="probability"), thickness=12, len=0.9)),
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
    """{"<layer>-<head>": template} for every layer and head, built from one sample of outputs, and
    {"<layer>-<head>-off": template} for the same head switched off."""
    out = {}
    for l in range(n_layers):
        for h in range(n_heads):
            out[f"{l}-{h}"] = template(attention_view(sample, labels, l, h))
            out[f"{l}-{h}-off"] = template(attention_view(sample, labels, l, h, switched_off=True))
    return out


def lens_templates(sample: dict, labels: list) -> dict:
    """{"<window>": template} of the logit lens for each of ``LENS_WINDOWS``, built from one sample."""
    return {str(n): template(lens_view(sample, labels, last=n)) for n in LENS_WINDOWS}


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
                                                 [chr(b) for b in sample]),
                "lens": lens_templates({"lens": out["lens"].numpy()}, [chr(b) for b in sample])}
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
