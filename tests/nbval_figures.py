"""nbval plugin: compare plotly figures numerically, everything else exactly.

nbval compares every output of a re-executed chapter with the committed one, as text. That is
right for printed tables, ids and booleans, but not for the numbers inside a figure: torch picks
its CPU kernels by instruction set (AVX-512, AVX2, NEON on Apple silicon, ...), so another machine
rounds the last bits of a float32 result differently, and a heatmap cell may come out as
``-0.5122`` instead of ``-0.5121``.

For every output drawn by ``tinytf.viz.show`` (its ``application/vnd.plotly.v1+json`` part: the one
representation of a figure a notebook stores, which the HTML book draws too) this plugin splits the figure
into

* a **skeleton**: every key, string, boolean, null, integer, list length, typed-array dtype and
  shape, the trace list, the frames, titles, labels, compared
  **exactly** (after nbval's sanitize patterns), and
* its **floats**, compared with a stated tolerance (:func:`close`): relative ``RTOL`` of the
  larger of the two values, plus an absolute floor of ``ATOL_OF_ARRAY`` times the largest
  magnitude of the array the value belongs to (values that are zero up to noise in a heatmap
  whose scale is 1 must not fail), or ``ATOL_SCALAR`` for a lone number.

**Measured numbers** (one mechanism with the figures): in a code cell tagged ``measured`` the printed text
(streams, ``text/plain``, ``text/html``, ``text/markdown``) is split the same way, into a skeleton (every number
replaced by ``<n>``, runs of spaces collapsed, compared exactly) and its numbers, each compared within **one unit
of its last printed digit** (``548`` vs ``549``, ``0.31`` vs ``0.32``, ``2.4e-05`` vs ``2.5e-05``) or a relative
``MEASURED_RTOL`` of its value, whichever is wider. A tag ``measured-rtol=0.02`` states a wider relative
tolerance for one cell. A measurement printed at its precision can sit on a rounding boundary, and another CPU
then prints the neighbouring value at any number of digits: that is the only thing this accepts. What names
rather than measures stays exact even there: a digit glued to the end of a name (``blocks.0``, ``x2``, ``W1``), an
integer after a label word (``block 3``, ``head 0``, ``position 27``, ``step 90``), an integer before a unit of
count (``48 layers``, ``16 bytes``) and integers inside square brackets (shapes, ids, indices).

Every other output (printed text, tables, the parameter table, the causality check, shapes, token ids, generated
text: never tag such a cell ``measured``) is left to nbval's exact comparison. The plugin is registered by the repository's top-level ``conftest.py``,
so a plain ``pytest --nbval chapters`` uses it too. ``tests/book/test_nbval_figures.py`` proves that a
1 % change of one figure value, a removed trace, a missing frame or a changed title still fail.
"""
from __future__ import annotations

import base64
import copy
import json
import math
import re

import numpy as np

RTOL = 1e-3  # figures store 4 significant digits: a rounding flip moves a value by at most 1e-3 of itself
ATOL_OF_ARRAY = 1e-4  # absolute floor, as a fraction of the largest |value| of the same array
ATOL_SCALAR = 1e-6  # absolute floor for a number that is not part of an array (layout ranges, ...)

PLOTLY_MIME = "application/vnd.plotly.v1+json"


# ----------------------------------------------------------------------------- splitting a figure
class Numbers:
    """The floats of one figure, by array: a list of (path, values) in document order."""

    def __init__(self):
        self.arrays: list[tuple[str, list]] = []

    def add(self, path: str, values):
        self.arrays.append((path, [float(v) for v in values]))


def _decode_typed_array(spec: dict) -> np.ndarray:
    dtype = np.dtype(spec["dtype"]).newbyteorder("<")
    return np.frombuffer(base64.b64decode(spec["bdata"]), dtype=dtype)


def _is_float(v) -> bool:
    return isinstance(v, float)


def split(obj, numbers: Numbers, path: str = ""):
    """obj with every float replaced by '<f>' (typed arrays by a description of dtype and shape);
    the floats go to ``numbers``, grouped by the innermost list (or typed array) that holds them."""
    if isinstance(obj, dict):
        if "bdata" in obj and "dtype" in obj:
            values = _decode_typed_array(obj)
            numbers.add(path, values.tolist())
            return {"typed-array": obj["dtype"], "shape": obj.get("shape"), "n": int(values.size)}
        # sorted: a notebook file stores keys sorted, a fresh output in insertion order
        return {k: split(obj[k], numbers, f"{path}.{k}") for k in sorted(obj)}
    if isinstance(obj, list):
        floats = [v for v in obj if _is_float(v)]
        if floats:
            numbers.add(path, floats)
        return ["<f>" if _is_float(v) else split(v, numbers, f"{path}[{i}]") for i, v in enumerate(obj)]
    if _is_float(obj):
        numbers.add(path, [obj])
        return "<f>"
    return obj  # str, int, bool, None: exact


def split_output(output: dict):
    """A copy of one notebook output whose figure is a skeleton, and the floats taken out
    ({mime: Numbers}); outputs without a figure come back unchanged with no numbers."""
    data = output.get("data") if isinstance(output, dict) else None
    if not data or PLOTLY_MIME not in data:
        return output, {}
    out = copy.copy(output)
    out["data"] = dict(data)
    nums = Numbers()
    out["data"][PLOTLY_MIME] = json.dumps(split(data[PLOTLY_MIME], nums), sort_keys=True)
    return out, {PLOTLY_MIME: nums}


# ----------------------------------------------------------------------------- comparing numbers
def close(ref: float, new: float, scale: float) -> bool:
    """|new - ref| <= RTOL * max(|ref|, |new|) + absolute floor (``scale``: the array's largest |value|)."""
    if math.isnan(ref) or math.isnan(new):
        return math.isnan(ref) and math.isnan(new)
    floor = ATOL_OF_ARRAY * scale if scale > 0 else ATOL_SCALAR
    return abs(new - ref) <= RTOL * max(abs(ref), abs(new)) + floor


def compare_numbers(ref: Numbers, new: Numbers, where: str) -> list[str]:
    """Human-readable differences beyond the tolerance (empty list: the figures agree)."""
    problems = []
    if [p for p, _ in ref.arrays] != [p for p, _ in new.arrays]:
        return [f"{where}: the figures hold numbers in different places"]
    for (path, a), (_, b) in zip(ref.arrays, new.arrays):
        if len(a) != len(b):
            problems.append(f"{where}{path}: {len(a)} numbers committed, {len(b)} computed")
            continue
        scale = max((abs(x) for x in a if not math.isnan(x)), default=0.0) if len(a) > 1 else 0.0
        bad = [i for i, (x, y) in enumerate(zip(a, b)) if not close(x, y, scale)]
        if bad:
            i = bad[0]
            problems.append(
                f"{where}{path}: {len(bad)} of {len(a)} numbers differ beyond rtol {RTOL:g} "
                f"(+ {ATOL_OF_ARRAY:g} x array scale {scale:.4g}); first at [{i}]: committed {a[i]!r}, computed {b[i]!r}")
    return problems


def compare_figure_outputs(ref_outputs: list, new_outputs: list) -> tuple[list, list, list[str]]:
    """Split both output lists; return (ref skeletons, new skeletons, number problems).
    nbval then compares the skeletons exactly; the problems are the tolerance check's verdict."""
    ref_sk, new_sk, problems = [], [], []
    ref_taken, new_taken = [], []
    for o in ref_outputs:
        s, t = split_output(o)
        ref_sk.append(s)
        ref_taken.append(t)
    for o in new_outputs:
        s, t = split_output(o)
        new_sk.append(s)
        new_taken.append(t)
    ref_figs = [t for t in ref_taken if t]
    new_figs = [t for t in new_taken if t]
    if len(ref_figs) == len(new_figs):  # otherwise nbval's skeleton comparison reports it
        for k, (r, n) in enumerate(zip(ref_figs, new_figs)):
            for mime in sorted(set(r) & set(n)):
                problems += compare_numbers(r[mime], n[mime], f"figure {k + 1} ({mime}) ")
    return ref_sk, new_sk, problems


# ----------------------------------------------------------------------------- measured numbers in text
MEASURED_TAG = "measured"
MEASURED_RTOL_TAG = "measured-rtol="
MEASURED_RTOL = 1e-3  # the default relative tolerance of a printed measurement (the figures' RTOL)
TEXT_MIMES = ("text/plain", "text/html", "text/markdown")
# a number not glued to a name: optional sign, digits with optional thousands separators, decimals, exponent
NUMBER = re.compile(r"(?<![\w.])([-+\u2212]?)((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?|\.(\d+))(?:[eE]([-+]?\d+))?")


class Printed:
    """A printed number: its value and the size of one unit of its last printed digit."""

    __slots__ = ("text", "value", "unit")

    def __init__(self, m: re.Match):
        self.text = m.group(0)
        sign = -1.0 if m.group(1) in ("-", "\u2212") else 1.0
        body = m.group(2).replace(",", "")
        decimals = len(m.group(3) or m.group(4) or "")
        exponent = int(m.group(5)) if m.group(5) is not None else 0
        self.value = sign * float(body) * 10.0 ** exponent
        self.unit = 10.0 ** (exponent - decimals)

    def __repr__(self):
        return self.text


def measured_rtol(tags) -> float | None:
    """None for a cell that is not tagged ``measured``; else its relative tolerance."""
    tags = list(tags or [])
    if MEASURED_TAG not in tags:
        return None
    rtol = MEASURED_RTOL
    for t in tags:
        if t.startswith(MEASURED_RTOL_TAG):
            rtol = max(rtol, float(t[len(MEASURED_RTOL_TAG):]))
    return rtol


# An integer that names something rather than measures it stays exact even in a measured cell: after a label
# word ("block 3", "head 0", "position 27", "step 90:"), before a unit of count ("48 layers", "16 bytes"), or
# inside square brackets (a shape, a list of ids or indices).
LABEL_BEFORE = re.compile(r"(?i)\b(?:block|head|layer|position|pos|step|token|id|seed|byte|row|column|col|query|key|"
                          r"offset|pair|group|expert|chapter)s?\s*[=:#]?\s*\(?$")
COUNT_AFTER = re.compile(r"(?i)^\s*(?:layers?|blocks?|heads?|tokens?|bytes?|positions?|steps?|seeds?|groups?|"
                         r"experts?|runs?|parameters?|params)\b")


def _names_something(text: str, m: re.Match) -> bool:
    if m.group(3) is not None or m.group(4) is not None or m.group(5) is not None:
        return False  # decimals or an exponent: a measured value
    line_start = text.rfind("\n", 0, m.start()) + 1
    before = text[line_start:m.start()]
    if before.count("[") > before.count("]"):
        return True
    return bool(LABEL_BEFORE.search(before[-24:]) or COUNT_AFTER.match(text[m.end():m.end() + 16]))


def split_text(text: str) -> tuple[str, list[Printed]]:
    """(skeleton, numbers): every measured number replaced by <n> (integers that name something stay in the
    skeleton), runs of spaces and tabs collapsed to one space (a right-aligned column shifts when a value gains a
    digit)."""
    numbers, parts, last = [], [], 0
    for m in NUMBER.finditer(text):
        if _names_something(text, m):
            continue
        numbers.append(Printed(m))
        parts += [text[last:m.start()], "<n>"]
        last = m.end()
    parts.append(text[last:])
    return re.sub(r"[ \t]+", " ", "".join(parts)), numbers


def numbers_close(a: Printed, b: Printed, rtol: float) -> bool:
    """Within one unit of the last printed digit (of either print) or rtol of the value, whichever is wider."""
    tol = max(a.unit, b.unit, rtol * max(abs(a.value), abs(b.value)))
    return abs(a.value - b.value) <= tol * (1 + 1e-9)


def split_measured_output(output: dict) -> tuple[dict, list[tuple[str, list[Printed]]]]:
    """A copy of one output whose printed text is a skeleton, and the numbers taken out, by place."""
    out = copy.copy(output)
    taken = []

    def take(where, value):
        text = "".join(value) if isinstance(value, list) else value
        if not isinstance(text, str):
            return value
        skeleton, numbers = split_text(text)
        taken.append((where, numbers))
        return skeleton

    if output.get("output_type") == "stream":
        out["text"] = take(f"stream {output.get('name')}", output.get("text", ""))
    data = output.get("data")
    if data:
        out["data"] = dict(data)
        for mime in TEXT_MIMES:
            if mime in data:
                out["data"][mime] = take(mime, data[mime])
    return out, taken


def compare_measured(ref_outputs: list, new_outputs: list, rtol: float) -> tuple[list, list, list[str]]:
    """Split the printed text of both output lists; return (ref skeletons, new skeletons, number problems)."""
    ref_sk, new_sk, ref_nums, new_nums = [], [], [], []
    for outs, sk, nums in ((ref_outputs, ref_sk, ref_nums), (new_outputs, new_sk, new_nums)):
        for o in outs:
            s, t = split_measured_output(o)
            sk.append(s)
            nums += t
    problems = []
    if [w for w, _ in ref_nums] != [w for w, _ in new_nums]:
        return ref_sk, new_sk, problems  # the skeletons differ as well: nbval reports that
    for (where, a), (_, b) in zip(ref_nums, new_nums):
        if len(a) != len(b):
            continue  # the skeletons differ (another count of <n>): nbval reports it
        bad = [(x, y) for x, y in zip(a, b) if not numbers_close(x, y, rtol)]
        if bad:
            x, y = bad[0]
            problems.append(
                f"{where}: {len(bad)} of {len(a)} measured numbers differ by more than one unit of their last "
                f"digit or rtol {rtol:g}; first: committed {x.text}, computed {y.text}")
    return ref_sk, new_sk, problems


# ----------------------------------------------------------------------------- hooking into nbval
def install():
    """Wrap nbval's IPyNbCell.compare_outputs (idempotent)."""
    from nbval.plugin import IPyNbCell

    original = IPyNbCell.compare_outputs
    if getattr(original, "_tinytf_figures", False):
        return

    def compare_outputs(self, test, ref, skip_compare=None):
        ref_sk, test_sk, problems = compare_figure_outputs(ref, test)
        rtol = measured_rtol(self.cell.metadata.get("tags"))
        if rtol is not None:
            ref_sk, test_sk, measured = compare_measured(ref_sk, test_sk, rtol)
            problems += measured
        if not original(self, test_sk, ref_sk, skip_compare):
            return False  # skeletons (or any other output) differ: nbval has written the diff
        if problems:
            self.comparison_traceback = ["Numbers differ beyond the tolerance (tests/nbval_figures.py):"]
            self.comparison_traceback += problems[:20]
            return False
        return True

    compare_outputs._tinytf_figures = True
    IPyNbCell.compare_outputs = compare_outputs


def pytest_configure(config):
    try:
        install()
    except ImportError:  # nbval not installed: nothing to hook
        pass
