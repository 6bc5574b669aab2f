"""best_rates / late_loss: the best learning rate of a recorded sweep is the lowest mean late loss over the seeds."""
import pytest

from tinytf.errors import TinyTFInputError
from tinytf.lab import frontier


def _rec(loss):
    return {"steps": list(range(0, 110, 10)), "max_logit": [1.0] * 11, "loss": [None] + [loss] * 10}


def test_best_rate_is_the_lowest_mean_not_the_lowest_seed():
    sweep = {"settings": {"seeds": [0, 1], "steps": 100, "lrs": [0.001, 0.003]},
             "runs": {"plain": {"0.001": [_rec(1.0), _rec(3.0)], "0.003": [_rec(1.9), _rec(1.9)]},
                      "QK-norm": {"0.001": [_rec(0.5), _rec(0.7)], "0.003": [_rec(0.1), _rec(2.0)]}}}
    best = frontier.best_rates(sweep)
    assert {v: lr for v, (lr, _) in best.items()} == {"plain": 0.003, "QK-norm": 0.001}  # 0.1 alone does not win
    assert best["QK-norm"][1] == pytest.approx([0.5, 0.7])
    text = frontier.format_best_rates(best).splitlines()
    assert text[1].split() == ["plain", "0.003", "1.90", "1.90"] and text[2].split() == ["QK-norm", "0.001", "0.50", "0.70"]


def test_late_loss_and_bad_input():
    rec = {"loss": [None] + list(range(1, 21))}
    assert frontier.late_loss(rec) == sum(range(11, 21)) / 10 and frontier.late_loss(rec, 2) == 19.5
    with pytest.raises(TinyTFInputError, match="at least n"):
        frontier.late_loss({"loss": [None, 1.0]})
    with pytest.raises(TinyTFInputError, match="load_lr_sweep"):
        frontier.best_rates({"runs": {}})


def test_recorded_sweep_has_both_best_rates_inside_its_grid():
    sweep = frontier.load_lr_sweep()
    lrs = sweep["settings"]["lrs"]
    for lr, _ in frontier.best_rates(sweep).values():
        assert min(lrs) < lr < max(lrs)
