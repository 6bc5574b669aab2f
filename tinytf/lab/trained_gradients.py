"""Chapter 5's gradient profile on trained weights: the gradient of each block's weights on held-out text.

    import tinytf
    from tinytf.lab.trained_gradients import trained_profile
    held_out = tinytf.textdata.stdlib_corpus().val              # docstrings of modules text-4l never trained on
    p = trained_profile(tinytf.pretrained("text-4l"), held_out)  # a LayerProfile, as layer_profile returns
    p.grad_ratio, p.grad_ratio_range                            # first/last, and the seeds' own range

Each seed draws ``batch`` windows of ``seq_len`` bytes at random offsets of ``data``
(``textdata.random_windows`` with a generator seeded by the seed) and measures them with ``measure_layers``:
one backward pass of the next-byte cross-entropy against the real next bytes; the weights are not changed.
As in ``layer_profile``, each seed is measured a second time in float64 (a copy of the model, the same
windows) and the largest relative difference is stored as ``precision_gap``, so ``format_profiles`` treats
the row like any other.
"""
from __future__ import annotations

import copy
import math

import torch

from ..errors import TinyTFInputError
from ..models import TinyTransformer
from .experiments import LayerProfile, _relative_gap, measure_layers, one_thread, profile_from_runs
from .textdata import random_windows


def trained_profile(model: TinyTransformer, data, *, seeds=(0, 1, 2), batch: int = 8, seq_len: int = 128,
                    label: str | None = None) -> LayerProfile:
    """Per-block gradient norms of ``model`` (trained or not) on real text ``data`` (a 1-D tensor of token ids,
    bytes for a byte-level model), combined over ``seeds`` by their geometric mean, as ``layer_profile`` does
    for random stacks. ``init_std`` of the result is nan: the weights are the model's own. The caller's
    random-number state and the model's weights are left untouched."""
    if not isinstance(model, TinyTransformer):
        raise TinyTFInputError(f"trained_profile needs a TinyTransformer, got {type(model).__name__}")
    if not seeds:
        raise TinyTFInputError("trained_profile needs at least one seed")
    if batch < 1 or seq_len < 1:
        raise TinyTFInputError(f"batch and seq_len must be at least 1, got batch={batch}, seq_len={seq_len}")
    cfg = model.config
    if seq_len > cfg.max_seq_len:
        raise TinyTFInputError(f"seq_len={seq_len} is longer than the model's max_seq_len={cfg.max_seq_len}")
    data = torch.as_tensor(data)
    if data.dim() != 1 or data.is_floating_point() or data.dtype == torch.bool:
        raise TinyTFInputError(f"data must be a 1-D tensor of token ids, got dtype {data.dtype} and shape "
                               f"{tuple(data.shape)}")
    if data.numel() and (int(data.min()) < 0 or int(data.max()) >= cfg.vocab_size):
        raise TinyTFInputError(f"data holds ids outside 0..{cfg.vocab_size - 1} (the model's vocabulary)")
    was_training = model.training
    model.eval()
    exact_model = copy.deepcopy(model).double()  # float64 copy: same weights, for the precision check
    runs, exact_runs, gap = [], [], 0.0
    try:
        with torch.random.fork_rng(), one_thread():
            for seed in seeds:
                generator = torch.Generator().manual_seed(seed)
                ids, targets = random_windows(data, batch, seq_len, generator)  # [batch, seq_len] each
                runs.append(measure_layers(model, ids, targets))
                exact = measure_layers(exact_model, ids, targets)
                exact_runs.append(exact)
                gap = max(gap, _relative_gap(runs[-1].grad_norm + runs[-1].activation_rms,
                                             exact.grad_norm + exact.activation_rms))
    finally:
        model.train(was_training)
    return profile_from_runs(label or f"{cfg.n_layers} blocks, own weights, real text", cfg, math.nan, seeds,
                             runs, exact_runs, gap)
