"""Does a model use the order of its input bytes? (chapter 1, section 1.4)

Two texts made of the same bytes in another order, ending in the same byte: a single causal attention layer
without positions gives the last position the same output for both, so its next-byte prediction cannot differ.
``pair_distances`` measures, for each such pair, how much next-byte probability moves between the two texts:

    tvs = pair_distances(model, [("a dusty", "a study"), ("the tale", "the late")])   # one float per pair

The distance is the total-variation distance 1/2 sum_i |p_i - r_i|: 0 for the same prediction, 1 when the two
predictions share nothing.
"""
from __future__ import annotations

import torch

from ..errors import TinyTFInputError
from ..tokens import encode


def next_byte(model, text: str) -> torch.Tensor:
    """``model``'s probabilities for the byte after ``text``: [vocab_size]."""
    with torch.no_grad():
        return torch.softmax(model(encode(text))[-1], dim=-1)


def tv_distance(p: torch.Tensor, r: torch.Tensor) -> float:
    """The share of probability that moves from ``p`` to ``r``: 1/2 sum_i |p_i - r_i|."""
    if p.shape != r.shape:
        raise TinyTFInputError(f"tv_distance: expected two distributions of the same shape, got "
                               f"{list(p.shape)} and {list(r.shape)}")
    return float((p - r).abs().sum() / 2)


def check_pair(first: str, second: str, same_last_byte: bool = True) -> None:
    """Raise TinyTFInputError unless the two texts hold the same bytes in another order (and, with
    ``same_last_byte``, end in the same byte)."""
    a, b = encode(first).tolist(), encode(second).tolist()
    if sorted(a) != sorted(b) or a == b:
        raise TinyTFInputError(f"order pair {first!r} / {second!r}: expected the same bytes in another order")
    if same_last_byte and a[-1] != b[-1]:
        raise TinyTFInputError(f"order pair {first!r} / {second!r}: expected the same last byte "
                               f"({chr(a[-1])!r} against {chr(b[-1])!r})")


def pair_distances(model, pairs, same_last_byte: bool = True) -> list[float]:
    """For each (first, second) pair: the total-variation distance between ``model``'s next-byte
    predictions after the two texts. Every pair is checked with :func:`check_pair` first."""
    pairs = list(pairs)
    if not pairs:
        raise TinyTFInputError("pair_distances: expected at least one (first, second) pair")
    for pair in pairs:
        if len(pair) != 2:
            raise TinyTFInputError(f"pair_distances: expected (first, second) pairs, got {pair!r}")
        check_pair(*pair, same_last_byte=same_last_byte)
    return [tv_distance(next_byte(model, first), next_byte(model, second)) for first, second in pairs]
