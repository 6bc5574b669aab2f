"""Four changes to the block in 2025-26 models, as small measurable functions (chapter 11).

- **Attention sinks** (gpt-oss): one learned logit per head joins the softmax's denominator but has no value,
  so a head can give its keys less than a total weight of 1. :func:`sink_softmax`.
- **Layers without positions** (NoPE; SmolLM3, Llama 4): some layers skip RoPE. Such a causal layer sees
  the earlier tokens as a set: :func:`prefix_order_effect` measures how much reordering them moves the
  output at the last position.
- **Linear-attention hybrids** (Qwen3-Next): most layers replace the softmax and its growing KV cache by a
  fixed-size state updated once per token. :func:`linear_attention_parallel` and
  :func:`linear_attention_recurrent` compute the same (un-normalised) linear attention the two ways;
  :func:`delta_rule_recurrent` is the gated delta rule of Gated DeltaNet; :func:`hybrid_cache_bytes`
  counts the memory of a hybrid stack.
- **Multi-token prediction** (DeepSeek-V3): :func:`mtp_module_parameters` counts the extra module that
  predicts the token after next.
"""
from __future__ import annotations

import torch

from ..blocks import DecoderBlock
from ..config import TinyConfig
from ..errors import TinyTFInputError

__all__ = ["sink_softmax", "prefix_order_effect", "linear_attention_parallel", "linear_attention_recurrent",
           "delta_rule_recurrent", "hybrid_cache_bytes", "mtp_module_parameters"]


def sink_softmax(scores: torch.Tensor, sink) -> torch.Tensor:
    """softmax over the last axis with one extra logit ``sink`` in the denominator (per head: ``sink`` of
    shape [H] broadcasts over [..., H, T, S] as [H, 1, 1]). The sink has no value: the returned weights over
    the S keys sum to 1 / (1 + exp(sink - logsumexp(scores))) < 1. ``sink = -inf`` is the plain softmax."""
    scores = torch.as_tensor(scores, dtype=torch.float32)
    sink = torch.as_tensor(sink, dtype=scores.dtype)
    if sink.dim() == 1:
        if scores.dim() < 3 or scores.shape[-3] != sink.shape[0]:
            raise TinyTFInputError(f"sink_softmax: one sink per head needs scores [..., H={sink.shape[0]}, T, S], "
                                   f"got {list(scores.shape)}")
        sink = sink[:, None, None]
    sink_col = sink.expand(*scores.shape[:-1], 1) if sink.dim() else torch.full((*scores.shape[:-1], 1), float(sink))
    both = torch.cat((scores, sink_col), dim=-1)
    return torch.softmax(both, dim=-1)[..., :-1]  # the sink's own share is dropped: it carries no value


@torch.no_grad()
def prefix_order_effect(model, ids, swap=(0, 1)) -> float:
    """max |change| of the last position's final hidden state (``final_norm.out``) when the tokens at the two
    positions ``swap`` (both before the last one) trade places."""
    ids = torch.as_tensor(ids)
    ids = ids if ids.dim() == 2 else ids[None]
    i, j = swap
    T = ids.shape[1]
    if not (0 <= i < T - 1 and 0 <= j < T - 1) or i == j:
        raise TinyTFInputError(f"prefix_order_effect: swap two different positions before the last one "
                               f"(0..{T - 2}), got {swap}")
    swapped = ids.clone()
    swapped[:, [i, j]] = ids[:, [j, i]]
    model = model.eval()
    _, a = model.run_with_trace(ids, names=["final_norm.out"])
    _, b = model.run_with_trace(swapped, names=["final_norm.out"])
    return float((a["final_norm.out"][:, -1] - b["final_norm.out"][:, -1]).abs().max())


def linear_attention_parallel(q, k, v) -> torch.Tensor:
    """Causal linear attention without softmax or normaliser, all positions at once:
    o_t = sum_{s <= t} (q_t . k_s) v_s. q, k: [T, d_k], v: [T, d_v] -> [T, d_v]."""
    T = q.shape[0]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    return ((q @ k.T).masked_fill(~mask, 0.0)) @ v


def linear_attention_recurrent(q, k, v):
    """The same as :func:`linear_attention_parallel`, one token at a time with a fixed-size state
    S_t = S_{t-1} + v_t k_t^T ([d_v, d_k]); o_t = S_t q_t. Returns (outputs [T, d_v], final state)."""
    S = torch.zeros(v.shape[1], k.shape[1], dtype=q.dtype)
    out = []
    for t in range(q.shape[0]):
        S = S + torch.outer(v[t], k[t])
        out.append(S @ q[t])
    return torch.stack(out), S


def delta_rule_recurrent(q, k, v, beta, alpha):
    """Gated delta rule (Gated DeltaNet), one token at a time: with k_t of unit length,
    S_t = alpha_t S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,  o_t = S_t q_t.
    alpha_t in (0, 1] decays the whole memory, beta_t in (0, 1] sets how much of the value stored under
    k_t is overwritten. Returns (outputs [T, d_v], final state [d_v, d_k])."""
    d_k = k.shape[1]
    S = torch.zeros(v.shape[1], d_k, dtype=q.dtype)
    eye = torch.eye(d_k, dtype=q.dtype)
    out = []
    for t in range(q.shape[0]):
        S = alpha[t] * S @ (eye - beta[t] * torch.outer(k[t], k[t])) + beta[t] * torch.outer(v[t], k[t])
        out.append(S @ q[t])
    return torch.stack(out), S


def hybrid_cache_bytes(seq_len: int, n_full: int, kv_heads: int, head_dim: int, n_linear: int,
                       state_values: int, bytes_per_value: int = 2) -> int:
    """Memory that grows (the K/V of the ``n_full`` full-attention layers) plus memory that does not (the
    fixed state of the ``n_linear`` linear-attention layers, ``state_values`` values each), for one sequence."""
    if seq_len < 0 or min(n_full, n_linear, kv_heads, head_dim, state_values) < 0:
        raise TinyTFInputError("hybrid_cache_bytes: sizes must be non-negative")
    return (n_full * 2 * kv_heads * head_dim * seq_len + n_linear * state_values) * bytes_per_value


def mtp_module_parameters(cfg: TinyConfig, with_copies: bool = True) -> dict:
    """Parameters of one DeepSeek-V3-style multi-token-prediction module for the model ``cfg``: one more
    block of the model's last kind, a projection of [h; embedding] (2d -> d), two RMSNorms of d on its
    inputs and the final norm of its head; ``with_copies`` adds the embedding and output head, which the
    module shares with the model in training but which a checkpoint may store again with it."""
    from torch import nn

    with torch.device("meta"):  # sizes only, no memory
        block = DecoderBlock(cfg, layer=cfg.n_layers - 1)
    block = sum(p.numel() for p in nn.ModuleList([block]).parameters())
    d = cfg.d_model
    own = block + 2 * d * d + 3 * d
    out = {"block": block, "projection and norms": 2 * d * d + 3 * d, "own": own}
    if with_copies:
        out["embedding and head"] = 2 * cfg.vocab_size * d
        out["total"] = own + out["embedding and head"]
    return out
