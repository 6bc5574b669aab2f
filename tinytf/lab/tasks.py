"""Small synthetic tasks: deterministic generators, no downloads.

Tokens are bytes, exactly as ``tinytf.encode`` makes them, so every sequence can be labelled
with characters (``tinytf.token_labels`` / ``tasks.labels``). Task sequences are drawn from
``LETTERS`` ('a'..'z', ids 97..122); two ASCII control bytes are reserved as special tokens:

    BOS = 2  (ASCII STX, "start of text")  starts the decoder side of every example
    EOS = 3  (ASCII ETX, "end of text")    ends the reversal source and target

A model for these tasks needs ``vocab_size >= 123``; the shipped checkpoints use ``VOCAB_SIZE = 128``
(all of ASCII, so ``tinytf.encode("hello", vocab_size=128)`` also works with them).

induction (copy):  [BOS, x1..xL, x1..xL]  with x1..xL random letters. Inputs are the sequence
    without its last token, targets the sequence shifted by one. In the second copy every token
    after the first is predictable by looking back: at input position i (token x_k, i = L + k)
    the answer x_{k+1} sits at key position i - L + 1, right after the previous occurrence of
    the current token. ``loss_mask`` marks those positions (i = L+1 .. 2L-1) where that previous
    occurrence is unique (x_k appears once in x1..xL). Letters are drawn with replacement: with
    distinct letters a model can get most answers by counting which letters it has seen once, without
    any induction head (we measured 0.93 accuracy with no head above 0.09 on the induction cells).
    Optionally (``rule_prob``) the first copy follows a fixed rule now and then, which rewards a
    previous-token head; see ``induction_batch`` and the shipped checkpoint's JSON.

reversal:  src = [x1..xS, EOS],  tgt_in = [BOS, xS..x1],  tgt_out = [xS..x1, EOS].
    Output position j (< S) should read source position S-1-j: the anti-diagonal.

All generators take a ``torch.Generator``; the same seed gives the same batch on every machine.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from ..errors import TinyTFInputError

BOS = 2  # ASCII STX
EOS = 3  # ASCII ETX
SPECIAL_TOKENS = {BOS: "<bos>", EOS: "<eos>"}
LETTERS = "abcdefghijklmnopqrstuvwxyz"
FILLER = LETTERS.upper()  # induction: filler before the repeat, never part of it
RULE = "qwertyuiopasdfghjklzxcvbnm"  # induction rule_prob: letter LETTERS[i] two back -> RULE[i] (a->q, b->w, ...)
VOCAB_SIZE = 128  # the shipped checkpoints' vocabulary: ASCII


def _alphabet_ids(alphabet: str) -> torch.Tensor:
    if not isinstance(alphabet, str) or not alphabet:
        raise TinyTFInputError(f"alphabet: expected a non-empty string of characters, got {alphabet!r}")
    ids = list(alphabet.encode("utf-8"))
    if len(ids) != len(alphabet) or len(set(ids)) != len(ids):
        raise TinyTFInputError(f"alphabet: expected distinct single-byte characters, got {alphabet!r}")
    if set(ids) & set(SPECIAL_TOKENS):
        raise TinyTFInputError(f"alphabet: must not contain the special tokens {sorted(SPECIAL_TOKENS)}")
    return torch.tensor(ids, dtype=torch.long)


def _check_sizes(batch_size: int, length: int, lo: int, hi: Optional[int], what: str):
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise TinyTFInputError(f"batch_size: expected a positive integer, got {batch_size!r}")
    if isinstance(length, bool) or not isinstance(length, int) or length < lo or (hi is not None and length > hi):
        bound = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise TinyTFInputError(f"{what}: length must be an integer in {bound}, got {length!r}")


def induction_batch(batch_size: int, length: int, generator: Optional[torch.Generator] = None,
                    alphabet: str = LETTERS, distinct: bool = False, prefix: int = 0, rule_prob: float = 0.0):
    """A batch of repeated random sequences [BOS, x1..xL, x1..xL], optionally after ``prefix`` filler tokens.

    Returns (inputs [B, P+2L], targets [B, P+2L], loss_mask [B, P+2L] bool), P = ``prefix``.
    x1..xL are drawn uniformly from ``alphabet`` with replacement (``distinct=True``: without, so
    L <= len(alphabet)). Filler tokens come from ``FILLER`` ('A'..'Z', never part of the repeat); they
    only move the repeat to later positions.

    ``loss_mask`` is True at the positions of the second copy whose answer is determined by looking
    back: input position i = P + L + k (k >= 1, token x_k) when x_k occurs only once in x1..xL, so that
    "the token after its previous occurrence" (key i - L + 1) is unambiguous.

    ``rule_prob`` > 0 (default alphabet only): in the first copy, each letter from the third on is, with
    that probability, not random but ``RULE[letter two places before]`` -- a fixed substitution (see
    ``RULE``). Then the previous token helps predict the next one even in the first copy, as bigram
    statistics do in real text, and ``loss_mask`` also marks first-copy positions P+2 .. P+L-1.
    """
    ids = _alphabet_ids(alphabet)
    _check_sizes(batch_size, length, 2, len(ids) if distinct else None, "induction_batch")
    if isinstance(prefix, bool) or not isinstance(prefix, int) or prefix < 0:
        raise TinyTFInputError(f"induction_batch: prefix must be an integer >= 0, got {prefix!r}")
    if not 0.0 <= rule_prob <= 1.0:
        raise TinyTFInputError(f"induction_batch: rule_prob must be in [0, 1], got {rule_prob!r}")
    if rule_prob and alphabet != LETTERS:
        raise TinyTFInputError("induction_batch: rule_prob > 0 needs the default alphabet (RULE maps 'a'..'z')")
    if distinct:
        idx = torch.argsort(torch.rand(batch_size, len(ids), generator=generator), dim=1)[:, :length]
    else:
        idx = torch.randint(len(ids), (batch_size, length), generator=generator)
    if rule_prob:
        follow = torch.rand(batch_size, length, generator=generator) < rule_prob
        rule = torch.tensor([LETTERS.index(c) for c in RULE])  # index -> index
        for t in range(2, length):
            idx[:, t] = torch.where(follow[:, t], rule[idx[:, t - 2]], idx[:, t])
    x = ids[idx]  # [B, L]
    parts = [torch.full((batch_size, 1), BOS, dtype=torch.long)]
    if prefix:
        parts.append(_alphabet_ids(FILLER)[torch.randint(len(FILLER), (batch_size, prefix), generator=generator)])
    seq = torch.cat(parts + [x, x], dim=1)  # [B, 1 + P + 2L]
    inputs, targets = seq[:, :-1], seq[:, 1:]  # [B, P + 2L] each
    unique = (x[:, :, None] == x[:, None, :]).sum(-1) == 1  # [B, L]: x_k occurs once in the first copy
    loss_mask = torch.zeros(batch_size, prefix + 2 * length, dtype=torch.bool)
    loss_mask[:, prefix + length + 1:] = unique[:, :-1]  # position P + L + k holds x_k, k = 1 .. L-1
    if rule_prob:
        loss_mask[:, prefix + 2:prefix + length] = True  # first copy: x_{t+1} may follow RULE[x_{t-1}]
    return inputs, targets, loss_mask


def reversal_batch(batch_size: int, length: int, generator: Optional[torch.Generator] = None,
                   alphabet: str = LETTERS):
    """A batch for the reversal task: output the source reversed.

    Returns (src [B, S+1], tgt_in [B, S+1], tgt_out [B, S+1]) with S = ``length``:
    src = [x1..xS, EOS], tgt_in = [BOS, xS..x1], tgt_out = [xS..x1, EOS]. Letters are drawn
    uniformly with replacement from ``alphabet``.
    """
    ids = _alphabet_ids(alphabet)
    _check_sizes(batch_size, length, 1, None, "reversal_batch")
    x = ids[torch.randint(len(ids), (batch_size, length), generator=generator)]  # [B, S]
    rev = x.flip(1)
    eos = torch.full((batch_size, 1), EOS, dtype=torch.long)
    bos = torch.full((batch_size, 1), BOS, dtype=torch.long)
    return torch.cat((x, eos), 1), torch.cat((bos, rev), 1), torch.cat((rev, eos), 1)


# --------------------------------------------------------------------------------------------
# Task objects: a length range + a generator, used by tinytf.train


@dataclass(frozen=True)
class InductionTask:
    """Decoder-only copy task; each batch draws its repeat length L from [min_length, max_length]
    (so the model cannot solve it with a fixed-offset positional head)."""

    min_length: int = 4
    max_length: int = 16
    alphabet: str = LETTERS
    max_prefix: int = 0  # each batch puts 0..max_prefix filler tokens before the repeat
    rule_prob: float = 0.0  # see induction_batch
    name: str = "induction"
    kind: str = "decoder"

    def __post_init__(self):
        n = len(self.alphabet)
        if not 2 <= self.min_length <= self.max_length <= n:
            raise TinyTFInputError(
                f"InductionTask: need 2 <= min_length <= max_length <= len(alphabet) = {n}, "
                f"got min_length={self.min_length}, max_length={self.max_length}")

    @property
    def max_seq_len(self) -> int:
        return self.max_prefix + 2 * self.max_length

    def sample_length(self, generator: Optional[torch.Generator] = None) -> int:
        return int(torch.randint(self.min_length, self.max_length + 1, (1,), generator=generator))

    def batch(self, batch_size: int, generator: Optional[torch.Generator] = None, length: Optional[int] = None,
              prefix: Optional[int] = None):
        """(inputs, targets, loss_mask); length / prefix None = drawn from the task's ranges."""
        length = self.sample_length(generator) if length is None else length
        if prefix is None:
            prefix = int(torch.randint(0, self.max_prefix + 1, (1,), generator=generator)) if self.max_prefix else 0
        return induction_batch(batch_size, length, generator, self.alphabet, prefix=prefix, rule_prob=self.rule_prob)


@dataclass(frozen=True)
class ReversalTask:
    """Encoder-decoder reversal task; each batch draws its source length S from [min_length, max_length]."""

    min_length: int = 4
    max_length: int = 12
    alphabet: str = LETTERS
    name: str = "reversal"
    kind: str = "seq2seq"

    def __post_init__(self):
        if not 1 <= self.min_length <= self.max_length:
            raise TinyTFInputError(
                f"ReversalTask: need 1 <= min_length <= max_length, got {self.min_length}, {self.max_length}")
        _alphabet_ids(self.alphabet)

    @property
    def max_seq_len(self) -> int:
        return self.max_length + 1

    def sample_length(self, generator: Optional[torch.Generator] = None) -> int:
        return int(torch.randint(self.min_length, self.max_length + 1, (1,), generator=generator))

    def batch(self, batch_size: int, generator: Optional[torch.Generator] = None, length: Optional[int] = None):
        """(src, tgt_in, tgt_out); length None = drawn from the task's range."""
        length = self.sample_length(generator) if length is None else length
        return reversal_batch(batch_size, length, generator, self.alphabet)


TASKS = {"induction": InductionTask(), "reversal": ReversalTask()}


def get_task(task) -> "InductionTask | ReversalTask":
    """A task object from a name ('induction', 'reversal') or a task object (returned as is)."""
    if hasattr(task, "batch") and getattr(task, "kind", None) in ("decoder", "seq2seq"):
        return task  # a task object (ours or any with .batch, .kind, .name, .alphabet, .max_seq_len)
    if task in TASKS:
        return TASKS[task]
    raise TinyTFInputError(f"unknown task {task!r}; choose one of {', '.join(map(repr, TASKS))}")


def labels(ids) -> list:
    """Axis labels: '<bos>' / '<eos>' for special tokens, the character for printable bytes, '#id' otherwise."""
    out = []
    for i in torch.as_tensor(ids).flatten().tolist():
        if i in SPECIAL_TOKENS:
            out.append(SPECIAL_TOKENS[i])
        elif 32 <= i < 127:
            out.append(chr(i))
        else:
            out.append(f"#{i}")
    return out


def text(ids) -> str:
    """Token ids -> a readable string, special tokens written as <bos> / <eos>."""
    return "".join(labels(ids))


# --------------------------------------------------------------------------------------------
# What a trained model's attention should look like, measured


def induction_cells(length: int) -> list:
    """(query, key) cells an induction head should light up on a [BOS, x, x] input of repeat length L:
    query i in L+1 .. 2L-1 -> key i - L + 1."""
    return [(i, i - length + 1) for i in range(length + 1, 2 * length)]


def anti_diagonal_cells(length: int) -> list:
    """(target position, source position) cells of the reversal anti-diagonal: j -> S-1-j for j < S."""
    return [(j, length - 1 - j) for j in range(length)]


def cell_mass(weights: torch.Tensor, cells) -> torch.Tensor:
    """Mean attention weight on the given (query, key) cells. weights [B, H, T, S] -> [H]."""
    q = torch.tensor([c[0] for c in cells])
    k = torch.tensor([c[1] for c in cells])
    return weights[:, :, q, k].mean(dim=(0, 2))


def induction_mass(weights: torch.Tensor, loss_mask: torch.Tensor, length: int) -> torch.Tensor:
    """Mean attention weight on key i - L + 1 over the positions i where ``loss_mask`` is True.
    weights [B, H, T, T], loss_mask [B, T] -> [H]."""
    q = torch.arange(weights.shape[-2])
    k = (q - length + 1).clamp(min=0)
    on_cell = weights[:, :, q, k]  # [B, H, T]: weight of query i on key i - L + 1
    m = loss_mask[:, None, :].to(weights.dtype)
    return (on_cell * m).sum(dim=(0, 2)) / m.sum(dim=(0, 2)).clamp(min=1)
