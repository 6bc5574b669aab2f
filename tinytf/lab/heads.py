"""Measure what an attention head does, so that the "interesting" heads are found by numbers, not by eye.

    logits, trace = model.run_with_trace(tinytf.encode(text))
    w = trace["blocks.1.attn.weights"]            # [B, H, T, T] (or one example's [H, T, T])
    tinytf.heads.previous_token_score(w)          # [H]: mean weight on key i-1 over queries i >= 1
    tinytf.heads.word_start_score(w, text)        # [H]: mean weight on the first byte of the query's word
    tinytf.heads.first_token_score(w)             # [H]: mean weight on key 0 (the "sink") over queries i >= 1
    rows = tinytf.heads.score_table(model, text)  # every (layer, head) with the three scores
    tinytf.heads.best_heads(rows)                 # {pattern: the row with the highest score}

Every score is a mean of attention weights, so it lies in [0, 1]: 1 when every query counted puts all
its weight on the key the pattern names; a head spreading its weight evenly over n keys scores 1/n.
A batch axis is averaged over as well. The scores are computed in float64 from the traced weights.
"""
from __future__ import annotations

import re

import torch

from ..errors import TinyTFInputError
from ..tokens import encode
from ..tracing import Trace

PATTERNS = ("previous", "word_start", "first")
PATTERN_NAMES = {"previous": "previous token (key i-1)", "word_start": "start of the current word",
                 "first": "first byte"}
WORD = re.compile(rb"[A-Za-z0-9_']+")  # a word: a run of letters, digits, underscores and apostrophes


def _as_bhtt(weights) -> torch.Tensor:
    w = torch.as_tensor(weights)
    if w.dim() == 3:
        w = w[None]
    if w.dim() != 4 or w.shape[-1] != w.shape[-2]:
        raise TinyTFInputError(f"attention weights: expected [B, H, T, T] or [H, T, T] self-attention weights, "
                               f"got shape {list(w.shape)}")
    if w.shape[-1] < 2:
        raise TinyTFInputError("attention weights: need at least 2 positions to score a pattern")
    return w.detach().to(torch.float64)


def _mean_on(w: torch.Tensor, queries: list, keys: list) -> torch.Tensor:
    """[B, H, T, T] -> [H]: the mean over the batch and the listed queries of w[query, key]."""
    if not queries:
        raise TinyTFInputError("no query position fits this pattern in the given text")
    q, k = torch.tensor(queries), torch.tensor(keys)
    return w[:, :, q, k].mean(dim=(0, 2))


def previous_token_score(weights) -> torch.Tensor:
    """[H]: the mean weight each head puts on key i-1, over the queries i = 1 .. T-1."""
    w = _as_bhtt(weights)
    T = w.shape[-1]
    return _mean_on(w, list(range(1, T)), list(range(T - 1)))


def first_token_score(weights) -> torch.Tensor:
    """[H]: the mean weight each head puts on key 0 (the first byte; an "attention sink" when large),
    over the queries i = 1 .. T-1 (query 0 can only see key 0)."""
    w = _as_bhtt(weights)
    T = w.shape[-1]
    return _mean_on(w, list(range(1, T)), [0] * (T - 1))


def word_starts(text) -> list:
    """For each byte of ``text`` (str, encoded as UTF-8, or bytes): the index of the first byte of the word
    it is in (words: runs of ``[A-Za-z0-9_']``), or None for a byte outside every word."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    out = [None] * len(data)
    for m in WORD.finditer(data):
        for i in range(m.start(), m.end()):
            out[i] = m.start()
    return out


def word_start_score(weights, text, min_offset: int = 2) -> torch.Tensor:
    """[H]: the mean weight each head puts on the first byte of the word the query byte is in, over the
    query bytes at least ``min_offset`` bytes into their word (2 by default: a byte at the start of its word
    would only score attention to itself, and the second byte's word start is its previous byte, which
    ``previous_token_score`` already measures). ``text`` is the text whose bytes are the T positions."""
    w = _as_bhtt(weights)
    starts = word_starts(text)
    if len(starts) != w.shape[-1]:
        raise TinyTFInputError(f"word_start_score: the text has {len(starts)} bytes but the weights cover "
                               f"{w.shape[-1]} positions")
    pairs = [(i, s) for i, s in enumerate(starts) if s is not None and i - s >= min_offset]
    return _mean_on(w, [i for i, _ in pairs], [s for _, s in pairs])


def score_table(model_or_trace, text: str) -> list:
    """Every (layer, head) of a decoder on ``text``: a list of dicts {layer, head, previous, word_start,
    first} (floats). ``model_or_trace`` is a TinyTransformer (run on the bytes of ``text``) or a Trace of
    that run."""
    trace = model_or_trace
    if not isinstance(model_or_trace, Trace):
        with torch.no_grad():
            _, trace = model_or_trace.run_with_trace(encode(text, model_or_trace.config.vocab_size))
    rows, layer = [], 0
    while f"blocks.{layer}.attn.weights" in trace:
        w = trace[f"blocks.{layer}.attn.weights"]
        scores = {"previous": previous_token_score(w), "word_start": word_start_score(w, text),
                  "first": first_token_score(w)}
        for h in range(w.shape[1]):
            rows.append(dict(layer=layer, head=h, **{k: float(v[h]) for k, v in scores.items()}))
        layer += 1
    if not rows:
        raise TinyTFInputError("score_table: the trace has no blocks.{i}.attn.weights (not a decoder trace?)")
    return rows


def best_heads(rows: list) -> dict:
    """{pattern: the row of ``score_table`` with the highest score for that pattern} (ties: the first)."""
    return {p: max(rows, key=lambda r: r[p]) for p in PATTERNS}


def format_score_table(rows: list, digits: int = 2) -> str:
    """The score table as text, one line per (layer, head), the best head of each pattern marked with ``*``."""
    best = best_heads(rows)
    head = f"{'block':>5} {'head':>4} {'previous':>9} {'word start':>11} {'first byte':>11}"
    lines = [head]
    for r in rows:
        cells = []
        for p, width in zip(PATTERNS, (9, 11, 11)):
            mark = "*" if best[p] is r else " "
            cells.append(f"{r[p]:.{digits}f}{mark}".rjust(width + 1))
        lines.append(f"{r['layer']:>5} {r['head']:>4}" + "".join(cells))
    return "\n".join(lines)


def byte_match_score(ids, period: int) -> float:
    """The ``induction_score`` of a head that matches only the current byte: on a sequence whose second part
    repeats its first ``period`` ids, each query i >= period spreads its weight evenly over every key j <= i
    right after an earlier occurrence of its own id (x[j - 1] == x[i]; i - period + 1 is one of them). The
    level an induction head must beat on text that repeats bytes within the passage."""
    x = [int(v) for v in ids]
    if not isinstance(period, int) or not 1 <= period < len(x):
        raise TinyTFInputError(f"byte_match_score: period must be an int in 1..{len(x) - 1}, got {period!r}")
    after = [[j for j in range(1, i + 1) if x[j - 1] == x[i]] for i in range(period, len(x))]
    if not all(after):
        raise TinyTFInputError("byte_match_score: the second part must repeat the first (a query's id never "
                               "occurred before it)")
    return sum(1 / len(keys) for keys in after) / len(after)


def induction_score(weights, period: int) -> torch.Tensor:
    """[H]: on a sequence whose second part repeats its first ``period`` positions (ids[i] = ids[i - period]),
    the mean weight a query i >= period puts on key i - period + 1, the position just after the earlier
    occurrence of its own token: what an induction head attends to (Olsson et al., 2022). Queries
    i = period .. T-1 count."""
    w = _as_bhtt(weights)
    T = w.shape[-1]
    if not isinstance(period, int) or not 1 <= period < T:
        raise TinyTFInputError(f"induction_score: period must be an int in 1..{T - 1}, got {period!r}")
    queries = list(range(period, T))
    return _mean_on(w, queries, [q - period + 1 for q in queries])
