"""Zero-ablation of each block's attention on the copy task of chapter 7 (section 7.6).

    from tinytf.lab.copy_ablation import ablate_attention
    ablate_attention(model)  # {"none": (loss, share), "blocks.0": (...), "blocks.1": (...)}

Each entry is the mean cross-entropy (nats) of the copied half and the share of its letters predicted right
(argmax), on ``n`` fresh copy-task sequences, first with the model as it is, then with the output of one
block's attention replaced by zeros (``run_with_patches``). The same measurement as the chapter's ablation
cell, as a function so that it can be repeated on the models of other seeds (``copy_loop.train_copy``).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from . import tasks
from ..errors import TinyTFInputError


@torch.no_grad()
def ablate_attention(model, length: int = 8, n: int = 256, seed: int = 1) -> dict:
    """{"none" | "blocks.i": (loss of the copied half in nats, share of its letters right)} for each block i."""
    if length < 1 or n < 1:
        raise TinyTFInputError(f"ablate_attention: length and n must be >= 1, got {length} and {n}")
    x, y, _ = tasks.induction_batch(n, length, torch.Generator().manual_seed(seed))  # [n, 2 * length] each
    want = y[:, length:]  # [n, length]: the copied half's targets

    def copied_half(logits):  # logits: [n, 2 * length, V]
        part = logits[:, length:]  # [n, length, V]
        loss = F.cross_entropy(part.transpose(1, 2), want).item()
        return loss, (part.argmax(-1) == want).float().mean().item()

    out = {"none": copied_half(model(x))}
    for i in range(len(model.blocks)):
        name = f"blocks.{i}"
        out[name] = copied_half(model.run_with_patches(x, patches={f"{name}.attn.out": torch.zeros_like}))
    return out
