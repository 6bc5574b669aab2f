"""Batches of sequences of different lengths: right padding and the key-padding mask that goes with it.

    ids, mask = pad_batch([tinytf.encode("banana"), tinytf.encode("a much longer source")])
    model(ids, tgt_ids, src_padding_mask=mask, tgt_padding_mask=tgt_mask)

The mask follows PyTorch's convention for key-padding masks: bool [B, L], True = a padded position.
"""
from __future__ import annotations

import torch

from ..errors import TinyTFInputError

__all__ = ["pad_batch"]


def pad_batch(seqs, pad_id: int = 0):
    """Right-pad 1-D token-id tensors (or lists) to the longest one with ``pad_id``.

    Returns (ids [B, L] long, mask [B, L] bool with True at the padded positions)."""
    if isinstance(seqs, torch.Tensor) or not len(seqs):
        raise TinyTFInputError("pad_batch: expected a non-empty list of 1-D token-id sequences")
    seqs = [torch.as_tensor(s) for s in seqs]
    for i, s in enumerate(seqs):
        if s.dim() != 1 or s.numel() == 0:
            raise TinyTFInputError(f"pad_batch: sequence {i} has shape {list(s.shape)}, expected [L] with L >= 1")
    length = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), length), pad_id, dtype=torch.long)  # [B, L]
    mask = torch.ones(len(seqs), length, dtype=torch.bool)  # [B, L], True = padded
    for i, s in enumerate(seqs):
        ids[i, :len(s)], mask[i, :len(s)] = s, False
    return ids, mask
