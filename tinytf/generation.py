"""Autoregressive generation, naive and with a KV cache.

Naive (the O(n^2) baseline): every step re-runs the whole prefix through the model.
Cached: the prompt runs once; after that each step feeds only the newest token, whose
queries attend to the cached keys/values of all earlier positions. The new token still
runs through every block; only past K/V are reused.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field

import torch

from .errors import TinyTFInputError
from .models import check_ids


@dataclass
class Generation:
    tokens: torch.Tensor  # [B, T_prompt + n] (or [T_prompt + n] for a 1-D prompt)
    step_logits: list = field(default_factory=list)  # one [B, V] tensor per generated token
    step_seconds: list = field(default_factory=list)  # wall time per generated token


def pick_next(logits, temperature: float = 0.0, top_k=None, generator=None):
    """logits [B, V] -> next ids [B]. temperature 0 = greedy argmax; otherwise sample from
    softmax(logits / temperature), restricted to the top_k largest when top_k is given."""
    if temperature < 0:
        raise TinyTFInputError(f"temperature must be >= 0, got {temperature}")
    if temperature == 0:
        return logits.argmax(-1)
    logits = logits / temperature
    if top_k is not None:
        if not 1 <= top_k <= logits.shape[-1]:
            raise TinyTFInputError(f"top_k must be in [1, {logits.shape[-1]}], got {top_k}")
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]  # [B, 1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]


def check_room(positions, needed: int, what: str):
    """Sinusoidal / learned position tables end at max_seq_len (RoPE and 'none' have no limit):
    refuse up front a generation that would run past the end, instead of failing half-way."""
    limit = getattr(positions, "max_seq_len", None)
    if limit is not None and needed > limit:
        raise TinyTFInputError(
            f"{what} needs {needed} positions, but this model's {type(positions).__name__} covers only "
            f"max_seq_len={limit}; ask for fewer new tokens, shorten the input or raise max_seq_len"
        )


def whole_number(value, what: str, low: int, high=None) -> int:
    """value as an int in [low, high) (high=None: no upper end), else TinyTFInputError."""
    try:
        if isinstance(value, bool):
            raise TypeError
        n = operator.index(value)  # int, numpy integer or 0-d integer tensor
    except TypeError:
        n = None
    if n is None or n < low or (high is not None and n >= high):
        expected = f"an integer >= {low}" if high is None else f"a token id in [{low}, {high})"
        raise TinyTFInputError(f"{what}: got {value!r}, expected {expected}")
    return n


@torch.no_grad()
def generate(model, prompt, max_new_tokens: int, *, use_cache: bool = True, temperature: float = 0.0,
             top_k=None, seed=None, timed: bool = False) -> Generation:
    """Generate ``max_new_tokens`` tokens after ``prompt`` ([T] or [B, T]) with a decoder-only model."""
    import time

    ids, was_1d = check_ids(prompt, model.config, "prompt")
    max_new_tokens = whole_number(max_new_tokens, "max_new_tokens", 0)
    T = ids.shape[1]  # the last generated token is never fed back, so T + n - 1 positions run
    check_room(getattr(model, "pos", None), T + max(max_new_tokens, 1) - 1,
               f"generate: a prompt of {T} tokens + {max_new_tokens} new tokens")
    generator = torch.Generator().manual_seed(seed) if seed is not None else None
    model.eval()
    cache = model.new_cache() if use_cache else None
    out = Generation(tokens=ids)
    step_input = ids
    for _ in range(max_new_tokens):
        t0 = time.perf_counter() if timed else 0.0
        if use_cache:
            logits = model(step_input, cache=cache)[:, -1]  # only the new positions run; past K/V come from the cache
        else:
            logits = model(out.tokens)[:, -1]  # naive: the whole prefix again
        nxt = pick_next(logits, temperature, top_k, generator)  # [B]
        out.tokens = torch.cat((out.tokens, nxt[:, None]), dim=1)
        step_input = nxt[:, None]  # [B, 1]
        out.step_logits.append(logits)
        if timed:
            out.step_seconds.append(time.perf_counter() - t0)
    if was_1d:
        out.tokens = out.tokens[0]
    return out


@torch.no_grad()
def generate_seq2seq(model, src, bos: int, max_new_tokens: int, *, use_cache: bool = True) -> torch.Tensor:
    """Greedy decoding with an EncoderDecoder: encode the source once, then generate target tokens
    starting from ``bos``. Returns the target ids including bos ([T] or [B, T])."""
    src, was_1d = check_ids(src, model.config, "src")
    max_new_tokens = whole_number(max_new_tokens, "max_new_tokens", 0)
    bos = whole_number(bos, "bos", 0, model.config.vocab_size)
    check_room(model.decoder.pos, max(max_new_tokens, 1), f"generate_seq2seq: bos + {max_new_tokens} new tokens")
    model.eval()
    memory = model.encode(src)  # [B, S, C], computed once
    tgt = torch.full((src.shape[0], 1), bos, dtype=torch.long)
    cache = model.new_cache() if use_cache else None
    step_input = tgt
    for _ in range(max_new_tokens):
        logits = model(None, step_input if use_cache else tgt, cache=cache, memory=memory)[:, -1]
        nxt = logits.argmax(-1)
        tgt = torch.cat((tgt, nxt[:, None]), dim=1)
        step_input = nxt[:, None]
    return tgt[0] if was_1d else tgt
