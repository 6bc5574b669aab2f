"""Each component of tinytf against PyTorch's own implementation (or the paper's formula)."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tinytf
from tinytf import TinyConfig
from tinytf.attention import Attention, attention, causal_mask


ATOL = 1e-5


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def close(a, b, atol=ATOL):
    assert a.shape == b.shape, (a.shape, b.shape)
    err = (a - b).abs().max().item()
    assert err <= atol, f"max |diff| = {err:.3g} > {atol}"


# ---------------------------------------------------------------- norms
def test_rmsnorm_matches_torch():
    x = randn(3, 5, 16) * 3 + 1
    mine, ref = tinytf.RMSNorm(16, eps=1e-5), nn.RMSNorm(16, eps=1e-5)
    with torch.no_grad():
        ref.weight.copy_(randn(16, seed=1))
        mine.weight.copy_(ref.weight)
    close(mine(x), ref(x))


@pytest.mark.parametrize("bias", [True, False])
def test_layernorm_matches_torch(bias):
    x = randn(3, 5, 16) * 3 + 1
    mine, ref = tinytf.LayerNorm(16, eps=1e-5, bias=bias), nn.LayerNorm(16, eps=1e-5, bias=bias)
    with torch.no_grad():
        ref.weight.copy_(randn(16, seed=1))
        mine.weight.copy_(ref.weight)
        if bias:
            ref.bias.copy_(randn(16, seed=2))
            mine.bias.copy_(ref.bias)
    assert (mine.bias is None) == (not bias)
    close(mine(x), ref(x))


def test_norms_act_on_each_token_separately():
    x = randn(1, 6, 16)
    for norm in (tinytf.RMSNorm(16), tinytf.LayerNorm(16)):
        full = norm(x)
        y = x.clone()
        y[0, 3] *= 10  # change one token
        assert torch.equal(norm(y)[0, :3], full[0, :3]) and torch.equal(norm(y)[0, 4:], full[0, 4:])


def test_make_norm_follows_config():
    assert isinstance(tinytf.make_norm(TinyConfig()), tinytf.RMSNorm)
    ln = tinytf.make_norm(TinyConfig(norm="layer", bias=False))
    assert isinstance(ln, tinytf.LayerNorm) and ln.bias is None
    assert tinytf.make_norm(TinyConfig(norm="layer", bias=True)).bias is not None


# ---------------------------------------------------------------- feed-forward
def test_swiglu_is_down_of_silu_gate_times_up():
    ffn = tinytf.SwiGLU(8, 24)
    x = randn(2, 3, 8)
    expected = (F.silu(x @ ffn.gate.weight.T) * (x @ ffn.up.weight.T)) @ ffn.down.weight.T
    close(ffn(x), expected)
    assert sum(p.numel() for p in ffn.parameters()) == 3 * 8 * 24


@pytest.mark.parametrize("module", [tinytf.MLP, tinytf.SwiGLU])
def test_printed_ffn_source_fits_the_page(module):
    # chapter 4 prints these forward methods; the book's code column shows about 78 characters
    import inspect
    assert max(len(line) for line in inspect.getsource(module.forward).splitlines()) <= 78


@pytest.mark.parametrize("act,fn", [("relu", F.relu), ("gelu", F.gelu)])
def test_mlp_is_two_matrices_with_activation(act, fn):
    ffn = tinytf.MLP(8, 32, activation=act, bias=True)
    with torch.no_grad():
        ffn.up.bias.copy_(randn(32, seed=3))
        ffn.down.bias.copy_(randn(8, seed=4))
    x = randn(2, 3, 8)
    close(ffn(x), fn(x @ ffn.up.weight.T + ffn.up.bias) @ ffn.down.weight.T + ffn.down.bias)


@pytest.mark.parametrize("d_model, multiplier, multiple_of, d_ff", [
    (4096, None, 256, 11008),  # Llama 1 7B (and Llama 2 7B)
    (4096, 1.3, 1024, 14336),  # Llama 3 8B
    (8192, 1.3, 4096, 28672),  # Llama 2 70B
])
def test_llama_hidden_size_matches_released_models(d_model, multiplier, multiple_of, d_ff):
    assert tinytf.llama_hidden_size(d_model, multiplier, multiple_of) == d_ff
    steps = tinytf.llama_hidden_size(d_model, multiplier, multiple_of, steps=True)
    assert steps[0] == 4 * d_model and steps[-1] == d_ff and len(steps) == (3 if multiplier is None else 4)


def test_zero_count_table_counts_exact_zeros_and_silent_units():
    h = torch.tensor([[0.0, 1.0, 0.0], [0.0, -2.0, 3.0]])  # [T=2, d_ff=3]: unit 0 silent, 3 zeros
    table = tinytf.zero_count_table({"h": h, "dense": torch.ones(2, 3)})
    lines = table.splitlines()
    assert len(lines) == 3 and "exactly 0" in lines[0]
    assert "3 (50.0%)" in lines[1] and lines[1].endswith("1 of 3")
    assert "0 (0.0%)" in lines[2] and lines[2].endswith("0 of 3")


def test_make_ffn_follows_config():
    assert isinstance(tinytf.make_ffn(TinyConfig()), tinytf.SwiGLU)
    mlp = tinytf.make_ffn(TinyConfig(ffn="gelu", bias=True))
    assert isinstance(mlp, tinytf.MLP) and isinstance(mlp.act, nn.GELU) and mlp.up.bias is not None
    assert isinstance(tinytf.make_ffn(TinyConfig(ffn="relu")).act, nn.ReLU)


# ---------------------------------------------------------------- positions
def test_sinusoidal_table_is_the_paper_formula():
    n, d = 50, 16
    expected = torch.tensor([[math.sin(t / 10000 ** (i / d)) if i % 2 == 0 else math.cos(t / 10000 ** ((i - 1) / d))
                              for i in range(d)] for t in range(n)])
    close(tinytf.sinusoidal_table(n, d), expected, atol=1e-5)


def test_sinusoidal_table_odd_width():
    table = tinytf.sinusoidal_table(10, 7)
    assert table.shape == (10, 7)
    close(table[:, 6], torch.sin(torch.arange(10.0) / 10000 ** (6 / 7)))


@pytest.mark.parametrize("kind", ["sinusoidal", "learned"])
def test_additive_positions_add_rows_from_offset(kind):
    cfg = TinyConfig(d_model=16, n_heads=2, pos=kind, max_seq_len=20)
    pos = tinytf.SinusoidalPositions(cfg) if kind == "sinusoidal" else tinytf.LearnedPositions(cfg)
    table = pos.table if kind == "sinusoidal" else pos.weight
    x = randn(2, 4, 16)
    close(pos(x, offset=5), x + table[5:9])
    assert (kind == "learned") == (sum(p.numel() for p in pos.parameters()) == 20 * 16)


# ---------------------------------------------------------------- attention
def test_causal_mask():
    assert causal_mask(3, 3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    # two new queries after 3 cached positions: query i sits at position 3 + i
    assert causal_mask(2, 5, offset=3).tolist() == [[True, True, True, True, False], [True, True, True, True, True]]


@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_sdpa(causal):
    q, k, v = randn(2, 3, 6, 8, seed=1), randn(2, 3, 6, 8, seed=2), randn(2, 3, 6, 8, seed=3)
    out, weights = attention(q, k, v, causal_mask(6, 6) if causal else None)
    close(out, F.scaled_dot_product_attention(q, k, v, is_causal=causal))
    assert weights.shape == (2, 3, 6, 6)
    close(weights.sum(-1), torch.ones(2, 3, 6))
    if causal:
        assert (weights.triu(1) == 0).all()


def test_attention_with_offset_mask_matches_sdpa_bool_mask():
    # 2 queries at positions 4, 5 reading 6 keys, 1 query ahead of the diagonal = cached decoding
    q, k, v = randn(1, 2, 2, 8, seed=1), randn(1, 2, 6, 8, seed=2), randn(1, 2, 6, 8, seed=3)
    mask = causal_mask(2, 6, offset=4)
    out, _ = attention(q, k, v, mask)
    close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_attention_cross_shapes_t_queries_s_keys():
    q, k, v = randn(2, 4, 5, 8), randn(2, 4, 7, 8, seed=1), randn(2, 4, 7, 8, seed=2)
    out, weights = attention(q, k, v)
    assert out.shape == (2, 4, 5, 8) and weights.shape == (2, 4, 5, 7)
    close(out, F.scaled_dot_product_attention(q, k, v))


def _heads(x, n, d):  # [B, T, n*d] -> [B, n, T, d]
    return x.view(x.shape[0], x.shape[1], n, d).transpose(1, 2)


@pytest.mark.parametrize("n_kv_heads", [None, 2, 1])
@pytest.mark.parametrize("causal", [True, False])
def test_attention_module_matches_sdpa_with_gqa(n_kv_heads, causal):
    cfg = TinyConfig(d_model=32, n_heads=4, n_kv_heads=n_kv_heads, pos="none", bias=True)
    attn = Attention(cfg, causal=causal).eval()
    with torch.no_grad():
        for lin in (attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj):
            lin.bias.normal_()
    x = randn(2, 7, 32)
    H, Hkv, D = 4, cfg.kv_heads, 8
    q, k, v = _heads(attn.q_proj(x), H, D), _heads(attn.k_proj(x), Hkv, D), _heads(attn.v_proj(x), Hkv, D)
    z = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)  # [B, H, T, D]
    expected = attn.o_proj(z.transpose(1, 2).reshape(2, 7, 32))
    close(attn(x), expected)


def test_gqa_equals_multihead_with_repeated_kv_heads():
    gqa_cfg = TinyConfig(d_model=32, n_heads=4, n_kv_heads=2, pos="rope")
    gqa = Attention(gqa_cfg)
    mha = Attention(gqa_cfg.replace(n_kv_heads=None))
    with torch.no_grad():
        mha.q_proj.weight.copy_(gqa.q_proj.weight)
        mha.o_proj.weight.copy_(gqa.o_proj.weight)
        for name in ("k_proj", "v_proj"):  # each K/V head serves 2 query heads: repeat its rows
            w = getattr(gqa, name).weight.view(2, 8, 32)  # [H_kv, D, C]
            getattr(mha, name).weight.copy_(w.repeat_interleave(2, dim=0).reshape(32, 32))  # [H*D, C]
    x = randn(2, 6, 32)
    close(gqa(x), mha(x))
    assert sum(p.numel() for p in gqa.parameters()) < sum(p.numel() for p in mha.parameters())


def test_qkv_bias_only_on_qkv():
    attn = Attention(TinyConfig(qkv_bias=True))
    assert all(getattr(attn, n).bias is not None for n in ("q_proj", "k_proj", "v_proj"))
    assert attn.o_proj.bias is None
    assert Attention(TinyConfig(bias=True)).o_proj.bias is not None


def test_cross_attention_reads_context_without_mask_or_rope():
    cfg = TinyConfig(d_model=32, n_heads=4)
    attn = Attention(cfg, cross=True)
    assert not attn.causal and isinstance(attn.rotary, tinytf.positions.NoRotary)
    x, memory = randn(2, 3, 32), randn(2, 5, 32, seed=1)
    q = _heads(attn.q_proj(x), 4, 8)
    k, v = _heads(attn.k_proj(memory), 4, 8), _heads(attn.v_proj(memory), 4, 8)
    expected = attn.o_proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(2, 3, 32))
    close(attn(x, context=memory), expected)


# ---------------------------------------------------------------- whole models
def test_tiny_transformer_shapes_1d_and_2d():
    model = tinytf.TinyTransformer()
    ids = torch.randint(0, 256, (10,), generator=torch.Generator().manual_seed(0))
    assert model(ids).shape == (10, 256)
    batch = torch.stack([ids, ids.flip(0)])
    out = model(batch)
    assert out.shape == (2, 10, 256)
    close(out[0], model(ids))  # the [T] form is the [1, T] form without the batch dimension
    close(out[1], model(ids.flip(0)))


def test_lists_of_ints_are_accepted():
    model = tinytf.TinyTransformer()
    assert torch.equal(model([1, 2, 3]), model(torch.tensor([1, 2, 3])))


@pytest.mark.parametrize("cfg", [tinytf.config_2017(), TinyConfig()], ids=["2017", "2026"])
def test_encoder_decoder_6_source_5_target(cfg):
    model = tinytf.EncoderDecoder(cfg)
    src, tgt = torch.arange(6), torch.arange(5) + 10
    logits = model(src, tgt)
    assert logits.shape == (5, 256)
    batched = model(torch.stack([src, src]), torch.stack([tgt, tgt]))
    assert batched.shape == (2, 5, 256)
    close(batched[1], logits)
    assert len(model.encoder.blocks) == 2 and len(model.decoder.blocks) == 2


def test_encoder_decoder_layer_counts_and_source_matters():
    model = tinytf.EncoderDecoder(TinyConfig(n_layers=1, n_encoder_layers=3))
    assert len(model.encoder.blocks) == 3 and len(model.decoder.blocks) == 1
    tgt = torch.arange(4)
    assert not torch.allclose(model(torch.arange(6), tgt), model(torch.arange(6) + 1, tgt))


def test_tied_embeddings_share_one_tensor():
    model = tinytf.TinyTransformer(TinyConfig(tie_embeddings=True))
    assert model.lm_head.weight is model.embed.weight
    ed = tinytf.EncoderDecoder(TinyConfig(tie_embeddings=True))
    assert ed.lm_head.weight is ed.decoder.embed.weight


def test_same_seed_same_model_and_outputs():
    ids = torch.arange(12)
    outs = []
    for _ in range(2):
        tinytf.seed_everything(0)
        outs.append(tinytf.TinyTransformer(tinytf.config_2017())(ids))
    tinytf.seed_everything(1)
    other = tinytf.TinyTransformer(tinytf.config_2017())(ids)
    assert torch.equal(outs[0], outs[1])
    assert not torch.allclose(outs[0], other)


def test_dropout_only_in_training_mode():
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(TinyConfig(dropout=0.3))
    ids = torch.arange(8)
    model.train()
    assert not torch.allclose(model(ids), model(ids))
    model.eval()
    tinytf.seed_everything(0)
    no_dropout = tinytf.TinyTransformer(TinyConfig(dropout=0.0)).eval()
    assert torch.equal(model(ids), model(ids))
    close(model(ids), no_dropout(ids))  # same seed, same weights: dropout is the only difference


def test_no_residual_config_builds_and_differs():
    tinytf.seed_everything(0)
    a = tinytf.TinyTransformer(TinyConfig())
    tinytf.seed_everything(0)
    b = tinytf.TinyTransformer(TinyConfig(residual=False))
    ids = torch.arange(5)
    assert not torch.allclose(a(ids), b(ids))
