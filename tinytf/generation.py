"""Autoregressive generation, naive and with a KV cache.

Naive (the O(n^2) baseline): every step re-runs the whole prefix through the model.
Cached: the prompt runs once; after that each step feeds only the newest token, whose
queries attend to the cached keys/values of all earlier positions. The new token still
runs through every block; only past K/V are reused.

Context window: a model sees at most ``config.max_seq_len`` tokens, the length it declares (for a trained
model, the length it was trained on). Sinusoidal and learned position tables end there, so ``generate``
refuses a longer run up front. RoPE and 'none' have no table that ends, but a RoPE model has never seen the
rotation angles of later positions and its predictions degrade there (chapter 10 measures it). So when the
context would exceed ``max_seq_len``, ``generate`` keeps only the last ``max_seq_len`` tokens, at positions
0 .. max_seq_len - 1: the naive version feeds that window, the cached version empties its cache and
prefills it with the same window. Both compute the same thing, so they still agree token for token; past
that point every cached step costs one full window, like a naive one.
"""
from __future__ import annotations

import numbers
import operator
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

from .errors import TinyTFInputError
from .models import check_ids


@dataclass
class Generation:
    tokens: torch.Tensor  # [B, T_prompt + n] (or [T_prompt + n] for a 1-D prompt)
    step_logits: list = field(default_factory=list)  # one [B, V] tensor per generated token
    step_seconds: list = field(default_factory=list)  # wall time per generated token
    # one [B, V] tensor per generated token: the distribution the token was drawn from, after temperature,
    # top-k and top-p (greedy: one-hot on the argmax, i.e. the limit temperature -> 0)
    step_probs: list = field(default_factory=list)


@dataclass
class CacheStep:
    """What ``generate`` (and ``generate_seq2seq``) report to ``on_step`` after each step: the model has just
    run on ``fed`` and picked ``token``. Positions are indexes into the whole sequence (prompt + generated), so
    they stay absolute when a RoPE model's context window slides and its cache is refilled.
    Step 0 is the prompt (all its positions at once); every later step feeds the previous step's token."""

    step: int
    fed: list  # the ids fed at this step (first sequence of the batch)
    positions: list  # their indexes in the sequence
    token: torch.Tensor  # [B]: the token picked at this step
    held: Optional[list]  # per layer, the sequence positions whose K/V (or MLA latent) the cache holds; None: no cache
    nbytes: int  # bytes the cache holds after this step (0 without a cache)
    cache: object = None  # the cache itself (KVCache or None): read it inside the callback, it changes afterwards

    @property
    def length(self) -> int:
        """Positions the cache has seen (for a full cache: those it holds)."""
        return 0 if self.cache is None else self.cache.length


def _report(on_step, step, tokens, start, n_fed, token, cache, base=0):
    """Call ``on_step`` with a CacheStep: ``tokens`` [B, L] is the sequence so far, ``n_fed`` positions from
    ``start`` were fed; the cache's position p is sequence position base + p."""
    if on_step is None:
        return
    held = None if cache is None else [[base + p for p in layer] for layer in cache.held()]
    on_step(CacheStep(step=step, fed=tokens[0, start:start + n_fed].tolist(), positions=list(range(start, start + n_fed)),
                      token=token, held=held, nbytes=0 if cache is None else cache.nbytes(), cache=cache))


def _check_temperature(temperature):
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) or temperature != temperature:
        raise TinyTFInputError(f"temperature: expected a number >= 0, got {temperature!r}")
    if temperature < 0:
        raise TinyTFInputError(f"temperature must be >= 0, got {temperature}")


def _check_top_k(top_k, vocab):
    if top_k is None:
        return
    try:
        k = None if isinstance(top_k, bool) else operator.index(top_k)
    except TypeError:
        k = None
    if k is None or not 1 <= k <= vocab:
        raise TinyTFInputError(f"top_k must be in [1, {vocab}], got {top_k!r} (expected an integer, or None)")


def _check_top_p(top_p):
    if top_p is None:
        return
    if isinstance(top_p, bool) or not isinstance(top_p, numbers.Real) or not 0 < top_p <= 1:
        raise TinyTFInputError(f"top_p must be a number in (0, 1] (or None), got {top_p!r}")


def top_k_filter(logits, k: int):
    """logits [..., V] with everything below the k-th largest set to -inf (ties with the k-th are kept)."""
    _check_top_k(k, logits.shape[-1])
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits, p: float):
    """Nucleus filter: logits [..., V] with every token outside the nucleus set to -inf. The nucleus is the
    smallest set of most probable tokens whose probability (softmax of ``logits``) sums to at least ``p``;
    tokens tied in probability with the last one needed are kept too, so the result never depends on how
    ties happen to be sorted. p = 1 keeps every token."""
    _check_top_p(p)
    probs = torch.softmax(logits.double(), dim=-1)
    sorted_probs, _ = torch.sort(probs, dim=-1, descending=True)
    before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs  # mass of the more probable ones
    # tokens needed: those whose preceding mass is still below p (the most probable is always needed);
    # 1e-9 absorbs rounding, so that e.g. 0.5 + 0.3 counts as reaching p = 0.8
    needed = before < p - 1e-9
    needed[..., 0] = True
    cutoff = (sorted_probs.masked_fill(~needed, float("inf"))).min(dim=-1, keepdim=True).values  # smallest kept prob
    return logits.masked_fill(probs < cutoff, float("-inf"))


def next_token_probs(logits, temperature: float = 0.0, top_k=None, top_p=None):
    """logits [B, V] -> the [B, V] distribution ``pick_next`` samples from: softmax(logits / temperature)
    restricted to the top_k largest and then to the top-p nucleus, renormalised. temperature 0 (greedy)
    gives a one-hot on the argmax (the temperature -> 0 limit when the maximum is unique)."""
    _check_temperature(temperature)
    _check_top_k(top_k, logits.shape[-1])
    _check_top_p(top_p)
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return torch.softmax(logits, dim=-1)


def pick_next(logits, temperature: float = 0.0, top_k=None, generator=None, top_p=None, return_probs: bool = False):
    """logits [B, V] -> next ids [B]. temperature 0 = greedy argmax; otherwise sample from
    softmax(logits / temperature), restricted to the top_k largest when top_k is given and to the
    nucleus of mass top_p (``top_p_filter``) when top_p is given. ``return_probs=True`` returns
    (ids, probs) with the [B, V] distribution actually sampled from (``next_token_probs``)."""
    probs = next_token_probs(logits, temperature, top_k, top_p)
    if temperature == 0:
        ids = logits.argmax(-1)
    else:
        ids = torch.multinomial(probs, 1, generator=generator)[:, 0]
    return (ids, probs) if return_probs else ids


def check_room(positions, needed: int, what: str):
    """Sinusoidal / learned position tables end at max_seq_len (RoPE and 'none' have no limit):
    refuse up front a generation that would run past the end, instead of failing half-way."""
    limit = getattr(positions, "max_seq_len", None)
    if limit is not None and needed > limit:
        raise TinyTFInputError(
            f"{what} needs {needed} positions, but this model's {type(positions).__name__} covers only "
            f"max_seq_len={limit}; ask for fewer new tokens, shorten the input or raise max_seq_len"
        )


def context_window(model):
    """The number of most recent tokens ``generate`` feeds a decoder: ``config.max_seq_len`` when the model's
    positions have no table that ends there (RoPE, 'none'), else None (a sinusoidal or learned table refuses a
    longer input instead; ``check_room``)."""
    if getattr(getattr(model, "pos", None), "max_seq_len", None) is not None:
        return None
    return getattr(getattr(model, "config", None), "max_seq_len", None)


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


def _check_sampling(model, temperature, top_k, top_p, seed):
    _check_temperature(temperature)
    _check_top_k(top_k, model.config.vocab_size)
    _check_top_p(top_p)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise TinyTFInputError(f"seed: expected an integer or None, got {seed!r}")


@torch.no_grad()
def generate(model, prompt, max_new_tokens: int, *, use_cache: bool = True, temperature: float = 0.0,
             top_k=None, seed=None, timed: bool = False, top_p=None,
             on_step: Optional[Callable[[CacheStep], None]] = None) -> Generation:
    """Generate ``max_new_tokens`` tokens after ``prompt`` ([T] or [B, T]) with a decoder-only model.

    temperature 0 = greedy; otherwise sampling from softmax(logits / temperature), optionally restricted to
    the ``top_k`` most likely tokens and/or the nucleus of mass ``top_p`` (both: top-k first). ``seed``
    makes sampling repeatable. The result holds the tokens, each step's raw logits (``step_logits``) and
    the distribution each token was drawn from (``step_probs``). ``on_step``, if given, is called after every
    step with a ``CacheStep``: what was fed, the token picked and which positions the cache now holds.

    Context window: a RoPE (or position-free) model is fed at most its ``config.max_seq_len`` most recent
    tokens, at positions 0 .. max_seq_len - 1, the positions it was trained on (``context_window``). Once the
    context is longer, the cached version empties its cache and prefills it with that window before each
    step, exactly what the naive version feeds, so the two still agree token for token. A model with a
    sinusoidal or learned position table refuses a run longer than its table instead."""
    _check_sampling(model, temperature, top_k, top_p, seed)
    ids, was_1d = check_ids(prompt, model.config, "prompt")
    max_new_tokens = whole_number(max_new_tokens, "max_new_tokens", 0)
    T = ids.shape[1]  # the last generated token is never fed back, so T + n - 1 positions run
    check_room(getattr(model, "pos", None), T + max(max_new_tokens, 1) - 1,
               f"generate: a prompt of {T} tokens + {max_new_tokens} new tokens")
    generator = torch.Generator().manual_seed(seed) if seed is not None else None
    window = context_window(model)  # None: no sliding (a position table that ends refuses longer runs above)
    model.eval()
    cache = model.new_cache() if use_cache else None
    out = Generation(tokens=ids)
    n_fed, base = T, 0  # positions fed at this step; the sequence position of the cache's position 0
    for step in range(max_new_tokens):
        t0 = time.perf_counter() if timed else 0.0
        L = out.tokens.shape[1]
        if use_cache:
            if window is not None and cache.length + n_fed > window:
                # the context no longer fits: start again from the last `window` tokens, at positions 0..window-1
                cache, n_fed, base = model.new_cache(), window, L - window
            logits = model(out.tokens[:, L - n_fed:], cache=cache)[:, -1]  # only the new positions run
        else:
            start = 0 if window is None else max(L - window, 0)
            n_fed = L - start  # naive: the whole prefix (at most the last `window` tokens) again
            logits = model(out.tokens[:, start:])[:, -1]
        nxt, probs = pick_next(logits, temperature, top_k, generator, top_p=top_p, return_probs=True)  # [B], [B, V]
        _report(on_step, step, out.tokens, L - n_fed, n_fed, nxt, cache, base)
        out.tokens = torch.cat((out.tokens, nxt[:, None]), dim=1)
        n_fed = 1  # the next step feeds only the token just picked
        out.step_logits.append(logits)
        out.step_probs.append(probs)
        if timed:
            out.step_seconds.append(time.perf_counter() - t0)
    if was_1d:
        out.tokens = out.tokens[0]
    return out


@torch.no_grad()
def generate_seq2seq(model, src, bos: int, max_new_tokens: int, *, use_cache: bool = True,
                     src_padding_mask=None, on_step: Optional[Callable[[CacheStep], None]] = None) -> torch.Tensor:
    """Greedy decoding with an EncoderDecoder: encode the source once, then generate target tokens
    starting from ``bos``. Returns the target ids including bos ([T] or [B, T]). For a batch of sources of
    different lengths, pad them and pass ``src_padding_mask`` (bool [B, S], True = padded): it hides the padding
    from the encoder and from every cross-attention step. The targets grow together, so they need no mask.
    ``on_step`` sees a ``CacheStep`` after every step, as in ``generate`` (the cache is the decoder's
    self-attention cache; the source's keys and values are recomputed from ``memory``)."""
    src, was_1d = check_ids(src, model.config, "src")
    max_new_tokens = whole_number(max_new_tokens, "max_new_tokens", 0)
    bos = whole_number(bos, "bos", 0, model.config.vocab_size)
    check_room(model.decoder.pos, max(max_new_tokens, 1), f"generate_seq2seq: bos + {max_new_tokens} new tokens")
    model.eval()
    memory = model.encode(src, src_padding_mask)  # [B, S, C], computed once
    tgt = torch.full((src.shape[0], 1), bos, dtype=torch.long)
    cache = model.new_cache() if use_cache else None
    for step in range(max_new_tokens):
        n_fed = 1 if use_cache and step > 0 else tgt.shape[1]  # with a cache: only the newest token
        logits = model(None, tgt[:, -n_fed:], cache=cache, memory=memory, src_padding_mask=src_padding_mask)[:, -1]
        nxt = logits.argmax(-1)
        _report(on_step, step, tgt, tgt.shape[1] - n_fed, n_fed, nxt, cache)
        tgt = torch.cat((tgt, nxt[:, None]), dim=1)
    return tgt[0] if was_1d else tgt
