"""The seed spread of a layer profile's first/last gradient ratio (tinytf.lab.experiments)."""
import pytest

import tinytf
from tinytf import experiments as ex

SMALL = tinytf.TinyConfig(d_model=16, n_heads=2, d_ff=32, n_layers=3)


def test_spread_is_the_largest_seed_distance_from_the_combined_ratio():
    p = ex.layer_profile(SMALL, seeds=(0, 1, 2), seq_len=8, batch=2)
    ratios = [r.grad_norm[0] / r.grad_norm[-1] for r in p.per_seed]
    expected = max(abs(r - p.grad_ratio) / p.grad_ratio for r in ratios)
    assert p.grad_ratio_spread == pytest.approx(expected)
    assert min(ratios) <= p.grad_ratio <= max(ratios)  # a geometric mean lies between the seeds


def test_one_seed_has_no_spread_and_the_column_prints_a_range():
    one = ex.layer_profile(SMALL, seeds=(0,), seq_len=8, batch=2)
    assert one.grad_ratio_spread == pytest.approx(0.0, abs=1e-12)  # exp(log(x)) rounds the last bit
    lo, hi = one.grad_ratio_range
    assert lo == hi == pytest.approx(one.grad_ratio)
    table = ex.format_profiles([one], columns=("grad_ratio", "ratio_spread"))
    assert "seed range" in table.splitlines()[0] and table.splitlines()[2].rstrip().endswith(f"{lo:#.3g}–{hi:#.3g}")


def test_range_brackets_the_combined_ratio():
    p = ex.layer_profile(SMALL, seeds=(0, 1, 2), seq_len=8, batch=2)
    lo, hi = p.grad_ratio_range
    assert lo <= p.grad_ratio <= hi


def test_per_layer_range_brackets_the_combined_factor():
    p = ex.layer_profile(SMALL, seeds=(0, 1, 2), seq_len=8, batch=2)
    lo, hi = p.per_layer_range
    assert lo <= p.per_layer_factor <= hi
    assert "per layer, seed range" in ex.format_profiles([p], columns=("per_layer_range",)).splitlines()[0]
