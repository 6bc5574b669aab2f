"""Whole models: the decoder-only TinyTransformer and the EncoderDecoder."""
from __future__ import annotations

import torch
from torch import nn

import math

from .attention import KVCache, check_padding_mask
from .blocks import CrossDecoderBlock, DecoderBlock, EncoderBlock
from .config import TinyConfig
from .errors import TinyTFInputError
from .hooks import Hook
from .norms import make_norm
from .positions import make_additive_positions
from .tracing import Traceable


def check_ids(ids, cfg: TinyConfig, what: str = "ids"):
    """Validate token ids; return ([B, T] LongTensor, was_1d). Raises TinyTFInputError."""
    if ids is None:
        raise TinyTFInputError(f"{what}: got None, expected a tensor of token ids of shape [T] or [B, T]")
    if not isinstance(ids, torch.Tensor):
        try:
            ids = torch.as_tensor(ids)
        except Exception as e:  # noqa: BLE001
            raise TinyTFInputError(f"{what}: could not turn {type(ids).__name__} into a tensor of token ids ({e})")
    if ids.numel() == 0:  # [0], [B, 0], [0, T] or [] (before the dtype: [] becomes a float tensor)
        raise TinyTFInputError(f"{what}: got no tokens (shape {list(ids.shape)}), expected at least one token")
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TinyTFInputError(f"{what}: got dtype {ids.dtype}, expected integer token ids (torch.long)")
    if ids.dim() not in (1, 2):
        raise TinyTFInputError(f"{what}: got shape {list(ids.shape)} ({ids.dim()}-D), expected [T] or [B, T]")
    if ids.device.type != "meta":
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= cfg.vocab_size:
            bad = lo if lo < 0 else hi
            raise TinyTFInputError(f"{what}: token id {bad} is outside the vocabulary [0, {cfg.vocab_size})")
    was_1d = ids.dim() == 1
    return (ids[None] if was_1d else ids).long(), was_1d


def init_weights(model: nn.Module, std: float = 0.02):
    """GPT-2 style initialisation: Linear and Embedding weights ~ N(0, std), biases 0."""
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, std)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)


class ScaledEmbedding(nn.Embedding):
    """Gemma: the embedding lookup times sqrt(d_model) (a float32 constant, like Gemma3TextScaledWordEmbedding),
    so the stream starts at the scale the norms expect while the LM head shares the unscaled matrix."""

    def __init__(self, vocab_size: int, d_model: int):
        super().__init__(vocab_size, d_model)
        self.register_buffer("scale", torch.tensor(math.sqrt(d_model)), persistent=False)

    def forward(self, ids):
        return super().forward(ids) * self.scale.to(self.weight.dtype)


def make_embedding(cfg: TinyConfig) -> nn.Embedding:
    """The token embedding: sqrt(d_model)-scaled when ``cfg.scale_embeddings`` (Gemma; the 2017 paper), else plain."""
    return (ScaledEmbedding if cfg.scale_embeddings else nn.Embedding)(cfg.vocab_size, cfg.d_model)


class SoftCappedHead(nn.Linear):
    """LM head whose logits are soft-capped: c * tanh(logits / c) stays within (-c, c) (Gemma 2)."""

    def __init__(self, d_model: int, vocab_size: int, cap: float):
        super().__init__(d_model, vocab_size, bias=False)
        self.cap = cap

    def forward(self, x):
        return torch.tanh(super().forward(x) / self.cap) * self.cap


class TinyTransformer(Traceable, nn.Module):
    """Decoder-only language model: embedding -> N DecoderBlocks -> final norm -> LM head.

    ids [T] -> logits [T, V]; ids [B, T] -> logits [B, T, V].
    """

    def __init__(self, cfg: TinyConfig = TinyConfig()):
        super().__init__()
        self.config = cfg
        self.embed = make_embedding(cfg)
        self.pos = make_additive_positions(cfg)
        self.blocks = nn.ModuleList(DecoderBlock(cfg, i) for i in range(cfg.n_layers))
        self.final_norm = make_norm(cfg)
        self.lm_head = (nn.Linear(cfg.d_model, cfg.vocab_size, bias=False) if cfg.logit_softcap is None
                        else SoftCappedHead(cfg.d_model, cfg.vocab_size, cfg.logit_softcap))
        self.hook_tok_embed, self.hook_embed, self.hook_logits = Hook(), Hook(), Hook()
        init_weights(self)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.embed.weight

    def forward(self, ids, cache: KVCache | None = None):
        ids, was_1d = check_ids(ids, self.config)
        offset = cache.length if cache is not None else 0
        x = self.hook_tok_embed(self.embed(ids))  # [B, T] -> [B, T, C]
        x = self.hook_embed(self.pos(x, offset))  # + positions (sinusoidal / learned); RoPE acts in attention
        for i, block in enumerate(self.blocks):
            x = block(x, cache=cache.layers[i] if cache is not None else None)  # [B, T, C]
        logits = self.hook_logits(self.lm_head(self.final_norm(x)))  # [B, T, V]
        return logits[0] if was_1d else logits

    def new_cache(self) -> KVCache:
        """One empty cache per block, of the kind its attention needs (full, sliding-window or MLA latent)."""
        return KVCache([block.attn.new_cache() for block in self.blocks])

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())  # shared (tied) tensors counted once


class Encoder(nn.Module):
    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.config = cfg
        self.embed = make_embedding(cfg)
        self.pos = make_additive_positions(cfg)
        self.blocks = nn.ModuleList(EncoderBlock(cfg) for _ in range(cfg.encoder_layers))
        self.final_norm = make_norm(cfg)
        self.hook_tok_embed, self.hook_embed = Hook(), Hook()

    def forward(self, src, src_padding_mask=None):  # src: [B, S], src_padding_mask: bool [B, S] -> memory [B, S, C]
        x = self.hook_embed(self.pos(self.hook_tok_embed(self.embed(src))))
        for block in self.blocks:
            x = block(x, key_padding_mask=src_padding_mask)
        return self.final_norm(x)


class Decoder(nn.Module):
    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.config = cfg
        self.embed = make_embedding(cfg)
        self.pos = make_additive_positions(cfg)
        self.blocks = nn.ModuleList(CrossDecoderBlock(cfg) for _ in range(cfg.n_layers))
        self.final_norm = make_norm(cfg)
        self.hook_tok_embed, self.hook_embed = Hook(), Hook()

    def forward(self, tgt, memory, cache: KVCache | None = None, tgt_padding_mask=None, memory_padding_mask=None):
        # tgt: [B, T], memory: [B, S, C]; padding masks bool [B, T] and [B, S], True = padded
        offset = cache.length if cache is not None else 0
        x = self.hook_embed(self.pos(self.hook_tok_embed(self.embed(tgt)), offset))
        for i, block in enumerate(self.blocks):
            x = block(x, memory, cache=cache.layers[i] if cache is not None else None,
                      tgt_padding_mask=tgt_padding_mask, memory_padding_mask=memory_padding_mask)
        return self.final_norm(x)


class EncoderDecoder(Traceable, nn.Module):
    """The full 2017 Transformer shape: an encoder over the source, a decoder over the target
    that reads the encoder output through cross-attention, and an LM head.

    model(src, tgt): src [S] or [B, S], tgt [T] or [B, T] -> logits [T, V] or [B, T, V].

    A batch of sequences of different lengths is padded to one length; ``src_padding_mask`` ([S] or [B, S])
    and ``tgt_padding_mask`` ([T] or [B, T]; with a KV cache, every target position so far) are bool, True =
    padded, as PyTorch's key-padding masks. The source mask hides padded source positions from the encoder's
    self-attention and from every cross-attention (PyTorch's ``src_key_padding_mask`` and
    ``memory_key_padding_mask``); the target mask hides padded target positions from the decoder's
    self-attention (``tgt_key_padding_mask``). Outputs at padded positions are computed but meaningless.
    """

    def __init__(self, cfg: TinyConfig = TinyConfig()):
        super().__init__()
        self.config = cfg
        self.encoder, self.decoder = Encoder(cfg), Decoder(cfg)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.hook_logits = Hook()
        init_weights(self)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.decoder.embed.weight

    def encode(self, src, src_padding_mask=None):
        src, _ = check_ids(src, self.config, "src")
        return self.encoder(src, self._padding_mask(src_padding_mask, src.shape, "src_padding_mask"))

    @staticmethod
    def _padding_mask(mask, shape, what):  # None, or bool [L] / [B, L] matching ids of shape [B, L] -> [B, L]
        if mask is None:
            return None
        if isinstance(mask, torch.Tensor) and mask.dim() == 1 and len(shape) == 2 and shape[0] == 1:
            mask = mask[None]  # [L] -> [1, L], as a 1-D sequence is a batch of one
        return check_padding_mask(mask, shape[0], shape[1], what)

    def forward(self, src, tgt=None, cache: KVCache | None = None, memory=None, src_padding_mask=None,
                tgt_padding_mask=None):
        if tgt is None:
            raise TinyTFInputError(
                "EncoderDecoder needs a source and a target: model(src, tgt). Got only one tensor; "
                "for a decoder-only language model use TinyTransformer"
            )
        if src is None and memory is None:
            raise TinyTFInputError("EncoderDecoder got no source: pass src token ids (or the encoder output as memory=)")
        tgt, was_1d = check_ids(tgt, self.config, "tgt")
        if memory is None:
            memory = self.encode(src, src_padding_mask)  # [B, S, C]
        if memory.shape[0] != tgt.shape[0]:
            raise TinyTFInputError(f"src has batch size {memory.shape[0]} but tgt has {tgt.shape[0]}; they must match")
        memory_mask = self._padding_mask(src_padding_mask, memory.shape[:2], "src_padding_mask")  # [B, S]
        offset = cache.length if cache is not None else 0
        tgt_mask = self._padding_mask(tgt_padding_mask, (tgt.shape[0], offset + tgt.shape[1]), "tgt_padding_mask")
        logits = self.hook_logits(self.lm_head(self.decoder(tgt, memory, cache, tgt_mask, memory_mask)))  # [B, T, V]
        return logits[0] if was_1d else logits

    def new_cache(self) -> KVCache:
        return KVCache.for_model(len(self.decoder.blocks))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
