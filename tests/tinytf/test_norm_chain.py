"""tinytf.lab.norm_experiments: the blocks' norms taken apart one step at a time (chapter 3's chain:
x / RMS(x) * gamma -> x / c * gamma -> x * gamma -> x, the final norm kept)."""
from __future__ import annotations

import pytest
import torch

import tinytf
from tinytf.lab import norm_experiments as ne

SMALL = tinytf.TinyConfig(d_model=32, n_heads=4, d_ff=128, n_layers=2)


def _model(seed=0):
    torch.manual_seed(seed)
    model = tinytf.TinyTransformer(SMALL)
    with torch.no_grad():  # gains that are not all ones, so that dropping them shows
        for m in model.modules():
            if isinstance(m, tinytf.RMSNorm):
                m.weight.copy_(torch.rand_like(m.weight) + 0.5)
    return model


def test_gain_only_norms_multiply_by_gamma_and_divide_by_nothing():
    model = _model()
    new = ne.gain_only_norms(model)
    x = torch.randn(3, 32) * 7
    for name, m in model.named_modules():
        if isinstance(m, tinytf.RMSNorm):
            g = new.get_submodule(name)
            assert isinstance(g, ne.FixedScaleNorm)
            with torch.no_grad():
                assert torch.allclose(g(x), x * m.weight, atol=1e-6)
    assert isinstance(model.blocks[0].norm1, tinytf.RMSNorm)  # a copy: the model itself is unchanged


def test_keep_final_leaves_the_final_norm_in_both_variants():
    model = _model()
    ids = torch.randint(0, 256, (2, 6))
    for new in (ne.gain_only_norms(model, keep_final=True),
                ne.fixed_scale_norms(model, ids, sequential=True, keep_final=True)):
        assert isinstance(new.final_norm, tinytf.RMSNorm)
        assert torch.equal(new.final_norm.weight, model.final_norm.weight)
        assert all(isinstance(new.blocks[b].get_submodule(n), ne.FixedScaleNorm)
                   for b in range(2) for n in ("norm1", "norm2"))
    assert isinstance(ne.fixed_scale_norms(model, ids).final_norm, ne.FixedScaleNorm)  # the default fixes it too


def test_the_chain_ends_where_remove_norms_does():
    """Dropping the gains after the constant gives the model with the blocks' norms removed."""
    import copy
    model = _model()
    ids = torch.randint(0, 256, (2, 6))
    gain_only = ne.gain_only_norms(model, keep_final=True)
    with torch.no_grad():
        for b in range(2):
            for n in ("norm1", "norm2"):
                gain_only.blocks[b].get_submodule(n).weight.fill_(1.0)
        removed = ne.remove_norms(copy.deepcopy(model), keep_final=True)
        assert torch.allclose(gain_only(ids), removed(ids), atol=1e-5)
        assert not torch.allclose(ne.gain_only_norms(model, keep_final=True)(ids), removed(ids), atol=1e-3)


def test_a_model_without_norms_gets_a_clear_message():
    with pytest.raises(tinytf.TinyTFInputError, match="no RMSNorm or LayerNorm"):
        ne.gain_only_norms(torch.nn.Linear(2, 2))
