"""Figure bindings (issue #15): a view's figure for new tokens, recomputed from a template built for
other tokens of the same length and the model's outputs, equals the figure the view builds itself:
in Python (tinytf.viz.templates.apply_template, exact) and in JavaScript (_static/tinytf-bind.js in
node, every number within 1e-4, every string exact), for every panel view, layer and model."""
from __future__ import annotations

import base64
import gzip
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import require, require_module
from plain_figures import diff
import torch

import tinytf
from tinytf import pretrained
from tinytf.errors import TinyTFInputError
from tinytf.tokens import token_labels
from tinytf.viz import binding as bnd
from tinytf.viz.panel import readable_labels
from tinytf.viz.templates import (apply_template, build_view, byte_labels, export_templates, figure_of,
                                  make_template, panel_views, plain, template_ids)

ROOT = Path(__file__).resolve().parents[2]
BIND_JS = ROOT / "_static" / "tinytf-bind.js"
RUNNER = ROOT / "tests" / "js" / "bind_runner.js"
TEXTS = ["q", "zy!x", "b\x01ac#d~e"]  # T = 1, 4, 8: other tokens than the templates' "abc..."
UNICODE = ["é", "a你b", "🙂!"]  # multi-byte characters (vocabulary 256 only)


def _random(**kw):
    torch.manual_seed(3)
    return tinytf.TinyTransformer(tinytf.TinyConfig(**kw)).eval()


MODELS = {  # untrained (the panel's random init: pre/post norm, each FFN) and trained
    "random-pre-swiglu": lambda: _random(),
    "random-post-relu-layer": lambda: _random(norm_position="post", ffn="relu", norm="layer", n_heads=2),
    "random-gelu-gqa-learned": lambda: _random(ffn="gelu", n_heads=4, n_kv_heads=2, pos="learned"),
    "induction-2l": lambda: pretrained.load("induction-2l"),
    "text-4l": lambda: pretrained.load("text-4l"),
}


def _cases(model_key):
    """(case id, template from the sample tokens, outputs and labels of other tokens, the view's own figure)."""
    model = MODELS[model_key]()
    cfg = model.config
    layers = sorted({0, cfg.n_layers - 1})
    texts = TEXTS + (UNICODE if cfg.vocab_size == 256 else [])
    out = []
    for text in texts:
        ids = tinytf.encode(text, cfg.vocab_size)
        labels = readable_labels(text, ids)
        T = len(ids)
        with torch.no_grad():
            _, trace = model.run_with_trace(ids)
        outputs = {k: v.numpy() for k, v in trace.items()}
        for view in panel_views(cfg.n_heads):
            for layer in layers:
                template = make_template(build_view(model, view, template_ids(T, cfg.vocab_size), layer), T)
                want = figure_of(build_view(model, view, ids, layer, labels=labels))
                out.append((f"{model_key}|{text!r}|{view}|L{layer}", template, outputs, labels, want))
    return out


@pytest.fixture(scope="module")
def cases():
    return {key: _cases(key) for key in MODELS}


@pytest.mark.parametrize("model_key", list(MODELS))
def test_template_from_other_tokens_gives_the_view(cases, model_key):
    """Python: geometry depends only on T; every trace- or token-dependent value is bound."""
    n_views = set()
    for case_id, template, outputs, labels, want in cases[model_key]:
        got = apply_template(template, outputs, labels)
        assert diff(got, want) is None, f"{case_id}: {diff(got, want)}"
        assert template["bindings"], case_id
        n_views.add(case_id.split("|")[2])
    assert {"stepper", "attention-all", "attention-mean", "attention-0", "residual_attn", "residual_ffn",
            "ffn"} <= n_views


def test_a_template_is_not_the_view_of_other_tokens(cases):
    """The comparison can fail: the unfilled template (or one filled from other outputs) differs."""
    case_id, template, outputs, labels, want = cases["induction-2l"][-1]
    assert diff(template["figure"], want) is not None
    other = {k: v * 1.5 for k, v in outputs.items()}
    assert diff(apply_template(template, other, labels), want) is not None
    assert diff(apply_template(template, outputs, [lab + "'" for lab in labels]), want) is not None


def _run_node(job: dict) -> dict:
    require("node")
    node = shutil.which("node")
    res = subprocess.run([node, str(RUNNER)], input=json.dumps(job), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout)


def _f32(a: np.ndarray) -> dict:
    a = np.ascontiguousarray(a, dtype="<f4")
    return {"dims": list(a.shape), "f32": base64.b64encode(a.tobytes()).decode()}


def test_browser_figures_equal_python_figures(cases):
    """JS: tinytfBind.apply on the trace as ONNX-style float32 outputs gives the Python figure."""
    flat = [c for key in MODELS for c in cases[key]]
    job = {"static": str(BIND_JS), "cases": []}
    for _, template, outputs, labels, _ in flat:
        job["cases"].append({"template": template, "labels": labels,
                             "outputs": {k: _f32(outputs[k]) for k in template["outputs"]}})
    last = job["cases"][-1]
    job["cases"] += [dict(last, labels=last["labels"][:-1]), dict(last, outputs={})]  # bad input: clear messages
    figures = _run_node(job)["figures"]
    assert figures.pop()["error"].startswith("the model outputs have no ")
    T = len(last["labels"])
    assert figures.pop()["error"] == f"this template is for {T} tokens; got {T - 1} labels"
    assert len(figures) == len(flat)
    bad = [(c[0], diff(fig, c[4], tol=1e-4)) for c, fig in zip(flat, figures)]
    bad = [b for b in bad if b[1]]
    assert not bad, f"{len(bad)} of {len(flat)} figures differ; first: {bad[:3]}"


def test_browser_token_labels_equal_python_labels():
    texts = ["cat", "a b\tc\n\x00\x7f'\\\"", "你好", "🙂", "é", "naïve 🙂 你"]
    res = _run_node({"static": str(BIND_JS), "cases": [],
                     "tokenize": [{"text": t, "table": byte_labels()} for t in texts]})
    for text, got in zip(texts, res["tokens"]):
        ids = list(text.encode("utf-8"))
        assert got["ids"] == ids, text
        assert got["labels"] == readable_labels(text, ids), text
    assert byte_labels()[ord("c")] == "c" and byte_labels()[0] == "#0"
    assert set(res["ops"]) == set(bnd.OPS), "tinytf-bind.js and binding.OPS must list the same operations"


def test_browser_number_format_is_python_format():
    """Python rounds an exact tie to even ("12%" for 0.125); JS toFixed rounds it up."""
    values = [0.125, 0.0625, 0.5, 0.005, 0.015625, 2 / 3, 1.0, 0.0, 1e-9, 0.99951171875, 0.1234]
    specs = ["{:.0%}", "{:.1%}", "{:.3f}", "{:.1f}"]
    jobs = [[s, values] for s in specs]
    got = _run_node({"static": str(BIND_JS), "cases": [], "fixed": jobs})["fixed"]
    assert got == [[s.format(v) for v in values] for s in specs]


def test_bound_values_equal_the_public_sparsity():
    """The FFN view's bound shares are ffn_sparsity's float32 numbers."""
    model = MODELS["random-post-relu-layer"]()
    spec = build_view(model, "ffn", "hello", 0)
    bars = [t for t in spec["data"] if t["type"] == "bar"]
    sp = tinytf.viz.ffn_sparsity(model, "hello", layer=0, batch=0)
    assert bars[0]["x"] == [v[0] for v in sp.values()] and bars[1]["x"] == [v[1] for v in sp.values()]
    assert bars[0]["text"] == [f"{v[0]:.0%}" for v in sp.values()]


def test_recipes_and_errors():
    x = bnd.Bound(np.array([[1.0, -np.inf], [3.0, 4.0]]), ["out", "x"])
    m = bnd.op("isneginf", x)
    assert m.recipe == ["isneginf", ["out", "x"]]
    assert bnd.evaluate(bnd.op("where", m, None, x).recipe, {"x": x.value}, []).tolist()[0][0] == 1.0
    with pytest.raises(TypeError):
        x[0:1]
    with pytest.raises(ValueError):
        bnd.op("format", "{:.3g}", [x[0]])
    with pytest.raises(TinyTFInputError, match="no 'y'"):
        bnd.evaluate(["out", "y"], {}, [])
    spec = build_view(MODELS["induction-2l"](), "residual_attn", "abc", 0)
    assert bnd.bindings_of(spec.to_figure()) == bnd.bindings_of(spec) != []
    with pytest.raises(TinyTFInputError, match="no bindings"):
        bnd.bindings_of({"data": []})
    assert bnd.op("take", ["a", "b"], [1]).recipe == ["take", ["const", ["a", "b"]], [1]]


def test_export_templates(tmp_path):
    model = pretrained.load("induction-2l")
    files = export_templates(model, "induction-2l", tmp_path, max_tokens=3, layers=[1])
    index = json.loads((tmp_path / "induction-2l" / "index.json").read_text())
    assert index["byte_labels"] == token_labels(torch.arange(256))
    assert set(index["views"]) == set(panel_views(1)) and set(files) == {"index.json", *(
        index["files"][v]["1"] for v in index["views"])}
    assert "blocks.1.attn.weights" in index["outputs"]
    tpl = json.loads(gzip.decompress((tmp_path / "induction-2l" / index["files"]["ffn"]["1"]).read_bytes()))
    assert sorted(tpl["templates"]) == ["1", "2", "3"] and tpl["templates"]["2"]["T"] == 2
    assert files[index["files"]["ffn"]["1"]] == (tmp_path / "induction-2l" / index["files"]["ffn"]["1"]).stat().st_size
    with pytest.raises(TinyTFInputError):
        export_templates(model, "../x", tmp_path)
    with pytest.raises(TinyTFInputError):
        export_templates(model, "m", tmp_path, max_tokens=0)


PLOTLY_JS = ROOT / "node_modules" / "plotly.js-cartesian-dist-min" / "plotly-cartesian.min.js"


def test_chromium_draws_the_recomputed_figures(browser, tmp_path):
    """In Chromium (plain <script> tags, no network): the page-side apply gives the Python figure and
    plotly draws it, the stepper's frames included, without errors."""
    require("plotly.js")
    model = MODELS["induction-2l"]()
    ids = tinytf.encode("zq!", 128)  # the templates are built from "abc"
    labels = token_labels(ids)
    with torch.no_grad():
        _, trace = model.run_with_trace(ids)
    context = browser.new_context()
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    served = {}  # url -> bytes: the only responses (everything else is aborted: no network)
    context.route("**/*", lambda route: route.fulfill(status=200, body=served[route.request.url])
                  if route.request.url in served else route.abort())
    try:
        page.set_content("<!doctype html><html><head><title>bind</title></head><body><div id='f'></div></body></html>")
        page.add_script_tag(path=str(PLOTLY_JS))
        page.add_script_tag(path=str(BIND_JS))
        for view in ("stepper", "attention-all", "ffn"):
            template = make_template(build_view(model, view, template_ids(3, 128), 1), 3)
            outputs = {k: _f32(trace[k].numpy()) for k in template["outputs"]}
            got = page.evaluate("""async ([template, outputs, labels]) => {
                const outs = {};
                for (const [k, t] of Object.entries(outputs)) {
                    const b = Uint8Array.from(atob(t.f32), c => c.charCodeAt(0));
                    outs[k] = {dims: t.dims, data: new Float32Array(b.buffer)};
                }
                const fig = window.tinytfBind.apply(template, outs, labels);
                const copy = JSON.parse(JSON.stringify(fig));  // plotly.animate changes the figure it draws
                const gd = document.getElementById('f');
                await Plotly.newPlot(gd, fig.data, fig.layout);
                if (fig.frames) { await Plotly.addFrames(gd, fig.frames);
                                  await Plotly.animate(gd, [fig.frames[fig.frames.length - 1].name],
                                                       {frame: {duration: 0}, transition: {duration: 0}}); }
                return {fig: copy, drawn: gd.querySelectorAll('.hm, image').length};
            }""", [template, outputs, labels])
            want = figure_of(build_view(model, view, ids, 1))
            assert diff(got["fig"], want, tol=1e-4) is None, f"{view}: {diff(got['fig'], want, tol=1e-4)}"
            assert got["drawn"] > 0, view
        files = export_templates(model, "induction-2l", tmp_path, max_tokens=2, layers=[0])
        name = next(f for f in files if f.startswith("ffn"))
        served["http://tinytf.test/ffn.json.gz"] = (tmp_path / "induction-2l" / name).read_bytes()
        loaded = page.evaluate("() => window.tinytfBind.loadJSON('http://tinytf.test/ffn.json.gz')")
        assert loaded == json.loads(gzip.decompress(served["http://tinytf.test/ffn.json.gz"]))
        served["http://tinytf.test/plain.json.gz"] = gzip.decompress(served["http://tinytf.test/ffn.json.gz"])
        assert page.evaluate("() => window.tinytfBind.loadJSON('http://tinytf.test/plain.json.gz')") == loaded
        assert not errors, errors
    finally:
        context.close()


def test_onnx_outputs_fill_the_templates(tmp_path):
    """The contract with the ONNX export: the outputs of the exported graph (names = trace names, [1, ...])
    fill every template of every book model, and the figures equal the PyTorch views (numbers within 1e-4)."""
    ort = require_module("onnxruntime")
    from tinytf.lab.onnx_export import book_models

    for key, _, load in book_models():
        model = load()
        cfg = model.config
        names = tinytf.export_onnx(model, tmp_path / f"{key}.onnx")
        session = ort.InferenceSession(str(tmp_path / f"{key}.onnx"), providers=["CPUExecutionProvider"])
        text = "héllo 你" if cfg.vocab_size == 256 else "zqxzq"
        ids = tinytf.encode(text, cfg.vocab_size)
        labels = readable_labels(text, ids)
        outputs = dict(zip(names, session.run(None, {session.get_inputs()[0].name: ids[None].numpy()})))
        for view in panel_views(cfg.n_heads):
            for layer in range(cfg.n_layers):
                template = make_template(build_view(model, view, template_ids(len(ids), cfg.vocab_size), layer),
                                         len(ids))
                assert set(template["outputs"]) <= set(names), (key, view)
                got = apply_template(template, outputs, labels)
                want = figure_of(build_view(model, view, ids, layer, labels=labels))
                assert diff(got, want, tol=1e-4) is None, f"{key} {view} L{layer}: {diff(got, want, tol=1e-4)}"


def test_frac_abs_lt_rms_python_and_browser():
    """The relative near-zero share (|x| < c * RMS(x), chapter 4's FFN figures) is the same in both copies."""
    x = np.array([[0.001, -0.5, 2.0], [0.02, -0.0001, 1.3]], dtype=np.float32)
    rms = float(np.sqrt(np.mean(x.astype(np.float64) ** 2)))
    for c in (0.01, 0.05, 1.0):
        assert bnd.OPS["frac_abs_lt_rms"](x, c) == float(np.float32((np.abs(x) < c * rms).sum()) / np.float32(6))
    require("node")
    script = (f"require({json.dumps(str(BIND_JS))}); const o = globalThis.tinytfBind.ops;"
              f"const x = {{nd: true, dims: [2, 3], data: Float32Array.from({json.dumps(x.ravel().tolist())})}};"
              "console.log(JSON.stringify([0.01, 0.05, 1.0].map(function (c) { return o.frac_abs_lt_rms(x, c); })));")
    res = subprocess.run([shutil.which("node"), "-e", script], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout) == [bnd.OPS["frac_abs_lt_rms"](x, c) for c in (0.01, 0.05, 1.0)]


def test_lab_templates_in_node():
    """The lab's logit lens (softmax, max, argmax, slice, lookup, relabel, fill) and a switched-off head's map:
    tinytfBind.apply in node on the lab graph's float32 outputs gives the figures tinytf.viz.lab builds."""
    from tinytf.lab import browser_lab
    from tinytf.viz import lab as lab_views

    model = pretrained.load("text-4l")
    sample = list(b"abc")
    first = browser_lab.run_lab(model, sample)
    lens_tpls = lab_views.lens_templates({"lens": first["lens"].numpy()}, [chr(b) for b in sample])
    attn_tpl = lab_views.template(lab_views.attention_view({"attn": first["attn"].numpy()}, ["a", "b", "c"], 1, 4,
                                                           switched_off=True))
    job, wants = {"static": str(BIND_JS), "cases": []}, []
    for text in ("q", "the quick brown f", "函数 returns " * 12):
        ids = list(text.encode("utf-8"))[-128:]
        labels = readable_labels(text, tinytf.encode(text, 256))[-128:]
        out = {k: v.numpy() for k, v in browser_lab.run_lab(model, ids).items()}
        for n, tpl in lens_tpls.items():
            job["cases"].append({"template": tpl, "labels": labels, "outputs": {"lens": _f32(out["lens"])}})
            wants.append(figure_of(lab_views.lens_view(out, labels, last=int(n))))
        job["cases"].append({"template": attn_tpl, "labels": labels, "outputs": {"attn": _f32(out["attn"])}})
        wants.append(figure_of(lab_views.attention_view(out, labels, 1, 4, switched_off=True)))
    figures = _run_node(job)["figures"]
    for i, (got, want) in enumerate(zip(figures, wants)):
        assert diff(got, want, tol=1e-4) is None, (i, diff(got, want, tol=1e-4))


def test_new_operations_python_and_node():
    """softmax / max / argmax along any axis, Python's slice bounds, lookup, relabel, fill, len, at_most: the same
    in both."""
    x = np.array([[[0.5, -1.0, 2.0], [3.0, 3.0, -np.inf]], [[1e-3, 40.0, -40.0], [0.0, 0.0, 0.0]]], dtype=np.float32)
    recipes = [["softmax", ["out", "x"], -1], ["softmax", ["out", "x"], 0], ["max", ["out", "x"], 1],
               ["argmax", ["out", "x"], -1], ["argmax", ["out", "x"], 0], ["slice", ["out", "x"], 2, -2, None],
               ["slice", ["out", "x"], 1, 5, None], ["slice", ["out", "x"], 2, 1, -1], ["slice", ["out", "x"], 0, -9, 1],
               ["slice", ["labels"], 0, -2, None], ["slice", ["labels"], 0, 1, 99],
               ["lookup", ["const", ["a", "b", "c"]], ["argmax", ["out", "x"], -1]],
               ["relabel", ["labels"], {" ": "␣", "q": "Q"}], ["fill", ["labels"], "row"],
               ["len", ["labels"]], ["len", ["out", "x"]], ["at_most", ["len", ["labels"]], 3, 1, 0],
               ["at_most", ["len", ["labels"]], 2, 1, 0]]
    labels = ["q", " ", "z"]
    want = [plain(bnd.evaluate(r, {"x": x}, labels)) for r in recipes]
    assert want[3] == [[2, 0], [1, 0]] and want[9] == [" ", "z"] and want[12] == ["Q", "␣", "z"]
    assert want[14:] == [3, 2, 1, 0]
    tpl = {"figure": {"data": [{} for _ in recipes], "layout": {}},
           "bindings": [[["data", i, "v"], r] for i, r in enumerate(recipes)]}
    got = _run_node({"static": str(BIND_JS), "cases": [{"template": tpl, "labels": labels,
                                                          "outputs": {"x": _f32(x)}}]})["figures"][0]
    for i, w in enumerate(want):
        g = got["data"][i]["v"]
        assert diff({"v": g}, {"v": w}, tol=1e-12) is None, (recipes[i], g, w)

