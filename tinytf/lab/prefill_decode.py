"""Prefill and decode: the two phases of generation, counted and timed (chapter 11).

Prefill runs the prompt's T tokens through the model in one pass; decode then runs one token per step
against the KV cache. Both read every weight once per pass, but prefill does T tokens' worth of arithmetic
with it and decode one. ``step_cost`` counts, for one forward pass of ``new`` tokens after ``past`` cached
ones, the floating-point operations and the bytes that must come from memory (weights, plus the cache read
and written), and their ratio, the **arithmetic intensity** (FLOPs per byte). ``time_phases`` measures the
time per token of each phase on a real model.

    cost = step_cost(cfg, new=1, past=127)       # decode: about 1 FLOP per byte in float32
    timing = time_phases(model, prompt_len=128)  # seconds per token: prefill vs decode
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from ..errors import TinyTFInputError
from .parameters import count_parameters


@dataclass(frozen=True)
class StepCost:
    new: int  # tokens run in this pass
    past: int  # tokens already in the cache
    flops: float  # 2 per multiply-add: weight matrices + attention scores and weighted sums
    bytes: float  # weights read once + K/V cache read and written (activations neglected)

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved."""
        return self.flops / self.bytes


def step_cost(cfg, new: int, past: int = 0, bytes_per_value: int = 4) -> StepCost:
    """Arithmetic of one forward pass of ``new`` tokens after ``past`` cached ones, for a decoder config.
    FLOPs: 2 x (the block and output matrices, i.e. the parameters apart from the embedding table and norms) per
    token, plus 4 x d_head x heads per (query, key) pair for the scores and the weighted sum (causal pairs only).
    Bytes: every weight once, the cache of the ``past`` positions read, and the new keys and values written."""
    if new < 1 or past < 0:
        raise TinyTFInputError(f"step_cost: need new >= 1 and past >= 0, got new={new}, past={past}")
    d_head = cfg.d_model // cfg.n_heads
    n_kv = cfg.n_kv_heads or cfg.n_heads
    params = count_parameters(cfg)
    embed = cfg.vocab_size * cfg.d_model
    matrix = params - (0 if cfg.tie_embeddings else embed)  # the lookup table does no arithmetic (tied: it is the head too)
    pairs = new * past + new * (new + 1) // 2  # each new query meets the past keys and the causal new ones
    flops = 2 * matrix * new + 4 * cfg.n_layers * cfg.n_heads * d_head * pairs
    cache = 2 * cfg.n_layers * n_kv * d_head * bytes_per_value
    moved = params * bytes_per_value + cache * (past + new)
    return StepCost(new, past, float(flops), float(moved))


@dataclass
class PhaseTiming:
    prompt_len: int
    decode_steps: int
    prefill_seconds: float  # median over repeats, the whole prompt
    decode_seconds: float  # median over steps and repeats, one token

    @property
    def prefill_per_token(self) -> float:
        return self.prefill_seconds / self.prompt_len

    @property
    def decode_per_token(self) -> float:
        return self.decode_seconds

    @property
    def ratio(self) -> float:
        """Decode time per token / prefill time per token."""
        return self.decode_per_token / self.prefill_per_token


@torch.no_grad()
def time_phases(model, prompt_len: int = 128, decode_steps: int = 16, repeats: int = 5, seed: int = 0) -> PhaseTiming:
    """Wall time of prefill (one pass over ``prompt_len`` random tokens into an empty cache) and of decode
    (``decode_steps`` cached one-token steps after it), each the median over ``repeats`` runs (decode: over
    every step of every run), after one warm-up run. One torch thread is the caller's choice."""
    if prompt_len < 1 or decode_steps < 1 or repeats < 1:
        raise TinyTFInputError("time_phases: prompt_len, decode_steps and repeats must be >= 1")
    model.eval()
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (1, prompt_len), generator=g)
    nxt = torch.randint(0, model.config.vocab_size, (1, 1), generator=g)
    prefill, decode = [], []
    for r in range(repeats + 1):
        cache = model.new_cache()
        t0 = time.perf_counter()
        model(ids, cache=cache)
        t1 = time.perf_counter()
        steps = []
        for _ in range(decode_steps):
            s0 = time.perf_counter()
            model(nxt, cache=cache)
            steps.append(time.perf_counter() - s0)
        if r:  # the first run warms up
            prefill.append(t1 - t0)
            decode.extend(steps)
    return PhaseTiming(prompt_len, decode_steps, statistics.median(prefill), statistics.median(decode))
