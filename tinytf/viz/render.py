"""Displaying figures the same way in the static book and in a live notebook.

``show(fig)`` puts one output in the notebook, and it holds the figure **once**:

* ``application/vnd.plotly.v1+json``: the figure itself (numbers rounded, big float arrays as typed arrays, see
  below), which JupyterLab, Notebook 7 and VS Code draw natively;
* ``text/plain``: the figure's title.

That is what a chapter notebook stores, what nbval compares (``tests/nbval_figures.py``) and what the HTML book
draws: at build time the book's Sphinx extension (``scripts/book_offline.py``, a myst-nb mime render plugin)
turns the plotly JSON into :func:`book_html`'s HTML, the same code as the live HTML below: a ``<div>`` plus a small
inline script that draws the figure with ``window.Plotly`` through ``window.tinytfFigures.draw`` from the book's
``tinytf/viz/figure_core.js`` (served as ``_static/tinytf-core.js``), which adds an HTML caption, keyboard
controls, a text alternative, the page's light / dark colours and a layout for the reader's screen width. It
never loads anything from another host. The page loads its local ``_static/plotly.min.js``; the script waits up
to 10 s for it (the page may load it after the outputs) and otherwise replaces the div by a short note. The div
id is a hash of the figure without its floats (plus ``-2``, ``-3`` ... for the same figure again on one page):
the same on every machine and in every build.

Two live frontends cannot draw plotly JSON; there ``show`` sends the HTML instead (it never reaches the book or
the committed notebooks):

* Google Colab (detected by ``google.colab`` being imported): ``text/html`` (+ ``text/plain``) only, in plotly's
  own Colab approach: neither the page nor the frontend has plotly.js, so the HTML loads it from the plotly CDN.
* Classic Jupyter (notebook < 7): run ``tinytf.viz.init_notebook()`` once. It puts the plotly.js of the
  installed ``plotly`` package into the page (``window._Plotly``, which the loader also accepts) and makes the
  following ``show`` calls of that kernel add the ``text/html`` part next to the JSON.

The JSON is deterministic and light: float arrays of ``TYPED_ARRAY_MIN`` values or more (the heatmaps) travel as
float32 typed arrays (base64, ~5.3 characters per number, exactly the trace's float32 values, and fast to
encode: a live update must stay under 50 ms); every other float is rounded to ``SIGNIFICANT_DIGITS`` significant
digits (NaN / inf become ``null``, which plotly draws as a gap). So re-running a notebook gives the same outputs
up to the last bits another CPU rounds differently (nbval compares them within a stated tolerance).
"""
from __future__ import annotations

import hashlib
import html as _html
import json
import math
import sys

import numpy as np

SIGNIFICANT_DIGITS = 4
TYPED_ARRAY_MIN = 16  # float arrays at least this big travel as float32 base64 (exact, 5.3 chars/number)
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
PLOTLY_MIME = "application/vnd.plotly.v1+json"
_shown_ids: dict = {}
_html_too = False  # set by init_notebook(): classic Jupyter cannot draw PLOTLY_MIME


def round_sig(x: float, digits: int = SIGNIFICANT_DIGITS):
    """Round a float to ``digits`` significant digits; NaN and +-inf become None (JSON null)."""
    if x != x or x in (math.inf, -math.inf):
        return None
    if x == 0:
        return 0.0
    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))


def _clean(obj, digits: int):
    """Figure dict -> plain JSON-able Python with rounded floats and no numpy types."""
    if isinstance(obj, dict):
        if "bdata" in obj and "dtype" in obj:  # plotly >= 6 encodes numpy arrays as base64 typed arrays
            return _clean(_decode_typed_array(obj), digits)
        return {k: (v if (v.__class__ is str or v.__class__ is bool or v is None or v.__class__ is int)
                    else _clean(v, digits)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [v if (v.__class__ is str or v is None or v.__class__ is int) else
                (round_sig(v, digits) if v.__class__ is float else _clean(v, digits)) for v in obj]
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind == "f" and obj.size >= TYPED_ARRAY_MIN:
            return _typed_array(obj)
        if obj.dtype.kind in "fc":
            return _round_array(obj.real.astype(np.float64), digits)
        return _clean(obj.tolist(), digits)
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return round_sig(float(obj), digits)
    return obj


def _typed_array(a: np.ndarray) -> dict:
    """float32 typed-array spec understood by plotly.js >= 2.28 (what plotly.py itself emits)."""
    import base64

    a = np.ascontiguousarray(a, dtype="<f4")
    spec = {"dtype": "f4", "bdata": base64.b64encode(a.tobytes()).decode("ascii")}
    if a.ndim > 1:
        spec["shape"] = ", ".join(str(n) for n in a.shape)
    return spec


def _decode_typed_array(spec: dict) -> np.ndarray:
    import base64

    a = np.frombuffer(base64.b64decode(spec["bdata"]), dtype=np.dtype(spec["dtype"]).newbyteorder("<"))
    shape = spec.get("shape")
    if shape:
        a = a.reshape([int(s) for s in str(shape).split(",")])
    return a


def _round_array(a: np.ndarray, digits: int):
    """Vectorised round_sig for a float array; returns nested lists with None for NaN/inf."""
    finite = np.isfinite(a)
    safe = np.where(finite & (a != 0), np.abs(a), 1.0)
    decimals = (digits - 1 - np.floor(np.log10(safe))).astype(int)
    scale = 10.0 ** decimals
    r = np.where(finite, np.round(a * scale) / scale, 0.0)
    out = r.astype(object)
    out[~finite] = None
    return out.tolist()


def figure_dict(fig, digits: int = SIGNIFICANT_DIGITS) -> dict:
    """The figure as a plain dict {data, layout, frames?} with rounded numbers."""
    d = _raw_props(fig)
    out = {"data": _clean(d.get("data", []), digits), "layout": _clean(d.get("layout", {}), digits)}
    if d.get("frames"):
        out["frames"] = _clean(d["frames"], digits)
    return out


def _raw_props(fig) -> dict:
    """data / layout / frames of a figure without copying: a go.Figure keeps its current state in
    ``_data``, ``_layout`` and each frame's ``_props`` (what to_plotly_json deep-copies and
    base64-encodes, which would dominate a live update). Other objects: to_plotly_json / dict."""
    try:
        frames = [f._props for f in fig._frame_objs]
        return {"data": fig._data, "layout": fig._layout, "frames": frames}
    except AttributeError:
        return fig.to_plotly_json() if hasattr(fig, "to_plotly_json") else dict(fig)


def figure_json(fig, digits: int = SIGNIFICANT_DIGITS) -> str:
    return json.dumps(figure_dict(fig, digits), separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _skeleton(obj):
    """The figure without its floats (typed arrays reduced to dtype and shape): what stays the
    same on every machine. Another CPU rounds the last bits of a float differently."""
    if isinstance(obj, dict):
        if "bdata" in obj and "dtype" in obj:
            return [obj["dtype"], obj.get("shape"), len(obj["bdata"])]
        return {k: _skeleton(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [None if v.__class__ is float else _skeleton(v) for v in obj]
    return None if obj.__class__ is float else obj


def stable_id(fig) -> str:
    """Deterministic div id from a figure's skeleton (its JSON text or dict): the same on every machine,
    since it ignores the floats, whose last digits depend on the CPU's kernels."""
    spec = json.loads(fig) if isinstance(fig, str) else fig
    text = json.dumps(_skeleton(spec), separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return "tinytf-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


# what a figure says when plotly.js never arrives; the page's window.tinytfStrings (the Chinese edition's, from
# locales/<lang>/LC_MESSAGES/figures.po: scripts/figure_strings.py extracts it) may translate it
NO_PLOTLY_NOTE = (
    "plotly.js is not loaded in this page, so this figure cannot be drawn here. "
    "In classic Jupyter run <code>tinytf.viz.init_notebook()</code> once and re-run the cell; "
    "JupyterLab, Notebook 7, VS Code, Colab and the HTML book draw it without that."
)
_NO_PLOTLY_JS = json.dumps(NO_PLOTLY_NOTE, ensure_ascii=False).replace("</", "<\\/")  # a JS string in a <script>


def figure_html(fig, div_id: str | None = None, digits: int = SIGNIFICANT_DIGITS, cdn: bool = False) -> str:
    """Deterministic HTML fragment: a div and an inline script drawing it with window.Plotly.

    Loads nothing remote unless ``cdn=True`` (used only in a live Colab session)."""
    spec = figure_dict(fig, digits)
    spec_json = _dumps(spec)
    return _html_for(spec, spec_json, div_id or stable_id(spec), cdn)


def _dumps(spec: dict) -> str:
    return json.dumps(spec, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _html_for(spec: dict, spec_json: str, div_id: str, cdn: bool) -> str:
    height = spec["layout"].get("height") or 450
    config = json.dumps(PLOTLY_CONFIG, separators=(",", ":"))
    spec_js = spec_json.replace("</", "<\\/")  # "</" must not appear inside a <script> element
    cdn_tag = ""
    if cdn:
        import plotly.offline

        version = plotly.offline.get_plotlyjs_version()
        cdn_tag = f'<script src="https://cdn.plot.ly/plotly-{version}.min.js" charset="utf-8"></script>\n'
    return (
        f"{cdn_tag}"
        f'<div id="{div_id}" class="plotly-graph-div tinytf-figure" style="width:100%;height:{int(height)}px;"></div>\n'
        '<script type="text/javascript">\n'
        "(function () {\n"
        f'  var id = "{div_id}", tries = 0;\n'
        f"  var fig = {spec_js};\n"
        f"  fig.config = {config};\n"
        "  function draw() {\n"
        "    var el = document.getElementById(id);\n"
        "    if (!el) { return; }\n"
        "    var P = window.Plotly || window._Plotly;\n"
        "    var T = window.tinytfFigures;\n"
        "    if (P) { if (T) { T.draw(el, fig); } else { P.newPlot(el, fig); } return; }\n"
        "    if (++tries < 100) { setTimeout(draw, 100); return; }\n"
        f"    var note = {_NO_PLOTLY_JS}, S = window.tinytfStrings;\n"
        "    if (S && Object.prototype.hasOwnProperty.call(S, note)) { note = S[note]; }\n"
        '    el.style.height = "auto"; el.innerHTML = "<p class=\\"tinytf-noplotly\\">" + note + "</p>";\n'
        "  }\n"
        "  draw();\n"
        "})();\n"
        "</script>"
    )


def numbered_id(spec: dict, seen: dict) -> str:
    """The div id of a figure: ``stable_id(spec)``, then ``-2``, ``-3`` ... when the same figure comes again among
    those counted in ``seen`` (a dict this updates: a kernel's shown figures, or one book page's)."""
    base = stable_id(spec)
    n = seen.get(base, 0) + 1
    seen[base] = n
    return base if n == 1 else f"{base}-{n}"


def book_html(plotly_json: dict, seen: dict, translate=None) -> str:
    """The HTML the book draws for an output's ``application/vnd.plotly.v1+json`` part (the figure with its
    ``config``, as stored in the notebook); ``seen`` numbers the repeats of one page (see :func:`numbered_id`).
    Called by the book's myst-nb mime render plugin (``scripts/book_offline.py``). ``translate`` (another
    edition's: spec -> translated spec, ``scripts/figure_strings.py``) changes the figure's words, not its id."""
    spec = {k: v for k, v in plotly_json.items() if k != "config"}
    div_id = numbered_id(spec, seen)
    if translate is not None:
        spec = translate(spec)
    return _html_for(spec, _dumps(spec), div_id, cdn=False)


def mimebundle(fig, digits: int = SIGNIFICANT_DIGITS, cdn: bool = False, div_id: str | None = None,
               html: bool | None = None) -> dict:
    """The output ``show`` displays. In a notebook: application/vnd.plotly.v1+json + text/plain (the figure once);
    with ``cdn=True`` (Colab): text/html loading plotly.js from the CDN + text/plain; ``html=True`` (default: after
    ``init_notebook()``) adds the offline text/html to the JSON."""
    spec = figure_dict(fig, digits)
    title = spec["layout"].get("title", {})
    title = title.get("text", "") if isinstance(title, dict) else str(title)
    bundle = {} if cdn else {PLOTLY_MIME: dict(spec, config=dict(PLOTLY_CONFIG))}
    if cdn or (_html_too if html is None else html):
        bundle["text/html"] = _html_for(spec, _dumps(spec), div_id or numbered_id(spec, _shown_ids), cdn)
    bundle["text/plain"] = "<tinytf figure" + (f": {_strip_tags(title)}" if title else "") + ">"
    return bundle


def _strip_tags(s: str) -> str:
    import re

    return _html.unescape(re.sub(r"<[^>]+>", " ", s)).replace("  ", " ").strip()


def in_colab() -> bool:
    return "google.colab" in sys.modules


def show(fig, digits: int = SIGNIFICANT_DIGITS) -> None:
    """Display a plotly figure in a notebook (see the module docstring for what is emitted).
    Outside IPython it prints the figure's title instead."""
    bundle = mimebundle(fig, digits=digits, cdn=in_colab())
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython ships with every notebook
        print(bundle["text/plain"])
        return None
    if get_ipython() is None:
        print(bundle["text/plain"])
        return None
    display(bundle, raw=True)
    return None


def init_notebook() -> None:
    """Classic Jupyter (notebook < 7) only: put the installed plotly package's own plotly.js
    into the page (nothing is downloaded; ~4.8 MB in that cell's output), defining
    window.Plotly, and make ``show`` add the ``text/html`` part classic Jupyter draws (it cannot
    draw plotly JSON). Not needed anywhere else."""
    from IPython.display import HTML, display
    from plotly.offline import get_plotlyjs

    global _html_too
    _html_too = True
    display(HTML(f"<script type=\"text/javascript\">{get_plotlyjs()}</script>"))


def reset_ids() -> None:
    """Forget which figures were shown (ids restart at the bare hash)."""
    _shown_ids.clear()
