"""tinytf.decoding: the measurements the generation chapter makes on generated text."""
import math

import pytest
import torch

import tinytf
from tinytf.decoding import Jittered, entropy_bits, logit_lead, longest_repeat, nucleus_margin, repetition_period


def test_entropy_of_certain_uniform_and_two_way_distributions():
    assert entropy_bits(torch.tensor([0.0, 1.0, 0.0])) == 0
    assert math.isclose(entropy_bits(torch.full((256,), 1 / 256)), 8.0, abs_tol=1e-9)
    assert math.isclose(entropy_bits([0.5, 0.5]), 1.0)
    with pytest.raises(tinytf.TinyTFInputError):
        entropy_bits([0.5, 0.7])


def test_repetition_period_finds_the_shortest_cycle_and_where_it_starts():
    ids = list(b"abcthe the the the ")
    assert repetition_period(ids) == (4, 3)
    assert repetition_period(list(b"xyzzzzz")) == (1, 2)
    assert repetition_period(list(b"abcdefgh")) == (None, None)
    assert repetition_period(list(b"abab"), min_repeats=3) == (None, None)  # two repeats are not enough
    with pytest.raises(tinytf.TinyTFInputError):
        repetition_period([1, 2, 3], min_repeats=1)


def test_longest_repeat_does_not_overlap():
    assert longest_repeat("in the same as a string in the same as") == ("in the same as", 0, 24)
    assert longest_repeat("aaaa") == ("aa", 0, 2)
    assert longest_repeat("abc") == ("", -1, -1)


def test_logit_lead_and_nucleus_margin():
    assert math.isclose(logit_lead(torch.tensor([[1.0, 3.0, 2.5]])), 0.5)
    logits = torch.log(torch.tensor([0.5, 0.3, 0.2]))
    # cumulative 0.5, 0.8, 1.0: the nearest to 0.9 is 0.1 away; to 0.75 it is 0.05
    assert math.isclose(nucleus_margin(logits, 0.9), 0.1, abs_tol=1e-6)  # float32 log of the probabilities
    assert math.isclose(nucleus_margin(logits, 0.75), 0.05, abs_tol=1e-6)


def test_jittered_model_keeps_clear_choices_and_flips_near_ties():
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1, d_model=32, n_heads=2, d_ff=64)).eval()
    prompt = tinytf.encode("ab")
    plain = tinytf.generate(model, prompt, 5)
    assert torch.equal(tinytf.generate(Jittered(model, 1e-9, 0), prompt, 5).tokens, plain.tokens)
    noisy = [tinytf.generate(Jittered(model, 10.0, s), prompt, 5).tokens for s in range(3)]
    assert any(not torch.equal(n, plain.tokens) for n in noisy)  # large noise does change the text
