"""Tracing: record every intermediate of a real forward pass by name.

    logits, trace = model.run_with_trace(ids)
    trace["blocks.0.attn.weights"]        # [B, H, T, T]

Names are the module paths of the ``Hook`` points with ``hook_`` removed. Tensors always
carry the batch dimension (a [T] input is traced as B = 1). ``TRACE_NAMES`` documents
every name with its shape; ``trace.table()`` lists what one pass actually recorded.
"""
from __future__ import annotations

import contextlib
import fnmatch
from collections import OrderedDict

import torch
from torch import nn

from .hooks import Hook

# Shapes use B batch, T query positions, S key positions (S = T for self-attention; source
# length for cross-attention; cached + new for a KV-cached step), C d_model, H heads,
# H_kv key/value heads, D head size, F d_ff, V vocab. "{i}" is a block index.
TRACE_NAMES = OrderedDict([
    ("tok_embed", ("[B, T, C]", "token embedding lookup")),
    ("pos.table", ("[T, C]", "position vectors added to the embeddings (sinusoidal / learned only)")),
    ("embed", ("[B, T, C]", "embedding + position: the residual stream entering block 0")),
    ("blocks.{i}.resid_pre", ("[B, T, C]", "residual stream entering the block (H)")),
    ("blocks.{i}.norm1.out", ("[B, T, C]", "Norm1 output (pre-norm: attention input; post-norm: the new stream)")),
    ("blocks.{i}.attn.q", ("[B, H, T, D]", "queries split into heads, before RoPE")),
    ("blocks.{i}.attn.k", ("[B, H_kv, T, D]", "keys split into heads, before RoPE (new positions only)")),
    ("blocks.{i}.attn.v", ("[B, H_kv, T, D]", "values split into heads (new positions only)")),
    ("blocks.{i}.attn.q_rot", ("[B, H, T, D]", "queries after RoPE (= q for other position schemes)")),
    ("blocks.{i}.attn.k_rot", ("[B, H_kv, T, D]", "keys after RoPE (= k for other position schemes)")),
    ("blocks.{i}.attn.scores", ("[B, H, T, S]", "q . k / sqrt(D), before the mask")),
    ("blocks.{i}.attn.masked_scores", ("[B, H, T, S]", "scores with -inf where the causal (or padding) mask forbids")),
    ("blocks.{i}.attn.weights", ("[B, H, T, S]", "softmax of the masked scores; each row sums to 1")),
    ("blocks.{i}.attn.z", ("[B, H, T, D]", "weighted sum of values, per head")),
    ("blocks.{i}.attn.merged", ("[B, T, H*D]", "heads merged back, before W_o")),
    ("blocks.{i}.attn.out", ("[B, T, C]", "attention sublayer output after W_o: Attn(Norm1(H))")),
    ("blocks.{i}.resid_mid", ("[B, T, C]", "stream after the first residual add (U)")),
    ("blocks.{i}.norm2.out", ("[B, T, C]", "Norm2 output")),
    ("blocks.{i}.ffn.pre", ("[B, T, F]", "ReLU/GELU MLP: up-projection before the activation")),
    ("blocks.{i}.ffn.gate", ("[B, T, F]", "SwiGLU: gate projection before SiLU")),
    ("blocks.{i}.ffn.up", ("[B, T, F]", "SwiGLU: up projection")),
    ("blocks.{i}.ffn.act", ("[B, T, F]", "SwiGLU: SiLU(gate)")),
    ("blocks.{i}.ffn.post", ("[B, T, F]", "FFN hidden after the activation (SwiGLU: SiLU(gate) * up)")),
    ("blocks.{i}.ffn.out", ("[B, T, C]", "FFN output after the down-projection")),
    ("blocks.{i}.resid_post", ("[B, T, C]", "stream leaving the block (H')")),
    ("final_norm.out", ("[B, T, C]", "final norm before the LM head")),
    ("logits", ("[B, T, V]", "next-token scores")),
    # encoder-decoder: the encoder's names are the ones above prefixed "encoder." (T = S = source length,
    # no logits), the decoder's prefixed "decoder." (T = target length), plus these (S = source length):
    ("decoder.blocks.{i}.resid_cross", ("[B, T, C]", "stream after the cross-attention add")),
    ("decoder.blocks.{i}.norm_cross.out", ("[B, T, C]", "norm before cross-attention")),
    ("decoder.blocks.{i}.cross_attn.q", ("[B, H, T, D]", "cross-attention queries, from the target stream")),
    ("decoder.blocks.{i}.cross_attn.k", ("[B, H_kv, S, D]", "cross-attention keys, from the encoder output")),
    ("decoder.blocks.{i}.cross_attn.v", ("[B, H_kv, S, D]", "cross-attention values, from the encoder output")),
    ("decoder.blocks.{i}.cross_attn.q_rot", ("[B, H, T, D]", "= cross_attn.q (no RoPE in cross-attention)")),
    ("decoder.blocks.{i}.cross_attn.k_rot", ("[B, H_kv, S, D]", "= cross_attn.k (no RoPE in cross-attention)")),
    ("decoder.blocks.{i}.cross_attn.scores", ("[B, H, T, S]", "cross-attention q . k / sqrt(D)")),
    ("decoder.blocks.{i}.cross_attn.masked_scores", ("[B, H, T, S]", "= cross_attn.scores (no causal mask); -inf at padded source positions")),
    ("decoder.blocks.{i}.cross_attn.weights", ("[B, H, T, S]", "cross-attention: target (rows) x source (columns)")),
    ("decoder.blocks.{i}.cross_attn.z", ("[B, H, T, D]", "cross-attention weighted sum of values, per head")),
    ("decoder.blocks.{i}.cross_attn.merged", ("[B, T, H*D]", "cross-attention heads merged, before W_o")),
    ("decoder.blocks.{i}.cross_attn.out", ("[B, T, C]", "cross-attention sublayer output after W_o")),
])


# Names that only the frontier-block options record (kept apart from TRACE_NAMES, whose every entry a core
# model records). E experts, k experts per token, r_kv MLA latent size, R RoPE part, Dv value head size.
FRONTIER_TRACE_NAMES = OrderedDict([
    ("blocks.{i}.attn.q_norm.out", ("[B, H, T, D]", "QK-norm 'head': queries normalised per head ('proj': [B, T, H*D], over all "
                                                 "heads); MLA with a low-rank query: the query latent [B, T, r_q]")),
    ("blocks.{i}.attn.k_norm.out", ("[B, H_kv, T, D]", "QK-norm: keys normalised")),
    ("blocks.{i}.norm1.pre.out", ("[B, T, C]", "sandwich: norm before attention")),
    ("blocks.{i}.norm1.post.out", ("[B, T, C]", "sandwich: norm on the attention output, before the add")),
    ("blocks.{i}.norm2.pre.out", ("[B, T, C]", "sandwich: norm before the FFN")),
    ("blocks.{i}.norm2.post.out", ("[B, T, C]", "sandwich: norm on the FFN output, before the add")),
    ("blocks.{i}.ffn.router_logits", ("[B, T, E]", "MoE: the router's score of every expert for every token")),
    ("blocks.{i}.ffn.router_topk", ("[B, T, k]", "MoE: RouterTopK(ids, weights), the chosen experts and their weights")),
    ("blocks.{i}.ffn.routed", ("[B, T, C]", "MoE: weighted sum of the chosen experts' outputs")),
    ("blocks.{i}.ffn.shared.*", ("[B, T, F]", "MoE: the shared experts (a gated FFN every token goes through)")),
    ("blocks.{i}.attn.latent", ("[B, T, r_kv]", "MLA: the normalised K/V latent of the new positions (what is cached)")),
    ("blocks.{i}.attn.kv_norm.out", ("[B, T, r_kv]", "MLA: = attn.latent")),
])


class Trace(OrderedDict):
    """name -> tensor, in the order the forward pass produced them."""

    def table(self) -> str:
        width = max((len(k) for k in self), default=4)
        return "\n".join(f"{k:<{width}}  {list(v.shape)}" for k, v in self.items())

    def __repr__(self):
        return f"Trace({len(self)} tensors)\n" + self.table()


def name_hooks(module: nn.Module) -> list:
    """Give every Hook below ``module`` its trace name; return the hooks."""
    hooks = []
    for path, m in module.named_modules():
        if isinstance(m, Hook):
            parent, _, leaf = path.rpartition(".")
            m.key = (parent + "." if parent else "") + leaf.removeprefix("hook_")
            hooks.append(m)
    return hooks


@contextlib.contextmanager
def recording(module: nn.Module, names=None, detach: bool = True, patches=None):
    """Record hooks whose names match ``names`` (glob patterns; None = all) into a Trace.
    ``patches`` maps names to functions tensor -> tensor applied in the forward pass."""
    trace = Trace()
    hooks = name_hooks(module)
    patterns = [names] if isinstance(names, str) else names
    try:
        for h in hooks:
            if patterns is None or any(fnmatch.fnmatchcase(h.key, p) for p in patterns):
                h.store, h.detach = trace, detach
            if patches and h.key in patches:
                h.patch = patches[h.key]
        if patches:
            unknown = set(patches) - {h.key for h in hooks}
            if unknown:
                raise KeyError(f"no hook named {sorted(unknown)}; see tinytf.TRACE_NAMES")
        yield trace
    finally:
        for h in hooks:
            h.store, h.patch, h.detach = None, None, True


def run_with_trace(module: nn.Module, *args, names=None, detach: bool = True, patches=None, **kwargs):
    """Run ``module(*args, **kwargs)`` once and return (output, trace). With detach=True (default)
    the trace holds detached copies; with detach=False it holds the live tensors (for gradients)."""
    with recording(module, names=names, detach=detach, patches=patches) as trace:
        out = module(*args, **kwargs)
    return out, trace


class Traceable:
    """Mixin giving a module ``run_with_trace`` and ``run_with_patches``."""

    def run_with_trace(self, *args, names=None, detach=True, **kwargs):
        return run_with_trace(self, *args, names=names, detach=detach, **kwargs)

    def run_with_patches(self, *args, patches, **kwargs):
        """Forward pass with interventions, e.g. patches={"blocks.0.attn.out": torch.zeros_like}."""
        with recording(self, names=[], patches=patches):
            return self(*args, **kwargs)
