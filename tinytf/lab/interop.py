"""Interoperability with PyTorch's reference blocks.

PyTorch ships the 2017 blocks as ``nn.TransformerEncoderLayer`` and ``nn.TransformerDecoderLayer``.
Copying a tinytf block's weights into one of them (or back) and comparing outputs is the
strongest check that tinytf's blocks are the textbook ones:

    ref = tinytf.interop.to_torch(block)       # EncoderBlock -> nn.TransformerEncoderLayer
    torch.testing.assert_close(block(x), ref(x))

A whole ``EncoderDecoder`` maps to ``nn.Transformer`` (``to_torch_transformer``): both stacks end in a final
LayerNorm in both libraries (nn.Transformer adds one even to post-norm stacks). The embeddings and positions
stay outside: feed nn.Transformer the traced ``encoder.embed`` / ``decoder.embed`` and compare its output with
``decoder.final_norm.out``. Padding masks map as src_padding_mask -> src_key_padding_mask and
memory_key_padding_mask, tgt_padding_mask -> tgt_key_padding_mask.

PyTorch's layers know only LayerNorm, ungated two-matrix MLPs, full multi-head attention and no
rotary positions, so only blocks built from those parts can be mapped; anything else raises
TinyTFInputError naming the part. Weight layout: PyTorch keeps Q, K and V stacked in one
``in_proj_weight`` of shape [3C, C] (rows 0..C-1 = Q, C..2C-1 = K, 2C..3C-1 = V).
"""
from __future__ import annotations

import torch
from torch import nn

from ..blocks import CrossDecoderBlock, EncoderBlock, PostNorm, PreNorm
from ..errors import TinyTFInputError
from ..ffn import MLP
from ..norms import LayerNorm
from ..positions import NoRotary

__all__ = ["to_torch", "to_torch_transformer", "from_torch", "torch_compatibility", "copy_attention", "copy_block",
           "weight_map"]


def _norms(block):
    names = ("norm1", "norm_cross", "norm2") if isinstance(block, CrossDecoderBlock) else ("norm1", "norm2")
    return [getattr(block, n) for n in names]


def _attentions(block):
    return [block.attn, block.cross_attn] if isinstance(block, CrossDecoderBlock) else [block.attn]


def torch_compatibility(block) -> list:
    """Reasons why ``block`` has no PyTorch reference layer (an empty list means it has one)."""
    if not isinstance(block, (EncoderBlock, CrossDecoderBlock)):
        return [f"{type(block).__name__} has no PyTorch counterpart; use an EncoderBlock or a CrossDecoderBlock "
                "(a decoder-only DecoderBlock has no cross-attention, nn.TransformerDecoderLayer always has one)"]
    reasons = []
    if not isinstance(block.connect, (PreNorm, PostNorm)):
        reasons.append("the block has no residual connections (residual=False)")
    if not all(isinstance(n, LayerNorm) for n in _norms(block)):
        reasons.append("norm='rms': PyTorch's layers use LayerNorm only")
    if not isinstance(block.ffn, MLP):
        reasons.append("ffn='swiglu': PyTorch's layers have an ungated two-matrix MLP only (any element-wise activation)")
    for a in _attentions(block):
        if a.n_kv_heads != a.n_heads:
            reasons.append("grouped-query attention (n_kv_heads < n_heads): nn.MultiheadAttention has one K/V head per query head")
            break
    if not isinstance(block.attn.rotary, NoRotary):
        reasons.append("pos='rope' rotates Q and K inside attention; PyTorch's layers have no rotary positions")
    biases = {m.bias is not None for m in block.modules() if isinstance(m, (nn.Linear, LayerNorm))}
    if len(biases) > 1:
        reasons.append("some layers have biases and some not (qkv_bias without bias); PyTorch's `bias` flag is all-or-nothing")
    return reasons


def _check(block):
    reasons = torch_compatibility(block)
    if reasons:
        raise TinyTFInputError("this block cannot be mapped to a PyTorch layer: " + "; ".join(reasons))


@torch.no_grad()
def copy_attention(ours, theirs: nn.MultiheadAttention, to_torch: bool = True):
    """Copy Q/K/V/O weights between a tinytf ``Attention`` and an ``nn.MultiheadAttention``."""
    C = ours.q_proj.in_features
    projections = (ours.q_proj, ours.k_proj, ours.v_proj)
    for i, proj in enumerate(projections):
        rows = slice(i * C, (i + 1) * C)
        if to_torch:
            theirs.in_proj_weight[rows] = proj.weight
            if proj.bias is not None:
                theirs.in_proj_bias[rows] = proj.bias
        else:
            proj.weight.copy_(theirs.in_proj_weight[rows])
            if proj.bias is not None:
                proj.bias.copy_(theirs.in_proj_bias[rows])
    _copy_module(ours.o_proj, theirs.out_proj, to_torch)


@torch.no_grad()
def _copy_module(ours, theirs, to_torch: bool):
    """Copy weight (and bias, if any) between two modules with the same parameter shapes."""
    for name in ("weight", "bias"):
        a, b = getattr(ours, name, None), getattr(theirs, name, None)
        if a is None and b is None:
            continue
        if (a is None) != (b is None) or a.shape != b.shape:
            raise TinyTFInputError(f"cannot copy {name}: tinytf has {None if a is None else tuple(a.shape)}, "
                                   f"PyTorch has {None if b is None else tuple(b.shape)}")
        (b if to_torch else a).copy_(a if to_torch else b)


#: (tinytf name, PyTorch name) of the norms and FFN matrices copied by ``copy_block``. PyTorch numbers the
#: decoder's norms by sublayer: norm1 self-attn, norm2 cross-attn, norm3 FFN
_NAMES = {"encoder": [("norm1", "norm1"), ("norm2", "norm2"), ("ffn.up", "linear1"), ("ffn.down", "linear2")],
          "decoder": [("norm1", "norm1"), ("norm_cross", "norm2"), ("norm2", "norm3"),
                      ("ffn.up", "linear1"), ("ffn.down", "linear2")]}


def _kind(block) -> str:
    cls = block if isinstance(block, type) else type(block)
    return "decoder" if issubclass(cls, CrossDecoderBlock) else "encoder"


def weight_map(block) -> list:
    """(tinytf name, PyTorch name) of every module ``copy_block`` copies for ``block`` (an ``EncoderBlock`` or
    ``CrossDecoderBlock``, instance or class), in the order the sublayers run. An attention's q_proj / k_proj /
    v_proj go to rows 0..C-1 / C..2C-1 / 2C..3C-1 of PyTorch's ``in_proj_weight``, its o_proj to ``out_proj``."""
    attn = [("attn", "self_attn")] + ([("cross_attn", "multihead_attn")] if _kind(block) == "decoder" else [])
    return attn + _NAMES[_kind(block)]


def _pairs(block, layer):
    """(tinytf module, PyTorch module) pairs, in the order the sublayers run."""
    return [(block.get_submodule(ours), layer.get_submodule(theirs)) for ours, theirs in _NAMES[_kind(block)]]


def copy_block(block, layer, to_torch: bool = True):
    """Copy every weight between a tinytf block and the matching PyTorch layer (either direction)."""
    _check(block)
    copy_attention(block.attn, layer.self_attn, to_torch)
    if isinstance(block, CrossDecoderBlock):
        copy_attention(block.cross_attn, layer.multihead_attn, to_torch)
    for ours, theirs in _pairs(block, layer):
        _copy_module(ours, theirs, to_torch)
    return layer


def _empty_layer(block):
    attn, ffn = block.attn, block.ffn
    kwargs = dict(
        d_model=attn.q_proj.in_features, nhead=attn.n_heads, dim_feedforward=ffn.up.out_features, dropout=0.0,
        activation="gelu" if isinstance(ffn.act, nn.GELU) else "relu", layer_norm_eps=block.norm1.eps,
        batch_first=True, norm_first=isinstance(block.connect, PreNorm), bias=ffn.up.bias is not None,
    )
    cls = nn.TransformerDecoderLayer if isinstance(block, CrossDecoderBlock) else nn.TransformerEncoderLayer
    return cls(**kwargs)


def to_torch(block) -> nn.Module:
    """A new ``nn.TransformerEncoderLayer`` (for an EncoderBlock) or ``nn.TransformerDecoderLayer``
    (for a CrossDecoderBlock) with the same hyper-parameters and a copy of the block's weights.
    Call it with ``batch_first`` tensors; for the decoder pass ``tgt_mask`` (causal) yourself."""
    _check(block)
    layer = _empty_layer(block)
    copy_block(block, layer, to_torch=True)
    return layer.train(block.training)


def to_torch_transformer(model) -> nn.Transformer:
    """A new ``nn.Transformer`` (batch_first) holding a copy of every block and both final norms of a tinytf
    ``EncoderDecoder``; the token embeddings, positions and LM head stay in tinytf. Call it with embedded
    inputs and ``tgt_mask`` (causal) yourself."""
    enc, dec = model.encoder.blocks, model.decoder.blocks
    for block in (*enc, *dec):
        _check(block)
    for norm in (model.encoder.final_norm, model.decoder.final_norm):
        if not isinstance(norm, LayerNorm):
            raise TinyTFInputError("this model cannot be mapped to nn.Transformer: its final norms are "
                                   f"{type(norm).__name__}, nn.Transformer's are LayerNorm")
    encoder_layer, decoder_layer = _empty_layer(enc[0]), _empty_layer(dec[0])
    ref = nn.Transformer(custom_encoder=nn.TransformerEncoder(encoder_layer, len(enc), nn.LayerNorm(
                             encoder_layer.linear1.in_features, eps=model.encoder.final_norm.eps,
                             bias=encoder_layer.linear1.bias is not None), enable_nested_tensor=False),
                         custom_decoder=nn.TransformerDecoder(decoder_layer, len(dec), nn.LayerNorm(
                             decoder_layer.linear1.in_features, eps=model.decoder.final_norm.eps,
                             bias=decoder_layer.linear1.bias is not None)),
                         d_model=encoder_layer.linear1.in_features, nhead=enc[0].attn.n_heads, batch_first=True)
    for block, layer in zip(enc, ref.encoder.layers):
        copy_block(block, layer)
    for block, layer in zip(dec, ref.decoder.layers):
        copy_block(block, layer)
    _copy_module(model.encoder.final_norm, ref.encoder.norm, to_torch=True)
    _copy_module(model.decoder.final_norm, ref.decoder.norm, to_torch=True)
    return ref.train(model.training)


def from_torch(layer: nn.Module, block):
    """Load a PyTorch layer's weights into a tinytf block of the same shape; returns the block."""
    _check(block)
    want = nn.TransformerDecoderLayer if isinstance(block, CrossDecoderBlock) else nn.TransformerEncoderLayer
    if not isinstance(layer, want):
        raise TinyTFInputError(f"{type(block).__name__} takes weights from {want.__name__}, got {type(layer).__name__}")
    copy_block(block, layer, to_torch=False)
    return block
