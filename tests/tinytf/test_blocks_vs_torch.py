"""Whole tinytf blocks against PyTorch's nn.TransformerEncoderLayer / nn.TransformerDecoderLayer
(and a whole EncoderDecoder against nn.Transformer), with PyTorch's weights copied into tinytf.

Weight mapping (PyTorch -> tinytf):
    self_attn.in_proj_weight/bias (rows q | k | v) -> attn.q_proj / k_proj / v_proj
    self_attn.out_proj                             -> attn.o_proj
    linear1 / linear2                              -> ffn.up / ffn.down
    encoder layer: norm1, norm2                    -> norm1 (attention), norm2 (FFN)
    decoder layer: norm1, norm2, norm3             -> norm1 (self-attn), norm_cross (cross-attn), norm2 (FFN)
    decoder layer: multihead_attn                  -> cross_attn
All comparisons in eval mode with dropout 0, tolerance 1e-5.
"""
import warnings

import pytest
import torch
from torch import nn

import tinytf
from tinytf import TinyConfig


ATOL = 1e-5
D_MODEL, N_HEADS, D_FF = 32, 4, 64


def cfg_for(norm_position, activation="relu"):
    # pos="none": PyTorch's layers have no RoPE; positions are added outside the blocks in both.
    return TinyConfig(d_model=D_MODEL, n_heads=N_HEADS, d_ff=D_FF, norm="layer", norm_position=norm_position,
                      ffn=activation, pos="none", bias=True, eps=1e-5)


def randomise(module, seed):
    """PyTorch initialises biases to 0 and norm weights to 1; randomise everything so every
    parameter (and a wrong mapping of any of them) shows in the output."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * (0.3 if p.dim() > 1 else 0.5))
    return module


@torch.no_grad()
def load_mha(mha: nn.MultiheadAttention, attn):
    q, k, v = mha.in_proj_weight.chunk(3)  # [3C, C] -> 3 x [C, C]
    qb, kb, vb = mha.in_proj_bias.chunk(3)
    for lin, w, b in ((attn.q_proj, q, qb), (attn.k_proj, k, kb), (attn.v_proj, v, vb)):
        lin.weight.copy_(w)
        lin.bias.copy_(b)
    attn.o_proj.weight.copy_(mha.out_proj.weight)
    attn.o_proj.bias.copy_(mha.out_proj.bias)


@torch.no_grad()
def load_norm(theirs: nn.LayerNorm, mine):
    mine.weight.copy_(theirs.weight)
    mine.bias.copy_(theirs.bias)


@torch.no_grad()
def load_ffn(layer, ffn):
    ffn.up.weight.copy_(layer.linear1.weight)
    ffn.up.bias.copy_(layer.linear1.bias)
    ffn.down.weight.copy_(layer.linear2.weight)
    ffn.down.bias.copy_(layer.linear2.bias)


def load_encoder_layer(layer: nn.TransformerEncoderLayer, block):
    load_mha(layer.self_attn, block.attn)
    load_ffn(layer, block.ffn)
    load_norm(layer.norm1, block.norm1)
    load_norm(layer.norm2, block.norm2)


def load_decoder_layer(layer: nn.TransformerDecoderLayer, block: tinytf.CrossDecoderBlock):
    load_mha(layer.self_attn, block.attn)
    load_mha(layer.multihead_attn, block.cross_attn)
    load_ffn(layer, block.ffn)
    load_norm(layer.norm1, block.norm1)
    load_norm(layer.norm2, block.norm_cross)
    load_norm(layer.norm3, block.norm2)


def encoder_layer(norm_first, activation="relu"):
    layer = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, activation=activation,
                                       batch_first=True, norm_first=norm_first)
    return randomise(layer, seed=1).eval()


def decoder_layer(norm_first, activation="relu"):
    layer = nn.TransformerDecoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, activation=activation,
                                       batch_first=True, norm_first=norm_first)
    return randomise(layer, seed=2).eval()


def assert_close(mine, theirs):
    assert mine.shape == theirs.shape
    err = (mine - theirs).abs().max().item()
    assert err <= ATOL, f"max |diff| = {err:.3g}"


def x_input(B=2, T=7, seed=0):
    return torch.randn(B, T, D_MODEL, generator=torch.Generator().manual_seed(seed))


NORM_FIRST = [pytest.param(False, id="post-norm"), pytest.param(True, id="pre-norm")]
ACTS = ["relu", "gelu"]


@pytest.mark.parametrize("norm_first", NORM_FIRST)
@pytest.mark.parametrize("activation", ACTS)
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])  # no_grad takes PyTorch's fused fast path
def test_encoder_block_matches_encoder_layer(norm_first, activation, grad):
    layer = encoder_layer(norm_first, activation)
    block = tinytf.EncoderBlock(cfg_for("pre" if norm_first else "post", activation)).eval()
    load_encoder_layer(layer, block)
    x = x_input()
    with torch.set_grad_enabled(grad):
        assert_close(block(x), layer(x))


@pytest.mark.parametrize("norm_first", NORM_FIRST)
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_decoder_block_matches_encoder_layer_with_causal_mask(norm_first, grad):
    layer = encoder_layer(norm_first)
    block = tinytf.DecoderBlock(cfg_for("pre" if norm_first else "post")).eval()
    load_encoder_layer(layer, block)
    x = x_input(T=9)
    mask = nn.Transformer.generate_square_subsequent_mask(9)
    with torch.set_grad_enabled(grad):
        theirs = layer(x, src_mask=mask, is_causal=True)
        assert_close(block(x), theirs)
        # and the unmasked encoder layer is a different function: the mask is really being compared
        assert (block(x) - layer(x)).abs().max() > 1e-2


@pytest.mark.parametrize("norm_first", NORM_FIRST)
@pytest.mark.parametrize("activation", ACTS)
def test_cross_decoder_block_matches_decoder_layer(norm_first, activation):
    layer = decoder_layer(norm_first, activation)
    block = tinytf.CrossDecoderBlock(cfg_for("pre" if norm_first else "post", activation)).eval()
    load_decoder_layer(layer, block)
    x, memory = x_input(T=5), x_input(T=6, seed=1)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    with torch.no_grad():
        assert_close(block(x, memory), layer(x, memory, tgt_mask=mask, tgt_is_causal=True))


def test_norm_mapping_matters():
    """Swapping norm2 and norm3 in the mapping must break the match (so the test above checks the mapping)."""
    layer = decoder_layer(True)
    block = tinytf.CrossDecoderBlock(cfg_for("pre")).eval()
    load_decoder_layer(layer, block)
    load_norm(layer.norm3, block.norm_cross)
    load_norm(layer.norm2, block.norm2)
    x, memory = x_input(T=5), x_input(T=6, seed=1)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    with torch.no_grad():
        assert (block(x, memory) - layer(x, memory, tgt_mask=mask)).abs().max() > 1e-3


@pytest.mark.parametrize("norm_first", NORM_FIRST)
def test_encoder_decoder_matches_nn_transformer(norm_first):
    """2 encoder + 2 decoder layers, final norms on both stacks (as nn.Transformer has)."""
    cfg = cfg_for("pre" if norm_first else "post")
    model = tinytf.EncoderDecoder(cfg).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested-tensor notice for norm_first
        ref = nn.Transformer(D_MODEL, N_HEADS, 2, 2, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first)
    randomise(ref, seed=3).eval()
    for layer, block in zip(ref.encoder.layers, model.encoder.blocks):
        load_encoder_layer(layer, block)
    for layer, block in zip(ref.decoder.layers, model.decoder.blocks):
        load_decoder_layer(layer, block)
    load_norm(ref.encoder.norm, model.encoder.final_norm)
    load_norm(ref.decoder.norm, model.decoder.final_norm)
    g = torch.Generator().manual_seed(0)
    src, tgt = torch.randint(0, 256, (2, 6), generator=g), torch.randint(0, 256, (2, 5), generator=g)
    with torch.no_grad():
        _, trace = model.run_with_trace(src, tgt)
        theirs = ref(model.encoder.embed(src), model.decoder.embed(tgt),
                     tgt_mask=nn.Transformer.generate_square_subsequent_mask(5), tgt_is_causal=True)
    assert_close(trace["decoder.final_norm.out"], theirs)


# ---- key-padding masks (True = padded), block by block; whole models in tests/test_padding_masks.py ----

LENGTHS_S, LENGTHS_T = torch.tensor([[7], [3]]), torch.tensor([[5], [2]])  # real lengths per batch row


@pytest.mark.parametrize("norm_first", NORM_FIRST)
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])  # no_grad: PyTorch's fast path
def test_encoder_block_matches_encoder_layer_with_key_padding_mask(norm_first, grad):
    layer = encoder_layer(norm_first)
    block = tinytf.EncoderBlock(cfg_for("pre" if norm_first else "post")).eval()
    load_encoder_layer(layer, block)
    x = x_input()
    pad = torch.arange(7)[None] >= LENGTHS_S  # [2, 7]
    with torch.set_grad_enabled(grad):
        mine, theirs = block(x, key_padding_mask=pad), layer(x, src_key_padding_mask=pad)
        real = ~pad  # PyTorch's fast path may write 0 at padded positions; the real ones must agree
        assert_close(mine[real], theirs[real])
        assert (mine[real] - block(x)[real]).abs().max() > 1e-2  # the mask changes the real positions


@pytest.mark.parametrize("norm_first", NORM_FIRST)
def test_cross_decoder_block_matches_decoder_layer_with_key_padding_masks(norm_first):
    layer = decoder_layer(norm_first)
    block = tinytf.CrossDecoderBlock(cfg_for("pre" if norm_first else "post")).eval()
    load_decoder_layer(layer, block)
    x, memory = x_input(T=5), x_input(T=7, seed=1)
    tgt_pad, mem_pad = torch.arange(5)[None] >= LENGTHS_T, torch.arange(7)[None] >= LENGTHS_S
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)  # PyTorch's bool mask: True = may not attend
    with torch.no_grad():
        mine = block(x, memory, tgt_padding_mask=tgt_pad, memory_padding_mask=mem_pad)
        theirs = layer(x, memory, tgt_mask=causal, tgt_is_causal=True, tgt_key_padding_mask=tgt_pad,
                       memory_key_padding_mask=mem_pad)
        assert_close(mine, theirs)  # every position, padded query rows too
        assert (mine - block(x, memory, tgt_padding_mask=tgt_pad)).abs().max() > 1e-2  # memory mask matters
