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
    assert "per block, seed range" in ex.format_profiles([p], columns=("per_layer_range",)).splitlines()[0]


def _ill_conditioned_profile(gap=0.01):
    """A profile made ill-conditioned by hand: its float32 and float64 runs said to differ by ``gap``."""
    import dataclasses
    p = ex.layer_profile(SMALL, seeds=(0, 1), seq_len=8, batch=2)
    return dataclasses.replace(p, precision_gap=gap)


def test_ill_conditioned_row_shows_the_float64_run_when_asked():
    p = _ill_conditioned_profile()
    assert p.ill_conditioned and p.chaotic  # one concept, the old name kept as an alias
    assert len(p.per_seed_float64) == 2 and len(p.token_similarity_float64) == p.depth
    columns = ("grad_first", "grad_ratio", "ratio_spread", "per_layer", "per_layer_range", "similarity_last")
    table = ex.format_profiles([p], columns=columns, float64=True).splitlines()
    g = p.grad_norm_float64
    ratios = [r.grad_norm[0] / r.grad_norm[-1] for r in p.per_seed_float64]
    n = p.depth - 1
    cells = table[2].split()[-6:]
    two = lambda v: f"{v:#.2g}".rstrip(".")  # 2 significant digits
    assert cells[0] == "†" + two(g[0]) and cells[1] == "†" + two(g[0] / g[-1])
    assert cells[2] == "†" + "–".join(two(v) for v in (min(ratios), max(ratios)))
    assert cells[3] == f"†{(g[0] / g[-1]) ** (1 / n):.2f}"
    assert cells[4] == f"†{min(ratios) ** (1 / n):.2f}–{max(ratios) ** (1 / n):.2f}"
    assert cells[5] == f"†{p.token_similarity_float64[-1]:.3f}"
    assert table[-1].startswith("† ill-conditioned row") and "~" not in "\n".join(table)


def test_power_of_ten_only_cell_cannot_be_read_as_a_leading_digit():
    assert ex._format_value(1.2e5, "#.3g", True, reference=5e5) == "~10^5"  # runs differ by > 10%
    assert ex._format_value(1.2e5, "#.3g", True, reference=1.25e5) == "~1e+05"  # a real leading digit
    table = ex.format_profiles([_ill_conditioned_profile(1.0)], columns=("grad_ratio",))
    assert "~10^5" in table.splitlines()[-1] and "~1e" not in table.splitlines()[-1]


def test_float64_row_whose_runs_differ_by_over_3_percent_keeps_one_digit_and_no_seed_range():
    p = _ill_conditioned_profile(1.0)
    table = ex.format_profiles([p], columns=("grad_first", "ratio_spread", "per_layer", "per_layer_range"),
                               float64=True).splitlines()
    g = p.grad_norm_float64
    assert table[2].split()[-4:] == ["†" + format(g[0], ".1g"), "—", f"†{(g[0] / g[-1]) ** (1 / (p.depth - 1)):.2f}", "—"]
    assert "or to 1 and no seed range (—)" in table[-1]
