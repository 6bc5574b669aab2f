"""The figure catalogue: every string a reader reads inside a figure or a panel, and its translation.

    python scripts/figure_strings.py --update   # rewrite locales/zh_CN/LC_MESSAGES/figures.po from the sources
    python scripts/figure_strings.py --check    # exit 1 (and say which) on untranslated or stale strings
    python scripts/figure_strings.py --list     # the extracted messages, one per line

One gettext catalogue (``locales/<lang>/LC_MESSAGES/figures.po``) that the English edition's figures are the
source of: msgid = the English text, msgstr = the translation. The Chinese edition applies it at build time
(``scripts/book_offline.py``): the notebooks and the English edition are untouched. Three sources:

* **figures**: the plotly JSON outputs of ``chapters/*.ipynb``: titles (the layout's and every frame's), axis,
  legend and colour-bar titles, annotations, trace names, hover templates, text on the marks, category labels
  (x, y, categoryarray, ticktext) and the animation's step labels (``VISIBLE_KEYS``). Each string is cut into
  *segments* at its line breaks and its markup (``<br>``, ``<b>``, ``<span ...>``, ``<extra>``): a title line and
  its subtitle are two messages, and the markup stays out of the catalogue. Every number, a quoted token
  (``'c'``) and a token label in brackets (``(0: a)``) become numbered placeholders ``{0}``, ``{1}`` ...: "RoPE at
  position 7: each pair turned by its own angle × 7" is one message for 16 positions,
  ``RoPE at position {0}: each pair turned by its own angle × {1}``; the translation places each ``{n}`` where
  its language wants it. Years (2017, 2026) stay in the text. Segments with no word in them (token labels
  ``3: a``, ``+``, ``[3, 128]``, ``K h0``) and code names (``blocks.0.ffn.out``) are not messages.
* **the figure core, the panel and the lab** (``tinytf/viz/figure_core.js``, ``_static/tinytf-panel.js``,
  ``_static/tinytf-lab.js``): the argument of every ``tr("...")`` call (Play, Pause, the step readout, "Describe
  this figure", the generated description, the panel's and the lab's labels, buttons, table headers and status
  lines), with ``{name}`` placeholders that the script fills; the labels of the lab's snapshots; and the words the
  book's page helpers add (``_static/tinytf-book.js``, every ``tinytfWord("...")``: the sidebar's name, the launch
  links' names, an empty table header's "row" / "item"), and the note a figure shows when plotly.js is missing
  (``tinytf.viz.render.NO_PLOTLY_NOTE``). The page gives the translations as ``window.tinytfStrings``
  (only the Chinese edition; English is the default in the code).
* **the static panel's data** (``tinytf.viz.static_panel``): its message templates for bad input, its note, its
  view names, and the models' labels of ``tinytf.lab.onnx_export.book_models()``;
* **the lab's data** (``tinytf.lab.browser_lab``: the names, rules and messages a lab div carries, and its note
  without JavaScript), translated in the page's HTML (``Catalogue.raw_html``);
* **the toggles' titles**: the ``<summary>...</summary>`` text of the raw HTML in the pages' markdown (Solution,
  Answers, What the output says, ...), which gettext does not extract (``Catalogue.raw_html`` translates them);
* **the static panel's figures**: the figure templates the page fills with the model's outputs
  (``_static/models/<model>/*.json.gz``, ``tinytf.viz.templates``, written by ``scripts/static_assets.py`` at every
  book build, which must have run once): their texts as above, and the format strings of their bindings
  (``"{} reads {}: weight {:.3f} (mean of heads)"``: keep each ``{...}``, in order); and the lab's attention
  templates (``_static/lab/lab.json``, ``tinytf.viz.lab``), the same way.

A name that stays as it is in Chinese (``RMSNorm``, ``Attn(Norm1(x))``) has msgstr = msgid, so that "translated"
means "looked at". ``--check`` reports a message without a translation, a fuzzy one, one whose placeholders differ
from the msgid's, and a catalogue entry no source has any more (stale).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
LOCALES = ROOT / "locales"
LANG = "zh_CN"
PLOTLY_JSON = "application/vnd.plotly.v1+json"
MODELS = ROOT / "_static" / "models"  # the panel's figure templates (scripts/static_assets.py writes them)
LAB_JSON = ROOT / "_static" / "lab" / "lab.json"  # the lab's attention templates (written with them)
LAB_TEMPLATES = ("attention", "lens")  # the groups of templates in lab.json
JS_SOURCES = (ROOT / "tinytf" / "viz" / "figure_core.js", ROOT / "_static" / "tinytf-panel.js",
              ROOT / "_static" / "tinytf-lab.js", ROOT / "_static" / "tinytf-book.js")
PAGES_MD = (ROOT / "intro.md",)  # markdown pages besides the chapters' notebooks (and chapters/*.md)

# keys whose strings a reader sees (in lists too); frames' "name" and the slider's "args" are frame keys. The book's
# figure core replaces plotly's own slider and buttons by HTML controls, but plotly (JupyterLab, a page without the
# core) still draws the slider's "currentvalue" "prefix", so it is translated too; the "updatemenus" labels are not
VISIBLE_KEYS = frozenset({"text", "name", "hovertemplate", "hovertext", "texttemplate", "label", "ticktext", "x", "y",
                          "categoryarray", "title", "prefix"})
SKIP_KEYS = frozenset({"template", "sliders_args", "args", "updatemenus", "legendgroup", "meta"})

_TAGS = re.compile(r"(<br\s*/?>|</?b>|<span\b[^>]*>|</span>|<extra>.*?</extra>|</?i>|</?em>)", re.I | re.S)
_PLOTLY_VAR = re.compile(r"%\{[^}]*\}")
_YEAR = re.compile(r"(?:19|20)\d\d")
# what becomes a placeholder: a token label in brackets "(0: a)", a quoted token "'c'", a number
_VARIABLE = re.compile(r"(?<=\()\d+: [^)]{1,8}(?=\))"               # (0: a)
                       r"|(?<!\S)\d+: (?:<\w+>|[^\s\ue000-\uefff])(?=[\s:)]|$)"   # 0: a  (a token label in a text)
                       r"|(?<!\w)'[^']{1,8}'(?!\w)"                 # 'c'
                       r"|(?<!\w)(?<![A-Za-z]-)\d+(?:[.,]\d+)*(?![\w]|[.,]\d)")  # 3, 0.25, 198,272 (not GPT-2)
_WORD = re.compile(r"[A-Za-z]{2,}")
_CODE_NAME = re.compile(r"^[A-Za-z_][\w]*(?:\.[\w]+)+$")
_PLACEHOLDER = re.compile(r"(?<!%)\{(\w+)\}")
_ANY_PLACEHOLDER = re.compile(r"(?<!%)\{[^{}]*\}")  # also Python's "{}" and "{:.3f}" of a template's format


# --------------------------------------------------------------------------- segments and placeholders
def factor(segment: str) -> tuple[str, list[str]]:
    """A segment -> (its message, the values of its placeholders): numbers, quoted tokens and token labels
    become {0}, {1} ...; plotly's %{...} and years stay. Braces of the text itself are doubled."""
    protected = []

    def keep(m):
        protected.append(m.group(0))
        return chr(0xE000 + len(protected) - 1)  # a private-use character: neither a digit nor a word character

    text = _PLOTLY_VAR.sub(keep, segment)
    text = _YEAR.sub(lambda m: keep(m) if not _touches_digit(m) else m.group(0), text)
    values: list[str] = []

    def var(m):
        values.append(m.group(0))
        return "{%d}" % (len(values) - 1)

    text = _VARIABLE.sub(var, text)
    return re.sub("[\ue000-\uefff]", lambda m: protected[ord(m.group(0)) - 0xE000], text), values


def _touches_digit(m) -> bool:
    s, a, b = m.string, m.start(), m.end()
    return (a > 0 and (s[a - 1].isalnum() or s[a - 1] in ".,")) or (b < len(s) and (s[b].isalnum() or (
        s[b] in ".," and b + 1 < len(s) and s[b + 1].isdigit())))


def fill(message: str, values) -> str:
    """A message with its placeholders replaced: {0}, {1} ... from a list, {name} from a dict (plotly's own
    %{x} and any other brace are left as they are)."""
    def one(m):
        k = m.group(1)
        if isinstance(values, dict):
            return str(values[k]) if k in values else m.group(0)
        return str(values[int(k)]) if k.isdigit() and int(k) < len(values) else m.group(0)

    return _PLACEHOLDER.sub(one, message)


def is_message(segment: str) -> bool:
    """Whether a segment is read as words (and so belongs in the catalogue)."""
    bare = _PLOTLY_VAR.sub("", segment).strip()
    return bool(_WORD.search(bare)) and not _CODE_NAME.match(bare)


def segments(text: str):
    """(piece, is_markup) for the pieces of a plotly text: markup (line breaks, tags, <extra>) and the text
    between, with the spaces around each text piece as pieces of their own (not in the messages)."""
    for part in _TAGS.split(text):
        if not part:
            continue
        if _TAGS.fullmatch(part):
            yield part, True
            continue
        m = re.match(r"^(\s*)(.*?)(\s*)$", part, re.S)
        if m.group(1):
            yield m.group(1), True
        if m.group(2):
            yield m.group(2), False
        if m.group(3):
            yield m.group(3), True


def text_messages(text: str):
    for piece, markup in segments(text):
        if not markup:
            msgid = factor(piece)[0]
            if is_message(msgid):
                yield msgid


# --------------------------------------------------------------------------- figures: extraction and translation
def _strings(spec, visit, key=None, skip=False):
    """Call visit(string) for every reader-visible string of a figure spec; returns the spec rebuilt with
    visit's results (visit may return its argument unchanged)."""
    if isinstance(spec, dict):
        if "bdata" in spec and "dtype" in spec:
            return spec
        out = {}
        for k, v in spec.items():
            if k == "meta" and isinstance(v, dict) and _narrow_figure(v) is not None:
                # a figure's second drawing for narrow screens (layout.meta.tinytf.narrow.figure) is read by
                # the reader too: its strings are translated like the wide figure's
                out[k] = {**v, "tinytf": {**v["tinytf"], "narrow": {
                    **v["tinytf"]["narrow"], "figure": _strings(_narrow_figure(v), visit)}}}
            elif k in SKIP_KEYS or (k == "name" and key == "frames"):
                out[k] = v
            elif k == "prefix" and isinstance(v, str):  # a slider's "stage: ": no space after a full-width colon
                out[k] = re.sub(r"(?<=[\u3000-\u303f\uff00-\uffef])\s+$", "", visit(v))
            elif k in VISIBLE_KEYS and isinstance(v, str):
                out[k] = visit(v)
            elif k in VISIBLE_KEYS and isinstance(v, list):
                out[k] = [visit(x) if isinstance(x, str) else _strings(x, visit, k) for x in v]
            else:
                out[k] = _strings(v, visit, k)
        return out
    if isinstance(spec, list):
        return [_strings(v, visit, key) for v in spec]
    return spec


def _narrow_figure(meta: dict):
    """The narrow-screen figure a layout's meta carries (``meta.tinytf.narrow.figure``), or None."""
    narrow = (meta.get("tinytf") or {}).get("narrow") if isinstance(meta.get("tinytf"), dict) else None
    figure = narrow.get("figure") if isinstance(narrow, dict) else None
    return figure if isinstance(figure, dict) else None


def figure_texts(spec: dict) -> list[str]:
    """Every reader-visible string of a figure spec (in order, repeats included)."""
    found = []
    _strings(spec, lambda s: found.append(s) or s)
    return found


_notebooks: dict = {}


def read_notebook(path: Path) -> dict:
    """A notebook's JSON (read once per version of the file)."""
    path = Path(path)
    key = (path.resolve(), path.stat().st_mtime_ns)
    if key not in _notebooks:
        _notebooks[key] = json.loads(path.read_text(encoding="utf-8"))
    return _notebooks[key]


def notebook_figures(paths=None):
    """(notebook path, plotly JSON) for every figure output of the chapters."""
    for nb_path in sorted(paths or CHAPTERS.glob("*.ipynb")):
        nb = read_notebook(nb_path)
        for cell in nb.get("cells", []):
            for out in cell.get("outputs", []):
                spec = out.get("data", {}).get(PLOTLY_JSON)
                if spec:
                    yield Path(nb_path), spec


class Catalogue:
    """msgid -> msgstr of one language (translated entries only), and the translation of figures, texts and
    panel states with it. A string without a translation stays English (``missing`` collects it)."""

    def __init__(self, messages: dict):
        self.messages = messages
        self.missing: set = set()

    @classmethod
    def load(cls, lang: str = LANG, path: Path | None = None) -> "Catalogue":
        entries = read_catalogue(path or catalogue_path(lang))
        return cls({k: e["msgstr"] for k, e in entries.items() if e["msgstr"] and not e["fuzzy"]})

    def message(self, msgid: str) -> str:
        got = self.messages.get(msgid)
        if got is None:
            self.missing.add(msgid)
            return msgid
        return got

    def text(self, text: str) -> str:
        """A plotly text (markup kept, each segment translated, placeholders filled)."""
        if not isinstance(text, str) or not _WORD.search(text):
            return text
        out = []
        for piece, markup in segments(text):
            msgid, values = factor(piece) if not markup else (None, None)
            if markup or not is_message(msgid):
                out.append(piece)
                continue
            if msgid not in self.messages:
                self.missing.add(msgid)
                out.append(piece)
            else:
                out.append(fill(self.messages[msgid], values))
        return "".join(out)

    def figure(self, spec: dict) -> dict:
        """A translated copy of a figure spec (the input is not changed)."""
        return _strings(spec, self.text)

    def template_file(self, data: dict) -> dict:
        """A file of the panel's figure templates (tinytf.viz.templates) translated: each template's figure, and the
        format strings its bindings fill in the browser (e.g. a cell's text)."""
        out = dict(data, templates={})
        for n, tpl in data["templates"].items():
            out["templates"][n] = dict(tpl, figure=self.figure(tpl["figure"]),
                                       bindings=_formats(tpl.get("bindings", []), self.message))
        return out

    def lab_file(self, data: dict) -> dict:
        """The lab's lab.json with its attention and lens templates translated (as template_file)."""
        out = dict(data)
        for group in LAB_TEMPLATES:
            out[group] = {k: dict(t, figure=self.figure(t["figure"]),
                                  bindings=_formats(t.get("bindings", []), self.message))
                          for k, t in data.get(group, {}).items()}
        return out

    def ui(self) -> dict:
        """The strings of the figure core and the panel scripts: what the page gives as window.tinytfStrings."""
        return {m: self.messages[m] for m in sorted(js_messages()) if m in self.messages}

    def panel_state(self, state: dict) -> dict:
        out = dict(state)
        out["messages"] = {k: self.message(v) if v.strip() else v for k, v in state.get("messages", {}).items()}
        out["views"] = {k: self.message(v) for k, v in state.get("views", {}).items()}
        return out

    def _keep_space(self, text: str) -> str:
        """A message translated with the spaces around it kept (" From byte {at} on, ..." -> " 从第 {at} 个...")."""
        m = re.match(r"^(\s*)(.*?)(\s*)$", text, re.S)
        return m.group(1) + self.message(m.group(2)) + m.group(3) if m.group(2) else text

    def lab_state(self, state: dict) -> dict:
        """A lab div's state (tinytf.lab.browser_lab.page_state) with its names, rules, messages, help lines and
        hints translated."""
        out = dict(state)
        for key in ("names", "rules", "messages"):
            out[key] = {k: self._keep_space(v) for k, v in state.get(key, {}).items()}
        out["help"] = {k: dict(v, text=self.message(v["text"])) for k, v in state.get("help", {}).items()}
        out["hints"] = [dict(h, text=self.message(h["text"])) for h in state.get("hints", [])]
        return out

    def raw_html(self, html_text: str) -> str:
        """The raw HTML of a page's markdown: a lab div (its data and its note) and the titles of the toggles
        (``<summary>Solution</summary>``) translated; any other HTML as it is."""
        import html as _html

        out = html_text
        if "tinytf-lab" in out:
            from tinytf.lab import browser_lab

            def data(m):
                state = json.loads(_html.unescape(m.group(1)))
                new = json.dumps(self.lab_state(state), ensure_ascii=True, sort_keys=True)
                return 'data-lab="' + _html.escape(new, quote=True) + '"'

            out = re.sub(r'data-lab="([^"]*)"', data, out)
            out = out.replace(browser_lab.NOTE, self.message(browser_lab.NOTE))
        return _SUMMARY.sub(lambda m: m.group(1) + self._keep_space(m.group(2)) + m.group(3), out)

    def panel_html(self, html_text: str) -> str:
        """A static panel cell's HTML (tinytf.viz.static_panel) with its data and its note translated."""
        import html as _html

        from tinytf.viz import static_panel

        def data(m):
            state = json.loads(_html.unescape(m.group(1)))
            new = json.dumps(self.panel_state(state), ensure_ascii=True, sort_keys=True)
            return 'data-panel="' + _html.escape(new, quote=True) + '"'

        out = re.sub(r'data-panel="([^"]*)"', data, html_text)
        return out.replace(static_panel.NOTE, self.message(static_panel.NOTE))


# --------------------------------------------------------------------------- the panel's figure templates
def _formats(expr, visit):
    """A template's bindings with visit(fmt) for the format string of every ["format", fmt, args] (rebuilt)."""
    if isinstance(expr, list):
        if len(expr) == 3 and expr[0] == "format" and isinstance(expr[1], str):
            return ["format", visit(expr[1]) if _WORD.search(expr[1]) else expr[1], _formats(expr[2], visit)]
        return [_formats(e, visit) for e in expr]
    return expr


def template_files() -> list[Path]:
    """The panel's figure template files. They are written by scripts/static_assets.py (every book build runs it);
    without them the catalogue could not be checked, so their absence is an error."""
    if not (MODELS / "manifest.json").is_file():
        raise FileNotFoundError(f"{MODELS.relative_to(ROOT)} has no figure templates: run "
                                "python scripts/static_assets.py (make book runs it)")
    return sorted(MODELS.glob("*/*.json.gz"))


def read_template_file(path: Path) -> dict:
    import gzip

    return json.loads(gzip.decompress(Path(path).read_bytes()))


def template_messages() -> dict:
    """msgid -> source (the model's folder) for the strings of the panel's figure templates and the lab's."""
    found = {}
    if not LAB_JSON.is_file():
        raise FileNotFoundError(f"{LAB_JSON.relative_to(ROOT)} is missing: run python scripts/static_assets.py")
    where = LAB_JSON.relative_to(ROOT).as_posix()
    lab_data = json.loads(LAB_JSON.read_text(encoding="utf-8"))
    for tpl in [t for group in LAB_TEMPLATES for t in lab_data.get(group, {}).values()]:
        for text in figure_texts(tpl["figure"]):
            for msgid in text_messages(text):
                found.setdefault(msgid, where)
        _formats(tpl.get("bindings", []), lambda fmt: found.setdefault(fmt, where))
    for path in template_files():
        where = path.parent.relative_to(ROOT).as_posix()
        for tpl in read_template_file(path)["templates"].values():
            for text in figure_texts(tpl["figure"]):
                for msgid in text_messages(text):
                    found.setdefault(msgid, where)
            _formats(tpl.get("bindings", []), lambda fmt: found.setdefault(fmt, where))
    return found


# --------------------------------------------------------------------------- the other sources
_SUMMARY = re.compile(r"(<summary>)([^<]*?)(</summary>)", re.I)
_TR_CALL = re.compile(r"""\b(?:tr|tinytfWord)\(\s*"((?:[^"\\]|\\.)*)"\s*[,)]""")  # tinytfWord: tinytf-book.js


def js_messages() -> dict:
    """msgid -> source file for every tr("...") of the figure core, the panel and the lab scripts, and every
    tinytfWord("...") of the book's page helpers (tinytf-book.js: the sidebar's name, the launch links' names)."""
    found = {}
    for path in JS_SOURCES:
        for m in _TR_CALL.finditer(path.read_text(encoding="utf-8")):
            found.setdefault(json.loads('"' + m.group(1) + '"'), path.relative_to(ROOT).as_posix())
    from tinytf.viz import render

    found.setdefault(render.NO_PLOTLY_NOTE, "tinytf/viz/render.py")  # a figure's note when plotly.js is missing
    for label in model_labels():
        found.setdefault(label, "tinytf/lab/onnx_export.py")
    from tinytf.lab import browser_lab

    for _, label, _ in browser_lab.snapshot_models():  # the lab's model menu (tr(m.label))
        found.setdefault(label, "tinytf/lab/browser_lab.py")
    return found


def lab_messages() -> dict:
    """msgid -> source for the data a lab div carries (names, rules, messages) and its note."""
    from tinytf.lab import browser_lab

    src = "tinytf/lab/browser_lab.py"
    found = {}
    for table in (browser_lab.NAMES, browser_lab.RULES, browser_lab.MESSAGES):
        for v in table.values():
            if v.strip():
                found.setdefault(v.strip(), src)
    for v in browser_lab.HELP.values():
        found.setdefault(v[0] if isinstance(v, tuple) else v, src)
    for h in browser_lab.HINTS:
        found.setdefault(h["text"], src)
    found.setdefault(browser_lab.NOTE, src)
    return found


def summary_messages() -> dict:
    """msgid -> source for the titles of the toggles (<summary>...</summary>) in the pages' markdown."""
    found = {}
    pages = [(p, [c for c in read_notebook(p).get("cells", []) if c.get("cell_type") == "markdown"])
             for p in sorted(CHAPTERS.glob("*.ipynb"))]
    pages += [(p, [{"source": p.read_text(encoding="utf-8")}]) for p in list(PAGES_MD) + sorted(CHAPTERS.glob("*.md"))]
    for path, cells in pages:
        for cell in cells:
            src = cell.get("source", "")
            for m in _SUMMARY.finditer("".join(src) if isinstance(src, list) else src):
                if m.group(2).strip():
                    found.setdefault(m.group(2).strip(), path.relative_to(ROOT).as_posix())
    return found


def model_labels() -> list[str]:
    """The labels of the models the panel offers (the manifest's, shown in its model menu)."""
    from tinytf.lab import onnx_export

    return [label for _, label, _ in onnx_export.book_models()]


def panel_messages() -> dict:
    """msgid -> source for the static panel's messages, note and the view names of the chapters' panels."""
    import html as _html

    from tinytf.viz import static_panel

    src = "tinytf/viz/static_panel.py"
    found = {v: src for v in static_panel.MESSAGES.values() if v.strip()}
    found[static_panel.NOTE] = src
    for nb_path in sorted(CHAPTERS.glob("*.ipynb")):
        nb = read_notebook(nb_path)
        for cell in nb.get("cells", []):
            for out in cell.get("outputs", []):
                html_text = "".join(out.get("data", {}).get("text/html", []))
                for m in re.finditer(r'data-panel="([^"]*)"', html_text):
                    state = json.loads(_html.unescape(m.group(1)))
                    for v in list(state.get("messages", {}).values()) + list(state.get("views", {}).values()):
                        if v.strip():
                            found.setdefault(v, nb_path.relative_to(ROOT).as_posix())
    return found


def extract(notebooks=None) -> dict:
    """msgid -> sorted list of its sources, for every message of every source. Deterministic."""
    found: dict = {}
    for nb_path, spec in notebook_figures(notebooks):
        where = nb_path.relative_to(ROOT).as_posix() if nb_path.is_relative_to(ROOT) else nb_path.name
        for text in figure_texts(spec):
            for msgid in text_messages(text):
                found.setdefault(msgid, set()).add(where)
    for source in (js_messages(), panel_messages(), lab_messages(), summary_messages(), template_messages()):
        for msgid, where in source.items():
            found.setdefault(msgid, set()).add(where)
    return {k: sorted(v) for k, v in sorted(found.items())}


# --------------------------------------------------------------------------- the .po file
def catalogue_path(lang: str = LANG) -> Path:
    return LOCALES / lang / "LC_MESSAGES" / "figures.po"


def read_catalogue(path: Path) -> dict:
    """msgid -> {"msgstr", "fuzzy", "locations"} (empty when the file does not exist)."""
    if not path.is_file():
        return {}
    from babel.messages.pofile import read_po

    with open(path, "rb") as handle:
        cat = read_po(handle)
    return {m.id: {"msgstr": m.string or "", "fuzzy": m.fuzzy, "locations": [loc for loc, _ in m.locations]}
            for m in cat if m.id}


def _po_string(s: str) -> str:
    s = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{s}"'


HEADER = """# The figure catalogue of the tinytf book: the strings inside figures and panels (scripts/figure_strings.py).
# msgid: the English text (numbers and tokens are placeholders {0}, {1} ..., and %{x} is plotly's: keep each one).
# Update: python scripts/figure_strings.py --update; fill the empty msgstr; check: --check.
msgid ""
msgstr ""
"Language: %s\\n"
"MIME-Version: 1.0\\n"
"Content-Type: text/plain; charset=utf-8\\n"
"Content-Transfer-Encoding: 8bit\\n"
"""


def write_catalogue(path: Path, found: dict, old: dict, lang: str = LANG) -> None:
    """The catalogue for the extracted messages (sorted by msgid), keeping the translations it had."""
    lines = [HEADER.replace("%s", lang)]
    for msgid, where in found.items():
        entry = old.get(msgid, {})
        lines.append("")
        lines.append("#: " + " ".join(where))
        if entry.get("fuzzy"):
            lines.append("#, fuzzy")
        lines.append("msgid " + _po_string(msgid))
        lines.append("msgstr " + _po_string(entry.get("msgstr", "")))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def problems(found: dict, entries: dict) -> list[str]:
    """What --check reports: untranslated, fuzzy, placeholder mismatch, stale."""
    out = []
    for msgid in found:
        e = entries.get(msgid)
        if e is None or not e["msgstr"]:
            out.append(f"untranslated: {msgid!r}")
        elif e["fuzzy"]:
            out.append(f"fuzzy: {msgid!r}")
        elif sorted(_ANY_PLACEHOLDER.findall(msgid)) != sorted(_ANY_PLACEHOLDER.findall(e["msgstr"])):
            out.append(f"placeholders differ: {msgid!r} -> {e['msgstr']!r}")
    out += [f"stale: {msgid!r}" for msgid in entries if msgid not in found]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update", action="store_true", help="rewrite the catalogue from the sources")
    ap.add_argument("--check", action="store_true", help="exit 1 on untranslated, fuzzy or stale messages")
    ap.add_argument("--list", action="store_true", help="print the extracted messages")
    ap.add_argument("--lang", default=LANG)
    ap.add_argument("--catalogue", type=Path, help="another .po file (default: locales/<lang>/LC_MESSAGES/figures.po)")
    ap.add_argument("--notebooks", nargs="*", type=Path, help="other notebooks (default: chapters/*.ipynb)")
    args = ap.parse_args(argv)
    path = args.catalogue or catalogue_path(args.lang)
    found = extract(args.notebooks)
    if args.list:
        print("\n".join(found))
    if args.update:
        old = read_catalogue(path)
        write_catalogue(path, found, old, args.lang)
        todo = sum(1 for m in found if not old.get(m, {}).get("msgstr"))
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {len(found)} messages, "
              f"{todo} to translate, {sum(1 for m in old if m not in found)} stale removed")
    if args.check:
        found_problems = problems(found, read_catalogue(path))
        for p in found_problems:
            print(p)
        print(f"{len(found)} messages, {len(found_problems)} problems")
        return 1 if found_problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
