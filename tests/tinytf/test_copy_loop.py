"""tinytf.lab.copy_loop: chapter 7's training loop as a function, and the runs chapter 7 loads."""
import math

import pytest
import torch
import torch.nn.functional as F

import tinytf
from tinytf.errors import TinyTFInputError
from tinytf.lab.copy_loop import HALFWAY, copy_eval, grad_pileup, leaves_plateau, recorded_runs, train_copy


def test_train_copy_is_the_chapter_loop():
    """Three steps of train_copy(seed) equal the loop written out as in section 7.7 (same weights, same batches)."""
    torch.set_num_threads(1)
    _, losses = train_copy(seed=3, steps=3)
    tinytf.seed_everything(3)
    model = tinytf.TinyTransformer()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    data = torch.Generator().manual_seed(3)
    expected = []
    for _ in range(3):
        x, y, _ = tinytf.tasks.induction_batch(32, 8, data)
        loss = F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        expected.append(loss.item())
    assert losses == pytest.approx(expected, abs=1e-6)


def test_no_zero_grad_and_varying_lengths_differ_from_the_plain_loop():
    _, plain = train_copy(seed=0, steps=3)
    _, piled = train_copy(seed=0, steps=3, zero_grad=False)
    _, varying = train_copy(seed=0, steps=3, min_length=4, max_length=12)
    assert plain[0] == pytest.approx(piled[0]) and plain[2] != pytest.approx(piled[2], abs=1e-4)
    assert len(varying) == 3 and all(math.isfinite(x) for x in varying)


def test_copy_eval_and_leaves_plateau():
    model, _ = train_copy(seed=0, steps=1)
    out = copy_eval(model, (4, 8), n=8)
    assert set(out) == {4, 8} and all(len(v) == 2 for v in out.values())
    assert leaves_plateau([5.5, 3.3, 2.0, 1.7]) == 2 and leaves_plateau([5.5, 3.3]) is None
    assert HALFWAY == pytest.approx(0.75 * math.log(26))


def test_grad_pileup_is_exercise_6_at_that_step():
    """grad_pileup(step) scores batch `step` of the no-zero_grad loop at that loop's weights: its loss is the
    loop's loss at `step`; the sum holds the earlier gradients too, so it is larger than the fresh one here."""
    torch.set_num_threads(1)
    _, piled = train_copy(seed=0, steps=4, zero_grad=False)
    out = grad_pileup(step=3, seed=0)
    assert out["loss"] == pytest.approx(piled[3], abs=1e-5)
    assert out["ratio"] == pytest.approx(out["summed"] / out["fresh"]) and -1 <= out["cosine"] <= 1
    assert out["ratio"] > 1  # three earlier gradients are in the sum


def test_bad_input():
    with pytest.raises(TinyTFInputError):
        grad_pileup(step=0)
    with pytest.raises(TinyTFInputError):
        train_copy(steps=0)
    with pytest.raises(TinyTFInputError):
        train_copy(min_length=4)


def test_recorded_runs_match_the_loop():
    runs = recorded_runs()
    assert set(runs["seeds"]) >= {"0", "1", "2"} and len(runs["no_zero_grad"]["losses"]) == runs["steps"]
    _, losses = train_copy(seed=0, steps=2)
    assert losses == pytest.approx(runs["seeds"]["0"]["losses"][:2], abs=1e-3)
