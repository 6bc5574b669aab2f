"""The recorded learning-rate sweep of chapter 11.1 (scripts/qk_norm_sweep.py) and its table."""
from tinytf.lab import frontier


def _rec(logit, loss):
    return {"steps": list(range(0, 110, 10)), "max_logit": [0.1] * 10 + [logit], "loss": [None] + [loss] * 10}


def test_format_lr_sweep_rows_and_digits():
    sweep = {"settings": {"seeds": [0, 1], "steps": 100, "lrs": [0.001, 0.03]},
             "runs": {"plain": {"0.001": [_rec(5.31, 1.5), _rec(7.04, 1.56)], "0.03": [_rec(3490.8, 3.19), _rec(229.1, 3.1)]},
                      "QK-norm": {"0.001": [_rec(4.6, 1.2), _rec(9.96, 1.0)], "0.03": [_rec(22.8, 2.9), _rec(16.3, 2.8)]}}}
    lines = frontier.format_lr_sweep(sweep).splitlines()
    assert len(lines) == 2 + 4 and all(len(line) <= 78 for line in lines)
    assert lines[2].split() == ["0.001", "plain", "5.3", "7.0", "1.50", "1.56"]
    assert lines[3].split() == ["0.001", "QK-norm", "4.6", "10", "1.20", "1.00"]
    assert lines[4].split() == ["0.03", "plain", "3,500", "230", "3.19", "3.10"]


def test_seed_span_gives_lowest_to_highest_at_two_digits():
    import pytest

    from tinytf.errors import TinyTFInputError
    assert frontier.seed_span([3897.1, 3412.7, 3500.0]) == "3,400 to 3,900"
    assert frontier.seed_span([0.134, 0.12]) == "0.12 to 0.13"
    assert frontier.seed_span([4.0]) == "4.0 to 4.0"  # zeros kept
    with pytest.raises(TinyTFInputError):
        frontier.seed_span([])


def test_recorded_sweep_is_complete():
    sweep = frontier.load_lr_sweep()
    s = sweep["settings"]
    assert set(sweep["runs"]) == {"plain", "QK-norm", "QK-norm g=0.2"}
    assert s["variants"]["QK-norm g=0.2"] == {"qk_norm": "head", "qk_gain": 0.2}
    for by_lr in sweep["runs"].values():
        assert list(by_lr) == [str(lr) for lr in s["lrs"]]
        assert all(len(recs) == len(s["seeds"]) and recs[0]["steps"][-1] == s["steps"] for recs in by_lr.values())


def test_logit_growth_qk_gain_scales_the_logits_at_step_0():
    """Gains g on both norms multiply every logit, and the bound sqrt(D) g², by g²; the other weights are the seed's."""
    import pytest

    from tinytf.config import TinyConfig
    from tinytf.errors import TinyTFInputError

    cfg = TinyConfig(**frontier.LOGIT_GROWTH_SETTINGS["base"], qk_norm="head")
    unit, small = (frontier.logit_growth(cfg, steps=0, seed=1, qk_gain=g) for g in (None, 0.2))
    assert small["max_logit"][0] == pytest.approx(0.04 * unit["max_logit"][0], rel=1e-4)
    assert small["bound"][0] == pytest.approx(4 * 0.04) and unit["bound"][0] == pytest.approx(4)
    with pytest.raises(TinyTFInputError, match="qk_gain"):
        frontier.logit_growth(cfg.replace(qk_norm="none"), steps=0, qk_gain=0.2)


def test_two_digits_grouping_only_when_asked():
    """Two significant digits keep measured zeros and group thousands only on request."""
    from tinytf.lab.prefill_decode import two_digits

    assert two_digits(3496.0, keep_zeros=True, grouping=True) == "3,500"
    assert two_digits(3496.0, keep_zeros=True) == "3500"
    assert two_digits(5.0, keep_zeros=True, grouping=True) == "5.0"
    assert two_digits(0.0123) == "0.012"
