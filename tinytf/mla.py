"""Multi-head latent attention (MLA, DeepSeek-V2/V3): keys and values are rebuilt from one small latent
vector per position, so the KV cache stores that latent instead of H keys and H values.

    c_kv = Norm(x W_dkv)                      [B, S, r_kv]     <- cached
    k_pe = RoPE(x W_kr)                       [B, 1, S, R]     <- cached (one RoPE key part shared by all heads)
    [k_nope, v] = c_kv W_ukv                  [B, H, S, D-R], [B, H, S, Dv]
    k = [k_nope, k_pe],  q = [q_nope, RoPE(q_pe)] with q from x (optionally through a rank r_q latent too)

RoPE would not commute with the up-projection, so only a decoupled R-dimensional part of each query and
key head is rotated. The module follows Hugging Face's DeepseekV3Attention (YaRN's softmax rescaling arrives as cfg.attn_scale).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from .attention import attention, causal_mask
from .config import TinyConfig
from .hooks import Hook
from .norms import RMSNorm
from .positions import make_rotary

__all__ = ["LatentCache", "LatentAttention"]


@dataclass
class LatentCache:
    """MLA's cache for one layer: the normalised K/V latent and the rotated RoPE key part of each position."""

    latent: Optional[torch.Tensor] = None  # [B, S, r_kv]
    k_rope: Optional[torch.Tensor] = None  # [B, 1, S, R] (after RoPE)

    @property
    def length(self) -> int:
        return 0 if self.latent is None else self.latent.shape[-2]

    def append(self, latent, k_rope):
        self.latent = latent if self.latent is None else torch.cat((self.latent, latent), dim=-2)
        self.k_rope = k_rope if self.k_rope is None else torch.cat((self.k_rope, k_rope), dim=-2)
        return self.latent, self.k_rope

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.latent, self.k_rope) if t is not None)

    def held(self) -> list:
        return list(range(self.length))

    def parts(self) -> dict:
        """What the cache stores, by name: the latent [B, S, r_kv] and the RoPE key part [B, 1, S, R]."""
        return {"latent": self.latent, "k_rope": self.k_rope}


class LatentAttention(nn.Module):
    """Causal multi-head latent attention. Parameter names: q_proj (full-rank query) or q_down, q_norm, q_up
    (low-rank query); kv_down (x -> latent + RoPE key part), kv_norm, kv_up (latent -> keys and values), o_proj."""

    def __init__(self, cfg: TinyConfig, layer: int = 0):
        super().__init__()
        H, C = cfg.n_heads, cfg.d_model
        self.n_heads, self.d_head, self.d_rope, self.d_v = H, cfg.d_head, cfg.rope_dim, cfg.v_head
        self.d_nope, self.kv_rank = self.d_head - self.d_rope, cfg.mla.kv_rank
        self.causal, self.cross, self.dropout, self.scale = True, False, cfg.dropout, cfg.attn_scale
        if cfg.mla.q_rank is None:
            self.q_proj = nn.Linear(C, H * self.d_head, bias=False)
            self.query = self._full_query
        else:
            self.q_down = nn.Linear(C, cfg.mla.q_rank, bias=False)
            self.q_norm = RMSNorm(cfg.mla.q_rank, 1e-6)  # Hugging Face's DeepseekV3RMSNorm default eps
            self.q_up = nn.Linear(cfg.mla.q_rank, H * self.d_head, bias=False)
            self.query = self._low_rank_query
        self.kv_down = nn.Linear(C, self.kv_rank + self.d_rope, bias=False)
        self.kv_norm = RMSNorm(self.kv_rank, 1e-6)
        self.kv_up = nn.Linear(self.kv_rank, H * (self.d_nope + self.d_v), bias=False)
        self.o_proj = nn.Linear(H * self.d_v, C, bias=False)
        self.rotary = make_rotary(cfg, layer)
        self.mask_fn = causal_mask
        for name in ("q", "latent", "k", "v", "q_rot", "k_rot", "scores", "masked_scores", "weights", "z", "merged",
                     "out"):
            setattr(self, "hook_" + name, Hook())

    def _full_query(self, x):
        return self.q_proj(x)

    def _low_rank_query(self, x):
        return self.q_up(self.q_norm(self.q_down(x)))

    def forward(self, x, context=None, cache: Optional[LatentCache] = None):  # x: [B, T, C] -> [B, T, C]
        B, T, _ = x.shape
        H = self.n_heads
        q = self.hook_q(self.query(x).view(B, T, H, self.d_head).transpose(1, 2))  # [B, H, T, D]
        q_nope, q_pe = q.split([self.d_nope, self.d_rope], dim=-1)
        latent, k_pe = self.kv_down(x).split([self.kv_rank, self.d_rope], dim=-1)  # [B, T, r_kv], [B, T, R]
        latent = self.hook_latent(self.kv_norm(latent))  # the compressed K/V: what the cache keeps
        k_pe = k_pe.view(B, T, 1, self.d_rope).transpose(1, 2)  # [B, 1, T, R]: one RoPE key part for all heads
        offset = cache.length if cache is not None else 0
        q_pe, k_pe = self.rotary(q_pe, k_pe, offset)
        if cache is not None:
            latent, k_pe = cache.append(latent, k_pe)  # [B, S, r_kv], [B, 1, S, R]
        S = latent.shape[-2]
        kv = self.kv_up(latent).view(B, S, H, self.d_nope + self.d_v).transpose(1, 2)  # [B, H, S, D-R+Dv]
        k_nope, v = kv.split([self.d_nope, self.d_v], dim=-1)
        k = self.hook_k_rot(torch.cat((self.hook_k(k_nope), k_pe.expand(B, H, S, self.d_rope)), dim=-1))
        v = self.hook_v(v)
        q = self.hook_q_rot(torch.cat((q_nope, q_pe), dim=-1))  # [B, H, T, D]
        mask = self.mask_fn(T, S, offset, device=x.device)
        z, _ = attention(q, k, v, mask, module=self, dropout=self.dropout, scale=self.scale)  # [B, H, T, Dv]
        z = self.hook_z(z)
        merged = self.hook_merged(z.transpose(1, 2).reshape(B, T, H * self.d_v))
        return self.hook_out(self.o_proj(merged))

    def w_uk(self) -> torch.Tensor:
        """Each head's key up-projection W_UK, [H, D-R, r_kv]: head h's position-free key is ``w_uk()[h] @ c``
        for a latent c of size r_kv. A view of ``kv_up.weight`` (no copy), in the layout the forward pass uses."""
        return self._kv_up_per_head()[:, :self.d_nope]

    def w_uv(self) -> torch.Tensor:
        """Each head's value up-projection W_UV, [H, Dv, r_kv]: head h's value is ``w_uv()[h] @ c`` for a latent c
        of size r_kv. A view of ``kv_up.weight`` (no copy), in the layout the forward pass uses."""
        return self._kv_up_per_head()[:, self.d_nope:]

    def _kv_up_per_head(self) -> torch.Tensor:  # kv_up.weight [H * (D-R+Dv), r_kv] -> [H, D-R+Dv, r_kv]
        return self.kv_up.weight.view(self.n_heads, self.d_nope + self.d_v, self.kv_rank)

    def new_cache(self) -> LatentCache:
        return LatentCache()
