"""Ablation of each block's attention on the copy task of chapter 7 (section 7.6).

    from tinytf.lab.copy_ablation import ablate_attention
    ablate_attention(model)               # {"none": (loss, share), "blocks.0": (...), "blocks.1": (...)}
    ablate_attention(model, mode="mean")  # the same, with each block's output replaced by its mean

Each entry is the mean cross-entropy (nats) of the copied half and the share of its letters predicted right
(argmax), on ``n`` fresh copy-task sequences, first with the model as it is, then with the output of one
block's attention replaced (``run_with_patches``). Two replacements:

- ``"zero"`` (the default): zeros, so the block's attention adds nothing to the stream;
- ``"mean"``: at each position, the block's attention output averaged over the ``n`` sequences of the intact
  run. What the output carries about the letters of one sequence is removed, but the stream stays at its
  usual size and direction, so the later layers see inputs like the ones they were trained on.

The same measurement as the chapter's ablation cell, as a function so that it can be repeated on the models
of other seeds (``copy_loop.train_copy``).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from . import tasks
from ..errors import TinyTFInputError

MODES = ("zero", "mean")


@torch.no_grad()
def ablate_attention(model, length: int = 8, n: int = 256, seed: int = 1, mode: str = "zero") -> dict:
    """{"none" | "blocks.i": (loss of the copied half in nats, share of its letters right)} for each block i."""
    if length < 1 or n < 1:
        raise TinyTFInputError(f"ablate_attention: length and n must be >= 1, got {length} and {n}")
    if mode not in MODES:
        raise TinyTFInputError(f"ablate_attention: mode must be one of {MODES}, got {mode!r}")
    x, y, _ = tasks.induction_batch(n, length, torch.Generator().manual_seed(seed))  # [n, 2 * length] each
    want = y[:, length:]  # [n, length]: the copied half's targets

    def copied_half(logits):  # logits: [n, 2 * length, V]
        part = logits[:, length:]  # [n, length, V]
        loss = F.cross_entropy(part.transpose(1, 2), want).item()
        return loss, (part.argmax(-1) == want).float().mean().item()

    names = [f"blocks.{i}.attn.out" for i in range(len(model.blocks))]
    logits, trace = model.run_with_trace(x, names=names)
    out = {"none": copied_half(logits)}
    for i, name in enumerate(names):
        if mode == "zero":
            patch = torch.zeros_like
        else:
            mean = trace[name].mean(dim=0, keepdim=True)  # [n, T, C] -> [1, T, C]: each position's mean
            patch = lambda t, m=mean: m.expand_as(t)  # [1, T, C] -> [n, T, C]
        out[f"blocks.{i}"] = copied_half(model.run_with_patches(x, patches={name: patch}))
    return out
