"""tinytf.lab.window_bits: bits per byte window by window, and paired differences."""
import math

import pytest
import torch

import tinytf
from tinytf.lab import window_bits as wb


def test_per_window_bits_average_to_bits_per_byte():
    torch.manual_seed(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1, d_model=32, n_heads=2))
    data = torch.randint(0, 256, (2000,))
    per = wb.bits_per_window(model, data, 6, 64, batch_size=4)
    assert per.shape == (6,)
    assert math.isclose(float(per.mean()), tinytf.bits_per_byte(model, data, 6, 64), rel_tol=1e-6)


def test_paired_difference():
    a, b = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.1, 2.1, 3.4])
    d = wb.paired_difference(b, a)
    assert math.isclose(d.mean, 0.2, rel_tol=1e-6) and d.n == 3 and d.sem > 0
    with pytest.raises(tinytf.TinyTFInputError):
        wb.paired_difference(b, a[:2])


def test_format_means_and_paired_table():
    per = {"a": torch.tensor([1.0, 1.2, 0.8, 1.0], dtype=torch.float64),
           "b": torch.tensor([1.5, 1.9, 1.1, 1.3], dtype=torch.float64)}
    means = wb.format_means(per).splitlines()
    assert means[0].startswith("variant") and means[-1].startswith("uniform guess") and len(means) == 4
    d = per["b"] - per["a"]
    table = wb.paired_table({"b": dict(d=d, q1=0.3, q3=0.6, worse=4, p=0.125)}).splitlines()
    assert len(table) == 2 and "4 of 4" in table[1] and "0.12" in table[1] and "+0.450" in table[1]
    tiny = wb.paired_table({"b": dict(d=d, q1=0.3, q3=0.6, worse=4, p=1e-12)})
    assert "< 1e-09" in tiny


def _format_means_before_spread(per_window: dict) -> str:
    """format_means written out with its standard error computed directly (the reference): the mean to the
    decimal place of the standard error's one significant figure."""
    lines = [f"{'variant':33} {'bits per byte':>13} {'standard error':>15}"]
    for name, b in per_window.items():
        se = float(b.std() / math.sqrt(len(b)))
        se_place = -math.floor(math.log10(se))
        dec = max(0, se_place)
        lines.append(f"{name:33} {b.mean():13.{dec}f} {round(se, se_place):15.{max(0, se_place)}f}")
    lines.append(f"{'uniform guess over 256 bytes':33} {math.log2(256):13.0f}")
    return "\n".join(lines)


def test_format_means_prints_what_it_printed_before_using_spread():
    per = {"a": torch.tensor([1.0, 1.2, 0.8, 1.0], dtype=torch.float64),
           "b": torch.tensor([1.5, 1.9, 1.1, 1.3], dtype=torch.float64)}
    assert wb.format_means(per) == (
        "variant                           bits per byte  standard error\n"
        "a                                          1.00            0.08\n"
        "b                                           1.4             0.2\n"
        "uniform guess over 256 bytes                  8")
    gen = torch.Generator().manual_seed(0)
    for scale in (0.01, 0.4, 5.0, 300.0):  # standard errors from thousandths to hundreds, as in chapter 3
        for n in (4, 32, 64):
            per = {f"x{k}": (2 + scale * torch.randn(n, generator=gen, dtype=torch.float64)).abs()
                   for k in range(3)}
            assert wb.format_means(per) == _format_means_before_spread(per)


def test_paired_stats_sign_test_and_quartiles():
    from tinytf.lab.window_bits import paired_stats

    ref = torch.zeros(4)
    r = paired_stats(torch.tensor([1.0, 2.0, 3.0, 0.0]), ref)
    assert r["worse"] == 3 and r["d"].dtype == torch.float64
    assert r["p"] == pytest.approx(0.25)  # 3 of 3 changed windows worse: 2 * (1/2)^3; the unchanged one left out
    assert (r["q1"], r["q3"]) == pytest.approx((0.75, 2.25))
    assert paired_stats(torch.tensor([1.0, -1.0]), torch.zeros(2))["p"] == 1.0  # an even split: capped at 1
    all_worse = paired_stats(torch.ones(32), torch.zeros(32))
    assert all_worse["p"] == pytest.approx(2 / 2**32)
    with pytest.raises(tinytf.TinyTFInputError, match="paired_stats"):
        paired_stats(torch.zeros(3), torch.zeros(4))
    with pytest.raises(tinytf.TinyTFInputError, match="paired_stats"):
        paired_stats(torch.zeros(0), torch.zeros(0))
