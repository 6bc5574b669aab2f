"""The training loop of chapter 7 (section 7.7) on the copy task, as a function, for runs the chapter records.

    model, losses = train_copy(seed=0)                   # the chapter's run: same weights, same batches
    model, losses = train_copy(seed=0, zero_grad=False)  # exercise 6: .grad is never cleared
    model, losses = train_copy(seed=0, min_length=4, max_length=12)  # exercise 7: each batch has its own length
    copy_eval(model, lengths=(4, 8, 12))                 # loss of each half on fresh sequences
    grad_pileup(step=80)                                 # exercise 6 at step 80: the summed .grad vs a fresh one

The loop is the chapter's five lines (batch, forward, loss over every position, backward, AdamW step); with
``seed=0`` it reproduces the chapter's run number for number, because the chapter builds its model right after
``tinytf.seed_everything(0)`` and draws its batches from ``torch.Generator().manual_seed(0)``. Another seed
changes both the initial weights and the batches. ``scripts/copy_loop_runs.py`` runs several seeds and the two
exercises and writes ``tinytf/checkpoints/copy-loop-runs.json``, which chapter 7 loads.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import torch
import torch.nn.functional as F

from ..errors import TinyTFInputError
from ..models import TinyTransformer
from ..seeding import seed_everything
from . import tasks

__all__ = ["train_copy", "copy_eval", "grad_pileup", "leaves_plateau", "recorded_runs", "HALFWAY"]

# Halfway between the plateau (uniform over 26 letters, ln 26) and the task's floor ((ln 26) / 2), in nats.
HALFWAY = (math.log(26) + math.log(26) / 2) / 2


def train_copy(seed: int = 0, steps: int = 120, batch_size: int = 32, length: int = 8, lr: float = 3e-3,
               zero_grad: bool = True, min_length: Optional[int] = None, max_length: Optional[int] = None,
               progress=None):
    """Train a fresh default TinyTransformer on the copy task with plain AdamW, as in section 7.7.

    Returns (model in eval mode, list of the loss of each step). ``min_length``/``max_length``: draw each
    batch's repeat length from that range (``InductionTask``) instead of the fixed ``length``.
    ``progress``: an optional callable called once per step (e.g. a tqdm bar's ``update``)."""
    if steps < 1 or batch_size < 1:
        raise TinyTFInputError(f"train_copy: steps and batch_size must be >= 1, got {steps} and {batch_size}")
    if (min_length is None) != (max_length is None):
        raise TinyTFInputError("train_copy: give both min_length and max_length, or neither")
    seed_everything(seed)
    model = TinyTransformer()
    model.train()
    V = model.config.vocab_size
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    data = torch.Generator().manual_seed(seed)
    task = None if min_length is None else tasks.InductionTask(min_length=min_length, max_length=max_length)
    losses = []
    for _ in range(steps):
        if task is None:
            inputs, targets, _ = tasks.induction_batch(batch_size, length, data)
        else:
            inputs, targets, _ = task.batch(batch_size, data)
        loss = F.cross_entropy(model(inputs).reshape(-1, V), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        if zero_grad:
            optimizer.zero_grad()
        losses.append(loss.item())
        if progress is not None:
            progress()
    model.eval()
    return model, losses


def grad_pileup(step: int = 80, seed: int = 0, batch_size: int = 32, length: int = 8) -> dict:
    """Exercise 6's loop (no ``zero_grad``) at training step ``step``: what ``.grad`` holds there against the
    gradient of that step's batch alone, at the same weights.

    Runs ``train_copy(seed, steps=step, zero_grad=False)``, then draws batch ``step`` from the same generator and
    takes its gradient. ``summed``: the norm of ``.grad`` after step ``step``'s ``backward()`` (the sum of the
    gradients of steps 0 to ``step``, what AdamW then reads); ``fresh``: the norm of step ``step``'s gradient alone;
    ``ratio``: summed / fresh; ``cosine``: the cosine between the two; ``loss``: the loss of batch ``step``."""
    if step < 1:
        raise TinyTFInputError(f"grad_pileup: step must be >= 1, got {step}")
    model, _ = train_copy(seed=seed, steps=step, batch_size=batch_size, length=length, zero_grad=False)
    model.train()
    data = torch.Generator().manual_seed(seed)
    for _ in range(step):  # the batches of steps 0 to step - 1, already trained on
        tasks.induction_batch(batch_size, length, data)
    inputs, targets, _ = tasks.induction_batch(batch_size, length, data)  # batch `step`
    params = [p for p in model.parameters() if p.grad is not None]
    loss = F.cross_entropy(model(inputs).reshape(-1, model.config.vocab_size), targets.reshape(-1))
    fresh = torch.cat([g.flatten() for g in torch.autograd.grad(loss, params)])
    summed = torch.cat([p.grad.flatten() for p in params]) + fresh  # what .grad holds after this backward()
    return {"summed": summed.norm().item(), "fresh": fresh.norm().item(),
            "ratio": (summed.norm() / fresh.norm()).item(),
            "cosine": F.cosine_similarity(summed, fresh, dim=0).item(), "loss": loss.item()}


@torch.no_grad()
def copy_eval(model, lengths: Sequence[int] = (8,), n: int = 256, seed: int = 1) -> dict:
    """{length: (loss of the first half, loss of the second half)} in nats, on ``n`` fresh copy-task
    sequences of each length (first half: the random letters; second half: the copy)."""
    out = {}
    for length in lengths:
        x, y, _ = tasks.induction_batch(n, length, torch.Generator().manual_seed(seed))
        per_position = F.cross_entropy(model(x).transpose(1, 2), y, reduction="none")  # [n, 2L]
        out[int(length)] = (per_position[:, :length].mean().item(), per_position[:, length:].mean().item())
    return out


def leaves_plateau(losses: Sequence[float], threshold: float = HALFWAY) -> Optional[int]:
    """The first step whose loss is below ``threshold`` (by default halfway between ln 26 and (ln 26) / 2),
    or None if no step is."""
    return next((step for step, loss in enumerate(losses) if loss < threshold), None)


def recorded_runs(path=None) -> dict:
    """The runs written by ``scripts/copy_loop_runs.py`` (``tinytf/checkpoints/copy-loop-runs.json``)."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "checkpoints" / "copy-loop-runs.json" if path is None else Path(path)
    if not path.exists():
        raise TinyTFInputError(f"recorded_runs: {path} is missing; run scripts/copy_loop_runs.py to make it")
    return json.loads(path.read_text())
