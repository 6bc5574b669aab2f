"""tinytf.lab.norm_cost: operators and passes over memory of one norm call, counted."""
import pytest
import torch

import tinytf
from tinytf.lab import norm_cost as nc


def test_counts_of_tinytf_norms():
    x = torch.randn(2, 3, 16)
    ln = nc.summary(nc.count_ops(tinytf.LayerNorm(16), x), x.numel())
    ln_nobias = nc.summary(nc.count_ops(tinytf.LayerNorm(16, bias=False), x), x.numel())
    rms = nc.summary(nc.count_ops(tinytf.RMSNorm(16), x), x.numel())
    assert ln["names"][:2] == ["mean", "var"] and ln["full_passes"] == 6 and ln["reductions"] == 2
    assert ln_nobias["full_passes"] == 5
    assert rms["names"][0] == "pow" and rms["full_passes"] == 4 and rms["reductions"] == 1
    assert rms["operators"] < ln["operators"]


def test_a_fused_kernel_is_one_pass():
    x = torch.randn(2, 3, 16)
    s = nc.summary(nc.count_ops(lambda t: torch.nn.functional.layer_norm(t, (16,)), x), x.numel())
    assert s["full_passes"] == 1


def test_bad_input():
    with pytest.raises(tinytf.TinyTFInputError):
        nc.count_ops(tinytf.RMSNorm(4), [1.0, 2.0])
