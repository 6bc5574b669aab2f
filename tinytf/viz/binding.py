"""Figure bindings: which trace output, reduced how, fills which part of a figure.

A view computes every number that comes from the trace (or every label that comes from the
tokens) as a ``Bound``: the numpy / Python value *and* a recipe, a small JSON list that says how
to compute the same value again from the model's outputs, e.g.
``["mean", ["index", ["out", "blocks.0.attn.weights"], [0]], 0]``. ``make_figure`` puts the values
into the figure and records ``(path, recipe)`` for each (``bindings_of(fig)``). The recipes are
evaluated by one table of operations (``OPS``, below); the browser's copy of that table is
``_static/tinytf-bind.js``, which recomputes a figure from the ONNX outputs for new tokens.
Everything else in a figure (geometry, titles, which cells a causal mask blanks) depends only on
the number of tokens and is kept as a template per length (``tinytf.viz.templates``).

Recipe operations (each gives the value type the views used before, so a figure's JSON is
unchanged):

* ``["out", name]``: the trace entry ``name`` as float64 (its float32 values);
  ``["labels"]``: the token labels; ``["axis_labels", l]``: ``"i: label"`` per label;
  ``["const", v]``: ``v``
* ``["index", x, [i, j, ...]]``: ``x[i, j, ...]`` (integers only)
* ``["mean", x, axis]``, ``["norm", x, axis]`` (L2), ``["all", x, axis]``
* ``["isneginf", x]``, ``["not", x]``, ``["neg", x]``, ``["affine", x, s, k, o]`` (``o + (x + s) * k``)
* ``["where", m, a, b]``: ``np.where(m, a, b)``; a or b a number, or null for NaN
* ``["frac_eq", x, c]``: the share of entries equal to c, in float32 as ``torch.mean`` gives it;
  ``["frac_abs_lt", x, c]``: the share with absolute value below c (compared in float32);
  ``["frac_abs_lt_rms", x, c]``: the share with absolute value below c times the root-mean-square of all of x
* ``["symrange", [x, ...]]``: ``sym_range``, the largest finite absolute value (1 if none)
* ``["nonzero", x, k]``: coordinate k of ``np.nonzero(x)`` (C order); ``["select", x, m]``: ``x[m]``
* ``["take", l, idx]``, ``["item", l, i]``, ``["tolist", x]``, ``["list", [a, ...]]``,
  ``["concat", [l, ...]]``, ``["repeat", l, n]``: lists
* ``["format", fmt, [a, ...]]``: ``fmt.format(...)`` element-wise; only the fields ``{}``
  (strings), ``{:.Nf}`` and ``{:.N%}``
* ``["softmax", x, axis]`` (float64, the maximum subtracted first), ``["max", x, axis]``,
  ``["argmax", x, axis]`` (the first index of the maximum): along one axis
* ``["slice", x, axis, start, stop]``: Python's ``start:stop`` along ``axis`` (negative and null bounds as
  Python has them; a list: axis 0)
* ``["lookup", table, idx]``: ``table[i]`` for every integer i of ``idx`` (nested lists, e.g. byte labels);
  ``["relabel", l, {old: new}]``: each string of a list, replaced where the mapping has it;
  ``["fill", l, v]``: a list of ``v`` as long as ``l``
* ``["len", l]``: the length of a list (of an array: its first axis); ``["at_most", x, c, a, b]``: ``a`` if the
  number x <= c, else ``b`` (e.g. a heatmap's gaps from its number of rows)
"""
from __future__ import annotations

import re
from typing import Optional

import numpy as np

from ..errors import TinyTFInputError
from .arrays import arr, axis_labels, sym_range


class Bound:
    """A value read from the trace (or the tokens) together with the recipe that recomputes it."""

    __slots__ = ("value", "recipe")

    def __init__(self, value, recipe):
        self.value = value
        self.recipe = recipe

    @property
    def shape(self):
        return np.shape(self.value)

    def __len__(self):
        return len(self.value)

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        if not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in idx):
            raise TypeError(f"a Bound is indexed by integers only; got {idx!r}")
        return op("index", self, [int(i) for i in idx])

    def mean(self, axis: int):
        return op("mean", self, axis)

    def all(self, axis: int):
        return op("all", self, axis)

    def __neg__(self):
        return op("neg", self)

    def __repr__(self):
        return f"Bound({self.recipe!r})"


# ---- the operations: one definition, used to build a figure and to apply a template ----
FIELD = re.compile(r"\{(:\.(\d+)([f%]))?\}")


def _where(m, a, b):
    return np.where(m, np.nan if a is None else a, np.nan if b is None else b)


def _frac_below_rms(x, c) -> float:
    """Share of entries with |x| < c * RMS(x), the RMS over all entries (summed in float64, compared in float32)."""
    x = np.asarray(x, dtype=np.float32)
    rms = np.sqrt(np.mean(np.square(x.astype(np.float64)))) if x.size else 0.0
    return _frac(np.abs(x) < np.float32(c * rms))


def _frac(mask) -> float:
    """Share of True entries, as torch's float32 mean gives it (an exact count divided in float32)."""
    mask = np.asarray(mask)
    return float(np.float32(np.count_nonzero(mask)) / np.float32(mask.size))


def _softmax(x, axis: int):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _slice(x, axis: int, start, stop):
    if isinstance(x, list):
        if axis != 0:
            raise ValueError(f"slice: a list has one axis (0); got axis {axis}")
        return x[start:stop]
    x = np.asarray(x)
    idx = [slice(None)] * x.ndim
    idx[axis] = slice(start, stop)
    return x[tuple(idx)]


def _lookup(table, idx):
    return np.asarray(table, dtype=object)[np.asarray(idx, dtype=np.int64)].tolist()


def _format(fmt: str, args: list):
    lists = [a for a in args if isinstance(a, (list, np.ndarray))]
    if not lists:
        return fmt.format(*args)
    n = len(lists[0])
    if any(len(a) != n for a in lists):
        raise ValueError(f"format {fmt!r}: the lists have different lengths")
    rows = zip(*[a if isinstance(a, (list, np.ndarray)) else [a] * n for a in args])
    return [fmt.format(*row) for row in rows]


OPS = {
    "axis_labels": lambda labels: [f"{i}: {lab}" for i, lab in enumerate(labels)],
    "index": lambda x, idx: x[tuple(idx)],
    "mean": lambda x, axis: x.mean(axis),
    "norm": lambda x, axis: np.linalg.norm(x, axis=axis),
    "all": lambda x, axis: x.all(axis),
    "isneginf": np.isneginf,
    "not": np.logical_not,
    "where": _where,
    "frac_eq": lambda x, c: _frac(np.asarray(x) == c),
    "frac_abs_lt": lambda x, c: _frac(np.abs(np.asarray(x, dtype=np.float32)) < np.float32(c)),
    "frac_abs_lt_rms": lambda x, c: _frac_below_rms(x, c),
    "symrange": lambda xs: sym_range(*xs),
    "neg": lambda x: -x,
    "affine": lambda x, shift, scale, offset: offset + (x + shift) * scale,
    "nonzero": lambda x, k: np.nonzero(x)[k],
    "select": lambda x, m: x[m],
    "take": lambda lst, idx: [lst[int(i)] for i in idx],
    "item": lambda lst, i: lst[i],
    "tolist": lambda x: np.asarray(x).tolist(),
    "list": lambda xs: list(xs),
    "concat": lambda ls: [v for lst in ls for v in lst],
    "repeat": lambda lst, n: list(lst) * n,
    "format": _format,
    "softmax": _softmax,
    "max": lambda x, axis: np.max(x, axis=axis),
    "argmax": lambda x, axis: np.argmax(x, axis=axis),
    "slice": _slice,
    "lookup": _lookup,
    "relabel": lambda lst, mapping: [mapping.get(v, v) for v in lst],
    "fill": lambda lst, v: [v] * len(lst),
    "len": lambda lst: len(lst),
    "at_most": lambda x, c, a, b: a if x <= c else b,
}
LEAVES = ("out", "labels", "const")


def is_recipe(x) -> bool:
    return isinstance(x, list) and bool(x) and isinstance(x[0], str)


def op(name: str, *args) -> Bound:
    """Apply operation ``name`` to Bound values / constants: the value now, the recipe for later."""
    if name == "format":
        _check_format(args[0], args[1])
    values = [_value(a) for a in args]
    return Bound(OPS[name](*values), [name, *[_recipe(a) for a in args]])


def _value(a):
    if isinstance(a, Bound):
        return a.value
    if isinstance(a, (list, tuple)):
        return [_value(v) for v in a]
    return a


def _recipe(a):
    if isinstance(a, Bound):
        return a.recipe
    if isinstance(a, (list, tuple)):
        out = [_recipe(v) for v in a]
        if out and isinstance(out[0], str):  # a list starting with a string must not read as a recipe
            if not any(isinstance(v, Bound) for v in a):
                return ["const", out]
            out[0] = ["const", out[0]]
        return out
    if isinstance(a, (np.integer, np.floating)):
        return a.item()
    return a


def _check_format(fmt: str, args) -> None:
    fields = FIELD.findall(fmt)
    rest = FIELD.sub("", fmt)
    if "{" in rest or "}" in rest or len(fields) != len(args):
        raise ValueError(f"format {fmt!r}: only {{}}, {{:.Nf}} and {{:.N%}} fields, one per argument")
    for (spec, _, _), a in zip(fields, args):
        v = _value(a)
        first = v[0] if isinstance(v, (list, np.ndarray)) and len(v) else v
        if not spec and not isinstance(first, str) and not (isinstance(v, list) and not v):
            raise ValueError(f"format {fmt!r}: a {{}} field takes strings (labels); use {{:.Nf}} for numbers")


# ---- sources ----
def source(trace, name: str) -> Bound:
    """Trace entry ``name`` as float64 numpy, bound to the model output of that name."""
    return Bound(arr(trace[name]), ["out", name])


def token_axis_labels(labels: Optional[list], n: int) -> Bound:
    """``axis_labels(labels, n)`` bound to the tokens' labels (``"0: c"``, ``"1: a"``, ...)."""
    return Bound(axis_labels(labels, n), ["axis_labels", ["labels"]])


def token_labels_of(axis: Bound) -> Bound:
    """The plain labels behind ``token_axis_labels`` (``"c"`` for ``"0: c"``)."""
    return Bound([lab.split(": ", 1)[1] for lab in axis.value], ["labels"])


# ---- evaluating a recipe (the Python reference for _static/tinytf-bind.js) ----
def evaluate(recipe, outputs: dict, labels: list):
    """Value of ``recipe`` for model ``outputs`` ({name: array}) and token ``labels``."""
    if not is_recipe(recipe):
        if isinstance(recipe, list):
            return [evaluate(r, outputs, labels) for r in recipe]
        return recipe
    name, args = recipe[0], recipe[1:]
    if name == "out":
        if args[0] not in outputs:
            raise TinyTFInputError(f"the model outputs have no {args[0]!r} (the figure needs it)")
        return np.asarray(outputs[args[0]], dtype=np.float32).astype(np.float64)
    if name == "labels":
        return list(labels)
    if name == "const":
        return args[0]
    if name not in OPS:
        raise ValueError(f"unknown binding operation {name!r}")
    return OPS[name](*[evaluate(a, outputs, labels) for a in args])


def recipe_outputs(recipe, found: Optional[set] = None) -> set:
    """The model output names a recipe reads."""
    found = set() if found is None else found
    if is_recipe(recipe) and recipe[0] == "out":
        found.add(recipe[1])
    elif isinstance(recipe, list) and not (is_recipe(recipe) and recipe[0] == "const"):
        for r in recipe:
            recipe_outputs(r, found)
    return found


# ---- figures ----
def resolve(obj, path: list, bindings: list):
    """``obj`` with every Bound replaced by its value (containers copied only where one is found);
    appends ``(path, recipe)`` to ``bindings`` for each."""
    if isinstance(obj, Bound):
        bindings.append((list(path), obj.recipe))
        return obj.value
    if isinstance(obj, (dict, list)):
        out = None
        for k, v in (obj.items() if isinstance(obj, dict) else enumerate(obj)):
            if isinstance(v, (dict, list, Bound)):
                path.append(k)
                r = resolve(v, path, bindings)
                path.pop()
                if r is not v:
                    out = type(obj)(obj) if out is None else out  # a copy, only where a Bound is found
                    out[k] = r
        return obj if out is None else out
    return obj


def bindings_of(fig) -> list:
    """[(path, recipe)] recorded for a figure built by the views (a go.Figure or a FigureSpec);
    a path is a list of keys from the figure's {data, layout, frames} dict."""
    found = getattr(fig, "bindings", None)
    if found is None:
        found = getattr(fig, "_tinytf_bindings", None)
    if found is None:
        raise TinyTFInputError("this figure carries no bindings (it was not built by a tinytf.viz view)")
    return found
