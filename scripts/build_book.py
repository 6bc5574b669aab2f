"""Build the HTML book into _build/html (used by `make book`, the tests and the report).

    python scripts/build_book.py             # build (incremental, like jupyter-book)
    python scripts/build_book.py --if-stale  # build only when a source is newer than the last build
    python scripts/build_book.py --all       # rebuild every page (used to time a full build)

The build is `jupyter-book build . -W -n --keep-going`: any Sphinx warning fails it.
TINYTF_BOOK_TOC=path/to/other_toc.yml builds with another table of contents (e.g. only the
chapter you are writing); the tests then open the pages of that toc.
After a successful build, _build/book-stamp.json records when and how long it took.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
HTML = BUILD / "html"
STAMP = BUILD / "book-stamp.json"
JB_ARGS = ["build", ".", "-W", "-n", "--keep-going"]


def toc_path() -> Path:
    """The table of contents in use: _toc.yml, or $TINYTF_BOOK_TOC when set."""
    other = os.environ.get("TINYTF_BOOK_TOC")
    return Path(other).resolve() if other else ROOT / "_toc.yml"



def toc_docnames() -> list[str]:
    """Docnames listed in _toc.yml (or $TINYTF_BOOK_TOC), root first (e.g. 'intro', 'chapters/01_...')."""
    import yaml

    toc = yaml.safe_load(toc_path().read_text(encoding="utf-8"))
    names = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                names.append(str(Path(entry["file"]).with_suffix("")))
            walk(entry.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return names

def source_files() -> list[Path]:
    """Everything a page of the book is made from."""
    patterns = [
        "chapters/*.ipynb", "chapters/*.md", "*.md", "_config.yml", "_toc.yml",
        "tinytf/**/*.py", "tinytf/viz/*.js", "_static/**/*", "scripts/book_offline.py",
        # what scripts/static_assets.py makes _static/models and _static/ort from
        "tinytf/checkpoints/*", "scripts/static_assets.py", "package-lock.json",
    ]
    files: set[Path] = {toc_path()}
    for pattern in patterns:
        files.update(p for p in ROOT.glob(pattern) if p.is_file())
    return sorted(files)


def toc_key() -> str:
    """Which table of contents a build used: its path and a hash of its content."""
    path = toc_path()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else "missing"
    return f"{path}:{digest}"


def built_with_other_toc() -> bool:
    return STAMP.is_file() and json.loads(STAMP.read_text(encoding="utf-8")).get("toc") != toc_key()


def newest_source() -> tuple[float, Path | None]:
    newest, which = 0.0, None
    for path in source_files():
        mtime = path.stat().st_mtime
        if mtime > newest:
            newest, which = mtime, path
    return newest, which


def is_stale() -> bool:
    if not STAMP.is_file() or not (HTML / "index.html").is_file():
        return True
    if built_with_other_toc():
        return True
    # compare with the start of the last build: a source saved while it ran is not in it
    started = json.loads(STAMP.read_text(encoding="utf-8")).get("started", 0.0)
    return newest_source()[0] > started


def static_changed() -> bool:
    """Whether a file of _static differs from its copy in the built book (or has none)."""
    for src in (ROOT / "_static").rglob("*"):
        if src.is_file():
            copy = HTML / "_static" / src.relative_to(ROOT / "_static")
            if not copy.is_file() or copy.read_bytes() != src.read_bytes():
                return True
    return False


def jupyter_book_exe() -> str:
    exe = Path(sys.executable).parent / "jupyter-book"
    return str(exe) if exe.exists() else "jupyter-book"


def write_static_assets() -> None:
    """scripts/static_assets.py: the ONNX models and onnxruntime-web in _static (files rewritten only when
    their content changed, so an unchanged model keeps its mtime and forces no rebuild)."""
    if str(ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(ROOT / "scripts"))
    import static_assets

    try:
        print(static_assets.update())
    except static_assets.StaticAssetsError as err:
        # as without npm's plotly.js bundle, the book still builds (in CI `npm ci` has run): its panels then
        # say that they could not load the runtime, and tests/browser/test_static_panel_book.py fails
        print(f"warning: scripts/static_assets.py: {err}; the pages' live panels will not run", file=sys.stderr)


def build(full: bool = False, log: Path | None = None) -> float:
    """Run the build; raise RuntimeError (with the build's output) when it fails."""
    write_static_assets()  # before static_changed(): a new model or runtime file is part of this build
    if built_with_other_toc():
        # another table of contents: start afresh so no page of the old one stays behind
        shutil.rmtree(HTML, ignore_errors=True)
        shutil.rmtree(BUILD / ".doctrees", ignore_errors=True)
    # Sphinx copies _static only when some page is out of date: a changed script or style alone
    # needs a full build, or the old copy stays in _build/html
    full = full or static_changed()
    cmd = [jupyter_book_exe(), *JB_ARGS] + (["--all"] if full else [])
    if toc_path() != ROOT / "_toc.yml":
        cmd += ["--toc", str(toc_path())]
    started = time.time()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    output = proc.stdout + proc.stderr
    BUILD.mkdir(exist_ok=True)
    (log or BUILD / "build.log").write_text(output, encoding="utf-8")
    if proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}):\n{output[-6000:]}")
    STAMP.write_text(json.dumps({"seconds": round(seconds, 1), "full": full, "toc": toc_key(),
                                 "started": started, "finished": time.time()}), encoding="utf-8")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--if-stale", action="store_true", help="skip when the build is newer than every source")
    parser.add_argument("--all", action="store_true", help="rebuild every page")
    args = parser.parse_args(argv)
    if args.if_stale and not args.all and not is_stale():
        print(f"book is up to date: {HTML.relative_to(ROOT)}")
        return 0
    try:
        seconds = build(full=args.all)
    except RuntimeError as err:
        print(err, file=sys.stderr)
        return 1
    print(f"built {HTML.relative_to(ROOT)} in {seconds:.1f} s (log: _build/build.log)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
