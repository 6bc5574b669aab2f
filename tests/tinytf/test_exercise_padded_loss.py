"""tinytf.exercises, chapter 7's padded_loss: the reference passes, a float is accepted, and the typical wrong
answers fail with a report that says which one they are."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from tinytf import exercises as E


def _flat(logits, ids):
    return logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1)


def test_reference_passes_and_a_float_is_accepted():
    assert E.check("padded_loss", E.REFERENCE["padded_loss"])
    assert E.check("padded_loss", lambda logits, ids, pad: E.REFERENCE["padded_loss"](logits, ids, pad).item())


def test_counting_the_pad_targets_fails_and_is_named():
    result = E.check("padded_loss", lambda logits, ids, pad: F.cross_entropy(*_flat(logits, ids)))
    assert not result and "the loss with the pad targets counted" in result.report()


def test_averaging_per_sequence_fails_and_is_named():
    def per_sequence(logits, ids, pad):
        losses = []
        for b in range(ids.shape[0]):
            n = int((~pad[b]).sum())  # real tokens of sequence b (right padding)
            losses.append(F.cross_entropy(logits[b, : n - 1], ids[b, 1:n]))
        return torch.stack(losses).mean()

    result = E.check("padded_loss", per_sequence)
    assert not result and "each sequence weighted equally" in result.report()


def test_scoring_each_position_on_its_own_token_fails():
    def unshifted(logits, ids, pad):  # scores position t on its own token: the classic off-by-one
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids.masked_fill(pad, -100).reshape(-1),
                               ignore_index=-100)

    assert not E.check("padded_loss", unshifted)


def test_a_tensor_of_the_wrong_shape_is_reported():
    result = E.check("padded_loss", lambda logits, ids, pad: torch.zeros(2))
    assert not result and "expected []" in result.report()
