"""FigureView: a widget holding one plotly figure that redraws in place (the live panel's plot).

The browser keeps the figure and its plot ``<div>``; Python sends the whole figure only when its
structure changes (another ``key``, e.g. another view, or another number or type of traces, other
frame names) and otherwise only what changed: a list of ``[path, value]`` operations (``[path]``
deletes) on the rendered figure dict (data arrays, frames' data, titles, colour-axis ranges ...).
The browser applies them to its copy and redraws the same div with the figure core's ``update``,
re-showing the animation step the reader was on (the stepper's stage, kept by its frame name).

plotly.js comes from the machine, never from another host: the page's own ``window.Plotly`` if
it has one (JupyterLab and Notebook 7 load it with the first figure shown in a cell), otherwise
the installed plotly package's bundle (``plotly.offline.get_plotlyjs()``, ~4.8 MB), sent once
per page as a binary message when the first view asks for it.

The widget's ES module is the browser's figure core (``figure_core.js``, which the book serves as
``_static/tinytf-core.js``) followed by ``figure_view.js``, read from the installed package (no other file
is fetched). The core draws the figure as in the book: the title as an HTML caption, "Describe this
figure", the HTML animation controls (Play, previous / next, a range input) in place of plotly's slider
and buttons, reflow on resize, and JupyterLab's light or dark theme. ``WIDGET_CSS`` styles them with
JupyterLab's colours (the book's own CSS, ``_static/tinytf-book.css``, is not in JupyterLab).

For measurement the plot div records ``data-tinytf-drawn`` (``performance.now()`` after each
redraw has resolved), ``data-tinytf-draws`` (a counter), ``data-tinytf-received`` (when the
message arrived) and ``data-tinytf-rev`` (the figure revision shown).
"""
from __future__ import annotations

import pathlib

import anywidget
import traitlets

from .render import PLOTLY_CONFIG, figure_dict

_HERE = pathlib.Path(__file__).parent
CORE_JS = _HERE / "figure_core.js"
VIEW_JS = _HERE / "figure_view.js"


# the figure core's caption, controls and description in JupyterLab (the book's rules, JupyterLab's colours)
WIDGET_CSS = """
.tinytf-figwrap { margin: 0.4em 0 0.6em; max-width: 100%; color: var(--jp-ui-font-color1, inherit); }
.tinytf-figbox { width: 100%; max-width: 100%; overflow: hidden; }
.tinytf-figtitle { font-size: 0.95rem; line-height: 1.35; margin: 0 0 0.3em; overflow-wrap: anywhere; }
.tinytf-figtitle .tinytf-figtitle-main { display: block; }
.tinytf-figtitle .tinytf-figtitle-sub { display: block; font-size: 0.85rem; color: var(--jp-ui-font-color2, inherit); }
.tinytf-anim-controls { display: flex; flex-wrap: wrap; align-items: center; gap: 0.4em 0.6em; margin: 0.3em 0; }
.tinytf-anim-btn { font: inherit; font-size: 0.9rem; padding: 0.25em 0.8em; min-height: 2.2em; min-width: 2.6em;
  border: 1px solid var(--jp-border-color1, #bdbdbd); border-radius: 4px; cursor: pointer;
  background: var(--jp-layout-color2, #eee); color: var(--jp-ui-font-color1, inherit); }
.tinytf-anim-btn:hover { border-color: var(--jp-brand-color1, #1976d2); }
.tinytf-anim-slider { display: inline-flex; align-items: center; gap: 0.4em; flex: 1 1 12em; min-width: 10em; }
.tinytf-anim-range { flex: 1 1 auto; min-width: 8em; accent-color: var(--jp-brand-color1, #1976d2); }
.tinytf-anim-value { font-size: 0.9rem; flex: 1 1 100%; overflow-wrap: anywhere; }
.tinytf-anim-btn:focus-visible, .tinytf-anim-range:focus-visible, .tinytf-figdesc > summary:focus-visible {
  outline: 3px solid #c2410c; outline-offset: 2px; }
.tinytf-figdesc { border: none; padding: 0; margin: 0.2em 0 0; font-size: 0.9rem; }
.tinytf-figdesc > summary { cursor: pointer; color: var(--jp-content-link-color, #1976d2); }
.tinytf-figdesc > p { margin: 0.3em 0; overflow-wrap: anywhere; }
"""


def widget_esm() -> str:
    """The widget's ES module: the figure core (it defines ``tinytfCore``), then the widget."""
    return CORE_JS.read_text(encoding="utf-8") + "\n" + VIEW_JS.read_text(encoding="utf-8")


def _is_typed(obj) -> bool:
    return obj.__class__ is dict and "bdata" in obj and "dtype" in obj


def figure_patch(old, new, path=None, ops=None) -> list:
    """Operations turning the figure dict ``old`` into ``new``: ``[path, value]`` sets the value at
    ``path`` (dict keys and list indexes), ``[path]`` deletes it. Typed arrays and lists of another
    length are replaced whole."""
    path = [] if path is None else path
    ops = [] if ops is None else ops
    if old.__class__ is dict and new.__class__ is dict and not (_is_typed(old) or _is_typed(new)):
        for k, v in new.items():
            if k not in old:
                ops.append([path + [k], v])
            else:
                figure_patch(old[k], v, path + [k], ops)
        ops.extend([path + [k]] for k in old if k not in new)
    elif old.__class__ is list and new.__class__ is list and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new)):
            if a is not b:
                figure_patch(a, b, path + [i], ops)
    elif old.__class__ is not new.__class__ or old != new:
        ops.append([path, new])
    return ops


def apply_patch(fig: dict, ops: list) -> dict:
    """Apply ``figure_patch`` operations to ``fig`` in place (what the browser does; for tests)."""
    for op in ops:
        path = op[0]
        if not path:
            raise ValueError("a patch never replaces the whole figure")
        target = fig
        for k in path[:-1]:
            target = target[k]
        if len(op) == 1:
            del target[path[-1]]
        else:
            target[path[-1]] = op[1]
    return fig


def structure(spec: dict, key=None) -> tuple:
    """What must stay equal for a patch: the caller's key, the traces' types, the frames' names and
    their trace counts."""
    return (key, tuple(t.get("type") for t in spec.get("data", [])),
            tuple((f.get("name"), len(f.get("data", []))) for f in spec.get("frames", []) or []))


class FigureView(anywidget.AnyWidget):
    """One plotly figure, redrawn in place. ``set_figure(fig, key=None)`` shows a go.Figure or a
    figure dict (e.g. a FigureSpec); ``key`` names the kind of figure (a new key sends the whole
    figure). ``last_message`` is the message sent last (its ``type`` is "full" or "patch")."""

    _esm = widget_esm()
    _css = WIDGET_CSS
    revision = traitlets.Int(0).tag(sync=True)
    height = traitlets.Int(450).tag(sync=True)

    def __init__(self, fig=None, key=None, **kwargs):
        super().__init__(**kwargs)
        self._shown, self._structure, self.last_message = None, None, None
        self.on_msg(self._on_frontend_message)
        if fig is not None:
            self.set_figure(fig, key=key)

    @property
    def shown(self) -> dict | None:
        """The figure dict the browser holds (rounded as ``show`` rounds it)."""
        return self._shown

    def set_figure(self, fig, key=None) -> dict:
        spec = figure_dict(fig)
        shape = structure(spec, key)
        if self._shown is None or shape != self._structure:
            msg = self._full(spec)
        else:
            msg = {"type": "patch", "base": self.revision, "rev": self.revision + 1,
                   "ops": figure_patch(self._shown, spec)}
        self._shown, self._structure = spec, shape
        self.height = int(spec.get("layout", {}).get("height") or 450)
        self.revision = msg["rev"]
        self.last_message = msg
        self.send(msg)
        return msg

    def _full(self, spec: dict, rev: int | None = None) -> dict:
        return {"type": "full", "rev": self.revision + 1 if rev is None else rev, "fig": spec,
                "config": dict(PLOTLY_CONFIG)}

    def _on_frontend_message(self, _widget, content, _buffers):
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "need_full" and self._shown is not None:
            self.send(self._full(self._shown, rev=self.revision))
        elif kind == "need_plotly":
            from plotly.offline import get_plotlyjs, get_plotlyjs_version

            self.send({"type": "plotly", "version": get_plotlyjs_version()},
                      buffers=[get_plotlyjs().encode("utf-8")])
