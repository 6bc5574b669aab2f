"""Sphinx extension (loaded through _config.yml -> sphinx.local_extensions) that keeps the
HTML book self-contained:

* copies plotly.js into ``_static/plotly.min.js`` of the build and adds it only to pages that draw
  a plotly figure. The file is plotly.js's "cartesian" partial bundle from npm
  (``node_modules/plotly.js-cartesian-dist-min``, ``npm ci`` installs it from package-lock.json:
  1.5 MB with every trace type the book draws: heatmap, scatter, bar), which must be the same
  plotly.js version as the one the ``plotly`` Python package ships; without ``node_modules`` the
  build falls back to that package's full bundle (4.8 MB; tests/test_a11y_book.py's page-weight
  check then fails);
* copies the MathJax 3 files needed by ``tex-chtml.js`` from the ``sphinx-mathjax-offline``
  package into ``_static/mathjax/`` (``mathjax_path`` in _config.yml points there);
* renders the ``application/vnd.plotly.v1+json`` part of a figure output as nothing, without
  the "skipping unknown output mime type" warning: the ``text/html`` part of the same output
  (``tinytf.viz.show``) draws the figure (tests/test_chapters_static.py checks every plotly
  output has that part, so no figure can vanish silently);
* leaves out the ipywidgets state that myst-nb would embed in a page (a notebook saved with
  widget state carries hundreds of kB of it): with ``nb_ipywidgets_js: {}`` no widget manager
  is loaded, so nothing could ever read it;
* fails the build when a page would load a script or stylesheet from another host.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

PLOTLY_JS = "plotly.min.js"
PLOTLY_JSON = "application/vnd.plotly.v1+json"
# a figure div drawn by plotly (tinytf.viz.show and plotly's own to_html both use this class)
PLOTLY_MARKER = "plotly-graph-div"
# MathJax files that tex-chtml.js loads (the other combined bundles and the SVG fonts are left out)
MATHJAX_KEEP = ("tex-chtml.js", "input", "output/chtml.js", "output/chtml", "ui", "a11y", "sre", "adaptors")
REMOTE_ASSET = re.compile(r"""<(?:script|link)\b[^>]*\b(?:src|href)=["'](?:https?:)?//""", re.I)


ROOT = Path(__file__).resolve().parents[1]
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
    """A myst-nb mime render plugin (the ``MimeRenderPlugin`` protocol) for plotly JSON."""

    mime_priority_overrides = ()

    @staticmethod
    def handle_mime(renderer, data, inline):
        if data.mime_type == PLOTLY_JSON:
            return []  # drawn by the text/html part of the same output
        return None


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


def setup(app: Sphinx):
    register_plotly_plugin()
    app.connect("html-page-context", drop_unusable_widget_state, priority=400)
    app.connect("html-page-context", add_plotly_where_needed)
    app.connect("html-page-context", check_no_remote_assets)
    app.connect("build-finished", copy_assets)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
