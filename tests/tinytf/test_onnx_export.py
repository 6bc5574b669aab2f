"""tinytf.export_onnx and scripts/static_assets.py: the book's models as ONNX files with every trace point,
and the onnxruntime-web files the pages load.

The models are exported once for the module (into a temporary directory, by static_assets.write_assets,
the same code the book build runs); every output is compared with PyTorch through onnxruntime on several
sequence lengths in one session, so a length or a token id baked into the graph would show."""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import require, require_module
import torch

import tinytf
from tinytf.lab.onnx_export import book_models, export_onnx, trace_output_names

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import static_assets  # noqa: E402  (scripts/static_assets.py)

ort = require_module("onnxruntime")
onnx = require_module("onnx")

LENGTHS = (1, 3, 8, 17)  # and each model's max_seq_len
# float32: two runtimes sum in different orders, so values of size ~30 (scores, late-layer FFN hiddens) differ
# in the last bits (a few 1e-6 absolute); compared relative to each tensor's largest value (at least 1)
TOLERANCE = 1e-5

@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    """write_assets() twice into a temporary _static: (first result, second result, models dir, ort dir, mtimes)."""
    require("onnxruntime-web")
    base = tmp_path_factory.mktemp("static")
    models_dir, ort_dir = base / "models", base / "ort"
    try:
        first = static_assets.write_assets(models_dir, ort_dir, templates=False)  # test_view_templates has them
    except static_assets.StaticAssetsError as err:  # node_modules without onnxruntime-web
        pytest.fail(str(err), pytrace=False)
    mtimes = {p.name: p.stat().st_mtime_ns for d in (models_dir, ort_dir) for p in d.iterdir()}
    second = static_assets.write_assets(models_dir, ort_dir, templates=False)
    return first, second, models_dir, ort_dir, mtimes


@pytest.fixture(scope="module")
def torch_models():
    return {key: load() for key, _, load in book_models()}


def _entry(assets, key):
    return next(e for e in assets[0]["manifest"]["models"] if e["key"] == key)


def test_book_models_are_the_untrained_model_and_every_decoder_checkpoint():
    keys = [key for key, _, _ in book_models()]
    decoders = tinytf.pretrained.names(kind="decoder") + tinytf.pretrained.names(kind="text")
    assert keys == ["untrained"] + decoders
    assert "reversal-2l" not in keys  # the seq2seq checkpoint takes two inputs
    assert {"induction-2l", "text-4l"} <= set(keys)


def test_untrained_is_the_panels_seed_0_model_and_leaves_the_rng_alone():
    import random

    torch.manual_seed(123)
    random.seed(123)
    expected_next = torch.rand(3), random.random()
    torch.manual_seed(123)
    random.seed(123)
    model = dict((k, load) for k, _, load in book_models())["untrained"]()
    assert torch.equal(torch.rand(3), expected_next[0]) and random.random() == expected_next[1]
    tinytf.seed_everything(0)
    reference = tinytf.TinyTransformer(tinytf.TinyConfig())
    for (name, a), (_, b) in zip(model.state_dict().items(), reference.state_dict().items()):
        assert torch.equal(a, b), name


def test_labels_are_the_live_panels_weights_menu():
    panel = require_module("tinytf.viz.panel")
    labels = [label for _, label, _ in book_models()]
    assert labels[0] == "untrained (seed 0)"
    assert labels[1:] == list(panel._discover_checkpoints())


@pytest.mark.parametrize("key", [key for key, _, _ in book_models()])
def test_outputs_are_logits_and_every_trace_name(assets, torch_models, key):
    model = torch_models[key]
    with torch.no_grad():
        _, trace = model.run_with_trace(torch.tensor([[1, 2, 3]]))
    outputs = _entry(assets, key)["outputs"]
    assert outputs[0] == "logits"
    assert outputs[1:] == [name for name in trace if name != "logits"]  # every trace name, in trace order
    assert sorted(outputs) == sorted(trace)  # and nothing else
    session = ort.InferenceSession(str(assets[2] / f"{key}.onnx"), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == outputs
    assert [(i.name, i.type) for i in session.get_inputs()] == [("ids", "tensor(int64)")]


@pytest.mark.parametrize("key", [key for key, _, _ in book_models()])
def test_every_output_matches_pytorch_for_several_lengths(assets, torch_models, key):
    model = torch_models[key]
    cfg = model.config
    session = ort.InferenceSession(str(assets[2] / f"{key}.onnx"), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    worst = 0.0
    for T in LENGTHS + (cfg.max_seq_len,):
        ids = torch.randint(0, cfg.vocab_size, (1, T), generator=torch.Generator().manual_seed(T))
        ids[0, 0] = cfg.vocab_size - 1  # the last row of the embedding too
        if T > 1:
            ids[0, 1] = 0
        got = dict(zip(names, session.run(None, {"ids": ids.numpy()})))
        with torch.no_grad():
            logits, trace = model.run_with_trace(ids)
        expected = {"logits": logits, **trace}
        assert set(got) == set(expected)
        for name, want in expected.items():
            want = want.numpy()
            assert got[name].dtype == np.float32, name
            assert got[name].shape == want.shape, f"{key} T={T} {name}: {got[name].shape} vs {want.shape}"
            finite = np.isfinite(want)
            assert np.array_equal(np.isfinite(got[name]), finite), f"{key} T={T} {name}: -inf elsewhere"
            assert np.array_equal(got[name][~finite], want[~finite]), f"{key} T={T} {name}"
            if finite.any():
                scale = max(1.0, float(np.abs(want[finite]).max()))
                err = float(np.abs(got[name][finite] - want[finite]).max()) / scale
                assert err <= TOLERANCE, f"{key} T={T} {name}: differs from PyTorch by {err:.1e} of its scale"
                worst = max(worst, err)


def test_the_graph_keeps_t_symbolic(assets, torch_models):
    cfg = torch_models["untrained"].config
    graph = onnx.load(str(assets[2] / "untrained.onnx"), load_external_data=False).graph
    assert [d.dim_param or d.dim_value for d in graph.input[0].type.tensor_type.shape.dim] == [1, "T"]
    shapes = {o.name: [d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim] for o in graph.output}
    assert shapes["logits"] == [1, "T", cfg.vocab_size]
    assert shapes["blocks.0.attn.weights"] == [1, cfg.n_heads, "T", "T"]
    assert shapes["blocks.1.ffn.post"] == [1, "T", cfg.d_ff]
    assert all("T" in shape for shape in shapes.values())  # every output of this model grows with T


def test_sinusoidal_position_table_stays_without_batch(tmp_path):
    cfg = tinytf.config_2017(n_layers=1, max_seq_len=16)
    model = tinytf.TinyTransformer(cfg).eval()
    names = export_onnx(model, tmp_path / "m.onnx")
    assert "pos.table" in names and names == trace_output_names(model)
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    for T in (1, 16):
        ids = torch.arange(T)[None] % cfg.vocab_size
        got = dict(zip(names, session.run(None, {"ids": ids.numpy()})))
        with torch.no_grad():
            logits, trace = model.run_with_trace(ids)
        assert got["pos.table"].shape == (T, cfg.d_model)
        np.testing.assert_allclose(got["pos.table"], trace["pos.table"].numpy(), atol=TOLERANCE)
        np.testing.assert_allclose(got["logits"], logits.numpy(), atol=TOLERANCE, rtol=TOLERANCE)


def test_export_refuses_what_it_cannot_export(tmp_path):
    with pytest.raises(tinytf.TinyTFInputError, match="encoder-decoder"):
        export_onnx(tinytf.EncoderDecoder(tinytf.TinyConfig(n_layers=1)), tmp_path / "x.onnx")
    with pytest.raises(tinytf.TinyTFInputError, match="TinyTransformer"):
        export_onnx(torch.nn.Linear(2, 2), tmp_path / "x.onnx")
    with pytest.raises(tinytf.TinyTFInputError, match="float"):
        export_onnx(tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1)).half(), tmp_path / "x.onnx")
    with pytest.raises(tinytf.TinyTFInputError, match="opset"):
        export_onnx(tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1)), tmp_path / "x.onnx", opset=7)
    assert not (tmp_path / "x.onnx").exists()


def test_top_level_names():
    assert tinytf.export_onnx is export_onnx
    assert tinytf.onnx_export is tinytf.lab.onnx_export


# --------------------------------------------------------------------------- scripts/static_assets.py
def test_manifest_matches_the_files(assets, torch_models):
    manifest = assets[0]["manifest"]
    models_dir, ort_dir = assets[2], assets[3]
    assert json.loads((models_dir / "manifest.json").read_text(encoding="utf-8")) == manifest
    assert [e["key"] for e in manifest["models"]] == [key for key, _, _ in book_models()]
    for entry in manifest["models"]:
        data = (models_dir / entry["file"]).read_bytes()
        assert entry["file"] == f"{entry['key']}.onnx"
        assert entry["bytes"] == len(data) and entry["sha256"] == hashlib.sha256(data).hexdigest()
        cfg = torch_models[entry["key"]].config
        for name in ("vocab_size", "max_seq_len", "n_layers", "n_heads", "d_model", "d_ff", "ffn", "norm",
                     "norm_position"):
            assert entry[name] == getattr(cfg, name), (entry["key"], name)
        assert entry["n_kv_heads"] == cfg.kv_heads
    assert sorted(p.name for p in models_dir.iterdir()) == sorted(["manifest.json"] + [e["file"] for e in manifest["models"]])
    package = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))
    assert manifest["ort"]["version"] == package["dependencies"]["onnxruntime-web"] == "1.30.0"


def test_ort_files_are_only_the_needed_ones(assets):
    ort_dir = assets[3]
    assert sorted(p.name for p in ort_dir.iterdir()) == sorted(static_assets.ORT_FILES)
    assert assets[0]["manifest"]["ort"]["files"] == list(static_assets.ORT_FILES)
    for name in static_assets.ORT_FILES:
        assert (ort_dir / name).read_bytes() == (static_assets.ORT_PACKAGE / "dist" / name).read_bytes()
    assert (ort_dir / "ort-wasm-simd-threaded.wasm").read_bytes()[:4] == b"\0asm"


def test_a_second_run_writes_nothing(assets):
    first, second, models_dir, ort_dir, mtimes = assets
    assert len(first["written"]) == len(book_models()) + 1 + len(static_assets.ORT_FILES)
    assert second["written"] == [] and second["removed"] == []  # the export is byte-for-byte deterministic
    assert second["manifest"] == first["manifest"]
    assert {p.name: p.stat().st_mtime_ns for d in (models_dir, ort_dir) for p in d.iterdir()} == mtimes


def test_a_changed_or_stray_file_is_replaced(tmp_path, assets):
    models_dir, ort_dir = tmp_path / "models", tmp_path / "ort"
    models_dir.mkdir()
    (models_dir / "untrained.onnx").write_bytes(b"old")
    (models_dir / "retired-model.onnx").write_bytes(b"old")
    result = static_assets.write_assets(models_dir, ort_dir, templates=False)
    assert models_dir / "untrained.onnx" in result["written"]
    assert result["removed"] == [models_dir / "retired-model.onnx"]
    assert (models_dir / "untrained.onnx").read_bytes() == (assets[2] / "untrained.onnx").read_bytes()


def test_missing_onnxruntime_web_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(static_assets, "ORT_PACKAGE", tmp_path / "node_modules" / "onnxruntime-web")
    monkeypatch.setattr(static_assets, "MODELS_DIR", tmp_path / "models")
    monkeypatch.setattr(static_assets, "ORT_DIR", tmp_path / "ort")
    with pytest.raises(static_assets.StaticAssetsError, match="npm ci"):
        static_assets.write_assets(tmp_path / "models", tmp_path / "ort")
    assert static_assets.main([]) == 1
    assert "run `npm ci`" in capsys.readouterr().err
    assert not (tmp_path / "models").exists() and not (tmp_path / "ort").exists()


def test_the_graph_does_not_check_ids_so_the_page_must(assets, torch_models):
    """What the docstrings promise the page: out-of-vocabulary ids are not caught the way Python catches them."""
    options = ort.SessionOptions()
    options.log_severity_level = 4  # the failing run would print its error to stderr as well
    session = ort.InferenceSession(str(assets[2] / "induction-2l.onnx"), options, providers=["CPUExecutionProvider"])
    V = torch_models["induction-2l"].config.vocab_size
    with pytest.raises(Exception, match="out of data bounds"):
        session.run(["logits"], {"ids": np.array([[5, V]], dtype=np.int64)})
    negative = session.run(["logits"], {"ids": np.array([[5, -1]], dtype=np.int64)})[0]
    last = session.run(["logits"], {"ids": np.array([[5, V - 1]], dtype=np.int64)})[0]
    np.testing.assert_array_equal(negative, last)  # -1 silently reads the last row
    with pytest.raises(tinytf.TinyTFInputError):
        torch_models["induction-2l"](torch.tensor([[5, -1]]))


def test_float16_checkpoints_are_stored_as_float16_with_the_same_numbers(assets, torch_models):
    from onnx import numpy_helper

    for key in ("text-4l", "untrained"):
        model = torch_models[key]
        graph = onnx.load(str(assets[2] / f"{key}.onnx")).graph
        stored = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
        embed = model.embed.weight.detach().numpy()
        if key == "text-4l":  # shipped as float16: the file holds float16 and casts it back, exactly
            assert stored["model.embed.weight_float16"].dtype == np.float16
            np.testing.assert_array_equal(stored["model.embed.weight_float16"].astype(np.float32), embed)
            assert _entry(assets, key)["bytes"] < 0.6 * 4 * model.num_parameters()
        else:  # random float32 weights are not float16 numbers: kept as they are
            np.testing.assert_array_equal(stored["model.embed.weight"], embed)


def test_view_templates_are_written_once_per_code_and_models(tmp_path, assets, monkeypatch):
    """The page's figure templates (tinytf.viz.templates) sit beside the models, one folder per model key;
    made again only when tinytf's code, a model or the token count changes (a stamp of their hash)."""
    monkeypatch.setattr(static_assets, "TEMPLATE_TOKENS", 2)  # the real run makes 12 lengths; 2 are enough here
    models_dir = tmp_path / "models"
    models_dir.mkdir()
    for p in assets[2].iterdir():
        (models_dir / p.name).write_bytes(p.read_bytes())
    entries = assets[0]["manifest"]["models"]
    written, removed = static_assets.export_view_templates(models_dir, entries)
    for e in entries:
        index = json.loads((models_dir / e["key"] / "index.json").read_text(encoding="utf-8"))
        assert index["model"] == e["key"] and index["max_tokens"] == 2 and index["n_layers"] == e["n_layers"]
        assert set(index["outputs"]) <= set(e["outputs"])  # every output a template reads is in the ONNX file
        for view in index["files"].values():
            for name in view.values():
                assert (models_dir / e["key"] / name) in written
    assert removed == []
    (models_dir / "retired").mkdir()
    (models_dir / "retired" / "index.json").write_text("{}")
    assert static_assets.export_view_templates(models_dir, entries) == ([], [])  # same code, same models: skipped
    monkeypatch.setattr(static_assets, "TEMPLATE_TOKENS", 3)
    written, removed = static_assets.export_view_templates(models_dir, entries)
    assert models_dir / "retired" / "index.json" in removed and not (models_dir / "retired").exists()
    assert all(json.loads((models_dir / e["key"] / "index.json").read_text())["max_tokens"] == 3 for e in entries)
