"""Write the files the book's pages need to run the model in the browser into ``_static/``.

    python scripts/static_assets.py        # scripts/build_book.py calls main() before every build

* ``_static/models/<key>.onnx``: the models of ``tinytf.onnx_export.book_models()`` ("untrained" =
  ``seed_everything(0); TinyTransformer(TinyConfig())``, then every shipped decoder-only checkpoint:
  "induction-2l", "text-4l"), exported by ``tinytf.export_onnx``: input "ids" int64 [1, T] (T from 1 to
  max_seq_len), outputs "logits" then every trace name of the model (``manifest.json`` lists them);
  2.4 MB, 0.46 MB and 3.9 MB (weights that are float16 numbers, as in the shipped text-4l, are stored as float16);
* ``_static/models/manifest.json``: ``{"models": [{"key", "label", "file", "vocab_size", "max_seq_len",
  "n_layers", "n_heads", "n_kv_heads", "d_model", "d_ff", "ffn", "norm", "norm_position", "outputs",
  "bytes", "sha256"}], "ort": {"version", "files"}}``. ``file`` is relative to the manifest
  (``"untrained.onnx"``), ``ort.files`` relative to ``_static/ort/``; ``label`` is the live panel's
  weights menu entry ("untrained (seed 0)", "trained: induction-2l", "trained: text-4l (English bytes)");
* ``_static/ort/``: the three files of onnxruntime-web (npm, pinned in package.json / package-lock.json,
  ``npm ci`` installs it) that the page loads: ``ort.wasm.min.js`` (the CPU/WebAssembly build, a classic
  script defining the global ``ort``), ``ort-wasm-simd-threaded.mjs`` (the Emscripten loader it imports
  dynamically; without it session creation fails with "no available backend found") and
  ``ort-wasm-simd-threaded.wasm`` (14 MB, the runtime itself).

A file is written only when its content changed, so its mtime stays (scripts/build_book.py decides
staleness by the mtimes of ``_static/**``), and files of ``_static/models/`` and ``_static/ort/`` that are not
part of the output are removed. The export is deterministic (same bytes on every run, checked by
tests/tinytf/test_onnx_export.py) and takes about 1 s for the three models.

The ids the page feeds must be checked by the page (vocab_size and max_seq_len are in the manifest): the
ONNX graph has no input checks. In onnxruntime-web an id >= vocab_size rejects ``session.run`` ("indices
element out of data bounds", also logged with console.error), a negative id silently reads the embedding
table from the end, and a RoPE model runs on more than max_seq_len tokens (tinytf.lab.onnx_export).

Loading a model in a page (checked in Chromium with onnxruntime-web 1.30.0, from a local http server,
no cross-origin isolation needed)::

    <script src="_static/ort/ort.wasm.min.js"></script>       <!-- classic script: defines window.ort -->
    <script type="module">      // a module (or an async function): top-level await
    ort.env.wasm.numThreads = 1;   // one thread: no SharedArrayBuffer, so no COOP/COEP headers needed
    ort.env.wasm.wasmPaths = new URL("_static/ort/", document.baseURI).href;  // where the .mjs and .wasm are
    const session = await ort.InferenceSession.create("_static/models/untrained.onnx",
                                                      {executionProviders: ["wasm"]});
    const ids = [99, 97, 116];                                           // validated: 0 <= id < vocab_size
    const out = await session.run({ids: new ort.Tensor("int64", BigInt64Array.from(ids.map(BigInt)),
                                                       [1, ids.length])});
    out["logits"].dims;            // [1, 3, 256]; out["blocks.0.attn.weights"].data is a Float32Array
    </script>

(A page below the book's root uses its relative path to ``_static``, e.g. ``../_static/``; ``wasmPaths`` is
the directory, ending in "/" (the absolute URL above works from any page); with ``numThreads`` above 1 the runtime needs
``crossOriginIsolated``, which a static host does not give.) The page must load the classic script
``ort.wasm.min.js`` (not ``ort.min.js``, which also carries WebGL/WebGPU); it imports
``ort-wasm-simd-threaded.mjs`` from ``wasmPaths`` even with one thread. Measured in Chromium on the shared
2-core machine (the built book's index.html from a local http server, the script added to it): creating the first
session of a page takes 0.4-0.6 s (the 14 MB .wasm is fetched and compiled once), each further one
30-260 ms; a run takes 1-25 ms for 1-128 tokens after the first run of a page (about 0.1 s). Every output
agrees with PyTorch within 3e-6 of its tensor's largest magnitude; the logits within 6e-7 (untrained) and
4e-5 (trained models, whose logits reach about 20: float32 sums in another order).
"""
from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "_static"
MODELS_DIR = STATIC / "models"
ORT_DIR = STATIC / "ort"
MANIFEST = MODELS_DIR / "manifest.json"
ORT_PACKAGE = ROOT / "node_modules" / "onnxruntime-web"
# what ort.wasm.min.js fetches for the one-thread WebAssembly backend (nothing else of the 139 MB package)
ORT_FILES = ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm")
CONFIG_FIELDS = ("vocab_size", "max_seq_len", "n_layers", "n_heads", "n_kv_heads", "d_model", "d_ff", "ffn", "norm",
                 "norm_position")


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it (messages), else as it is."""
    try:
        return str(Path(path).relative_to(ROOT))
    except ValueError:
        return str(path)


class StaticAssetsError(RuntimeError):
    """A file the browser assets need is missing (e.g. node_modules without onnxruntime-web)."""


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` unless it already holds exactly that; return whether it wrote."""
    if path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)  # a reader (the http server of a test) never sees half a file
    return True


def ort_version() -> str:
    """The installed onnxruntime-web version; StaticAssetsError when `npm ci` has not installed it."""
    package = ORT_PACKAGE / "package.json"
    if not package.is_file():
        raise StaticAssetsError(f"{_shown(package)} is missing: run `npm ci` (installs onnxruntime-web "
                                "at the version of package-lock.json)")
    return json.loads(package.read_text(encoding="utf-8"))["version"]


def export_models(directory: Path) -> tuple[list, list]:
    """Export every model of tinytf.onnx_export.book_models() into ``directory``; return (manifest entries,
    written paths)."""
    import torch

    from tinytf.lab.onnx_export import book_models, export_onnx

    entries, written = [], []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is fastest, and the export is the same
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for key, label, load in book_models():
                model = load()
                tmp_path = Path(tmp) / f"{key}.onnx"
                outputs = export_onnx(model, tmp_path)
                data = tmp_path.read_bytes()
                path = directory / f"{key}.onnx"
                if write_if_changed(path, data):
                    written.append(path)
                cfg = model.config
                entries.append({"key": key, "label": label, "file": path.name,
                                **{name: getattr(cfg, name) for name in CONFIG_FIELDS},
                                "n_kv_heads": cfg.kv_heads,  # the number of K/V heads (n_heads when not grouped)
                                "outputs": outputs, "bytes": len(data),
                                "sha256": hashlib.sha256(data).hexdigest()})
    finally:
        torch.set_num_threads(threads)
    return entries, written


def copy_ort(directory: Path) -> tuple[dict, list]:
    """Copy ORT_FILES from node_modules/onnxruntime-web/dist; return ({"version", "files"}, written paths)."""
    version = ort_version()
    written = []
    for name in ORT_FILES:
        src = ORT_PACKAGE / "dist" / name
        if not src.is_file():
            raise StaticAssetsError(f"{_shown(src)} is missing (onnxruntime-web {version}): "
                                    "run `npm ci`")
        if write_if_changed(directory / name, src.read_bytes()):
            written.append(directory / name)
    return {"version": version, "files": list(ORT_FILES)}, written


def remove_others(directory: Path, keep: set) -> list:
    """Delete the files of ``directory`` not named in ``keep`` (left over from another model list or
    onnxruntime-web version); return them."""
    removed = []
    if directory.is_dir():
        for path in sorted(directory.iterdir()):
            if path.name not in keep and (path.is_file() or path.is_symlink()):
                path.unlink()
                removed.append(path)
    return removed


# The page's panel draws at most this many tokens: one figure template per length (tinytf.viz.templates).
# The book's live panels are created with the same max_tokens (a test checks), so the two panels agree.
TEMPLATE_TOKENS = 16
TEMPLATES_KEY = "templates.key"


def _templates_key(entries: list) -> str:
    """What the templates are made from: tinytf's code, the models (their ONNX hashes) and TEMPLATE_TOKENS."""
    h = hashlib.sha256(f"tokens={TEMPLATE_TOKENS}".encode())
    for path in sorted((ROOT / "tinytf").rglob("*.py")):
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    for e in entries:
        h.update(f"{e['key']}:{e['sha256']}".encode())
    return h.hexdigest()


def export_view_templates(models_dir: Path, entries: list) -> tuple[list, list]:
    """The figure templates of every view, layer and length for each model (tinytf.viz.templates) in
    ``models_dir/<key>/``; skipped (~20 s) when TEMPLATES_KEY says they were made from the same code and
    models. Returns (written, removed)."""
    key = _templates_key(entries)
    stamp = models_dir / TEMPLATES_KEY
    if (stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == key
            and all((models_dir / e["key"] / "index.json").is_file() for e in entries)):
        return [], []
    import torch

    from tinytf.viz.templates import export_book_templates

    written, removed = [], []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            export_book_templates(tmp, max_tokens=TEMPLATE_TOKENS)
            for e in entries:
                made = {p.name: p for p in (Path(tmp) / e["key"]).iterdir()}
                for name, path in sorted(made.items()):
                    if write_if_changed(models_dir / e["key"] / name, path.read_bytes()):
                        written.append(models_dir / e["key"] / name)
                removed += remove_others(models_dir / e["key"], set(made))
    finally:
        torch.set_num_threads(threads)
    for d in sorted(p for p in models_dir.iterdir() if p.is_dir()):
        if d.name not in {e["key"] for e in entries}:  # a model no longer in the book
            removed += remove_others(d, set())
            d.rmdir()
    write_if_changed(stamp, (key + "\n").encode())
    return written, removed


def write_assets(models_dir: Path | None = None, ort_dir: Path | None = None, templates: bool = True) -> dict:
    """Export the models, copy onnxruntime-web, write the manifest (into MODELS_DIR and ORT_DIR unless other
    directories are given); return {"written": [...], "removed": [...], "manifest": dict}. Raises
    StaticAssetsError when node_modules lacks onnxruntime-web."""
    models_dir, ort_dir = Path(models_dir or MODELS_DIR), Path(ort_dir or ORT_DIR)
    ort, ort_written = copy_ort(ort_dir)  # first: a missing `npm ci` is reported before any work
    entries, written = export_models(models_dir)
    manifest = {"models": entries, "ort": ort}
    manifest_path = models_dir / MANIFEST.name
    if write_if_changed(manifest_path, (json.dumps(manifest, indent=1) + "\n").encode("utf-8")):
        written.append(manifest_path)
    tpl_written, tpl_removed = export_view_templates(models_dir, entries) if templates else ([], [])
    written += tpl_written
    removed = remove_others(models_dir, {manifest_path.name, TEMPLATES_KEY} | {e["file"] for e in entries})
    removed += tpl_removed
    removed += remove_others(ort_dir, set(ORT_FILES))
    return {"written": written + ort_written, "removed": removed, "manifest": manifest}


def update() -> str:
    """write_assets() and a one-line summary of what changed (StaticAssetsError when onnxruntime-web is missing)."""
    import time

    start = time.perf_counter()
    result = write_assets()
    from tinytf.viz import lab as browser_lab  # the landing page's lab: _static/lab/ (its own key; usually nothing to do)

    lab_written, lab_removed = browser_lab.write_assets(STATIC / "lab", ROOT)
    result["written"] += lab_written
    result["removed"] += lab_removed
    changed = [_shown(p) for p in result["written"]]
    if len(changed) > 6:
        changed = [f"{len(changed)} files ({', '.join(changed[:3])}, ...)"]
    removed = [_shown(p) for p in result["removed"]]
    return (f"static_assets: {len(result['manifest']['models'])} models, onnxruntime-web "
            f"{result['manifest']['ort']['version']}; wrote {', '.join(changed) or 'nothing (all up to date)'}"
            + (f"; removed {', '.join(removed)}" if removed else "")
            + f" ({time.perf_counter() - start:.1f} s)")


def main(argv: list | None = None) -> int:
    """Write the assets; print what changed. Exit status 1 (with the reason) when onnxruntime-web is missing."""
    try:
        print(update())
    except StaticAssetsError as err:
        print(f"static_assets: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
