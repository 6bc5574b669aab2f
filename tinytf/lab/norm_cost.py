"""What one call of a norm costs, counted rather than timed (chapter 3).

``count_ops(fn, x)`` runs ``fn(x)`` once under a ``TorchDispatchMode`` and lists every ATen operator it
dispatches, with the number of elements it reads and writes. An operator that reads or writes a tensor as
large as ``x`` is one *pass over the data*: in an implementation that runs one operator at a time, each such
pass moves the whole activation through memory, while a fused kernel reads ``x`` once and writes the output
once whatever the formula. Counts depend only on the code and the installed torch, not on the machine.

    ops = count_ops(tinytf.RMSNorm(128), torch.randn(4, 16, 128))
    summary(ops, x.numel())    # {"operators": ..., "full_passes": ..., ...}
"""
from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from ..errors import TinyTFInputError

_SKIP = ("aten::detach", "aten::alias", "aten::view", "aten::_unsafe_view", "aten::expand", "aten::t")


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = "aten::" + func.__name__.split(".")[0]
        if name not in _SKIP:
            ins = [t.numel() for t in tree_flatten((args, kwargs or {}))[0] if isinstance(t, torch.Tensor)]
            outs = [t.numel() for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            self.ops.append({"op": name, "read": max(ins, default=0), "written": max(outs, default=0)})
        return out


@torch.no_grad()
def count_ops(fn, x: torch.Tensor) -> list:
    """The ATen operators ``fn(x)`` dispatches, in order: dicts {op, read, written} (the largest tensor each
    reads and writes, in elements). Views and detaches are left out (they move no data)."""
    if not isinstance(x, torch.Tensor):
        raise TinyTFInputError(f"count_ops: x must be a tensor, got {type(x).__name__}")
    rec = _Recorder()
    with rec:
        fn(x)
    return rec.ops


def summary(ops: list, n: int) -> dict:
    """{operators, full_passes (operators that read or write n or more elements), reductions (operators that
    read n elements and write fewer), names (the operators' short names, in order)}."""
    full = [o for o in ops if max(o["read"], o["written"]) >= n]
    return {"operators": len(ops), "full_passes": len(full),
            "reductions": sum(1 for o in full if o["written"] < n),
            "names": [o["op"].removeprefix("aten::") for o in ops]}
