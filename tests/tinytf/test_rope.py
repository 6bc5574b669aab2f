"""RoPE: a rotation (keeps norms), relative (q.k depends only on the offset m - n), and the same
as the complex-number formulation of RoFormer on (x_i, x_{i+D/2}) pairs."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import tinytf
from tinytf import TinyConfig
from tinytf.attention import Attention


SETTINGS = settings(max_examples=40, deadline=None)
head_sizes = st.sampled_from([2, 4, 8, 16, 64])
positions = st.integers(min_value=0, max_value=2000)
seeds = st.integers(min_value=0, max_value=2**31 - 1)


def vec(d, seed, n=1):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def rotate(x, pos, theta=10000.0):
    """x: [n, D] rotated as if it sat at position ``pos`` (via the public RoPE module). Shape [n, D]."""
    rope = tinytf.RoPE(x.shape[-1], theta)
    return rope.rotate(x[None, None], offset=pos)[0, 0]  # [1, 1, n, D] -> [n, D]; row j is at position pos + j


@SETTINGS
@given(d=head_sizes, pos=positions, seed=seeds)
def test_rope_preserves_norm(d, pos, seed):
    x = vec(d, seed, n=3)
    y = rotate(x, pos)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1), rtol=1e-6, atol=1e-6)


@SETTINGS
@given(d=head_sizes, m=positions, n=positions, shift=st.integers(0, 2000), seed=seeds)
def test_score_depends_only_on_relative_offset(d, m, n, shift, seed):
    q, k = vec(d, seed), vec(d, seed + 1)
    before = (rotate(q, m) * rotate(k, n)).sum()
    after = (rotate(q, m + shift) * rotate(k, n + shift)).sum()
    # float32 angles (as in the model) lose ~1e-4 rad at positions ~4000
    torch.testing.assert_close(after, before, rtol=1e-3, atol=1e-3 * q.norm().item() * k.norm().item())


@SETTINGS
@given(d=head_sizes, m=st.integers(1, 500), seed=seeds)
def test_score_changes_with_offset(d, m, seed):
    """Not a constant: moving only the query changes q.k for a generic pair (so the test above has teeth)."""
    q, k = vec(d, seed), vec(d, seed + 1)
    same = (rotate(q, 0) * rotate(k, 0)).sum()
    moved = (rotate(q, m) * rotate(k, 0)).sum()
    # the first pair turns by m radians: generic vectors see a change unless m is a multiple of 2 pi (never for ints)
    assert not torch.isclose(moved, same, rtol=0, atol=1e-9)


@SETTINGS
@given(d=head_sizes, pos=positions, seed=seeds)
def test_matches_complex_rotation(d, pos, seed):
    x = vec(d, seed)
    half = d // 2
    z = torch.complex(x[:, :half], x[:, half:])  # pair i = (x_i, x_{i + D/2})
    freqs = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # [D/2]
    angle = torch.tensor(float(pos), dtype=torch.float64) * freqs
    rotated = z * torch.polar(torch.ones_like(angle), angle)
    expected = torch.cat((rotated.real, rotated.imag), dim=-1)
    torch.testing.assert_close(rotate(x, pos), expected, rtol=1e-3, atol=1e-3)


def test_position_zero_is_identity_and_rows_get_consecutive_positions():
    x = vec(8, 0, n=4)
    rows = rotate(x, 10)
    for j in range(4):
        torch.testing.assert_close(rows[j], rotate(x[j : j + 1], 10 + j)[0])
    assert torch.equal(rotate(x, 0)[0], x[0])


def test_theta_changes_the_rotation():
    x = vec(8, 0)
    assert not torch.allclose(rotate(x, 5, theta=10000.0), rotate(x, 5, theta=500000.0))


def test_rope_attention_scores_are_shift_invariant():
    """In a real Attention layer: the same tokens placed 100 positions later (after 100 cached
    positions) score each other exactly as at positions 0..5, although their keys differ."""
    attn = Attention(TinyConfig(d_model=32, n_heads=4)).eval()
    x = torch.randn(1, 6, 32, generator=torch.Generator().manual_seed(0))
    _, at0 = tinytf.run_with_trace(attn, x, names=["scores", "k_rot"])
    cache = tinytf.LayerCache(k=torch.zeros(1, 4, 100, 8), v=torch.zeros(1, 4, 100, 8))  # 100 earlier positions
    _, at100 = tinytf.run_with_trace(attn, x, cache=cache, names=["scores", "k_rot"])
    assert at100["scores"].shape == (1, 4, 6, 106)
    torch.testing.assert_close(at100["scores"][..., 100:], at0["scores"], rtol=1e-4, atol=1e-4)
    assert not torch.allclose(at100["k_rot"], at0["k_rot"])


def test_rope_has_no_parameters_and_other_positions_do_not_rotate():
    assert sum(p.numel() for p in tinytf.RoPE(32).parameters()) == 0
    attn = Attention(TinyConfig(d_model=32, n_heads=4, pos="sinusoidal"))
    x = torch.randn(1, 5, 32)
    _, tr = tinytf.run_with_trace(attn, x)
    assert torch.equal(tr["q_rot"], tr["q"]) and torch.equal(tr["k_rot"], tr["k"])


@pytest.mark.parametrize("rope", [
    tinytf.RoPE(8), tinytf.RoPE(16, theta=500000.0),
    tinytf.positions.ScaledRoPE(8, 10000.0, tinytf.RopeScaling("llama3", 8.0, 1.0, 4.0, 64)),
    tinytf.positions.ScaledRoPE(8, 10000.0, None, "interleaved"),
    tinytf.positions.ScaledRoPE(8, 10000.0, tinytf.RopeScaling("yarn", 4.0, original_max_seq_len=32)),
], ids=["plain", "theta", "llama3", "interleaved", "yarn"])
def test_forward_takes_cos_sin_once_and_equals_rotate_bit_for_bit(rope):
    g = torch.Generator().manual_seed(0)
    for offset, T in ((0, 5), (5, 1), (6, 30), (3, 100), (0, 1)):  # the table grows, then serves slices
        q, k = torch.randn(2, 4, T, rope.d_head, generator=g), torch.randn(2, 2, T, rope.d_head, generator=g)
        rq, rk = rope(q, k, offset)
        assert torch.equal(rq, rope.rotate(q, offset)) and torch.equal(rk, rope.rotate(k, offset))
    assert len(rope._tables) == 1 and rope._tables[(torch.device("cpu"), torch.float32) + rope._table_key()][0].shape[0] == 128
    half = q.to(torch.bfloat16)  # another dtype: its own table, still equal to rotate
    assert torch.equal(rope(half, half, 7)[0], rope.rotate(half, 7))
    with torch.inference_mode():  # a table made here is still usable with autograd afterwards
        rope(q, k, 200)
    x = q.clone().requires_grad_()
    rope(x, x, 150)[0].sum().backward()
    assert x.grad is not None


def test_every_layer_of_a_model_shares_nothing_but_computes_each_table_once():
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig(d_model=32, n_heads=2, d_ff=64, n_layers=3)).eval()
    calls = []
    original = tinytf.positions.rope_angles
    try:
        tinytf.positions.rope_angles = lambda *a, **kw: calls.append(a[0].shape[0]) or original(*a, **kw)
        ids = tinytf.encode("hello there")
        with torch.no_grad():
            model(ids)
            model(ids)
        assert calls == [16, 16, 16]  # once per layer for the first forward (16 = next power of two), then never
    finally:
        tinytf.positions.rope_angles = original


def test_diagonal_spread():
    """0 for a matrix that depends on m - n only (RoPE scores of one repeated token); 1 when a diagonal spans
    the whole range; matches the chapter 1 definition; rejects non-square input."""
    from tinytf.errors import TinyTFInputError
    from tinytf.positions import diagonal_spread

    toeplitz = torch.tensor([[float(m - n) for n in range(5)] for m in range(5)])
    assert diagonal_spread(toeplitz) == 0
    assert diagonal_spread(torch.tensor([[0.0, 1.0], [2.0, 1.0]])) == pytest.approx(0.5)
    assert diagonal_spread(torch.tensor([[0.0, 5.0], [5.0, 1.0]])) == pytest.approx(0.2)
    assert diagonal_spread(torch.tensor([[0.0, 0.0], [0.0, 1.0]])) == pytest.approx(1.0)
    P = tinytf.sinusoidal_table(32, 64)
    assert diagonal_spread(P @ P.T) < 1e-5
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(TinyConfig())
    _, tr = model.run_with_trace(tinytf.encode("a" * 12))
    assert diagonal_spread(tr["blocks.0.attn.scores"][0, 0]) < 1e-5
    with pytest.raises(TinyTFInputError):
        diagonal_spread(torch.zeros(2, 3))
    with pytest.raises(TinyTFInputError):
        diagonal_spread(torch.ones(3, 3))
