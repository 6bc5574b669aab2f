"""Does a model use the order of its input bytes? (chapter 1, section 1.4)

Two texts made of the same bytes in another order, ending in the same byte: a single causal attention layer
without positions gives the last position the same output for both, so its next-byte prediction cannot differ.
``pair_distances`` measures, for each such pair, how much next-byte probability moves between the two texts:

    tvs = pair_distances(model, [("a dusty", "a study"), ("the tale", "the late")])   # one float per pair

The distance is the total-variation distance 1/2 sum_i |p_i - r_i|: 0 for the same prediction, 1 when the two
predictions share nothing.

The untrained measurements of section 1.4 and exercise 1 of the chapter 1 lab notes use the rest of this module:
``relative_change`` (the section's one yardstick, ||new - old|| / ||old||), ``unrelated_input_change``
(the same for an unrelated random input, for scale), ``over_seeds`` (a measurement
repeated on seeds 1 to 10, printed as 'median [min to max]'), ``sentence_gap`` (how much a fresh one-block
model's next-token scores differ between two sentences) and ``sentence_changes`` (the same difference followed
step by step through the block).
"""
from __future__ import annotations

import torch

from ..config import TinyConfig
from ..errors import TinyTFInputError
from ..models import TinyTransformer
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


def relative_change(new: torch.Tensor, old: torch.Tensor) -> float:
    """||new - old|| / ||old||: how much ``new`` differs from ``old``, relative to the length of ``old``."""
    if new.shape != old.shape:
        raise TinyTFInputError(f"relative_change: expected two tensors of the same shape, got "
                               f"{list(new.shape)} and {list(old.shape)}")
    old_norm = old.norm()
    if old_norm == 0:
        raise TinyTFInputError("relative_change: the reference tensor `old` is all zeros")
    return float((new - old).norm() / old_norm)


def unrelated_input_change(layer, x: torch.Tensor, seed: int = 100) -> float:
    """For scale: ``relative_change`` of ``layer``'s output when ``x`` is replaced by an unrelated random input
    of the same shape, drawn from N(0, 1) after ``torch.manual_seed(seed)``. The caller's random stream is
    restored afterwards."""
    if not torch.is_tensor(x):
        raise TinyTFInputError(f"unrelated_input_change: x must be a tensor, got {type(x).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TinyTFInputError(f"unrelated_input_change: seed must be an int, got {seed!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        with torch.no_grad():
            out, out_other = layer(x), layer(torch.randn(x.shape))
    return relative_change(out_other, out)


def median_range(values, fmt: str = "#.3g") -> str:
    """'median [min to max]' of ``values``, each printed with the format ``fmt`` (3 significant digits, trailing
    zeros kept, so 3.20e-05 and 2.24e-05 sit side by side; a bare trailing point is dropped)."""
    values = torch.tensor([float(v) for v in values])
    if values.numel() == 0:
        raise TinyTFInputError("median_range: expected at least one value")

    def show(v):
        return f"{v:{fmt}}".rstrip(".")

    return f"median {show(values.quantile(0.5))} [{show(values.min())} to {show(values.max())}]"


def over_seeds(measure, seeds=range(1, 11)) -> str:
    """``measure()`` once per seed, each time after ``torch.manual_seed(seed)``, so on fresh random weights and
    inputs: 'median [min to max]'. The caller's random stream is restored afterwards."""
    if not callable(measure):
        raise TinyTFInputError(f"over_seeds: expected a function of no arguments, got {type(measure).__name__}")
    seeds = list(seeds)
    if not seeds:
        raise TinyTFInputError("over_seeds: expected at least one seed")
    with torch.random.fork_rng(devices=[]):
        values = []
        for seed in seeds:
            torch.manual_seed(seed)
            values.append(measure())
    return median_range(values)


def _swap_pair(first, second) -> tuple[torch.Tensor, torch.Tensor]:
    """Two texts (or id tensors) with the same bytes in another order and the same last byte, as ids."""
    a = encode(first) if isinstance(first, str) else torch.as_tensor(first)
    b = encode(second) if isinstance(second, str) else torch.as_tensor(second)
    if a.dim() != 1 or a.shape != b.shape:
        raise TinyTFInputError(f"expected two sequences of ids [T] of the same length, got shapes "
                               f"{list(a.shape)} and {list(b.shape)}")
    if sorted(a.tolist()) != sorted(b.tolist()) or a[-1] != b[-1]:
        raise TinyTFInputError("expected the same bytes in another order, ending in the same byte")
    return a, b


def sentence_gap(pos: str, first="dog bites man.", second="man bites dog.") -> float:
    """A fresh one-block model with position scheme ``pos`` (drawn from the current random stream): the relative
    change of its next-token scores after ``second`` against those after ``first``."""
    a, b = _swap_pair(first, second)
    fresh = TinyTransformer(TinyConfig(n_layers=1, pos=pos))
    with torch.no_grad():
        return relative_change(fresh(b)[-1], fresh(a)[-1])


def sentence_changes(block_model, first="dog bites man.", second="man bites dog.", show_table: bool = True):
    """``second`` against ``first``, step by step through the single block of ``block_model``: the norm of the
    tensor for ``first``, the norm of the change, and their ratio (the relative change). Last position, except
    the first row (the attention input at the positions where the two texts differ).
    Prints the table (unless ``show_table`` is False); returns the trace of ``first`` and {row: relative change}."""
    if len(getattr(block_model, "blocks", ())) != 1:
        raise TinyTFInputError("sentence_changes: expected a model with exactly one block")
    a, b = _swap_pair(first, second)
    with torch.no_grad():
        logits_a, ta = block_model.run_with_trace(a)
        logits_b, tb = block_model.run_with_trace(b)
    swapped = a != b  # [T]: the positions where the two texts differ
    rows = [("attention input, swapped", ta["blocks.0.norm1.out"][0, swapped], tb["blocks.0.norm1.out"][0, swapped])]
    rows += [(name, ta[key][0, -1], tb[key][0, -1]) for name, key in (
        ("stream entering the block", "blocks.0.resid_pre"),
        ("attention output", "blocks.0.attn.out"),
        ("stream after the add", "blocks.0.resid_mid"))]
    vocab = logits_a.shape[-1]
    rows.append(("next-token scores", logits_a.reshape(-1, vocab)[-1], logits_b.reshape(-1, vocab)[-1]))  # [V]
    if show_table:
        print(f"{'':26} {'norm':>6} {'change':>8} {'relative':>9}")
        for name, in_a, in_b in rows:
            print(f"{name:26} {in_a.norm():6.3f} {(in_b - in_a).norm():8.2g} {relative_change(in_b, in_a):9.2g}")
    return ta, {name: relative_change(in_b, in_a) for name, in_a, in_b in rows}
