"""Hook points: named identity modules that let a forward pass be observed.

Every intermediate tensor of a forward pass goes through a ``Hook``. A hook does
nothing unless a trace is being recorded (see ``tracing.py``); then it stores its
input under its name. The name is the module path with the ``hook_`` prefix
dropped, e.g. ``blocks.0.attn.hook_weights`` is recorded as ``blocks.0.attn.weights``
(TransformerLens uses the same idea). The math has a single code path.
"""
from __future__ import annotations

from torch import nn


def _copy(x):
    """A detached copy of a tensor, or of each tensor of a NamedTuple (e.g. tinytf.moe.RouterTopK)."""
    if isinstance(x, tuple) and hasattr(x, "_make"):
        return x._make(t.detach().clone() for t in x)
    return x.detach().clone()


class Hook(nn.Module):
    def __init__(self):
        super().__init__()
        self.key = None  # set by tracing.name_hooks
        self.store = None  # dict while recording, else None
        self.patch = None  # optional function tensor -> tensor (interventions)
        self.detach = True

    def forward(self, x):
        if self.patch is not None:
            x = self.patch(x)
        if self.store is not None:
            self.store[self.key] = _copy(x) if self.detach else x
        return x

    def extra_repr(self):
        return f"key={self.key!r}"
