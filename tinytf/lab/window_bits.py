"""Bits per byte window by window, so that a small difference between two models comes with its uncertainty.

``tinytf.bits_per_byte`` returns one number over all windows. Comparing two variants of a model on the same
windows is a *paired* comparison: the per-window differences vary far less than the per-window losses, and
their mean and standard error say whether a difference of a few thousandths of a bit is real.

    a = bits_per_window(model_a, val, 64, 128)   # [64] bits per byte, one per window
    b = bits_per_window(model_b, val, 64, 128)
    d = paired_difference(b, a)                  # Spread of b - a over windows; d.mean, d.sem
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..errors import TinyTFInputError
from .head_stats import Spread, spread
from .textdata import eval_windows


@torch.no_grad()
def bits_per_window(model, data: torch.Tensor, n_windows: int = 64, seq_len: int = 128,
                    batch_size: int = 32) -> torch.Tensor:
    """[n] float64: the mean cross-entropy in bits per byte of each of the ``eval_windows(data, n_windows,
    seq_len)`` windows (the same windows ``tinytf.bits_per_byte`` uses; their mean is its result)."""
    inputs, targets = eval_windows(data, n_windows, seq_len)
    was_training = model.training
    model.eval()
    out = []
    for i in range(0, len(inputs), batch_size):
        logits = model(inputs[i:i + batch_size])
        nll = F.cross_entropy(logits.transpose(1, 2), targets[i:i + batch_size], reduction="none")  # [b, T]
        out.append(nll.double().mean(-1) / math.log(2))
    model.train(was_training)
    return torch.cat(out)


def paired_difference(b: torch.Tensor, a: torch.Tensor) -> Spread:
    """The ``Spread`` (mean, std, n; ``.sem`` the standard error) of ``b - a`` window by window."""
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    if a.shape != b.shape or a.dim() != 1:
        raise TinyTFInputError(f"paired_difference: need two 1-D tensors of the same length, got "
                               f"{list(a.shape)} and {list(b.shape)}")
    return spread(b - a)
