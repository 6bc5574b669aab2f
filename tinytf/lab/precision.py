"""Printing a number at the precision it supports.

Two float32 computations that are equal in exact arithmetic (a cached and a naive generation step, tinytf
and PyTorch's own block, one pass and T prefix passes) differ by rounding: a few 1e-7. Those last digits
depend on which CPU kernels torch picked, so another machine prints others. What is stable, and what the
book states, is the bound they stay under:

    >>> below(3.9e-07, 1e-5)
    '< 1e-05'

A value at or above the bound is printed in full with a warning, so the claim can never be printed
when it is false (and a notebook check comparing the printed text fails).
"""
from __future__ import annotations

import math


def below(value, bound: float) -> str:
    """'< {bound}' when abs(value) < bound; otherwise the value itself and the bound it breaks."""
    value = float(value)
    if not bound > 0:
        raise ValueError(f"below: the bound must be positive, got {bound!r}")
    if math.isfinite(value) and abs(value) < bound:
        return f"< {bound:.0e}"
    return f"{value:.2e} (NOT below {bound:.0e})"
