"""Looking at what a decoding strategy produced (the generation chapter).

* ``entropy_bits(probs)``: how spread a next-token distribution is, in bits;
* ``repetition_period(ids)`` and ``longest_repeat(text)``: greedy decoding's loops, found by measurement;
* ``logit_lead(logits)``, ``nucleus_margin(logits, p)`` and ``Jittered(model, scale, seed)``: how far a greedy
  or sampled choice is from a tie. Another CPU rounds the logits' last bits differently; a choice whose lead
  (or whose distance to a top-p boundary) is far above float32 rounding, and that survives a perturbation of
  every logit, comes out the same on every machine.
"""
from __future__ import annotations

import torch
from torch import nn

from ..errors import TinyTFInputError


def entropy_bits(probs) -> float:
    """Entropy of one probability vector [V], in bits (0 for a certain choice, log2 V for a uniform one)."""
    p = torch.as_tensor(probs).double().flatten()
    if p.numel() == 0 or (p < 0).any() or abs(p.sum().item() - 1) > 1e-3:
        raise TinyTFInputError("entropy_bits needs one probability vector (non-negative, summing to 1)")
    p = p[p > 0]
    return -(p * p.log2()).sum().item()


def repetition_period(ids, min_repeats: int = 3):
    """(p, start): the shortest period p such that the last ``min_repeats * p`` ids repeat with period p, and
    the position where that cycle begins (going back as far as it holds); (None, None) when the end of
    ``ids`` is not periodic."""
    ids = [int(i) for i in ids]
    if min_repeats < 2:
        raise TinyTFInputError(f"repetition_period: min_repeats must be at least 2, got {min_repeats}")
    for p in range(1, len(ids) // min_repeats + 1):
        tail = ids[-p * min_repeats:]
        if all(tail[i] == tail[i + p] for i in range(len(tail) - p)):
            start = len(ids) - p * min_repeats
            while start > 0 and ids[start - 1] == ids[start - 1 + p]:
                start -= 1
            return p, start
    return None, None


def longest_repeat(text: str):
    """(substring, first, second): the longest substring that occurs twice without overlapping, and where."""
    best = ("", -1, -1)
    for i in range(len(text)):
        for j in range(i + 1, len(text)):
            n = 0
            while j + n < len(text) and i + n < j and text[i + n] == text[j + n]:
                n += 1
            if n > len(best[0]):
                best = (text[i:i + n], i, j)
    return best


def logit_lead(logits) -> float:
    """How far the best logit is ahead of the second best ([V] or [1, V])."""
    row = torch.as_tensor(logits).reshape(-1)
    best, second = torch.topk(row, 2).values
    return (best - second).item()


def nucleus_margin(logits, p: float = 0.9) -> float:
    """Distance, in probability, from ``p`` to the nearest cumulative probability of the sorted distribution
    ([V] or [1, V]): how far the top-p cut is from including one more or one fewer token."""
    probs = torch.softmax(torch.as_tensor(logits).reshape(-1).double(), -1).sort(descending=True).values
    return (probs.cumsum(0) - p).abs().min().item()


class Jittered(nn.Module):
    """``model`` whose logits get Gaussian noise of size ``scale`` (from its own generator, seeded): generating
    with it and with ``model`` gives the same text when no choice is within ``scale`` of a tie."""

    def __init__(self, model, scale: float, seed: int):
        super().__init__()
        self.model, self.scale = model, scale
        self.generator = torch.Generator().manual_seed(seed)
        self.config = model.config

    def new_cache(self):
        return self.model.new_cache()

    def forward(self, ids, cache=None):
        out = self.model(ids, cache=cache)
        return out + self.scale * torch.randn(out.shape, generator=self.generator)
