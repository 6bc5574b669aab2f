"""Build the HTML book, both editions (used by `make book`, the tests and the report):
English into _build/html, Chinese into _build/html/zh.

    python scripts/build_book.py             # build (incremental, like jupyter-book)
    python scripts/build_book.py --if-stale  # build only an edition whose sources are newer than its last build
    python scripts/build_book.py --all       # rebuild every page (used to time a full build)

Each build is `jupyter-book build . -W -n --keep-going`: any Sphinx warning fails it.
TINYTF_BOOK_TOC=path/to/other_toc.yml builds with another table of contents (e.g. only the
chapter you are writing); the tests then open the pages of that toc.
TINYTF_BOOK_EDITIONS=en (or zh) builds one edition only (`make zh` is TINYTF_BOOK_EDITIONS=zh).
After a successful build, _build/book-stamp.json (English) and _build/zh-stamp.json (Chinese) record when
and how long it took.

The Chinese edition is the same sources with `language: zh_CN` and the catalogues of
locales/zh_CN/LC_MESSAGES (one .po per page, and the interface's sphinx.po and booktheme.po, see
scripts/book_i18n.py): its config (_config.yml plus those settings, its title, author, footer and search
placeholder) and a copy of the catalogues (Sphinx compiles the .mo files next to them, so none is written into locales/) live in
_build/zh/, Sphinx builds it into _build/zh/_build/html, and its files are hard-linked into _build/html/zh
(an edition is one self-contained folder, so file:// works for both). Its large static files (the ONNX
models, onnxruntime's wasm, plotly.js, MathJax) are hard links to the English edition's: not on disk twice.
"""
from __future__ import annotations

import argparse
import filecmp
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
HTML = BUILD / "html"
STAMP = BUILD / "book-stamp.json"
JB_ARGS = ["build", ".", "-W", "-n", "--keep-going"]
EDITIONS = ("en", "zh")
LOCALES = ROOT / "locales"
ZH_LOCALE = "zh_CN"
ZH_BUILD = BUILD / "zh"                      # config, catalogue copies (+ .mo), doctrees, Sphinx's output
ZH_OUT = ZH_BUILD / "_build" / "html"        # where jupyter-book --path-output _build/zh writes the HTML
ZH_HTML = HTML / "zh"                        # the published Chinese edition (hard links to ZH_OUT)
ZH_STAMP = BUILD / "zh-stamp.json"
ZH_TITLE = "tinytf：逐个张量，拆解现代 Transformer 块"
ZH_AUTHOR = "tinytf 编写组"
# the search field's placeholder and aria-label (jupyter-book sets html_theme_options.search_bar_text to
# "Search this book..." itself, so the theme's translated default never shows)
ZH_SEARCH = "搜索本书……"
# sphinx-togglebutton's hints: its default is translated in its setup(), before the language's catalogue is
# loaded, so it would stay "Click to show" / "Click to hide"
ZH_TOGGLE_HINTS = {"togglebutton_hint": "点击展开", "togglebutton_hint_hide": "点击收起"}
# _config.yml's extra_footer in Chinese (the same statement: nothing is loaded from another site)
ZH_FOOTER = ("<p>离线可用：每张图都由本书自带的 plotly.js 绘制，每个公式都由本书自带的 MathJax 排版；"
             "不从任何其他网站加载内容。</p>\n")
# Static files stored once for both editions (hard links) when identical: the large ones that are plain copies.
# Never a file that the build rewrites after copying it (the theme's fontawesome.js, which book_offline slims
# per edition): Sphinx would write the other edition's copy through the link.
SHARED_STATIC = ("models/", "ort/", "mathjax/", "plotly.min.js")


def editions() -> list[str]:
    """The editions to build: both, or those named by $TINYTF_BOOK_EDITIONS ("en", "zh", "en,zh")."""
    wanted = os.environ.get("TINYTF_BOOK_EDITIONS", "").replace(",", " ").split()
    unknown = set(wanted) - set(EDITIONS)
    if unknown:
        raise SystemExit(f"TINYTF_BOOK_EDITIONS: unknown edition(s) {sorted(unknown)}; known: {EDITIONS}")
    return [e for e in EDITIONS if e in wanted] if wanted else list(EDITIONS)


def html_dir(edition: str) -> Path:
    return HTML if edition == "en" else ZH_HTML


def stamp_path(edition: str) -> Path:
    return STAMP if edition == "en" else ZH_STAMP


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

def source_files(edition: str = "en") -> list[Path]:
    """Everything a page of the book (of that edition) is made from."""
    patterns = [
        "chapters/*.ipynb", "chapters/*.md", "*.md", "_config.yml", "_toc.yml",
        "tinytf/**/*.py", "tinytf/viz/*.js", "_static/**/*", "scripts/book_offline.py",
        "scripts/book_i18n.py", "scripts/book_bibtex.py", "_templates/*", "references.bib",
        # what scripts/static_assets.py makes _static/models and _static/ort from
        "tinytf/checkpoints/*", "scripts/static_assets.py", "package-lock.json",
    ]
    if edition == "zh":
        patterns.append(f"locales/{ZH_LOCALE}/LC_MESSAGES/**/*.po")
    files: set[Path] = {toc_path()}
    for pattern in patterns:
        files.update(p for p in ROOT.glob(pattern) if p.is_file())
    return sorted(files)


def toc_key() -> str:
    """Which table of contents a build used: its path and a hash of its content."""
    path = toc_path()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else "missing"
    return f"{path}:{digest}"


def built_with_other_toc(edition: str = "en") -> bool:
    stamp = stamp_path(edition)
    return stamp.is_file() and json.loads(stamp.read_text(encoding="utf-8")).get("toc") != toc_key()


def newest_source(edition: str = "en") -> tuple[float, Path | None]:
    newest, which = 0.0, None
    for path in source_files(edition):
        mtime = path.stat().st_mtime
        if mtime > newest:
            newest, which = mtime, path
    return newest, which


def last_build_started(edition: str) -> float | None:
    """When the edition's last build started (its stamp), or None before the first. Sources are compared with the
    start, not the end: a source saved while a build ran is not in it."""
    stamp = stamp_path(edition)
    if not stamp.is_file():
        return None
    return json.loads(stamp.read_text(encoding="utf-8")).get("started", 0.0)


def edition_is_stale(edition: str) -> bool:
    started = last_build_started(edition)
    if started is None or not (html_dir(edition) / "index.html").is_file():
        return True
    if built_with_other_toc(edition):
        return True
    return newest_source(edition)[0] > started


def is_stale() -> bool:
    """Whether an edition to build ($TINYTF_BOOK_EDITIONS, default both) is older than its sources."""
    return any(edition_is_stale(e) for e in editions())


def static_changed(html: Path = HTML) -> bool:
    """Whether a file of _static differs from its copy in the built book (or has none)."""
    for src in (ROOT / "_static").rglob("*"):
        if src.is_file():
            copy = html / "_static" / src.relative_to(ROOT / "_static")
            if not copy.is_file() or copy.read_bytes() != src.read_bytes():
                return True
    return False


def bib_changed(edition: str = "en") -> bool:
    """Whether references.bib changed since the edition's last build started. The citation links of every page
    point into the bibliography by ids numbered over all its entries, so an added entry moves the ids: only a
    full build updates the pages that did not change themselves (an incremental one left a page's citations
    opening the wrong papers)."""
    started = last_build_started(edition)
    return started is not None and (ROOT / "references.bib").stat().st_mtime > started


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


def start_jupyter_book(cmd: list[str], log: Path) -> tuple:
    """Start a jupyter-book build writing its output to `log`; finish it with finish_jupyter_book."""
    BUILD.mkdir(exist_ok=True)
    out = log.open("w", encoding="utf-8")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True)
    return cmd, log, out, proc, time.perf_counter()


def finish_jupyter_book(job: tuple) -> float:
    """Wait for a build started by start_jupyter_book; its seconds, or RuntimeError with the log's end."""
    cmd, log, out, proc, start = job
    code = proc.wait()
    out.close()
    seconds = time.perf_counter() - start
    if code != 0:
        output = log.read_text(encoding="utf-8", errors="replace")
        raise RuntimeError(f"`{' '.join(cmd)}` failed (exit {code}):\n{output[-6000:]}")
    return seconds


def run_jupyter_book(cmd: list[str], log: Path) -> float:
    return finish_jupyter_book(start_jupyter_book(cmd, log))


def write_stamp(edition: str, seconds: float, full: bool, started: float) -> None:
    stamp_path(edition).write_text(json.dumps({"seconds": round(seconds, 1), "full": full, "toc": toc_key(),
                                               "started": started, "finished": time.time()}), encoding="utf-8")


def english_job(full: bool = False, log: Path | None = None) -> Callable[[], float]:
    """Start the English edition's build (see build())."""
    if built_with_other_toc("en"):
        # another table of contents: start afresh so no page of the old one stays behind
        shutil.rmtree(HTML, ignore_errors=True)
        shutil.rmtree(BUILD / ".doctrees", ignore_errors=True)
    # Sphinx copies _static only when some page is out of date: a changed script or style alone
    # needs a full build, or the old copy stays in _build/html
    full = full or static_changed(HTML) or bib_changed("en")
    cmd = [jupyter_book_exe(), *JB_ARGS] + (["--all"] if full else [])
    if toc_path() != ROOT / "_toc.yml":
        cmd += ["--toc", str(toc_path())]
    started = time.time()
    job = start_jupyter_book(cmd, log or BUILD / "build.log")

    def finish() -> float:
        seconds = finish_jupyter_book(job)
        write_stamp("en", seconds, full, started)
        return seconds
    return finish


def chinese_config(locale_dir: Path = ZH_BUILD / "locales") -> str:
    """_config.yml for the Chinese edition: the same book with language zh_CN and the catalogues of
    `locale_dir` (<locale_dir>/zh_CN/LC_MESSAGES/<page>.po). It lives in _build/zh, so its local extensions'
    folders are made absolute."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config["title"] = ZH_TITLE
    config["author"] = ZH_AUTHOR
    config.setdefault("html", {})["extra_footer"] = ZH_FOOTER
    sphinx = config.setdefault("sphinx", {})
    sphinx["local_extensions"] = {name: str((ROOT / folder).resolve())
                                  for name, folder in (sphinx.get("local_extensions") or {}).items()}
    sphinx.setdefault("config", {}).update({"language": ZH_LOCALE, "locale_dirs": [str(locale_dir)]})
    sphinx["config"].setdefault("html_theme_options", {})["search_bar_text"] = ZH_SEARCH
    sphinx["config"].update(ZH_TOGGLE_HINTS)
    return "# written by scripts/build_book.py from _config.yml: the Chinese edition\n" + yaml.safe_dump(
        config, allow_unicode=True, sort_keys=False)


def write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def copy_catalogues() -> None:
    """locales/zh_CN/LC_MESSAGES/**/*.po -> _build/zh/locales/... (a changed .po only, as a new file: being newer
    than its .mo, Sphinx compiles that again and reads that page again); a copy whose .po is gone goes too, with
    its .mo."""
    src_root = LOCALES / ZH_LOCALE / "LC_MESSAGES"
    dst_root = ZH_BUILD / "locales" / ZH_LOCALE / "LC_MESSAGES"
    wanted = set()
    for po in src_root.rglob("*.po"):
        rel = po.relative_to(src_root)
        wanted.add(rel)
        copy = dst_root / rel
        if not copy.is_file() or copy.read_bytes() != po.read_bytes():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(po, copy)
    if dst_root.is_dir():
        for old in list(dst_root.rglob("*.po")):
            if old.relative_to(dst_root) not in wanted:
                old.unlink()
                old.with_suffix(".mo").unlink(missing_ok=True)


def _link(src: Path, dst: Path) -> None:
    """dst becomes a hard link to src (a copy where the file system has no hard links)."""
    tmp = dst.with_name(dst.name + ".tinytf-link")
    tmp.unlink(missing_ok=True)
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copy2(src, tmp)
    os.replace(tmp, dst)


def share_large_static(out: Path) -> None:
    """A large file of the Chinese build's _static (SHARED_STATIC: the ONNX models, onnxruntime's wasm, MathJax,
    plotly.js) that is identical to the English edition's becomes a hard link to it."""
    for f in (out / "_static").rglob("*"):
        rel = f.relative_to(out / "_static").as_posix()
        en = HTML / "_static" / rel
        if (rel.startswith(SHARED_STATIC) and f.is_file() and not f.is_symlink() and en.is_file()
                and not os.path.samefile(f, en) and f.stat().st_size == en.stat().st_size
                and filecmp.cmp(f, en, shallow=False)):
            _link(en, f)


def publish(out: Path, dest: Path) -> None:
    """Mirror Sphinx's output folder into dest with hard links (only what changed; files gone from out go)."""
    seen = set()
    for f in out.rglob("*"):
        if f.is_file():
            rel = f.relative_to(out)
            seen.add(rel)
            d = dest / rel
            if not (d.is_file() and os.path.samefile(f, d)):
                _link(f, d)
    if dest.is_dir():
        for d in sorted(dest.rglob("*"), reverse=True):
            if d.is_file() and d.relative_to(dest) not in seen:
                d.unlink()
            elif d.is_dir() and not any(d.iterdir()):
                d.rmdir()


def chinese_job(full: bool = False, log: Path | None = None) -> Callable[[], float]:
    """Start the Chinese edition's build (see build()); its finishing step links its large static files to the
    English edition's and publishes it into _build/html/zh, so it runs after the English build has finished."""
    if built_with_other_toc("zh"):
        shutil.rmtree(ZH_HTML, ignore_errors=True)
        shutil.rmtree(ZH_BUILD / "_build", ignore_errors=True)
    write_if_changed(ZH_BUILD / "_config.yml", chinese_config())
    copy_catalogues()
    full = full or static_changed(ZH_OUT) or bib_changed("zh")
    cmd = [jupyter_book_exe(), *JB_ARGS, "--config", str(ZH_BUILD / "_config.yml"),
           "--path-output", str(ZH_BUILD)] + (["--all"] if full else [])
    if toc_path() != ROOT / "_toc.yml":
        cmd += ["--toc", str(toc_path())]
    started = time.time()
    job = start_jupyter_book(cmd, log or BUILD / "build-zh.log")

    def finish() -> float:
        seconds = finish_jupyter_book(job)
        share_large_static(ZH_OUT)
        publish(ZH_OUT, ZH_HTML)
        write_stamp("zh", seconds, full, started)
        return seconds
    return finish


def build(full: bool = False, log: Path | None = None, only_stale: bool = False) -> float:
    """Build the editions of editions() (with only_stale, those older than their sources) and return the seconds
    it took. The two builds run at the same time (each is one Sphinx process, so on two cores the wall time is about
    the longer of the two instead of their sum); the Chinese edition is published into
    _build/html/zh after the English one has finished. Raise RuntimeError (with the build's output) when one
    fails (after both have ended)."""
    write_static_assets()  # before static_changed(): a new model or runtime file is part of this build
    start = time.perf_counter()
    finishers = []
    for edition in editions():
        if only_stale and not full and not edition_is_stale(edition):
            continue
        if edition == "en":
            finishers.append(english_job(full, log))
        else:
            finishers.append(chinese_job(full, log.with_name(log.stem + "-zh" + log.suffix) if log else None))
    errors = []
    for finish in finishers:  # English first: the Chinese edition's finishing step links to its files
        try:
            finish()
        except RuntimeError as err:
            errors.append(str(err))
    if errors:
        raise RuntimeError("\n\n".join(errors))
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--if-stale", action="store_true", help="skip when the build is newer than every source")
    parser.add_argument("--all", action="store_true", help="rebuild every page")
    args = parser.parse_args(argv)
    where = " and ".join(str(html_dir(e).relative_to(ROOT)) for e in editions())
    if args.if_stale and not args.all and not is_stale():
        print(f"book is up to date: {where}")
        return 0
    try:
        seconds = build(full=args.all, only_stale=args.if_stale)
    except RuntimeError as err:
        print(err, file=sys.stderr)
        return 1
    print(f"built {where} in {seconds:.1f} s (logs: _build/build.log, _build/build-zh.log)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
