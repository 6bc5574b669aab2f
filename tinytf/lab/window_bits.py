"""Bits per byte window by window, so that a small difference between two models comes with its uncertainty.

``tinytf.bits_per_byte`` returns one number over all windows. Comparing two variants of a model on the same
windows is a *paired* comparison: the per-window differences vary far less than the per-window losses, and
their mean and standard error say whether a difference of a few thousandths of a bit is real.

    a = bits_per_window(model_a, val, 64, 128)   # [64] bits per byte, one per window
    b = bits_per_window(model_b, val, 64, 128)
    d = paired_difference(b, a)                  # Spread of b - a over windows; d.mean, d.sem
    print(paired_table({"b": paired_stats(b, a)}))  # median, IQR, mean, windows worse, sign test p
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..errors import TinyTFInputError
from .head_stats import Spread, spread
from .precision import below
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


def paired_stats(b: torch.Tensor, ref: torch.Tensor) -> dict:
    """A paired comparison of ``b`` against ``ref``, window by window, in the form ``paired_table`` prints:
    ``d`` the [n] float64 differences b - ref, ``q1``/``q3`` their quartiles, ``worse`` the windows where b is
    higher, and ``p`` the two-sided sign test's p: the chance of a split between worse and better windows at least
    this uneven if both were equally likely (windows with no change left out)."""
    b, ref = torch.as_tensor(b), torch.as_tensor(ref)
    if b.shape != ref.shape or b.dim() != 1 or not len(b):
        raise TinyTFInputError(f"paired_stats: need two non-empty 1-D tensors of the same length, got "
                               f"{list(b.shape)} and {list(ref.shape)}")
    d = (b - ref).double()  # [n]: one paired difference per window
    q1, q3 = torch.quantile(d, torch.tensor([0.25, 0.75], dtype=d.dtype)).tolist()
    n, worse = int((d != 0).sum()), int((d > 0).sum())  # windows that changed, windows made worse
    p = min(1.0, 2 * sum(math.comb(n, k) for k in range(max(worse, n - worse), n + 1)) / 2**n)
    return dict(d=d, q1=q1, q3=q3, worse=worse, p=p)


def format_means(per_window: dict, name_width: int = 33) -> str:
    """Plain text, one row per ``{variant: [n] bits per byte}``: the mean over the windows and its standard error,
    each at the precision it supports (the standard error to one significant figure, the mean to the same decimal
    place: 0.07 gives two decimals, 0.2 one; never fewer than whole units), then a uniform guess's 8."""
    lines = [f"{'variant':{name_width}} {'bits per byte':>13} {'standard error':>15}"]
    for name, b in per_window.items():
        s = spread(b)  # mean over the windows; s.sem its standard error
        se_place = -math.floor(math.log10(s.sem))  # the standard error to one significant figure
        dec = max(0, se_place)  # the mean to the standard error's decimal place
        lines.append(f"{name:{name_width}} {s.mean:13.{dec}f} {round(s.sem, se_place):15.{max(0, se_place)}f}")
    lines.append(f"{'uniform guess over 256 bytes':{name_width}} {math.log2(256):13.0f}")
    return "\n".join(lines)


def paired_table(rows: dict, name_width: int = 33) -> str:
    """Plain text, one row per ``{variant: dict(d=[n] paired differences, q1=, q3=, worse=, p=)}``: the median,
    the interquartile range, the mean, the windows made worse and the sign test's p. Fewer decimals for larger
    changes (3 under 1, 1 under 100, else 0); a p under 1e-3 is printed as the bound it is under. With
    ``name_width`` 18 a row is 78 characters wide."""
    lines = [f"{'variant':{name_width}} {'median':>7} {'IQR (25% to 75%)':>16} {'mean':>7} {'windows worse':>13} "
             f"{'sign test p':>12}"]
    for name, r in rows.items():
        d = r["d"]
        dec = 3 if d.median().abs() < 1 else 1 if d.median().abs() < 100 else 0
        p_text = f"{r['p']:.2g}" if r["p"] >= 1e-3 else below(r["p"], 1e-9)
        iqr = f"{r['q1']:+.{dec}f} to {r['q3']:+.{dec}f}"
        lines.append(f"{name:{name_width}} {float(d.median()):+7.{dec}f} {iqr:>16} {float(d.mean()):+7.{dec}f}"
                     f" {str(r['worse']) + ' of ' + str(len(d)):>13} {p_text:>12}")
    return "\n".join(lines)
