"""Blocks: the stackable unit. Each sublayer (attention or FFN) is joined to the residual
stream by a *connection* chosen at construction:

    pre-norm  (modern):   x + F(Norm(x))
    post-norm (2017):     Norm(x + F(x))
    sandwich (Gemma 2/3): x + Norm_post(F(Norm_pre(x)))
    post-sublayer (OLMo 2): x + Norm(F(x))
    without residual:     F(Norm(x))   or   Norm(F(x))      (experiments only)

so the block's forward reads like the two formulas of a pre-norm block:
    U  = H + Attn(Norm1(H))
    H' = U + FFN(Norm2(U))
"""
from __future__ import annotations

from torch import nn

from .attention import Attention
from .config import TinyConfig
from .ffn import make_dense_ffn
from .hooks import Hook
from .mla import LatentAttention
from .moe import MoE
from .norms import make_norm


def make_attention(cfg: TinyConfig, layer: int = 0) -> nn.Module:
    """The causal self-attention of decoder layer ``layer``: multi-head latent attention (tinytf.mla) when
    the config sets mla (MLAOptions), else multi-head / grouped-query attention (local or global)."""
    if cfg.mla:
        return LatentAttention(cfg, layer)
    return Attention(cfg, causal=True, layer=layer)


def make_ffn(cfg: TinyConfig, layer: int = 0) -> nn.Module:
    """The FFN of layer ``layer``: a mixture of experts (tinytf.moe) when the config has experts and the layer
    is past the first moe.n_dense_layers, else a dense FFN of width d_ff (tinytf.ffn)."""
    return MoE(cfg) if cfg.is_moe_layer(layer) else make_dense_ffn(cfg)


class Connection(nn.Module):
    """Joins a sublayer F (with its norm) to the residual stream x. Subclasses pick the wiring."""

    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.drop = nn.Dropout(cfg.dropout)


class PreNorm(Connection):
    def forward(self, x, norm, f):
        return x + self.drop(f(norm(x)))  # modern: the stream x passes through untouched


class PostNorm(Connection):
    def forward(self, x, norm, f):
        return norm(x + self.drop(f(x)))  # 2017: the stream itself is normalised after every add


class PreNormNoResidual(Connection):
    def forward(self, x, norm, f):
        return self.drop(f(norm(x)))


class PostNormNoResidual(Connection):
    def forward(self, x, norm, f):
        return norm(self.drop(f(x)))


class SandwichNorm(Connection):
    """Gemma 2/3: a norm before the sublayer and one on its output, before the add. ``norm`` is a
    :class:`NormPair` (pre, post)."""

    def forward(self, x, norm, f):
        return x + self.drop(norm.post(f(norm.pre(x))))


class PostSublayerNorm(Connection):
    """OLMo 2: the sublayer reads the stream as it is; its output is normalised before the add."""

    def forward(self, x, norm, f):
        return x + self.drop(norm(f(x)))


class NormPair(nn.Module):
    """The two norms of one sandwich sublayer (traced as norm1.pre / norm1.post)."""

    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.pre, self.post = make_norm(cfg), make_norm(cfg)


def make_connection(cfg: TinyConfig) -> Connection:
    table = {("pre", True): PreNorm, ("post", True): PostNorm,
             ("pre", False): PreNormNoResidual, ("post", False): PostNormNoResidual,
             ("sandwich", True): SandwichNorm, ("post_sublayer", True): PostSublayerNorm}
    return table[cfg.norm_position, cfg.residual](cfg)


def make_sublayer_norm(cfg: TinyConfig) -> nn.Module:
    """The norm(s) a connection applies around one sublayer: a NormPair for the sandwich, else one norm."""
    return NormPair(cfg) if cfg.norm_position == "sandwich" else make_norm(cfg)


class DecoderBlock(nn.Module):
    """Decoder-only block (GPT, Llama): causal self-attention then FFN."""

    def __init__(self, cfg: TinyConfig, layer: int = 0):
        super().__init__()
        self.norm1, self.attn = make_sublayer_norm(cfg), make_attention(cfg, layer)
        self.norm2, self.ffn = make_sublayer_norm(cfg), make_ffn(cfg, layer)
        self.connect = make_connection(cfg)
        self.hook_resid_pre, self.hook_resid_mid, self.hook_resid_post = Hook(), Hook(), Hook()

    def forward(self, x, cache=None):  # x: [B, T, C] -> [B, T, C]
        x = self.hook_resid_pre(x)
        x = self.hook_resid_mid(self.connect(x, self.norm1, lambda h: self.attn(h, cache=cache)))
        return self.hook_resid_post(self.connect(x, self.norm2, self.ffn))


class EncoderBlock(nn.Module):
    """Encoder block (BERT): bidirectional self-attention (no causal mask; padded keys hidden when a
    ``key_padding_mask`` is given) then FFN."""

    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.norm1, self.attn = make_sublayer_norm(cfg), Attention(cfg, causal=False)
        self.norm2, self.ffn = make_sublayer_norm(cfg), make_ffn(cfg)
        self.connect = make_connection(cfg)
        self.hook_resid_pre, self.hook_resid_mid, self.hook_resid_post = Hook(), Hook(), Hook()

    def forward(self, x, key_padding_mask=None):  # x: [B, S, C], key_padding_mask: bool [B, S] -> [B, S, C]
        x = self.hook_resid_pre(x)
        x = self.hook_resid_mid(self.connect(x, self.norm1, lambda h: self.attn(h, key_padding_mask=key_padding_mask)))
        return self.hook_resid_post(self.connect(x, self.norm2, self.ffn))


class CrossDecoderBlock(nn.Module):
    """Encoder-decoder decoder block (2017, T5): masked self-attention, cross-attention to the
    encoder output (the only path from encoder to decoder), then FFN: three sublayers."""

    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.norm1, self.attn = make_sublayer_norm(cfg), Attention(cfg, causal=True)
        self.norm_cross, self.cross_attn = make_sublayer_norm(cfg), Attention(cfg, cross=True)
        self.norm2, self.ffn = make_sublayer_norm(cfg), make_ffn(cfg)
        self.connect = make_connection(cfg)
        self.hook_resid_pre, self.hook_resid_mid, self.hook_resid_cross, self.hook_resid_post = (
            Hook(), Hook(), Hook(), Hook())

    def forward(self, x, memory, cache=None, tgt_padding_mask=None, memory_padding_mask=None):
        """x: [B, T, C], memory: [B, S, C] -> [B, T, C]. tgt_padding_mask: bool [B, T] (with a cache: [B, cached + T]),
        memory_padding_mask: bool [B, S]; True = padded, as PyTorch's tgt/memory_key_padding_mask."""
        x = self.hook_resid_pre(x)
        x = self.hook_resid_mid(self.connect(x, self.norm1,
                                             lambda h: self.attn(h, cache=cache, key_padding_mask=tgt_padding_mask)))
        x = self.hook_resid_cross(self.connect(
            x, self.norm_cross, lambda h: self.cross_attn(h, context=memory, key_padding_mask=memory_padding_mask)))
        return self.hook_resid_post(self.connect(x, self.norm2, self.ffn))
