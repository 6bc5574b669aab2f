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
