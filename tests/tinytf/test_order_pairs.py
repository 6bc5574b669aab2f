"""order_pairs: without positions a one-block causal model cannot tell an order pair apart; with RoPE it can;
bad pairs are refused."""
import pytest

import tinytf
from tinytf.lab.order_pairs import check_pair, pair_distances, tv_distance

PAIRS = [("a dusty", "a study"), ("the tale", "the late"), ("below", "elbow")]


def test_no_positions_one_block_gives_the_same_prediction():
    tinytf.seed_everything(0)
    none = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1, pos="none")).eval()
    assert max(pair_distances(none, PAIRS)) < 1e-6


def test_rope_tells_the_pairs_apart():
    tinytf.seed_everything(0)
    none = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1, pos="none")).eval()
    rope = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1, pos="rope")).eval()
    rope.load_state_dict(none.state_dict())
    assert min(pair_distances(rope, PAIRS)) > 1e-5


def test_swapped_words_allowed_without_same_last_byte():
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1)).eval()
    (tv,) = pair_distances(model, [("dog bites man", "man bites dog")], same_last_byte=False)
    assert 0 < tv < 1


@pytest.mark.parametrize("first, second", [("cat", "dog"), ("cat", "cat"), ("dog bites man", "man bites dog")])
def test_bad_pairs_are_refused(first, second):
    with pytest.raises(tinytf.TinyTFInputError):
        check_pair(first, second)


def test_bad_input():
    model = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1))
    with pytest.raises(tinytf.TinyTFInputError):
        pair_distances(model, [])
    with pytest.raises(tinytf.TinyTFInputError):
        pair_distances(model, [("a", "b", "c")])
    import torch
    with pytest.raises(tinytf.TinyTFInputError):
        tv_distance(torch.ones(3), torch.ones(4))


# the untrained measurements of section 1.4 and exercise 1 of the chapter 1 lab notes: relative_change, over_seeds, sentence_gap,
# sentence_changes
from tinytf.lab.order_pairs import (median_range, over_seeds, relative_change, sentence_changes,  # noqa: E402
                                    sentence_gap)


def test_relative_change_and_median_range():
    import torch
    assert relative_change(torch.tensor([3.0, 4.0]), torch.tensor([0.0, 5.0])) == pytest.approx(10 ** 0.5 / 5)
    assert median_range([3.0, 1.0, 2.0]) == "median 2.00 [1.00 to 3.00]"
    assert median_range([3.2e-05, 2.24e-05, 5.4e-05]) == "median 3.20e-05 [2.24e-05 to 5.40e-05]"
    assert median_range([100.0]) == "median 100 [100 to 100]"


def test_over_seeds_repeats_on_each_seed_and_keeps_the_callers_stream():
    import torch
    torch.manual_seed(7)
    expected_next = torch.rand(1)
    torch.manual_seed(7)
    draws = []
    text = over_seeds(lambda: draws.append(float(torch.rand(1))) or draws[-1], seeds=(1, 2, 3))
    assert len(draws) == 3 and len(set(draws)) == 3
    torch.manual_seed(1)
    assert draws[0] == float(torch.rand(1))  # seed 1 first
    assert text == median_range(draws)
    torch.manual_seed(7)
    over_seeds(lambda: float(torch.rand(1)), seeds=(1, 2))
    assert torch.equal(torch.rand(1), expected_next)  # the caller's stream is restored


def test_sentence_gap_zero_without_positions_and_not_with_rope():
    import torch
    torch.manual_seed(0)
    assert sentence_gap("none") < 1e-6
    torch.manual_seed(0)
    assert sentence_gap("rope") > 1e-3


def test_sentence_changes_rows():
    tinytf.seed_everything(0)
    rope = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1, pos="rope")).eval()
    none = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1, pos="none")).eval()
    none.load_state_dict(rope.state_dict())
    trace, changes = sentence_changes(rope, show_table=False)
    assert list(changes) == ["attention input, swapped", "stream entering the block", "attention output",
                             "stream after the add", "next-token scores"]
    assert changes["stream entering the block"] == 0.0  # the same last byte, no position in the stream
    assert changes["attention input, swapped"] > 1  # different bytes at the swapped positions
    assert 0 < changes["next-token scores"] < 0.1
    _, changes_none = sentence_changes(none, show_table=False)
    assert changes_none["attention output"] < 1e-5
    assert "blocks.0.attn.weights" in trace


def test_bad_input_to_the_untrained_measurements():
    import torch
    with pytest.raises(tinytf.TinyTFInputError):
        relative_change(torch.ones(3), torch.ones(4))
    with pytest.raises(tinytf.TinyTFInputError):
        relative_change(torch.ones(3), torch.zeros(3))
    with pytest.raises(tinytf.TinyTFInputError):
        over_seeds(0.5)
    with pytest.raises(tinytf.TinyTFInputError):
        over_seeds(lambda: 1.0, seeds=())
    with pytest.raises(tinytf.TinyTFInputError):
        sentence_gap("rope", "dog bites man.", "cat bites man.")
    with pytest.raises(tinytf.TinyTFInputError):
        sentence_changes(tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=2)), show_table=False)


def test_unrelated_input_change_draws_under_its_seed_and_keeps_the_callers_stream():
    import torch
    from tinytf.lab.order_pairs import relative_change, unrelated_input_change

    layer = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    torch.manual_seed(7)
    expected_next = torch.rand(1)
    torch.manual_seed(7)
    value = unrelated_input_change(layer, x, seed=3)
    assert torch.equal(torch.rand(1), expected_next)  # the caller's stream is restored
    torch.manual_seed(3)
    other = torch.randn(2, 4)
    with torch.no_grad():
        assert value == pytest.approx(relative_change(layer(other), layer(x)))
    assert unrelated_input_change(layer, x, seed=4) != value  # another seed, another input
    with pytest.raises(ValueError):
        unrelated_input_change(layer, [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError):
        unrelated_input_change(layer, x, seed=1.5)
