"""The lab on the book's landing page: text-4l in the reader's browser, with head ablation, the logit lens
and a KV cache, from one ONNX graph per model.

    from tinytf.lab import browser_lab as lab
    model = tinytf.pretrained("text-4l")
    out = lab.run_lab(model, ids)                        # what the browser's graph computes, in PyTorch
    out = lab.run_lab(model, ids, head_mask=mask)         # mask [L, H]: 1 = head on, 0 = head off
    lab.export_lab_onnx(model, "text-4l.lab.onnx")        # the graph the page runs (onnxruntime-web)
    lab.next_byte_probs(out["logits"], temperature=0.8, top_k=20, top_p=0.9)   # = tinytf.next_token_probs
    lab.sample_text(model, "The ", 40, seed=1, temperature=0.8)                # = the page's Generate

**Head mask.** ``head_mask_patches(mask)`` multiplies the output ``z`` of head h of block l (trace
``blocks.l.attn.z``, [B, H, T, D], before the heads are merged and W_o applied) by ``mask[l, h]``: 1 keeps the
head, 0 switches it off (its contribution to the block's attention output is removed), any other value scales
it. It goes through the model's own hook points (``model.run_with_patches``), so the masked model is the
model, not a copy; the graph takes the mask as an input, so one file serves every ablation.

**The graph** (``export_lab_onnx``), batch 1:

* inputs ``ids`` int64 [1, T]; ``head_mask`` float32 [L, H]; ``past_k``, ``past_v`` float32 [L, H_kv, S, D],
  the keys (after RoPE) and values of the S positions already processed (S = 0: a fresh prompt);
* outputs ``logits`` [V] (the next byte after the last position), ``lens`` [L, T, V] (the logit lens: the
  model's final norm and LM head applied to the stream leaving each block, ``tinytf.lab.lens``; ``lens[L-1]``
  are the model's own logits), ``attn`` [L, H, T, S + T] (the attention weights of every layer and head),
  ``present_k``, ``present_v`` [L, H_kv, S + T, D] (the cache after these T positions).

A keystroke runs the prompt once with S = 0; generation then feeds one byte at a time with the cache
(chapter 11's KV cache), so each step costs one position, not the whole prompt. The page keeps
S + T <= max_seq_len; when the context is full it runs the last max_seq_len bytes afresh before each step, as
``tinytf.generate`` does (``sample_text`` follows the same rule, so Python and the page write the same text).

**The sampler** is chapter 11's (``tinytf.generation.next_token_probs``: temperature, then top-k, then
top-p, renormalised; temperature 0 = greedy). The random numbers come from ``mulberry32``, a 32-bit
generator that JavaScript computes exactly: u = mulberry32(seed) in [0, 1), and the byte drawn is the first
whose cumulative probability exceeds u. The same seed gives the same text in Python and on the page.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import warnings
from pathlib import Path

import torch
from torch import nn

from ..attention import KVCache, LayerCache
from ..errors import TinyTFInputError
from ..generation import next_token_probs

INPUTS = ("ids", "head_mask", "past_k", "past_v")
OUTPUTS = ("logits", "lens", "attn", "present_k", "present_v")
SNAPSHOTS = ("text-4l@step0", "text-4l@step90", "text-4l@step360", "text-4l@step900", "text-4l")


def _blocks(model):
    if not all(hasattr(model, a) for a in ("blocks", "final_norm", "lm_head", "config")):
        raise TinyTFInputError(f"browser_lab: expected a decoder-only TinyTransformer, got {type(model).__name__}")
    return model.blocks


def full_mask(model) -> torch.Tensor:
    """[L, H] of ones: every head on."""
    return torch.ones(len(_blocks(model)), model.config.n_heads)


def check_head_mask(model, mask) -> torch.Tensor:
    """``mask`` as a float32 [L, H] tensor, or TinyTFInputError naming what is wrong."""
    L, H = len(_blocks(model)), model.config.n_heads
    try:
        mask = torch.as_tensor(mask, dtype=torch.float32)
    except (TypeError, ValueError) as e:
        raise TinyTFInputError(f"head_mask: expected numbers [{L}, {H}] (layers, heads), got {type(mask).__name__} ({e})")
    if tuple(mask.shape) != (L, H):
        raise TinyTFInputError(f"head_mask: expected shape [{L}, {H}] (layers, heads), got {list(mask.shape)}")
    if not torch.isfinite(mask).all():
        raise TinyTFInputError("head_mask: every value must be a finite number (1 = head on, 0 = off)")
    return mask


def head_mask_patches(mask) -> dict:
    """{"blocks.l.attn.z": z -> z * mask[l, h] per head h}: the patches that apply a head mask [L, H]
    (``model.run_with_patches(ids, patches=...)``). ``mask`` may be a tensor of the graph's input."""
    return {f"blocks.{l}.attn.z": (lambda z, row=mask[l]: z * row[None, :, None, None]) for l in range(mask.shape[0])}


class _LabGraph(nn.Module):
    """(ids, head_mask, past_k, past_v) -> (logits [V], lens [L, T, V], attn [L, H, T, S+T], present_k, present_v)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, head_mask, past_k, past_v):
        model = self.model
        L = len(model.blocks)
        cache = KVCache([LayerCache(k=past_k[i][None], v=past_v[i][None]) for i in range(L)])
        names = [f"blocks.{i}.attn.weights" for i in range(L)] + [f"blocks.{i}.resid_post" for i in range(L)]
        logits, trace = model.run_with_trace(ids, cache=cache, names=names, patches=head_mask_patches(head_mask))
        lens = torch.stack([model.lm_head(model.final_norm(trace[f"blocks.{i}.resid_post"][0])) for i in range(L)])
        attn = torch.stack([trace[f"blocks.{i}.attn.weights"][0] for i in range(L)])
        present_k = torch.stack([c.k[0] for c in cache.layers])
        present_v = torch.stack([c.v[0] for c in cache.layers])
        return logits[0, -1], lens, attn, present_k, present_v


def empty_past(model) -> torch.Tensor:
    """[L, H_kv, 0, D]: the cache before the first position."""
    cfg = model.config
    return torch.zeros(len(_blocks(model)), cfg.kv_heads, 0, cfg.d_head)


@torch.no_grad()
def run_lab(model, ids, head_mask=None, past_k=None, past_v=None) -> dict:
    """What the lab's graph computes, in PyTorch: {name: tensor} for ``OUTPUTS`` (see the module docstring).
    ``ids``: [T] or [1, T] byte ids; ``head_mask`` [L, H] (None: every head on)."""
    ids = torch.as_tensor(ids, dtype=torch.long).reshape(1, -1)
    mask = full_mask(model) if head_mask is None else check_head_mask(model, head_mask)
    past_k = empty_past(model) if past_k is None else torch.as_tensor(past_k)
    past_v = empty_past(model) if past_v is None else torch.as_tensor(past_v)
    if past_k.shape[2] + ids.shape[1] > model.config.max_seq_len:
        raise TinyTFInputError(f"run_lab: {past_k.shape[2]} cached + {ids.shape[1]} new positions exceed the "
                               f"model's max_seq_len {model.config.max_seq_len}")
    was = model.training
    model.eval()
    try:
        return dict(zip(OUTPUTS, _LabGraph(model)(ids, mask, past_k, past_v)))
    finally:
        model.train(was)


def export_lab_onnx(model, path, opset: int = 17) -> list:
    """Write the lab's graph of ``model`` to ``path`` (float16 storage for weights that are float16 numbers,
    as ``tinytf.export_onnx``); return the output names."""
    from .onnx_export import _float16_storage

    _blocks(model)
    cfg = model.config
    L, Hkv, D = len(model.blocks), cfg.kv_heads, cfg.d_head
    example = (torch.arange(2, dtype=torch.long)[None] + 97, full_mask(model),
               torch.zeros(L, Hkv, 3, D), torch.zeros(L, Hkv, 3, D))
    axes = {"ids": {1: "T"}, "past_k": {2: "S"}, "past_v": {2: "S"}, "lens": {1: "T"}, "attn": {2: "T", 3: "ST"},
            "present_k": {2: "ST"}, "present_v": {2: "ST"}}
    was = model.training
    model.eval()
    buffer = io.BytesIO()
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx")
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            torch.onnx.export(_LabGraph(model), example, buffer, dynamo=False, opset_version=opset,
                              input_names=list(INPUTS), output_names=list(OUTPUTS), dynamic_axes=axes,
                              do_constant_folding=True)
    finally:
        model.train(was)
    Path(path).write_bytes(_float16_storage(buffer.getvalue()))
    return list(OUTPUTS)


# ---------------------------------------------------------------- the sampler (the page's, in Python)
def mulberry32(seed: int):
    """A generator of floats in [0, 1): mulberry32, 32-bit integer arithmetic that JavaScript's
    Math.imul and >>> reproduce exactly (the page's copy is in _static/tinytf-lab.js)."""
    state = int(seed) & 0xFFFFFFFF

    def imul(a, b):
        return (a * b) & 0xFFFFFFFF

    def draw() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        t = state
        t = imul(t ^ (t >> 15), t | 1)
        t ^= (t + imul(t ^ (t >> 7), t | 61)) & 0xFFFFFFFF
        t &= 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296

    return draw


def next_byte_probs(logits, temperature: float = 1.0, top_k=None, top_p=None) -> torch.Tensor:
    """[V] distribution of the next byte: chapter 11's ``next_token_probs`` (float64 here and on the page)."""
    return next_token_probs(torch.as_tensor(logits).double().reshape(1, -1), temperature, top_k, top_p)[0]


def pick(probs, u: float) -> int:
    """The first index whose cumulative probability exceeds ``u`` (the last non-zero one if rounding leaves
    the sum below u)."""
    total, last = 0.0, 0
    for i, p in enumerate(torch.as_tensor(probs).tolist()):
        if p > 0:
            total += p
            last = i
            if total > u:
                return i
    return last


@torch.no_grad()
def sample_text(model, prompt, n_bytes: int, seed: int = 0, temperature: float = 1.0, top_k=None, top_p=None,
                head_mask=None) -> list:
    """The bytes the page's Generate writes after ``prompt`` (str or byte ids): one run of the whole prompt,
    then one byte at a time through the KV cache; at a full context, the last max_seq_len bytes afresh.
    Temperature 0 is greedy (no random number is drawn)."""
    ids = list(prompt.encode("utf-8")) if isinstance(prompt, str) else [int(i) for i in prompt]
    n = model.config.max_seq_len
    ids = ids[-n:]
    draw = mulberry32(seed)
    out = run_lab(model, ids, head_mask)
    new = []
    for _ in range(int(n_bytes)):
        probs = next_byte_probs(out["logits"], temperature, top_k, top_p)
        b = int(probs.argmax()) if temperature == 0 else pick(probs, draw())
        new.append(b)
        ids.append(b)
        if out["present_k"].shape[2] + 1 > n:  # full: the last n bytes afresh, as tinytf.generate does
            ids = ids[-n:]
            out = run_lab(model, ids, head_mask)
        else:
            out = run_lab(model, [b], head_mask, out["present_k"], out["present_v"])
    return new
