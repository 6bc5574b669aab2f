"""Comparing plain figures (nested dicts and lists of a plotly figure's JSON): one function for the binding
tests (tests/viz/test_bindings.py) and the static panel's acceptance test (tests/browser/test_static_panel_book.py)."""
from __future__ import annotations

import math


def diff(got, want, path="", tol=None):
    """First difference between two plain figures (None if equal); numbers within tol if given."""
    if isinstance(want, bool) or isinstance(got, bool) or not isinstance(want, (int, float)) \
            or not isinstance(got, (int, float)):
        if type(got) is not type(want):
            return f"{path}: {type(got).__name__} {str(got)[:60]} vs {type(want).__name__} {str(want)[:60]}"
    if isinstance(want, dict):
        if set(got) != set(want):
            return f"{path}: keys {sorted(set(got) ^ set(want))} differ"
        for k in want:
            d = diff(got[k], want[k], f"{path}.{k}", tol)
            if d:
                return d
    elif isinstance(want, list):
        if len(got) != len(want):
            return f"{path}: length {len(got)} vs {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            d = diff(g, w, f"{path}[{i}]", tol)
            if d:
                return d
    elif isinstance(want, (int, float)) and not isinstance(want, bool) and tol is not None:
        if not math.isclose(got, want, rel_tol=0, abs_tol=tol):
            return f"{path}: {got!r} vs {want!r}"
    elif got != want:
        return f"{path}: {got!r} vs {want!r}"
    return None
