"""The small conversions every figure module and the bindings share: tensors to float64 numpy, position
labels on an axis, the symmetric colour range of a set of arrays. (They sit below ``common`` and ``binding``,
which both use them.)"""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from ..errors import TinyTFInputError


def arr(t: torch.Tensor) -> np.ndarray:
    """Tensor -> float64 numpy (exact for float32 values)."""
    return t.detach().to(torch.float64).cpu().numpy()


def axis_labels(labels: Optional[list], n: int) -> list:
    """Unique tick text per position: "0 c", "1 a", ... (token text on the axes)."""
    if labels is None:
        labels = [f"t{i}" for i in range(n)]
    if len(labels) != n:
        raise TinyTFInputError(f"got {len(labels)} labels for {n} positions")
    return [f"{i}: {lab}" for i, lab in enumerate(labels)]


def sym_range(*arrays) -> float:
    m = 0.0
    for a in arrays:
        a = np.asarray(a, dtype=float)
        f = a[np.isfinite(a)]
        if f.size:
            m = max(m, float(np.abs(f).max()))
    return m if m > 0 else 1.0
