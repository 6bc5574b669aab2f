"""Generation: the KV cache gives the same tokens and logits as naive re-running, for several
configs; sampling is seeded; seq2seq decoding with and without cache agree."""
import pytest
import torch

import tinytf
from tinytf import TinyConfig, generate, generate_seq2seq, pick_next

ATOL = 1e-5


CONFIGS = {
    "default (rope, swiglu, rms)": TinyConfig(),
    "gqa": TinyConfig(n_heads=4, n_kv_heads=2),
    "mqa": TinyConfig(n_heads=4, n_kv_heads=1, n_layers=3),
    "learned positions": TinyConfig(pos="learned", max_seq_len=64),
    "2017 (sinusoidal, post-norm, relu, bias)": tinytf.config_2017(max_seq_len=64),
    "gelu, tied, qkv bias": TinyConfig(ffn="gelu", tie_embeddings=True, qkv_bias=True),
}


def model_for(cfg, seed=0):
    tinytf.seed_everything(seed)
    return tinytf.TinyTransformer(cfg).eval()


def prompt(T=5, B=None, seed=0):
    shape = (T,) if B is None else (B, T)
    return torch.randint(0, 256, shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("batch", [None, 2], ids=["[T]", "[B,T]"])
def test_kv_cache_equals_naive(name, batch):
    model = model_for(CONFIGS[name])
    p = prompt(B=batch)
    cached = generate(model, p, 20, use_cache=True)
    naive = generate(model, p, 20, use_cache=False)
    assert torch.equal(cached.tokens, naive.tokens)
    assert cached.tokens.shape == ((25,) if batch is None else (batch, 25))
    assert torch.equal(cached.tokens[..., :5], p)
    assert len(cached.step_logits) == len(naive.step_logits) == 20
    for a, b in zip(cached.step_logits, naive.step_logits):
        assert a.shape == (batch or 1, 256)
        assert (a - b).abs().max().item() <= ATOL
    # the generated tokens are not a trivial constant sequence (the comparison would be weak otherwise)
    assert len(set(cached.tokens.flatten().tolist()[5:])) > 1


def test_step_logits_are_the_full_forward_logits():
    model = model_for(TinyConfig())
    out = generate(model, prompt(), 10)
    full = model(out.tokens)  # [15, V]; position t predicts token t + 1
    for i, step in enumerate(out.step_logits):
        assert (step[0] - full[4 + i]).abs().max().item() <= ATOL
        assert int(out.tokens[5 + i]) == int(full[4 + i].argmax())  # greedy


def test_cache_holds_only_past_keys_and_values():
    cfg = TinyConfig(n_kv_heads=2)
    model = model_for(cfg)
    cache = model.new_cache()
    model(prompt(T=7), cache=cache)
    assert cache.length == 7
    layer = cache.layers[0]
    assert layer.k.shape == (1, 2, 7, 32) and layer.v.shape == (1, 2, 7, 32)  # H_kv heads, not H
    model(torch.tensor([3]), cache=cache)
    assert cache.length == 8
    assert cache.nbytes() == 2 * cfg.n_layers * 2 * 8 * 32 * 4  # (K, V) x layers x H_kv x S x D x float32


def test_cached_generation_with_learned_positions_reaches_max_seq_len_exactly():
    model = model_for(TinyConfig(pos="learned", max_seq_len=12))
    out = generate(model, prompt(T=5), 6)  # the last step's input is position 10; 11 tokens + 1 generated = 12
    assert out.tokens.shape == (11,)


def test_sampling_is_seeded_and_respects_top_k():
    model = model_for(TinyConfig())
    p = prompt()
    a = generate(model, p, 15, temperature=1.0, seed=123)
    b = generate(model, p, 15, temperature=1.0, seed=123)
    c = generate(model, p, 15, temperature=1.0, seed=124)
    assert torch.equal(a.tokens, b.tokens)
    assert not torch.equal(a.tokens, c.tokens)
    greedy = generate(model, p, 15)
    top1 = generate(model, p, 15, temperature=0.7, top_k=1, seed=5)
    assert torch.equal(top1.tokens, greedy.tokens)


def test_pick_next():
    logits = torch.tensor([[0.0, 5.0, 1.0, 4.0], [3.0, 0.0, 1.0, -1.0]])
    assert pick_next(logits).tolist() == [1, 0]
    g = torch.Generator().manual_seed(0)
    picks = torch.stack([pick_next(logits, temperature=2.0, top_k=2, generator=g) for _ in range(300)])
    assert set(picks[:, 0].tolist()) == {1, 3}  # only the two largest, and both occur
    assert set(picks[:, 1].tolist()) == {0, 2}
    # low temperature -> nearly greedy; high temperature -> spread out
    cold = torch.stack([pick_next(logits, temperature=0.05, generator=g) for _ in range(100)])
    assert (cold[:, 0] == 1).all()
    hot = torch.stack([pick_next(logits, temperature=100.0, generator=g) for _ in range(300)])
    assert len(set(hot[:, 0].tolist())) == 4


def test_timed_generation_records_each_step():
    model = model_for(TinyConfig(n_layers=1))
    out = generate(model, prompt(), 4, timed=True)
    assert len(out.step_seconds) == 4 and all(s > 0 for s in out.step_seconds)
    assert generate(model, prompt(), 4).step_seconds == []


def test_zero_new_tokens_returns_the_prompt():
    model = model_for(TinyConfig(n_layers=1))
    p = prompt()
    assert torch.equal(generate(model, p, 0).tokens, p)


@pytest.mark.parametrize("cfg", [tinytf.config_2017(n_layers=2), TinyConfig(n_kv_heads=2)], ids=["2017", "2026-gqa"])
@pytest.mark.parametrize("batch", [None, 2], ids=["[S]", "[B,S]"])
def test_seq2seq_cache_equals_naive_and_full_forward(cfg, batch):
    tinytf.seed_everything(0)
    model = tinytf.EncoderDecoder(cfg).eval()
    src = prompt(T=6, B=batch)
    cached = generate_seq2seq(model, src, bos=1, max_new_tokens=8)
    naive = generate_seq2seq(model, src, bos=1, max_new_tokens=8, use_cache=False)
    assert torch.equal(cached, naive)
    assert cached.shape == ((9,) if batch is None else (batch, 9))
    assert (cached[..., 0] == 1).all()
    # greedy: each token is the argmax of a full (uncached) forward over the target so far
    full = model(src, cached)
    assert torch.equal(full[..., :-1, :].argmax(-1), cached[..., 1:])
    assert len(set(cached.flatten().tolist())) > 2


# ---------------------------------------------------------------------------------------------- top-p, step_probs

from tinytf import TinyTFInputError  # noqa: E402
from tinytf.generation import next_token_probs, top_k_filter, top_p_filter  # noqa: E402


def kept(logits, p):
    return torch.isfinite(top_p_filter(logits, p)).tolist()


def test_top_p_keeps_the_smallest_set_that_reaches_p():
    logits = torch.log(torch.tensor([[0.1, 0.5, 0.15, 0.25]]))  # sorted: 0.5, 0.25, 0.15, 0.1
    assert kept(logits, 0.4) == [[False, True, False, False]]  # 0.5 alone reaches 0.4
    assert kept(logits, 0.5) == [[False, True, False, False]]  # exactly p: reached, no more
    assert kept(logits, 0.51) == [[False, True, False, True]]
    assert kept(logits, 0.75) == [[False, True, False, True]]  # 0.5 + 0.25 = 0.75 reaches p exactly
    assert kept(logits, 0.76) == [[False, True, True, True]]
    assert kept(logits, 0.9) == [[False, True, True, True]]
    assert kept(logits, 1.0) == [[True, True, True, True]]
    assert kept(logits, 1e-6) == [[False, True, False, False]]  # the most probable token is always kept
    # a batch: each row gets its own nucleus; kept logits are unchanged
    two = torch.log(torch.tensor([[0.7, 0.2, 0.1], [0.2, 0.2, 0.6]]))
    out = top_p_filter(two, 0.8)
    assert torch.isfinite(out).tolist() == [[True, True, False], [True, True, True]]
    assert torch.equal(out[torch.isfinite(out)], two[torch.isfinite(out)])


def test_top_p_keeps_ties_at_the_boundary():
    logits = torch.log(torch.tensor([[0.4, 0.2, 0.2, 0.2]]))
    # 0.4 + one 0.2 = 0.6 reaches p, but the other two 0.2s are just as likely: all three are kept
    assert kept(logits, 0.6) == [[True, True, True, True]]
    assert kept(logits, 0.4) == [[True, False, False, False]]
    flat = torch.zeros(1, 8)
    assert kept(flat, 0.1) == [[True] * 8]  # all tied: the whole vocabulary


def test_top_p_sampling_stays_in_the_nucleus():
    logits = torch.log(torch.tensor([[0.45, 0.3, 0.15, 0.1]]))
    g = torch.Generator().manual_seed(0)
    picks = [int(pick_next(logits, temperature=1.0, top_p=0.7, generator=g)) for _ in range(300)]
    assert set(picks) == {0, 1}  # 0.45 + 0.3 >= 0.7; both occur
    ids, probs = pick_next(logits, temperature=1.0, top_p=0.7, generator=g, return_probs=True)
    assert torch.allclose(probs, torch.tensor([[0.6, 0.4, 0.0, 0.0]]))  # renormalised over the nucleus


def test_next_token_probs_temperature_top_k_top_p():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    assert torch.allclose(next_token_probs(logits, 1.0), torch.softmax(logits, -1))
    assert torch.allclose(next_token_probs(logits, 2.0), torch.softmax(logits / 2, -1))
    k2 = next_token_probs(logits, 1.0, top_k=2)
    two = torch.softmax(torch.tensor([2.0, 1.0]), 0)
    assert torch.allclose(k2, torch.tensor([[two[0], two[1], 0.0, 0.0]]))
    assert torch.equal(next_token_probs(logits, 0.0), torch.tensor([[1.0, 0.0, 0.0, 0.0]]))  # greedy: one-hot
    # top-k then top-p: both filters apply
    both = next_token_probs(logits, 1.0, top_k=3, top_p=0.5)
    assert both[0, 0] == 1.0 and both[0, 1:].sum() == 0
    assert torch.equal(top_k_filter(logits, 4), logits)


def test_temperature_towards_zero_equals_greedy():
    model = model_for(TinyConfig())
    p = prompt()
    greedy = generate(model, p, 20)
    for seed in range(3):
        cold = generate(model, p, 20, temperature=1e-4, seed=seed)
        assert torch.equal(cold.tokens, greedy.tokens)
        cold_p = generate(model, p, 20, temperature=1e-4, top_p=0.9, seed=seed)
        assert torch.equal(cold_p.tokens, greedy.tokens)
    # greedy's step_probs: one-hot on the chosen token
    for i, probs in enumerate(greedy.step_probs):
        assert probs.shape == (1, 256) and probs.sum() == 1 and probs[0, int(greedy.tokens[5 + i])] == 1


def test_step_probs_are_the_sampled_distribution():
    model = model_for(TinyConfig())
    out = generate(model, prompt(B=2), 12, temperature=0.8, top_k=50, top_p=0.9, seed=7)
    assert len(out.step_probs) == len(out.step_logits) == 12
    for i, (logits, probs) in enumerate(zip(out.step_logits, out.step_probs)):
        assert probs.shape == (2, 256)
        assert torch.allclose(probs.sum(-1), torch.ones(2))
        assert torch.allclose(probs, next_token_probs(logits, 0.8, 50, 0.9))
        assert ((probs > 0).sum(-1) <= 50).all()
        chosen = out.tokens[:, 5 + i]
        assert (probs[torch.arange(2), chosen] > 0).all()  # every token was drawn from its own distribution
    # top_p = 1 and no top_k: plain softmax(logits / T)
    plain = generate(model, prompt(), 5, temperature=1.3, top_p=1.0, seed=1)
    for logits, probs in zip(plain.step_logits, plain.step_probs):
        assert torch.allclose(probs, torch.softmax(logits / 1.3, -1), atol=1e-6)


def test_top_p_generation_is_seeded():
    model = model_for(TinyConfig())
    p = prompt()
    a = generate(model, p, 25, temperature=1.0, top_p=0.9, seed=11)
    b = generate(model, p, 25, temperature=1.0, top_p=0.9, seed=11)
    c = generate(model, p, 25, temperature=1.0, top_p=0.9, seed=12)
    assert torch.equal(a.tokens, b.tokens)
    assert not torch.equal(a.tokens, c.tokens)
    for x, y in zip(a.step_probs, b.step_probs):
        assert torch.equal(x, y)
    # the cache does not change what is sampled
    naive = generate(model, p, 25, temperature=1.0, top_p=0.9, seed=11, use_cache=False)
    assert torch.equal(naive.tokens, a.tokens)


@pytest.mark.parametrize("kwargs, message", [
    (dict(temperature=1.0, top_p=0.0), "top_p must be a number in (0, 1]"),
    (dict(temperature=1.0, top_p=-0.5), "top_p must be a number in (0, 1]"),
    (dict(temperature=1.0, top_p=1.5), "got 1.5"),
    (dict(temperature=1.0, top_p="0.9"), "top_p must be a number in (0, 1] (or None), got '0.9'"),
    (dict(temperature=1.0, top_p=True), "top_p must be a number"),
    (dict(temperature=-0.1), "temperature must be >= 0, got -0.1"),
    (dict(temperature="hot"), "temperature: expected a number >= 0, got 'hot'"),
    (dict(temperature=float("nan")), "temperature: expected a number >= 0"),
    (dict(temperature=1.0, top_k=0), "top_k must be in [1, 256], got 0"),
    (dict(temperature=1.0, top_k=2.5), "top_k must be in [1, 256], got 2.5"),
    (dict(temperature=1.0, top_k="5"), "expected an integer, or None"),
    (dict(temperature=1.0, seed="s"), "seed: expected an integer or None, got 's'"),
])
def test_invalid_sampling_arguments(kwargs, message):
    model = model_for(TinyConfig(n_layers=1))
    with pytest.raises(TinyTFInputError) as err:
        generate(model, prompt(), 3, **kwargs)
    assert message in str(err.value)
    if "top_p" in kwargs:
        with pytest.raises(TinyTFInputError, match="top_p must be a number"):
            top_p_filter(torch.zeros(1, 4), kwargs["top_p"])


# ---------------------------------------------------------------------------------------------- context window

from tinytf.generation import context_window  # noqa: E402


@pytest.mark.parametrize("cfg", [TinyConfig(max_seq_len=12), TinyConfig(max_seq_len=12, n_kv_heads=2, pos="none")],
                         ids=["rope", "none"])
@pytest.mark.parametrize("batch", [None, 2], ids=["[T]", "[B,T]"])
@pytest.mark.parametrize("T", [5, 12, 20], ids=["short prompt", "prompt = window", "prompt > window"])
def test_past_max_seq_len_both_versions_keep_the_last_window(cfg, batch, T):
    """Past max_seq_len a RoPE / position-free model sees its last max_seq_len tokens at positions 0..11;
    naive and cached generation agree token for token, and every step's logits are those of a plain forward
    pass over the last 12 tokens."""
    model = model_for(cfg)
    assert context_window(model) == 12
    p = prompt(T=T, B=batch)
    cached = generate(model, p, 25)
    naive = generate(model, p, 25, use_cache=False)
    assert torch.equal(cached.tokens, naive.tokens)
    tokens = cached.tokens if batch else cached.tokens[None]
    for i, (a, b) in enumerate(zip(cached.step_logits, naive.step_logits)):
        assert (a - b).abs().max().item() <= ATOL
        end = T + i  # the step that chose token `end` saw tokens[:end], of which the last 12 at most
        with torch.no_grad():
            want = model(tokens[:, max(0, end - 12):end])[:, -1]
        assert (a - want).abs().max().item() <= ATOL, i
    assert len(set(tokens[:, T:].flatten().tolist())) > 1


def test_the_window_matters_and_tables_that_end_refuse_instead():
    model = model_for(TinyConfig(max_seq_len=12))
    wide = model_for(TinyConfig(max_seq_len=64))  # the same weights (RoPE has none), a longer window
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), wide.state_dict().values()))
    p = prompt(T=10)
    short, long = generate(model, p, 30), generate(wide, p, 30)
    assert torch.equal(short.tokens[:13], long.tokens[:13])  # identical while the context fits in 12
    assert not all(torch.equal(a, b) for a, b in zip(short.step_logits[3:], long.step_logits[3:]))
    learned = model_for(TinyConfig(pos="learned", max_seq_len=12))
    assert context_window(learned) is None
    with pytest.raises(TinyTFInputError, match="covers only max_seq_len=12"):
        generate(learned, p, 30)


def test_on_step_reports_what_the_cache_holds():
    model = model_for(TinyConfig(n_layers=2,
                                 sliding_window=tinytf.SlidingWindow(size=3, layer_types=("local", "global"))))
    steps = []
    out = generate(model, prompt(T=4), 4, on_step=steps.append)
    assert [s.step for s in steps] == [0, 1, 2, 3]
    assert [s.positions for s in steps] == [[0, 1, 2, 3], [4], [5], [6]]
    assert steps[0].fed == out.tokens[:4].tolist() and steps[1].fed == [int(out.tokens[4])]
    assert [int(s.token[0]) for s in steps] == out.tokens[4:].tolist()
    assert steps[-1].held == [[5, 6], list(range(7))]  # local layer: the newest window - 1; global: all
    assert steps[-1].length == 7 and steps[-1].nbytes == steps[-1].cache.nbytes()
    naive = []
    generate(model, prompt(T=4), 2, use_cache=False, on_step=naive.append)
    assert [s.held for s in naive] == [None, None] and [s.positions for s in naive] == [[0, 1, 2, 3], [0, 1, 2, 3, 4]]


def test_on_step_positions_stay_absolute_when_the_context_window_slides():
    model = model_for(TinyConfig(max_seq_len=6))
    steps = []
    out = generate(model, prompt(T=4), 5, on_step=steps.append)
    assert torch.equal(out.tokens, generate(model, prompt(T=4), 5, use_cache=False).tokens)
    assert [s.positions for s in steps] == [[0, 1, 2, 3], [4], [5], [1, 2, 3, 4, 5, 6], [2, 3, 4, 5, 6, 7]]
    assert steps[2].held == [list(range(6))] * 2 and steps[4].held == [list(range(2, 8))] * 2


def test_seq2seq_on_step():
    tinytf.seed_everything(0)
    model = tinytf.EncoderDecoder(TinyConfig(d_model=32, n_heads=2)).eval()
    steps = []
    tgt = generate_seq2seq(model, prompt(T=5), 1, 3, on_step=steps.append)
    assert [s.positions for s in steps] == [[0], [1], [2]] and [s.held for s in steps][-1] == [[0, 1, 2]] * 2
    assert [int(s.token[0]) for s in steps] == tgt[1:].tolist()
