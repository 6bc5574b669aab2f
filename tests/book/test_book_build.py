"""The book frame: configuration, the HTML build (warnings are errors) and what it contains,
checked without a browser. tests/browser/test_book_browser.py looks at the same pages in Chromium."""
from __future__ import annotations

import re
import shlex
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
import yaml

from conftest import BOOK_HTML, ROOT, doc_source, toc_docnames

import tinytf.book
from tinytf.viz import render

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
SPHINX = CONFIG["sphinx"]["config"]
DOCS = toc_docnames()
NOTEBOOK_DOCS = [d for d in DOCS if (ROOT / f"{d}.ipynb").is_file()]
WIDGET_NOTE = "live panel"


class AssetParser(HTMLParser):
    """Collects what a page loads: script src, stylesheet/preload/icon href, img/iframe/source src."""

    def __init__(self):
        super().__init__()
        self.loads: list[str] = []
        self.scripts: list[dict] = []
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts.append(a)
            if a.get("src"):
                self.loads.append(a["src"])
        elif tag == "link" and a.get("href") and set((a.get("rel") or "").split()) & {
                "stylesheet", "preload", "icon", "modulepreload", "prefetch", "manifest"}:
            self.loads.append(a["href"])
        elif tag in ("img", "iframe", "source", "embed", "audio", "video") and a.get("src"):
            self.loads.append(a["src"])
        elif tag == "a" and a.get("href"):
            self.links.append(a["href"])


def parse(path: Path) -> AssetParser:
    parser = AssetParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def page_path(docname: str) -> Path:
    return BOOK_HTML / f"{docname}.html"


def is_remote(url: str) -> bool:
    return bool(re.match(r"^(?:[a-z][a-z0-9+.-]*:)?//", url, re.I)) and not url.startswith("data:")


# --------------------------------------------------------------------------- configuration
def test_repository_url_is_the_one_the_setup_cell_installs_from():
    assert CONFIG["repository"]["url"] == tinytf.book.REPO_URL
    assert tinytf.book.REPO_URL in tinytf.book.SETUP_CELL


def test_setup_cell_is_a_no_op_when_tinytf_is_importable():
    """Locally and in CI the set-up cell must not install anything."""
    calls = []

    class FakeIPython:
        def run_line_magic(self, name, line):
            calls.append((name, line))

    from IPython.core.inputtransformer2 import TransformerManager

    code = TransformerManager().transform_cell(tinytf.book.SETUP_CELL)
    assert "run_line_magic('pip'" in code  # Colab path: %pip install ... when the import fails
    exec(compile(code, "<setup cell>", "exec"), {"get_ipython": lambda: FakeIPython()})
    assert calls == []


def test_notebooks_are_never_executed_by_the_build():
    assert CONFIG["execute"]["execute_notebooks"] in ("off", False)


def test_launch_buttons_binder_and_colab():
    buttons = CONFIG["launch_buttons"]
    assert buttons["binderhub_url"] == "https://mybinder.org"
    assert buttons["colab_url"] == "https://colab.research.google.com"
    assert buttons.get("thebe") is False


def test_widget_views_are_never_rendered_and_no_widget_manager_is_loaded():
    assert SPHINX["nb_ipywidgets_js"] == {}
    overrides = {(b, m): p for b, m, p in SPHINX["nb_mime_priority_overrides"]}
    assert overrides[("html", "application/vnd.jupyter.widget-view+json")] is None
    assert "sphinx_thebe" not in SPHINX["extensions"]


def test_requirements_pin_the_cpu_torch():
    for name in ("requirements.txt", "requirements.lock"):
        lines = [l.strip() for l in (ROOT / name).read_text().splitlines()]
        assert "torch==2.13.0" in lines, f"{name}: torch must stay pinned (a loose torch pulls a multi-GB CUDA build)"


def _requirement_name(line: str) -> str:
    return re.split(r"[<>=!~\[; ]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_the_lock_pins_every_package_exactly_and_covers_the_top_level():
    """requirements.lock (scripts/lock.sh) is what make, CI and Binder install: every line name==version,
    and every package of requirements.txt is in it (a package added to requirements.txt without `make lock`
    would otherwise go unpinned)."""
    lock = [l.strip() for l in (ROOT / "requirements.lock").read_text().splitlines() if l.strip() and not l.startswith("#")]
    loose = [l for l in lock if not re.fullmatch(r"[A-Za-z0-9_.\-]+==[A-Za-z0-9_.+\-]+", l)]
    assert not loose, f"requirements.lock lines that are not exact pins: {loose}"
    pinned = {_requirement_name(l) for l in lock}
    top = [l for l in (ROOT / "requirements.txt").read_text().splitlines() if l.strip() and not l.startswith("#")]
    missing = [l for l in top if _requirement_name(l) not in pinned]
    assert not missing, f"in requirements.txt but not in requirements.lock (run `make lock`): {missing}"


def test_make_ci_and_binder_install_the_lock():
    makefile = (ROOT / "Makefile").read_text()
    assert "install -q -r requirements.lock" in makefile and "--no-deps -e ." in makefile
    binder = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    assert "-r ../requirements.lock" in binder
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-3.11"


def test_make_test_runs_nbval_under_a_second_kernel_selection():
    makefile = (ROOT / "Makefile").read_text()
    assert "ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE" in makefile
    recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "test-other-kernels" in recipe


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    blocks = re.findall(r"^```(?:bash|sh)\n(.*?)^```", readme, re.M | re.S)
    readme_commands = [l.split("#")[0].strip() for b in blocks for l in b.splitlines()]
    assert "make test" in readme_commands and "make book" in readme_commands, "README must show both commands"
    assert "set -euo pipefail" in ci
    commands = [shlex.split(l) for l in ci.splitlines() if l.strip() and not l.lstrip().startswith("#")]
    assert ["make", "test"] in commands, ".ci/run must run exactly the README's test command"


# --------------------------------------------------------------------------- the build
def test_book_builds_with_warnings_as_errors(book_html):
    """`make book` / the fixture ran `jupyter-book build . -W -n --keep-going`; it passed."""
    log = (ROOT / "_build" / "build.log")
    assert (book_html / "index.html").is_file()
    if log.is_file():
        text = log.read_text(encoding="utf-8")
        assert "WARNING" not in text, text[-3000:]


def test_no_page_shows_a_path_of_the_build_machine(book_html):
    """An absolute path (a default value in the API page, a traceback, a warning) says nothing to a reader and
    differs on every machine."""
    needles = {str(ROOT), "PosixPath(", "/site-packages/", "/root/", "/home/"}
    bad = []
    for page in sorted(book_html.rglob("*.html")):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        text = page.read_text(encoding="utf-8")
        bad += [f"{page.relative_to(book_html)}: {n}" for n in needles if n in text]
    assert not bad, bad


def test_every_toc_page_was_built(book_html):
    missing = [d for d in DOCS if not page_path(d).is_file()]
    assert not missing, f"pages not built: {missing}"


def test_no_page_loads_anything_from_another_host(book_html):
    bad = {}
    for page in sorted(book_html.rglob("*.html")):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        remote = [u for u in parse(page).loads if is_remote(u)]
        if remote:
            bad[str(page.relative_to(book_html))] = remote
    assert not bad, f"remote scripts/styles/fonts/images: {bad}"


def test_no_remote_reference_in_the_css_we_serve(book_html):
    """Stylesheets could still pull fonts or @imports from a CDN."""
    bad = []
    for css in (book_html / "_static").rglob("*.css"):
        text = css.read_text(encoding="utf-8", errors="replace")
        for hit in re.finditer(r"""(?:url\(\s*["']?|@import\s+["'])(?:https?:)?//[^)"']+""", text):
            bad.append(f"{css.relative_to(book_html)}: {hit.group(0)}")
    assert not bad, bad


def test_local_assets_exist(book_html):
    """Every local script/style/image a page asks for is in the build (no 404 offline)."""
    missing = []
    for docname in DOCS:
        page = page_path(docname)
        for url in parse(page).loads:
            if is_remote(url) or url.startswith("data:"):
                continue
            target = (page.parent / url.split("?")[0].split("#")[0]).resolve()
            if not target.is_file():
                missing.append(f"{docname}: {url}")
    assert not missing, missing


def test_plotly_js_is_served_locally_and_only_where_needed(book_html):
    plotly_js = book_html / "_static" / "plotly.min.js"
    assert plotly_js.is_file() and plotly_js.stat().st_size > 1_000_000
    for docname in DOCS:
        html = page_path(docname).read_text(encoding="utf-8")
        loads_plotly = any(u.split("?")[0].endswith("_static/plotly.min.js") for u in parse(page_path(docname)).loads)
        has_figure = "plotly-graph-div" in html
        assert loads_plotly == has_figure, f"{docname}: figure={has_figure} but plotly.js loaded={loads_plotly}"


def test_math_uses_the_local_mathjax(book_html):
    # startup.js loads the components named in mathjax3_config.loader (_config.yml) from the same folder
    for part in ("startup.js", "core.js", "input/tex.js", "output/chtml.js", "a11y/assistive-mml.js"):
        assert (book_html / "_static" / "mathjax" / part).is_file(), part
    assert list((book_html / "_static" / "mathjax" / "output" / "chtml" / "fonts").rglob("*.woff"))
    for docname in DOCS:
        parser = parse(page_path(docname))
        mathjax = [u for u in parser.loads if "mathjax" in u.lower() or "tex-" in u]
        for url in mathjax:
            assert not is_remote(url) and "_static/mathjax/startup.js" in url, f"{docname}: {url}"


def test_no_thebe_requirejs_or_widget_manager(book_html):
    for docname in DOCS:
        html = page_path(docname).read_text(encoding="utf-8")
        for needle in ("THEBE_JS_URL", "require.min.js", "embed-amd.js", "html-manager",
                       'type="application/vnd.jupyter.widget-view+json"',
                       'type="application/vnd.jupyter.widget-state+json"'):
            assert needle not in html, f"{docname} contains {needle!r}"


@pytest.mark.parametrize("docname", NOTEBOOK_DOCS)
def test_chapter_page_has_binder_and_colab_buttons(book_html, docname):
    links = parse(page_path(docname)).links
    repo = tinytf.book.REPO_URL.removeprefix("https://github.com/")
    binder = f"https://mybinder.org/v2/gh/{repo}/main?urlpath=lab/tree/{docname}.ipynb"
    colab = f"https://colab.research.google.com/github/{repo}/blob/main/{docname}.ipynb"
    assert binder in links, f"{docname}: no Binder button ({binder})"
    assert colab in links, f"{docname}: no Colab button ({colab})"


@pytest.mark.parametrize("docname", NOTEBOOK_DOCS)
def test_every_figure_and_widget_note_of_the_notebook_is_on_the_page(book_html, docname):
    """Each figure (stored once, as plotly JSON) reaches the HTML page as the HTML of
    tinytf.viz.render.book_html (div, ids numbered per page, and the script drawing that JSON); each widget's
    static note reaches it too."""
    nb = nbformat.read(doc_source(docname), as_version=4)
    html = page_path(docname).read_text(encoding="utf-8")
    seen = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "application/vnd.plotly.v1+json" in data:
                figure = render.book_html(data["application/vnd.plotly.v1+json"], seen)
                assert figure in html, f"{docname}: a plotly figure vanished ({figure[:60]}...)"
            if "application/vnd.jupyter.widget-view+json" in data:
                note = data.get("text/html", "").strip()
                assert note and note in html, f"{docname}: a widget's static note is not on the page"


# --------------------------------------------------------------------------- nbval sanitizing
def _sanitize(text: str) -> str:
    from nbval.plugin import get_sanitize_patterns

    patterns = get_sanitize_patterns((ROOT / "tests" / "nbval_sanitize.cfg").read_text(encoding="utf-8"))
    for regex, replace in patterns:
        text = re.sub(regex, replace, text)
    return text


def test_sanitizer_masks_the_animation_ids():
    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt
    from matplotlib import animation

    def jshtml():
        fig, ax = plt.subplots(figsize=(1, 1))
        html = animation.FuncAnimation(fig, lambda i: [], frames=2).to_jshtml()
        plt.close(fig)
        return html

    first, second = jshtml(), jshtml()
    assert first != second  # the ids differ by nature...
    assert _sanitize(first) == _sanitize(second)  # ...and only the ids


def test_sanitizer_never_touches_the_parameter_table_or_causality_check():
    import tinytf

    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig())
    table = tinytf.format_table(tinytf.parameter_table(model))
    report = tinytf.causality_check(model, tinytf.encode("hello world")).report()
    assert _sanitize(table) == table
    assert _sanitize(report) == report


@pytest.mark.parametrize("name", NOTEBOOK_DOCS)
def test_sanitizer_leaves_parameter_tables_and_causality_outputs_of_chapters_alone(name):
    nb = nbformat.read(doc_source(name), as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not re.search(r"parameter_table|causality_(check|sweep)|sweep_report",
                                                       cell.source):
            continue
        for out in cell.outputs:
            text = out.get("text") or out.get("data", {}).get("text/plain", "")
            assert _sanitize(text) == text, f"{name} cell {i}: nbval_sanitize.cfg would mask part of this output"


EXACT_OUTPUTS = (r"parameter_table|count_parameters|format_table|causality_(check|sweep)|sweep_report"
                 r"|print\([^\n]*\.shape\b|print\(\s*(ids|token_ids|tokens)\b")


@pytest.mark.parametrize("name", NOTEBOOK_DOCS)
def test_counted_outputs_are_never_tagged_measured(name):
    """A cell tagged `measured` has its numbers compared within one unit of the last digit: never for the
    parameter table, the causality check, shapes or token ids, which must stay exact."""
    nb = nbformat.read(doc_source(name), as_version=4)
    for i, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "code" and "measured" in tags:
            assert not re.search(EXACT_OUTPUTS, cell.source), (
                f"{name} cell {i} is tagged `measured` but prints something counted (parameters, the causality "
                "check, shapes or token ids): split the measurement into its own cell")


def glossary_rows() -> list[list[str]]:
    text = (ROOT / "chapters" / "glossary.md").read_text(encoding="utf-8")
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| English") and not line.startswith("| ---")]


def test_glossary_terms_are_unique_and_link_to_where_they_are_taught():
    """One row per term; the last column links to the section that teaches it ({ref} or {doc}), or is a dash for
    a term the book mentions but does not teach. A bare chapter number would not take the reader there."""
    rows = glossary_rows()
    terms = [r[0] for r in rows]
    assert len(terms) == len(set(terms)), sorted(t for t in terms if terms.count(t) > 1)
    bare = [r[0] for r in rows if r[-1] != "–" and "{ref}" not in r[-1] and "{doc}" not in r[-1]]
    assert not bare, f"glossary rows without a link to where they are taught: {bare}"


def test_every_citation_link_opens_the_entry_it_names(book_html):
    """A citation's link points into the bibliography by an id numbered over all its entries; its visible text
    (``Kaplan et al., 2020``, ``Vaswani et al. [2017]``) names the first author. Every link whose text starts with
    a name must open an entry that contains that name (an incremental build once left a page's 18 citations
    opening the wrong papers after an entry was added)."""
    import html as html_lib

    bib = (book_html / "chapters" / "bibliography.html").read_text(encoding="utf-8")
    entries = {m.group(1): html_lib.unescape(re.sub(r"<[^>]+>", " ", m.group(2)))
               for m in re.finditer(r'<div class="citation" id="(id\d+)"[^>]*>(.*?)</div>', bib, re.S)}
    assert len(entries) > 30
    checked, wrong = 0, []
    pages = sorted((book_html / "chapters").glob("*.html")) + [book_html / "intro.html"]
    for page in pages:
        if page.name == "bibliography.html":
            continue
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r'<a class="reference internal" href="(?:chapters/)?bibliography\.html#(id\d+)"[^>]*>(.*?)</a>',
                             text, re.S):
            shown = html_lib.unescape(re.sub(r"<[^>]+>", "", m.group(2))).strip()
            name = re.match(r"([A-Z][\w'’\-]+)", shown)
            if not name:
                continue  # {cite:t}'s year-only link: its name is outside the link
            checked += 1
            if name.group(1) not in entries.get(m.group(1), ""):
                wrong.append(f"{page.name}: {shown!r} opens {entries.get(m.group(1), 'no entry')[:80]!r}")
    assert checked > 500, checked
    assert not wrong, "\n".join(wrong[:10])
