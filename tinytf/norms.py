"""Normalisation: LayerNorm (2017) and RMSNorm (modern). Both act on each token's
feature vector separately: shape in = shape out, positions never mix."""
from __future__ import annotations

import torch
from torch import nn

from .config import TinyConfig
from .hooks import Hook


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x^2) + eps) * gamma. No centring, no beta (like LlamaRMSNorm)."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # gamma
        self.hook_out = Hook()

    def forward(self, x):  # x: [..., C]
        rms = x.pow(2).mean(-1, keepdim=True).add(self.eps).sqrt()  # [..., 1]
        return self.hook_out(x / rms * self.weight)


class LayerNorm(nn.Module):
    """y = (x - mean) / sqrt(var + eps) * gamma + beta (beta only when bias=True)."""

    def __init__(self, d_model: int, eps: float = 1e-5, bias: bool = True):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # gamma
        self.bias = nn.Parameter(torch.zeros(d_model)) if bias else None  # beta
        self.hook_out = Hook()

    def forward(self, x):  # x: [..., C]
        mean = x.mean(-1, keepdim=True)  # [..., 1]
        var = x.var(-1, keepdim=True, unbiased=False)  # [..., 1]
        y = (x - mean) / torch.sqrt(var + self.eps) * self.weight
        if self.bias is not None:
            y = y + self.bias
        return self.hook_out(y)


class OffsetRMSNorm(nn.Module):
    """Gemma's RMSNorm: y = x / sqrt(mean(x^2) + eps) * (1 + weight). The weight starts at 0 (scale 1);
    like Gemma3RMSNorm it computes in float32."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(d_model))  # the scale is 1 + weight
        self.hook_out = Hook()

    def forward(self, x):  # x: [..., C]
        h = x.float()
        y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps) * (1.0 + self.weight.float())
        return self.hook_out(y.type_as(x))


NORM_TYPES = (RMSNorm, LayerNorm, OffsetRMSNorm)  # every norm class make_norm can build: "is this a norm?"


def is_norm(module: nn.Module) -> bool:
    """True for a norm module of tinytf (one of ``NORM_TYPES``)."""
    return isinstance(module, NORM_TYPES)


def make_norm(cfg: TinyConfig, d: int | None = None) -> nn.Module:
    """The config's norm over ``d`` features (default d_model; QK-norm and MLA's latents pass their own size)."""
    d = cfg.d_model if d is None else d
    if cfg.norm == "rms":
        return RMSNorm(d, cfg.eps)
    if cfg.norm == "rms_offset":
        return OffsetRMSNorm(d, cfg.eps)
    return LayerNorm(d, cfg.eps, bias=cfg.bias)
