"""tinytf.heads: the head-pattern scores on hand-built attention weights, and on the shipped text model."""
import pytest
import torch

import tinytf
from tinytf import heads


def previous_token_weights(T):
    w = torch.zeros(T, T)
    w[0, 0] = 1.0
    for i in range(1, T):
        w[i, i - 1] = 1.0
    return w


def causal_uniform(T):
    return torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1)[:, None]


def test_perfect_previous_token_pattern_scores_one():
    w = torch.stack([previous_token_weights(6), torch.eye(6)])  # [H=2, T, T]
    s = heads.previous_token_score(w)
    assert s.shape == (2,) and s.tolist() == [1.0, 0.0]


def test_uniform_over_n_keys_scores_one_over_n():
    T = 8
    full = torch.full((1, 1, T, T), 1.0 / T)  # every query spreads its weight over n = T keys
    assert heads.previous_token_score(full).item() == pytest.approx(1 / T)
    assert heads.first_token_score(full).item() == pytest.approx(1 / T)
    # causal uniform: query i spreads over i + 1 keys, so the score is the mean of 1 / (i + 1), i = 1 .. T-1
    expected = sum(1 / (i + 1) for i in range(1, T)) / (T - 1)
    assert heads.previous_token_score(causal_uniform(T)[None]).item() == pytest.approx(expected)
    assert heads.first_token_score(causal_uniform(T)[None]).item() == pytest.approx(expected)


def test_sink_scores_one_and_batch_is_averaged():
    T = 5
    sink = torch.zeros(T, T)
    sink[:, 0] = 1.0
    w = torch.stack([torch.stack([sink]), torch.stack([previous_token_weights(T)])])  # [B=2, H=1, T, T]
    assert heads.first_token_score(sink[None]).item() == 1.0
    # query 1's previous byte is byte 0: each pattern scores 1/4 (1 query of 4) on the other one
    assert heads.first_token_score(w).item() == pytest.approx((1.0 + 1 / 4) / 2)
    assert heads.previous_token_score(w).item() == pytest.approx((1 / 4 + 1.0) / 2)


def test_word_starts_and_word_start_score():
    text = "ab cde, fg"
    assert heads.word_starts(text) == [0, 0, None, 3, 3, 3, None, None, 8, 8]
    T = len(text)
    w = torch.zeros(T, T)
    starts = heads.word_starts(text)
    for i in range(T):
        w[i, starts[i] if starts[i] is not None else i] = 1.0
    assert heads.word_start_score(w[None], text).item() == 1.0  # only query 5 ('e') is 2+ bytes into its word
    assert heads.word_start_score(w[None], text, min_offset=0).item() == 1.0
    assert heads.word_start_score(previous_token_weights(T)[None], text).item() == 0.0
    # min_offset=1 counts queries 1, 4, 5, 9; the previous-token pattern hits the start for 1, 4 and 9
    assert heads.word_start_score(previous_token_weights(T)[None], text, min_offset=1).item() == pytest.approx(3 / 4)


def test_bad_input_is_reported():
    with pytest.raises(tinytf.TinyTFInputError):
        heads.previous_token_score(torch.ones(3, 4))
    with pytest.raises(tinytf.TinyTFInputError):
        heads.word_start_score(causal_uniform(4)[None], "abcde")  # 5 bytes for 4 positions
    with pytest.raises(tinytf.TinyTFInputError):
        heads.word_start_score(causal_uniform(3)[None], "a b")  # no byte is 2 into its word


def test_score_table_on_the_text_model():
    model = tinytf.pretrained("text-4l")
    text = "The cat sat on the mat and looked at the door."
    rows = heads.score_table(model, text)
    cfg = model.config
    assert len(rows) == cfg.n_layers * cfg.n_heads
    _, trace = model.run_with_trace(tinytf.encode(text))
    for r in rows:
        w = trace[f"blocks.{r['layer']}.attn.weights"]
        assert r["previous"] == pytest.approx(heads.previous_token_score(w)[r["head"]].item())
        assert 0 <= r["previous"] <= 1 and 0 <= r["word_start"] <= 1 and 0 <= r["first"] <= 1
    best = heads.best_heads(rows)
    assert best["previous"]["previous"] > 0.5  # training made a previous-token head
    untrained = heads.best_heads(heads.score_table(tinytf.pretrained.untrained("text-4l"), text))
    assert untrained["previous"]["previous"] < 0.3  # random weights: close to uniform
    table = heads.format_score_table(rows)
    assert table.count("*") == 3 and len(table.splitlines()) == len(rows) + 1


def test_byte_match_score():
    from tinytf.lab.heads import byte_match_score

    # "abab": query 2 ('a') has one key after an earlier 'a' (key 1), query 3 ('b') one (key 2): score 1
    assert byte_match_score([0, 1, 0, 1], 2) == 1.0
    # "aaaa" repeated: query i has i keys after an earlier 'a' (1..i): (1/2 + 1/3) / 2
    assert byte_match_score([7, 7, 7, 7], 2) == pytest.approx((1 / 2 + 1 / 3) / 2)
    with pytest.raises(tinytf.TinyTFInputError, match="period"):
        byte_match_score([1, 2, 3], 3)
    with pytest.raises(tinytf.TinyTFInputError, match="repeat"):
        byte_match_score([1, 2, 3, 4], 2)
