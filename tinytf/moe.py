"""Mixture of experts: the FFN of a layer becomes E gated FFNs ("experts") and a router that sends each
token to k of them, weighting their outputs. Parameters grow with E, the work per token only with k.

    MoE(x) = sum over the k chosen experts e of  w_e(x) * Expert_e(x)   (+ shared experts, every token)

The routers of the families tinytf loads from Hugging Face (chosen at construction, no branch in forward):

- ``softmax_renorm`` (Mixtral, Qwen3-MoE with norm_topk_prob): softmax over all experts, keep the top k,
  divide by their sum;
- ``softmax`` (Qwen3-MoE without norm_topk_prob): the top k softmax probabilities as they are;
- ``sigmoid_renorm`` / ``sigmoid`` (DeepSeek-V3): a sigmoid score per expert; a per-expert bias (learned
  offline for load balance) is added for the *choice* only; experts are split into groups and only the best
  ``router_topk_groups`` groups (by the sum of their two best scores) compete; the weights are the chosen
  sigmoid scores (renormalised), times ``router_scale``.

The router's choice of every token is traced as ``blocks.{i}.ffn.router_topk``: a :class:`RouterTopK`
(ids and weights, each [B, T, k]); ``blocks.{i}.ffn.router_logits`` holds the scores [B, T, E].
"""
from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn
import torch.nn.functional as F

from .config import TinyConfig
from .ffn import GATED
from .hooks import Hook

__all__ = ["RouterTopK", "MoE", "Experts", "SoftmaxRouter", "SigmoidRouter", "make_router"]


class RouterTopK(NamedTuple):
    """The experts a router chose for each token and their weights."""

    ids: torch.Tensor  # [B, T, k] expert indices (long)
    weights: torch.Tensor  # [B, T, k] weight of each chosen expert's output

    @property
    def shape(self):  # so a Trace's table can show it like a tensor
        return self.ids.shape


class SoftmaxRouter(nn.Module):
    """softmax over all experts, top k, optionally renormalised to sum to 1 (Mixtral, Qwen3-MoE)."""

    def __init__(self, cfg: TinyConfig, renorm: bool):
        super().__init__()
        self.k, self.renorm = cfg.moe.experts_per_token, renorm
        self.weight = nn.Parameter(torch.empty(cfg.moe.n_experts, cfg.d_model))

    def forward(self, logits):  # logits: [N, E] -> ids [N, k], weights [N, k]
        probs = torch.softmax(logits.float(), dim=-1)
        weights, ids = torch.topk(probs, self.k, dim=-1)
        if self.renorm:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        return ids, weights


class SigmoidRouter(nn.Module):
    """DeepSeek-V3: sigmoid scores; choice by score + bias within the best groups; weights = chosen scores
    (renormalised) * router_scale."""

    def __init__(self, cfg: TinyConfig, renorm: bool):
        super().__init__()
        moe = cfg.moe
        self.k, self.renorm, self.scale = moe.experts_per_token, renorm, moe.router_scale
        self.groups, self.topk_groups, self.n_experts = moe.router_groups, moe.router_topk_groups, moe.n_experts
        self.weight = nn.Parameter(torch.empty(moe.n_experts, cfg.d_model))
        self.register_buffer("bias", torch.zeros(moe.n_experts))  # e_score_correction_bias: used for choosing only

    def forward(self, logits):  # logits: [N, E]
        scores = logits.float().sigmoid()
        choice = scores + self.bias
        per_group = self.n_experts // self.groups
        group_scores = choice.view(-1, self.groups, per_group).topk(2, dim=-1)[0].sum(dim=-1)  # [N, groups]
        group_idx = torch.topk(group_scores, k=self.topk_groups, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1)
        expert_mask = group_mask.unsqueeze(-1).expand(-1, self.groups, per_group).reshape(-1, self.n_experts)
        choice = choice.masked_fill(~expert_mask.bool(), float("-inf"))
        ids = torch.topk(choice, k=self.k, dim=-1, sorted=False)[1]
        weights = scores.gather(1, ids)
        if self.renorm:
            weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
        return ids, weights * self.scale


def make_router(cfg: TinyConfig) -> nn.Module:
    kind, _, renorm = cfg.moe.router.partition("_")
    return (SoftmaxRouter if kind == "softmax" else SigmoidRouter)(cfg, renorm == "renorm")


def _gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


class Experts(nn.Module):
    """E gated FFNs stored as stacked weights: gate, up [E, F, C] and down [E, C, F]."""

    def __init__(self, cfg: TinyConfig):
        super().__init__()
        E, C, F_ = cfg.moe.n_experts, cfg.d_model, cfg.expert_width
        self.gate = nn.Parameter(torch.empty(E, F_, C))
        self.up = nn.Parameter(torch.empty(E, F_, C))
        self.down = nn.Parameter(torch.empty(E, C, F_))
        self.act = F.silu if cfg.ffn == "swiglu" else _gelu_tanh

    def forward(self, h, ids, weights):  # h: [N, C], ids / weights: [N, k] -> [N, C]
        out = torch.zeros_like(h)
        for e in ids.unique().tolist():  # only the experts some token chose, in index order
            tok, slot = torch.where(ids == e)
            x = h[tok]
            y = F.linear(self.act(F.linear(x, self.gate[e])) * F.linear(x, self.up[e]), self.down[e])
            out.index_add_(0, tok, (y * weights[tok, slot, None]).to(out.dtype))
        return out


class MoE(nn.Module):
    """Router + routed experts (+ shared experts every token goes through)."""

    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.router = make_router(cfg)
        self.experts = Experts(cfg)
        self.shared = (GATED[cfg.ffn](cfg.d_model, cfg.moe.n_shared_experts * cfg.expert_width, bias=False)
                       if cfg.moe.n_shared_experts else None)
        self.combine = _routed_only if self.shared is None else self._plus_shared  # chosen here, not in forward
        self.hook_router_logits, self.hook_router_topk, self.hook_routed, self.hook_out = Hook(), Hook(), Hook(), Hook()
        for p in (self.router.weight, self.experts.gate, self.experts.up, self.experts.down):
            nn.init.normal_(p, 0.0, 0.02)

    def forward(self, x):  # x: [B, T, C] -> [B, T, C]
        B, T, C = x.shape
        h = x.reshape(-1, C)  # [N, C], N = B * T tokens, each routed on its own
        logits = self.hook_router_logits(F.linear(h, self.router.weight).view(B, T, -1))  # [B, T, E]
        ids, weights = self.router(logits.view(B * T, -1))  # [N, k] each
        chosen = self.hook_router_topk(RouterTopK(ids.view(B, T, -1), weights.view(B, T, -1)))
        routed = self.experts(h, chosen.ids.reshape(B * T, -1), chosen.weights.reshape(B * T, -1)).view(B, T, C)
        return self.hook_out(self.combine(self.hook_routed(routed), x))

    def _plus_shared(self, routed, x):  # DeepSeek: the shared experts see every token, unweighted
        return routed + self.shared(x)


def _routed_only(routed, x):
    return routed
