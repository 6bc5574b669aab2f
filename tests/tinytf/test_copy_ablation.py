"""tinytf.lab.copy_ablation: zero- and mean-ablating each block's attention on chapter 7's copy task."""
import math

import pytest
import torch
import torch.nn.functional as F

import tinytf
from tinytf.errors import TinyTFInputError
from tinytf.lab.copy_ablation import ablate_attention


def _model():
    tinytf.seed_everything(0)
    return tinytf.TinyTransformer().eval()


def test_keys_and_unablated_entry_match_a_direct_computation():
    model = _model()
    out = ablate_attention(model, length=4, n=16, seed=2)
    assert list(out) == ["none", "blocks.0", "blocks.1"]
    x, y, _ = tinytf.tasks.induction_batch(16, 4, torch.Generator().manual_seed(2))
    with torch.no_grad():
        logits = model(x)[:, 4:]
    loss = F.cross_entropy(logits.transpose(1, 2), y[:, 4:]).item()
    share = (logits.argmax(-1) == y[:, 4:]).float().mean().item()
    assert out["none"] == pytest.approx((loss, share), abs=1e-6)
    assert abs(out["none"][0] - math.log(256)) < 0.2  # an untrained model guesses over all bytes


def test_ablation_patches_the_named_block_only():
    """Zeroing block i's attention output equals the model run with that output replaced by zeros by hand."""
    model = _model()
    out = ablate_attention(model, length=4, n=16, seed=2)
    x, y, _ = tinytf.tasks.induction_batch(16, 4, torch.Generator().manual_seed(2))
    for i in (0, 1):
        attn = model.blocks[i].attn
        forward = attn.forward
        attn.forward = lambda *a, **k: torch.zeros_like(forward(*a, **k))
        try:
            with torch.no_grad():
                logits = model(x)[:, 4:]
        finally:
            del attn.forward
        loss = F.cross_entropy(logits.transpose(1, 2), y[:, 4:]).item()
        assert out[f"blocks.{i}"][0] == pytest.approx(loss, abs=1e-5)
        assert out[f"blocks.{i}"][0] != pytest.approx(out["none"][0], abs=1e-6)


def test_mean_ablation_replaces_the_output_by_its_per_position_mean():
    """Mean mode equals the model run with block i's attention output replaced, by hand, by its mean over the
    sequences at each position; it differs from zeroing, and the unablated entry is the same in both modes."""
    model = _model()
    zero = ablate_attention(model, length=4, n=16, seed=2)
    mean = ablate_attention(model, length=4, n=16, seed=2, mode="mean")
    assert mean["none"] == zero["none"]
    x, y, _ = tinytf.tasks.induction_batch(16, 4, torch.Generator().manual_seed(2))
    for i in (0, 1):
        attn = model.blocks[i].attn
        seen = []  # the intact run's attention output of block i, captured by a plain forward hook
        handle = attn.register_forward_hook(lambda module, args, output: seen.append(output))
        with torch.no_grad():
            model(x)
        handle.remove()
        average = seen[0].mean(0, keepdim=True)  # [16, 8, C] -> [1, 8, C]
        forward = attn.forward
        attn.forward = lambda *a, **k: average.expand_as(forward(*a, **k))
        try:
            with torch.no_grad():
                logits = model(x)[:, 4:]
        finally:
            del attn.forward
        loss = F.cross_entropy(logits.transpose(1, 2), y[:, 4:]).item()
        assert mean[f"blocks.{i}"][0] == pytest.approx(loss, abs=1e-5)
        assert mean[f"blocks.{i}"][0] != pytest.approx(zero[f"blocks.{i}"][0], abs=1e-6)


@pytest.mark.parametrize("kwargs", [{"length": 0}, {"n": 0}, {"mode": "median"}])
def test_bad_input(kwargs):
    with pytest.raises(TinyTFInputError, match="ablate_attention"):
        ablate_attention(_model(), **kwargs)
