import math

import pytest
import torch

import tinytf
from tinytf.errors import TinyTFInputError
from tinytf.lab.experiments import measure_layers
from tinytf.lab.textdata import random_windows
from tinytf.lab.trained_gradients import trained_profile


def _model():
    tinytf.seed_everything(0)
    return tinytf.TinyTransformer(tinytf.TinyConfig(d_model=32, n_heads=2, d_ff=64, n_layers=3, max_seq_len=16))


def _text():
    return torch.tensor(list(b"the quick brown fox jumps over the lazy dog, again and again. " * 4), dtype=torch.uint8)


def test_profile_is_the_seeds_measurements_combined():
    model, data = _model(), _text()
    p = trained_profile(model, data, seeds=(0, 1), batch=3, seq_len=8)
    assert p.depth == 3 and p.seeds == (0, 1) and math.isnan(p.init_std)
    for seed, run in zip((0, 1), p.per_seed):  # each seed: its own windows of the real text, real next bytes
        ids, targets = random_windows(data, 3, 8, torch.Generator().manual_seed(seed))
        assert torch.equal(targets[:, :-1], ids[:, 1:])
        expected = measure_layers(model, ids, targets)
        assert run.grad_norm == pytest.approx(expected.grad_norm, rel=1e-6)
    geo = [math.sqrt(a * b) for a, b in zip(p.per_seed[0].grad_norm, p.per_seed[1].grad_norm)]
    assert p.grad_norm == pytest.approx(geo)
    lo, hi = p.grad_ratio_range
    assert lo <= p.grad_ratio <= hi and lo < hi  # two different draws of windows
    assert p.precision_gap < 1e-4 and not p.ill_conditioned


def test_weights_state_and_rng_are_left_untouched():
    model, data = _model(), _text()
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(5)
    expected_next = torch.rand(3)
    torch.manual_seed(5)
    trained_profile(model, data, seeds=(0,), batch=2, seq_len=8)
    assert torch.equal(torch.rand(3), expected_next)
    assert model.training
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())
    again = trained_profile(model, data, seeds=(0,), batch=2, seq_len=8)
    assert again.grad_norm == trained_profile(model, data, seeds=(0,), batch=2, seq_len=8).grad_norm


@pytest.mark.parametrize("kwargs, data, match", [
    ({"seeds": ()}, None, "at least one seed"),
    ({"seq_len": 17}, None, "max_seq_len"),
    ({"batch": 0}, None, "at least 1"),
    ({"seq_len": 8}, torch.rand(50), "1-D tensor of token ids"),
    ({"seq_len": 8}, torch.zeros(2, 50, dtype=torch.long), "1-D tensor of token ids"),
    ({"seq_len": 8}, torch.full((50,), 300), "outside 0..255"),
    ({"seq_len": 8}, torch.zeros(5, dtype=torch.long), "shorter than one window"),
])
def test_bad_input_is_refused(kwargs, data, match):
    with pytest.raises(TinyTFInputError, match=match):
        trained_profile(_model(), _text() if data is None else data, **kwargs)


def test_refuses_what_is_not_a_tinytransformer():
    with pytest.raises(TinyTFInputError, match="TinyTransformer"):
        trained_profile(torch.nn.Linear(2, 2), _text())
