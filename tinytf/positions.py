"""Position information. Attention alone is blind to order, so a model either adds a
position vector to each token embedding (sinusoidal, learned) or rotates queries and
keys by an angle that grows with position (RoPE).

Each model holds one *additive* module (adds P[t] or nothing) and each self-attention
holds one *rotary* module (rotates Q/K or does nothing), chosen at construction."""
from __future__ import annotations

import math

import torch
from torch import nn

from .config import TinyConfig
from .errors import TinyTFInputError
from .hooks import Hook


def sinusoidal_table(n_positions: int, d_model: int) -> torch.Tensor:
    """P[t, 2i] = sin(t / 10000^(2i/d)), P[t, 2i+1] = cos(...). Shape [n_positions, d_model]."""
    t = torch.arange(n_positions, dtype=torch.float32)[:, None]  # [T, 1]
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))  # [C/2]
    table = torch.zeros(n_positions, d_model)
    table[:, 0::2] = torch.sin(t * freq)
    table[:, 1::2] = torch.cos(t * freq[: d_model // 2])
    return table


class _Additive(nn.Module):
    def __init__(self, max_seq_len: int):
        super().__init__()
        self.max_seq_len = max_seq_len
        self.hook_table = Hook()

    def _check(self, end: int):
        if end > self.max_seq_len:
            raise TinyTFInputError(
                f"sequence reaches position {end}, but this model's {type(self).__name__} covers only "
                f"max_seq_len={self.max_seq_len} positions; shorten the input or raise max_seq_len"
            )


class SinusoidalPositions(_Additive):
    """Fixed sin/cos vectors added to the token embeddings (Vaswani et al., 2017)."""

    def __init__(self, cfg: TinyConfig):
        super().__init__(cfg.max_seq_len)
        self.register_buffer("table", sinusoidal_table(cfg.max_seq_len, cfg.d_model), persistent=False)

    def forward(self, x, offset: int = 0):  # x: [B, T, C]
        self._check(offset + x.shape[1])
        return x + self.hook_table(self.table[offset : offset + x.shape[1]])  # [T, C] broadcast over B


class LearnedPositions(_Additive):
    """A trainable vector per position (GPT-2, BERT)."""

    def __init__(self, cfg: TinyConfig):
        super().__init__(cfg.max_seq_len)
        self.weight = nn.Parameter(torch.randn(cfg.max_seq_len, cfg.d_model) * 0.02)

    def forward(self, x, offset: int = 0):  # x: [B, T, C]
        self._check(offset + x.shape[1])
        return x + self.hook_table(self.weight[offset : offset + x.shape[1]])  # [T, C] broadcast over B


class NoPositions(nn.Module):
    """Adds nothing (used with RoPE, which acts inside attention, or with pos='none')."""

    def forward(self, x, offset: int = 0):
        return x


def rotate_half(x):
    """[x1, x2] -> [-x2, x1] on the last dimension (the Llama / GPT-NeoX layout)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_angles(positions: torch.Tensor, d_head: int, theta: float = 10000.0):
    """cos and sin of the rotation angles, each [T, d_head]. Pair i of a head rotates at
    frequency theta^(-2i/d_head): fast for the first pairs, slow for the last."""
    inv_freq = theta ** (-torch.arange(0, d_head, 2, dtype=torch.float32, device=positions.device) / d_head)  # [D/2]
    angles = positions.to(torch.float32)[:, None] * inv_freq[None, :]  # [T, D/2]
    angles = torch.cat((angles, angles), dim=-1)  # [T, D]
    return angles.cos(), angles.sin()


class RoPE(nn.Module):
    """Rotary position embedding: rotates each (x_i, x_{i+D/2}) pair of Q and K by an angle
    proportional to the position, so q_m . k_n depends only on m - n. No parameters."""

    def __init__(self, d_head: int, theta: float = 10000.0):
        super().__init__()
        self.d_head, self.theta = d_head, theta

    def rotate(self, x, offset: int = 0):  # x: [B, H, T, D]
        positions = torch.arange(offset, offset + x.shape[-2], device=x.device)
        cos, sin = rope_angles(positions, self.d_head, self.theta)  # [T, D] each
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        return x * cos + rotate_half(x) * sin

    def forward(self, q, k, offset: int = 0):
        return self.rotate(q, offset), self.rotate(k, offset)


class NoRotary(nn.Module):
    def forward(self, q, k, offset: int = 0):
        return q, k


def make_additive_positions(cfg: TinyConfig) -> nn.Module:
    return {"sinusoidal": SinusoidalPositions, "learned": LearnedPositions}.get(cfg.pos, lambda c: NoPositions())(cfg)


def make_rotary(cfg: TinyConfig) -> nn.Module:
    return RoPE(cfg.d_head, cfg.rope_theta) if cfg.pos == "rope" else NoRotary()
