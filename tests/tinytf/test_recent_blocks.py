"""tinytf.lab.recent_blocks: attention sinks, NoPE layers, linear attention and the delta rule, hybrid cache
and multi-token-prediction counts."""
from __future__ import annotations

import math

import pytest
import torch

import tinytf
from tinytf.lab import recent_blocks as rb


def test_sink_softmax_is_softmax_with_one_more_logit():
    s = torch.tensor([2.0, 1.0, 0.0])
    assert torch.allclose(rb.sink_softmax(s, float("-inf")), torch.softmax(s, -1))
    w = rb.sink_softmax(s, 0.0)
    assert math.isclose(float(w.sum()), 1 - 1 / (1 + float(s.exp().sum())), rel_tol=1e-6)
    assert torch.allclose(w / w.sum(), torch.softmax(s, -1))  # the ratios between keys do not change


def test_sink_per_head_and_bad_shape():
    scores = torch.zeros(1, 2, 3, 3)
    w = rb.sink_softmax(scores, torch.tensor([float("-inf"), 0.0]))
    assert torch.allclose(w[0, 0].sum(-1), torch.ones(3)) and torch.allclose(w[0, 1].sum(-1), torch.full((3,), 0.75))
    with pytest.raises(tinytf.TinyTFInputError, match="one sink per head"):
        rb.sink_softmax(torch.zeros(3, 3), torch.zeros(2))


def test_nope_layer_sees_the_prefix_as_a_set():
    ids = tinytf.encode("order!")
    effect = {}
    for pos in ("rope", "none"):
        torch.manual_seed(0)
        model = tinytf.TinyTransformer(tinytf.TinyConfig(d_model=32, n_heads=2, n_layers=1, d_ff=64, pos=pos))
        tinytf.init_weights(model, std=0.3)  # larger than at initialisation, so that positions matter clearly
        effect[pos] = rb.prefix_order_effect(model, ids, (0, 2))
    assert effect["none"] < 1e-5 < 1e-2 < effect["rope"]
    with pytest.raises(tinytf.TinyTFInputError, match="before the last"):
        rb.prefix_order_effect(model, ids, (0, 5))


def test_linear_attention_two_ways_and_delta_rule():
    torch.manual_seed(0)
    q, k, v = torch.randn(6, 3), torch.randn(6, 3), torch.randn(6, 2)
    out, state = rb.linear_attention_recurrent(q, k, v)
    assert torch.allclose(out, rb.linear_attention_parallel(q, k, v), atol=1e-5) and state.shape == (2, 3)
    kn = torch.nn.functional.normalize(k, dim=-1)
    ones = torch.ones(6)
    _, s = rb.delta_rule_recurrent(q, kn, v, beta=ones, alpha=ones)  # beta = 1: the last write under k is exact
    assert torch.allclose(s @ kn[-1], v[-1], atol=1e-5)
    plain, _ = rb.linear_attention_recurrent(q, kn, v)
    zero_beta, _ = rb.delta_rule_recurrent(q, kn, v, beta=torch.zeros(6), alpha=ones)
    assert torch.count_nonzero(zero_beta) == 0 and not torch.allclose(plain, zero_beta)


def test_hybrid_cache_and_mtp_counts():
    assert rb.hybrid_cache_bytes(10, 1, 2, 4, 3, 100, 2) == (2 * 2 * 4 * 10 + 300) * 2
    with pytest.raises(tinytf.TinyTFInputError):
        rb.hybrid_cache_bytes(-1, 1, 1, 1, 1, 1)
    cfg = tinytf.TinyConfig(d_model=16, n_heads=2, n_layers=2, d_ff=32, vocab_size=50)
    parts = rb.mtp_module_parameters(cfg)
    assert parts["block"] == tinytf.exact_layer_params(cfg)["total"]
    assert parts["total"] == parts["block"] + 2 * 16 * 16 + 3 * 16 + 2 * 50 * 16
