"""Ablating each decoder block's cross-attention in an encoder-decoder (chapter 8).

Where a cross-attention head looks (its weights) is not what the model uses. This measures use: replace the output
of one decoder block's cross-attention, ``decoder.blocks.{i}.cross_attn.out`` (what the block adds to its stream
from the source), and count what the reversal model still gets right:

    r = cross_attention_ablation(model, "reversal-2l", n_samples=180)   # the strings of head_stats
    r["conditions"]                      # ["intact", "block 0", "block 1", "all blocks"]
    r["zero"]["block 1"]["exact"]         # strings whose every next token (letters and <eos>) is the top score
    r["mean"]["block 1"]["accuracy"]      # Spread of each string's share of next tokens that are the top score
    print(format_cross_ablation(r))
    print(format_cross_ablation(r, modes=("zero",), baseline=position_guess_accuracy(r["lengths"], 4)))

Two replacements: ``zero`` (the block adds nothing from the source) and ``mean`` (it adds its average output over
every target position of the intact run on the same strings, one [C] vector per block put in at every position
whatever the string's length: what is removed is everything that varies from string to string or position to
position, the source but also the target prefix read by the queries and the length, while the output's average
size is kept). With teacher forcing, a string is exact when every position's top score is the correct next
token; that is the same as greedy decoding writing the string exactly, since each decoder position only reads
earlier ones.
"""
from __future__ import annotations

import torch

from ..errors import TinyTFInputError
from . import pretrained as P
from .head_stats import spread, stratified_sem
from .tasks import EOS

MODES = ("zero", "mean")


def _site(i: int) -> str:
    return f"decoder.blocks.{i}.cross_attn.out"


def _reversal_lengths(where: str, model, name: str) -> tuple[int, int]:
    """Check that ``model`` is a tinytf EncoderDecoder and ``name`` a reversal checkpoint; return its (min, max)
    string length. Example s of both functions below has length min + s % (max - min + 1)."""
    if not hasattr(model, "decoder") or not hasattr(model, "run_with_patches"):
        raise TinyTFInputError(f"{where}: expected a tinytf EncoderDecoder, got {type(model).__name__}")
    task = P.info(name).get("task", {})
    if task.get("name") != "reversal":
        raise TinyTFInputError(f"{where}: {name!r} is not a reversal checkpoint")
    return task["min_length"], task["max_length"]


@torch.no_grad()
def cross_attention_ablation(model, name: str = "reversal-2l", n_samples: int = 180, first_seed: int = 1) -> dict:
    """Run the encoder-decoder ``model`` on ``n_samples`` examples ``tinytf.pretrained.sample_input(name, seed,
    length)`` (seeds first_seed, first_seed + 1, ...; lengths cycling through the checkpoint's range, as
    ``head_stats.anti_diagonal_summary`` draws them) intact, with each decoder block's cross-attention output
    replaced, and with every block's replaced, for both replacements of ``MODES``.

    Returns {"conditions": [names], "n": n_samples, "lengths": [L per example], "zero" / "mean": {condition:
    {"exact": number of exact examples, "accuracy": Spread of the per-example share of correct positions,
    "accuracy_se": its standard error stratified by length}}}."""
    lo, hi = _reversal_lengths("cross_attention_ablation", model, name)
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 2:
        raise TinyTFInputError(f"cross_attention_ablation: n_samples must be an int >= 2, got {n_samples!r}")
    n_blocks = len(model.decoder.blocks)
    lengths = [lo + s % (hi - lo + 1) for s in range(n_samples)]
    batches = []  # (indices, src [n, L+1], tgt [n, L+1], target [n, L+1]) per length
    for length in sorted(set(lengths)):
        idx = [s for s in range(n_samples) if lengths[s] == length]
        samples = [P.sample_input(name, seed=first_seed + s, length=length) for s in idx]
        batches.append((idx, *(torch.stack([getattr(x, a) for x in samples]) for a in ("src", "tgt", "target"))))

    # each block's mean cross-attention output over every target position of the intact run: [C] per block
    sums, count = [0.0] * n_blocks, 0
    for _, src, tgt, _ in batches:
        _, trace = model.run_with_trace(src, tgt, names="decoder.blocks.*.cross_attn.out")
        for i in range(n_blocks):
            sums[i] = sums[i] + trace[_site(i)].double().sum(dim=(0, 1))  # [B, T, C] -> [C]
        count += tgt.numel()
    means = [(s / count).float() for s in sums]

    conditions = {"intact": []} | {f"block {i}": [i] for i in range(n_blocks)} | {"all blocks": list(range(n_blocks))}
    result = {"conditions": list(conditions), "n": n_samples, "lengths": lengths}
    for mode in MODES:
        result[mode] = {}
        for cond, blocks in conditions.items():
            def replace(i):
                if mode == "zero":
                    return torch.zeros_like
                return lambda t, m=means[i]: m.expand_as(t)  # [C] -> [B, T, C]
            patches = {_site(i): replace(i) for i in blocks}
            right = torch.zeros(n_samples, dtype=torch.float64)  # share of correct positions per example
            exact = 0
            for idx, src, tgt, target in batches:
                logits = model.run_with_patches(src, tgt, patches=patches)  # [n, L+1, vocab]
                ok = logits.argmax(-1) == target  # [n, L+1]
                right[idx] = ok.double().mean(-1)
                exact += int(ok.all(-1).sum())
            result[mode][cond] = {"exact": exact, "accuracy": spread(right),
                                  "accuracy_se": stratified_sem(right, lengths)}
    return result


@torch.no_grad()
def cut_accuracy_by_target(model, name: str = "reversal-2l", n_samples: int = 180, first_seed: int = 1,
                           blocks=None) -> dict:
    """With the cross-attention output of the decoder ``blocks`` (default: every block) replaced by zeros, count
    the next tokens that get the top score, separately for the ``<eos>`` targets (one per example, at its end)
    and the letter targets, on the examples of ``cross_attention_ablation`` (same seeds, same lengths).

    Returns {"eos": (right, total), "letters": (right, total), "letters_as_eos": n}: counts pooled over the
    examples; n is the number of letter targets whose top score is ``<eos>`` (wrong, but not a wrong letter)."""
    lo, hi = _reversal_lengths("cut_accuracy_by_target", model, name)
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise TinyTFInputError(f"cut_accuracy_by_target: n_samples must be an int >= 1, got {n_samples!r}")
    n_blocks = len(model.decoder.blocks)
    blocks = list(range(n_blocks)) if blocks is None else list(blocks)
    if not blocks or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n_blocks for i in blocks):
        raise TinyTFInputError(f"cut_accuracy_by_target: blocks must be decoder blocks 0..{n_blocks - 1}, got {blocks!r}")
    patches = {_site(i): torch.zeros_like for i in blocks}
    counts = {"eos": [0, 0], "letters": [0, 0]}
    letters_as_eos = 0
    for s in range(n_samples):
        x = P.sample_input(name, seed=first_seed + s, length=lo + s % (hi - lo + 1))
        top = model.run_with_patches(x.src[None], x.tgt[None], patches=patches)[0].argmax(-1)  # [L+1]
        ok = top == x.target
        is_eos = x.target == EOS
        for key, where in (("eos", is_eos), ("letters", ~is_eos)):
            counts[key][0] += int(ok[where].sum())
            counts[key][1] += int(where.sum())
        letters_as_eos += int((top[~is_eos] == EOS).sum())
    return {key: tuple(v) for key, v in counts.items()} | {"letters_as_eos": letters_as_eos}


def position_guess_accuracy(lengths, min_length: int, n_letters: int = 26) -> float:
    """The mean share of correct next tokens per string that a guess blind to the source gets in expectation on
    reversal strings of these ``lengths``: it sees only the position, so it predicts ``<eos>`` at every position
    from ``min_length`` on (where a string can first end) and a random letter before (right 1 time in
    ``n_letters``). A string of length L has L + 1 targets; the guess gets its ``<eos>`` and, in expectation,
    min_length / n_letters of its first letters. For lengths 4 to 12, 20 of each: 0.141."""
    lengths = list(lengths)
    if not lengths or any(isinstance(n, bool) or not isinstance(n, int) or n < min_length for n in lengths):
        raise TinyTFInputError(f"position_guess_accuracy: lengths must be ints >= min_length {min_length}, "
                               f"got {lengths!r}")
    if isinstance(n_letters, bool) or not isinstance(n_letters, int) or n_letters < 1:
        raise TinyTFInputError(f"position_guess_accuracy: n_letters must be an int >= 1, got {n_letters!r}")
    return sum((1 + min_length / n_letters) / (n + 1) for n in lengths) / len(lengths)


def format_cross_ablation(result: dict, modes=MODES, baseline=None) -> str:
    """The result of ``cross_attention_ablation`` as a table under 80 characters a line: per condition and
    replacement (``modes``: both by default, or one of them), the exact strings (counted) and the mean share of
    correct next tokens in % ± its standard error (over strings, stratified by length), to 2 significant digits.
    ``baseline``, a share such as ``position_guess_accuracy``'s, adds a last row "position-only guess" with it."""
    if not isinstance(result, dict) or not all(k in result for k in ("conditions", "n", *MODES)):
        raise TinyTFInputError("format_cross_ablation: expected the dict returned by cross_attention_ablation")
    modes = tuple(modes)
    if not modes or any(m not in MODES for m in modes) or len(set(modes)) < len(modes):
        raise TinyTFInputError(f"format_cross_ablation: modes must be some of {MODES}, got {modes!r}")
    n = result["n"]
    if modes == MODES:
        heads = [("zeroed: exact", 14, 13), ("mean: exact", 12, 13)]
    else:
        heads = [("strings exact", 13, 14)]
    lines = [f"{'cross-attention cut':20}" + "".join(f" {h:>{w}} {'tokens right':>{w2}}" for h, w, w2 in heads)]
    rows = [(cond, [result[m][cond] for m in modes]) for cond in result["conditions"]]
    for cond, rs in rows:
        row = f"{cond:20}"
        for r, (_, width, width2) in zip(rs, heads):
            acc = f"{_pct(r['accuracy'].mean)} ± {_pct(r['accuracy_se'])}%"
            exact = f"{r['exact']}/{n}"
            row += f" {exact:>{width}} {acc:>{width2}}"
        lines.append(row)
    if baseline is not None:
        row = f"{'position-only guess':20}"
        for _, width, width2 in heads:
            row += f" {'-':>{width}} {_pct(baseline) + '%':>{width2}}"
        lines.append(row)
    return "\n".join(lines)


def _pct(x: float) -> str:
    """A share as a percentage to 2 significant digits (at least the units): 0.514 -> '51', 0.084 -> '8.4'.
    A share below 1 never prints as 100, nor one above 0 as 0: it gets more decimals (up to 3) until it does
    not (0.9961 -> '99.6', 0.99996 -> '99.996'; exactly 1 -> '100')."""
    v = 100 * x
    decimals = 0 if v >= 9.95 else 1
    while decimals < 3 and ((v < 100 and round(v, decimals) >= 100) or (0 < v and round(v, decimals) == 0)):
        decimals += 1
    return f"{v:.{decimals}f}"
