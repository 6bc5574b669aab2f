"""Sphinx extension (loaded through _config.yml -> sphinx.local_extensions) that keeps the
HTML book self-contained:

* copies plotly.js into ``_static/plotly.min.js`` of the build and adds it only to pages that draw
  a plotly figure. The file is plotly.js's "cartesian" partial bundle from npm
  (``node_modules/plotly.js-cartesian-dist-min``, ``npm ci`` installs it from package-lock.json:
  1.5 MB with every trace type the book draws: heatmap, scatter, bar), which must be the same
  plotly.js version as the one the ``plotly`` Python package ships; without ``node_modules`` the
  build falls back to that package's full bundle (4.8 MB; tests/browser/test_a11y_book.py's page-weight
  check then fails);
* serves the browser's figure core, ``tinytf/viz/figure_core.js`` (the package's file, which the live
  widget in JupyterLab runs too), as ``_static/tinytf-core.js`` on every page, before the book's own
  ``_static/*.js`` (it draws every figure; ``tinytf-panel.js`` uses it);
* copies the MathJax 3 components the book loads from the ``sphinx-mathjax-offline`` package into
  ``_static/mathjax/``: ``startup.js`` (``mathjax_path`` in _config.yml) loads ``core``, the TeX
  input, the CommonHTML output and the assistive MathML for screen readers
  (``mathjax3_config.loader``): 0.65 MB where the combined ``tex-chtml.js`` is 1.2 MB, most of it
  the context menu;
* replaces the theme's Font Awesome script (1.5 MB: every icon of Font Awesome) by a small one
  with only the icons the built pages name (``slim_fontawesome``): same markup, same classes;
* draws every figure from the one representation the notebooks store, the ``application/vnd.plotly.v1+json``
  part of ``tinytf.viz.show``'s output: a myst-nb mime render plugin turns it into the HTML of
  ``tinytf.viz.render.book_html`` (a div and a script drawing it with the page's plotly.js; ids numbered per
  page), and ``nb_mime_priority_overrides`` in _config.yml makes the html builder pick that part;
* leaves out the ipywidgets state that myst-nb would embed in a page (a notebook saved with
  widget state carries hundreds of kB of it): with ``nb_ipywidgets_js: {}`` no widget manager
  is loaded, so nothing could ever read it;
* writes ``index.html`` as a small page of its own (language, title, a link) that forwards to the
  landing page, instead of the bare ``<meta http-equiv="Refresh">`` line sphinx-external-toc writes;
* fails the build when a page would load a script or stylesheet from another host;
* in another language's edition (``language: zh_CN``): translates the words of every figure and of the static
  panel with the figure catalogue, ``locales/<language>/LC_MESSAGES/figures.po`` (``scripts/figure_strings.py``),
  as it writes their HTML, translates the panel's figure templates in the build's ``_static/models/``, and gives
  every page the figure core's, the panel's and the lab's words as ``window.tinytfStrings``, and translates the
  raw HTML of the pages' markdown (a lab's data and note, the toggles' ``<summary>`` titles). The notebooks are
  not changed, and the English edition's HTML is what it was.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

PLOTLY_JS = "plotly.min.js"
CORE_JS = "tinytf-core.js"  # the build's name of tinytf/viz/figure_core.js
PLOTLY_JSON = "application/vnd.plotly.v1+json"
# a figure div drawn by plotly (tinytf.viz.show and plotly's own to_html both use this class)
PLOTLY_MARKER = "plotly-graph-div"
# MathJax files that tex-chtml.js loads (the other combined bundles and the SVG fonts are left out)
MATHJAX_KEEP = ("startup.js", "core.js", "input/tex.js", "input/tex", "output/chtml.js", "output/chtml",
                "a11y/assistive-mml.js")
FONTAWESOME_JS = Path("scripts") / "fontawesome.js"
# icons that the theme's scripts put on a page after it loaded (not in the HTML)
FONTAWESOME_DYNAMIC = ("xmark", "compress", "expand", "sun", "moon", "circle-half-stroke")
REMOTE_ASSET = re.compile(r"""<(?:script|link)\b[^>]*\b(?:src|href)=["'](?:https?:)?//""", re.I)


ROOT = Path(__file__).resolve().parents[1]
_catalogue = None  # the figure catalogue of this build's language (None: English, nothing translated)
CORE_SOURCE = ROOT / "tinytf" / "viz" / "figure_core.js"
PARTIAL_BUNDLE = ROOT / "node_modules" / "plotly.js-cartesian-dist-min"


def plotly_js_source() -> Path:
    """The plotly.js the book serves: the partial bundle when npm installed it, else plotly's full one."""
    import json

    import plotly
    from plotly.offline import get_plotlyjs_version

    partial = PARTIAL_BUNDLE / "plotly-cartesian.min.js"
    if partial.is_file():
        version = json.loads((PARTIAL_BUNDLE / "package.json").read_text(encoding="utf-8"))["version"]
        if version != get_plotlyjs_version():
            raise ExtensionError(
                f"book_offline: {PARTIAL_BUNDLE.name} {version} differs from the plotly.js "
                f"{get_plotlyjs_version()} of the plotly Python package: set it in package.json and run npm install")
        return partial
    path = Path(plotly.__file__).parent / "package_data" / PLOTLY_JS
    # said aloud: the full bundle is about 4.8 MB against the partial one's 1.4 MB, and the first load of a
    # figure page then breaks the book's page-weight budget (tests/browser/test_a11y_book.py)
    print(f"warning: book_offline: {partial} not found (run `npm ci`); serving plotly's full bundle "
          f"{path.name} instead", file=sys.stderr)
    if not path.is_file():
        raise ExtensionError(f"book_offline: {path} not found; is plotly installed?")
    return path


def mathjax_source() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or not spec.submodule_search_locations:
        raise ExtensionError("book_offline: the sphinx-mathjax-offline package is missing "
                             "(pip install -r requirements.txt)")
    return Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax"


class PlotlyJsonPlugin:
    """A myst-nb mime render plugin (the ``MimeRenderPlugin`` protocol): plotly JSON -> the figure's HTML."""

    mime_priority_overrides = ()  # _config.yml's nb_mime_priority_overrides rank PLOTLY_JSON first

    @staticmethod
    def handle_mime(renderer, data, inline):
        from docutils import nodes

        if (_catalogue is not None and data.mime_type == "text/html" and not inline
                and "tinytf-static-panel" in data.string):
            return [nodes.raw(text=_catalogue.panel_html(data.string), format="html", classes=["output", "text_html"])]
        if data.mime_type != PLOTLY_JSON or inline:
            return None
        from tinytf.viz.render import book_html

        content = data.content if isinstance(data.content, dict) else json.loads(data.string)
        # one renderer parses one notebook: it numbers the repeats of a figure on that page
        seen = renderer.__dict__.setdefault("_tinytf_figure_ids", {})
        translate = _catalogue.figure if _catalogue is not None else None
        return [nodes.raw(text=book_html(content, seen, translate), format="html", classes=["output", "text_html"])]


def register_plotly_plugin() -> None:
    """myst-nb collects mime render plugins from entry points in the cached
    ``load_mime_renders()``; add ours to that list once."""
    from myst_nb.core import render

    plugins = render.load_mime_renders()
    if not any(p is PlotlyJsonPlugin for p in plugins):
        plugins.append(PlotlyJsonPlugin)


def add_plotly_where_needed(app: Sphinx, pagename, templatename, context, doctree) -> None:
    body = context.get("body", "")
    if PLOTLY_MARKER in body:
        # called inside html-page-context, add_js_file affects this page only
        app.add_js_file(PLOTLY_JS, priority=200)


def drop_unusable_widget_state(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """Runs before myst-nb's own html-page-context handler, which adds the per-page scripts."""
    if app.config.nb_ipywidgets_js:
        return  # a widget manager is configured: it needs the state
    nb_metadata = getattr(app.env, "nb_metadata", {})
    nb_metadata.get(pagename, {}).get("js_files", {}).pop("ipywidgets_state", None)


def check_no_remote_assets(app: Sphinx, pagename, templatename, context, doctree) -> None:
    body = context.get("body", "")
    hit = REMOTE_ASSET.search(body)
    if hit:
        raise ExtensionError(f"book_offline: page {pagename!r} would load a remote asset: "
                             f"{body[hit.start():hit.start() + 160]!r}")


def copy_core(app: Sphinx) -> None:
    """The figure core goes into the build before any page is written (so that its script tag gets
    Sphinx's ``?v=`` checksum, and a reader's browser does not keep an old copy)."""
    if app.builder.format != "html":
        return
    core = Path(app.outdir) / "_static" / CORE_JS
    if not core.exists() or core.read_bytes() != CORE_SOURCE.read_bytes():
        core.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CORE_SOURCE, core)


def copy_assets(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    src = plotly_js_source()
    dst = static / PLOTLY_JS
    if not dst.exists() or dst.stat().st_size != src.stat().st_size:
        shutil.copyfile(src, dst)
    mj_src, mj_dst = mathjax_source(), static / "mathjax"
    for rel in MATHJAX_KEEP:
        s, d = mj_src / rel, mj_dst / rel
        if s.is_dir():
            shutil.copytree(s, d, dirs_exist_ok=True)
        elif not d.exists():
            d.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(s, d)
    slim_fontawesome(Path(app.outdir))


FA_ICON = r'(?<![\w"-])(?:"{name}"|{name}):\[(\d+),(\d+),\[[^\]]*\],"[0-9a-f]+","([^"]+)"\]'  # key quoted or not
FA_CSS = (".svg-inline--fa{display:inline-block;height:1em;overflow:visible;vertical-align:-.125em;box-sizing:content-box}"
          ".svg-inline--fa.fa-lg,.fa-lg{font-size:1.25em;line-height:.05em;vertical-align:-.2em}"
          ".fa-fw{text-align:center;width:1.25em}.fa-xs{font-size:.75em}.fa-sm{font-size:.875em}.fa-2x{font-size:2em}")
FA_SCRIPT = """// tinytf book: the Font Awesome icons its pages use (scripts/book_offline.py wrote this file in place
// of the theme's 1.5 MB bundle of every icon). Each <i class="fa-solid fa-NAME"> becomes the same
// inline SVG that Font Awesome draws (classes and attributes kept, aria-hidden).
(function () {
  "use strict";
  var ICONS = %(icons)s;
  var NS = "http://www.w3.org/2000/svg";
  var style = document.createElement("style");
  style.textContent = %(css)s;
  document.head.appendChild(style);
  function swap(root) {
    if (!root.querySelectorAll) { return; }
    root.querySelectorAll("i[class*='fa-'], span[class*='fa-']").forEach(function (el) {
      var name = null;
      el.classList.forEach(function (c) { if (c.indexOf("fa-") === 0 && ICONS[c.slice(3)]) { name = c.slice(3); } });
      if (!name || el.children.length) { return; }
      var d = ICONS[name], svg = document.createElementNS(NS, "svg"), path = document.createElementNS(NS, "path");
      Array.prototype.forEach.call(el.attributes, function (a) { svg.setAttribute(a.name, a.value); });
      svg.setAttribute("class", el.getAttribute("class") + " svg-inline--fa");
      svg.setAttribute("viewBox", "0 0 " + d[0] + " " + d[1]);
      svg.setAttribute("aria-hidden", "true");
      svg.setAttribute("focusable", "false");
      path.setAttribute("fill", "currentColor");
      path.setAttribute("d", d[2]);
      svg.appendChild(path);
      el.parentNode.replaceChild(svg, el);
    });
  }
  function start() {
    swap(document);
    new MutationObserver(function (records) {
      records.forEach(function (r) { r.addedNodes.forEach(function (n) { if (n.nodeType === 1) { swap(n.parentNode || n); } }); });
    }).observe(document.body, { childList: true, subtree: true });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
"""


def slim_fontawesome(outdir: Path) -> None:
    """Replace the theme's Font Awesome bundle by the icons the built pages use."""
    import json

    import pydata_sphinx_theme

    path = outdir / "_static" / FONTAWESOME_JS
    source = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static" / FONTAWESOME_JS
    if not path.is_file() or not source.is_file():
        return
    full = source.read_text(encoding="utf-8")  # the theme's bundle (the built copy may already be ours)
    names = set(FONTAWESOME_DYNAMIC)
    for page in outdir.rglob("*.html"):
        names.update(re.findall(r"\bfa-([a-z0-9-]+)", page.read_text(encoding="utf-8", errors="replace")))
    icons = {}
    for name in sorted(names):
        hit = re.search(FA_ICON.format(name=re.escape(name)), full)
        if hit:
            icons[name] = [int(hit.group(1)), int(hit.group(2)), hit.group(3)]
    if not icons:
        raise ExtensionError(f"book_offline: no icon found in {path}; has the theme's Font Awesome bundle changed?")
    path.write_text(FA_SCRIPT % {"icons": json.dumps(icons, separators=(",", ":")), "css": json.dumps(FA_CSS)},
                    encoding="utf-8")
    for extra in (path.with_name(path.name + ".map"),):
        extra.unlink(missing_ok=True)


INDEX_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="0; url={target}">
<link rel="canonical" href="{target}">
<title>{title}</title>
</head>
<body>
<main>
<h1>{title}</h1>
<p>The book starts at <a href="{target}">{link}</a>.</p>
</main>
</body>
</html>
"""


def write_index(app: Sphinx, exception) -> None:
    """index.html: a proper page (lang, title, a landmark and a link) that forwards to the root page."""
    import html

    if exception is not None or app.builder.format != "html" or app.builder.name == "dirhtml":
        return
    path = Path(app.outdir) / "index.html"
    root = app.config.master_doc
    if root == "index":
        return
    if path.is_file() and "http-equiv" not in path.read_text(encoding="utf-8", errors="replace")[:400].lower():
        return  # a real page called index
    # Jupyter Book puts the book's title in html_title (its `project` stays "Project name not set"); the link names
    # the root page by its title (both as the edition's language has them)
    title = html.escape(str(app.config.html_title or app.config.project or "The book"))
    root_title = app.env.titles.get(root)
    link = html.escape(root_title.astext() if root_title is not None else f"{root}.html")
    path.write_text(INDEX_HTML.format(target=f"{root}.html", title=title, link=link), encoding="utf-8")


def lazy_assets_off_pages(app: Sphinx, config) -> None:
    """Jupyter Book adds every ``*.js`` under ``_static`` (recursively) to every page. The in-browser
    model's runtime (``_static/ort/``, written by scripts/static_assets.py) is loaded by
    ``tinytf-panel.js`` on a reader's first use of a panel, never with the page."""
    config.html_js_files = [f for f in config.html_js_files
                            if not str(f[0] if isinstance(f, (tuple, list)) else f).startswith(LAZY_DIRS)]


LAZY_DIRS = ("ort/", "models/")


def figure_strings():
    """scripts/figure_strings.py (this file's neighbour: Sphinx puts scripts/ on sys.path, a test may not)."""
    import importlib.util
    import sys

    if "figure_strings" not in sys.modules:
        spec = importlib.util.spec_from_file_location("figure_strings", Path(__file__).with_name("figure_strings.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules["figure_strings"] = module
        spec.loader.exec_module(module)
    return sys.modules["figure_strings"]


def load_catalogue(app: Sphinx, config) -> None:
    """An edition in another language than English translates its figures: the catalogue of that language, from
    the first of ``locale_dirs`` that has one."""
    global _catalogue
    lang = str(config.language or "en")
    _catalogue = None
    if lang.startswith("en"):
        return
    fs = figure_strings()
    for folder in config.locale_dirs or []:
        path = Path(app.srcdir) / folder / lang / "LC_MESSAGES" / "figures.po"
        if path.is_file():
            _catalogue = fs.Catalogue.load(lang, path)
            return


def add_ui_strings(app: Sphinx) -> None:
    """The words of the figure core and the panel, translated, on every page (before the core runs)."""
    if _catalogue is None or app.builder.format != "html":
        return
    app.add_js_file(None, body=ui_strings_js(_catalogue), priority=390)


def ui_strings_js(catalogue) -> str:
    """The inline script that gives a page the figure core's and the panel's words (window.tinytfStrings)."""
    words = json.dumps(catalogue.ui(), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return "window.tinytfStrings = " + words.replace("</", "<\\/") + ";"


def translate_templates(app: Sphinx, exception) -> None:
    """The static panel's figure templates of this build (``_static/models/<model>/*.json.gz``) in its language."""
    if exception is not None or _catalogue is None or app.builder.format != "html":
        return
    translate_template_files(Path(app.outdir) / "_static" / "models", _catalogue, str(app.config.language))
    translate_lab_file(Path(app.outdir) / "_static" / "lab" / "lab.json", _catalogue, str(app.config.language))


def translate_lab_file(path: Path, catalogue, lang: str) -> bool:
    """The lab's lab.json of this build (its attention templates) in its language, once; whether it was written."""
    if not path.is_file():
        return False
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("language") == lang:
        return False
    text = json.dumps(dict(catalogue.lab_file(data), language=lang), ensure_ascii=False, separators=(",", ":"))
    path.unlink()  # (a link to the English edition's file must not be written through)
    path.write_text(text, encoding="utf-8")
    return True


def translate_template_files(models: Path, catalogue, lang: str, pattern: str = "*/*.json.gz") -> int:
    """Translate the template files under ``models`` (those matching ``pattern``) in place, each marked with its
    language so that it is never translated twice; returns how many were written."""
    import gzip

    fs = figure_strings()
    written = 0
    for path in sorted(models.glob(pattern)):
        data = fs.read_template_file(path)
        if data.get("language") == lang:
            continue
        new = dict(catalogue.template_file(data), language=lang)
        text = json.dumps(new, ensure_ascii=False, separators=(",", ":"))
        path.unlink()  # (a link or a hard copy of the source's file must not be written through)
        path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
        written += 1
    return written


def translate_raw_html(app: Sphinx, doctree) -> None:
    """In another language's edition, the raw HTML of a page's markdown (which gettext does not extract): a lab div's
    data and note, and the toggles' titles (``<summary>Solution</summary>``), from the figure catalogue."""
    if _catalogue is None:
        return
    from docutils import nodes

    for node in list(doctree.findall(nodes.raw)):
        if "html" not in node.get("format", "").split():
            continue
        text = node.astext()
        new = _catalogue.raw_html(text)
        if new != text:
            node.children = []
            node += nodes.Text(new)


def report_missing(app: Sphinx, exception) -> None:
    if exception is None and _catalogue is not None and _catalogue.missing:
        from sphinx.util import logging

        logging.getLogger(__name__).info(
            f"book_offline: {len(_catalogue.missing)} figure strings have no translation in the figure catalogue "
            "(python scripts/figure_strings.py --check)")


def setup(app: Sphinx):
    register_plotly_plugin()
    app.add_js_file(CORE_JS, priority=400)  # every page; before the _static/*.js files (priority 500)
    app.connect("config-inited", lazy_assets_off_pages)
    app.connect("config-inited", load_catalogue)
    app.connect("builder-inited", add_ui_strings)
    app.connect("doctree-read", translate_raw_html)
    app.connect("build-finished", translate_templates)
    app.connect("build-finished", report_missing, priority=900)
    app.connect("builder-inited", copy_core)
    app.connect("html-page-context", drop_unusable_widget_state, priority=400)
    app.connect("html-page-context", add_plotly_where_needed)
    app.connect("html-page-context", check_no_remote_assets)
    app.connect("build-finished", copy_assets)
    app.connect("build-finished", write_index, priority=900)  # after sphinx-external-toc's redirect
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
