"""Head measurements over many inputs, with their spread (chapter 2).

One input is one data point. These helpers repeat the measurements of chapters 2 and 8 over many inputs and report
a mean and a spread, so that a number printed in the book is a measurement and not an anecdote:

    s = induction_summary(model, "induction-2l", n_samples=100)   # 100 fresh letter strings
    s["previous"].mean, s["previous"].std                          # layer 0's weight on key i-1, per sample
    s["correct"], s["total"]                                       # right next letters in the second copies
    rows = score_tables(lm, windows)                               # tinytf.heads scores, mean and std per head

Every per-input value is computed exactly as in ``tinytf.heads`` and ``tinytf.tasks.cell_mass``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..errors import TinyTFInputError
from . import heads as H
from . import pretrained as P
from . import tasks as T
from . import train as TR


@dataclass(frozen=True)
class Spread:
    """Mean, standard deviation (over inputs, population) and number of inputs of one measurement."""

    mean: float
    std: float
    n: int

    @property
    def sem(self) -> float:
        """Standard error of the mean: std / sqrt(n - 1) (0 for a single input)."""
        return self.std / math.sqrt(self.n - 1) if self.n > 1 else 0.0

    def __format__(self, spec: str) -> str:
        spec = spec or ".2f"
        return f"{self.mean:{spec}} ± {self.std:{spec}}"


def spread(values) -> Spread:
    """A ``Spread`` of a 1-D sequence of numbers."""
    v = torch.as_tensor(list(values) if not torch.is_tensor(values) else values, dtype=torch.float64).flatten()
    if v.numel() == 0:
        raise TinyTFInputError("spread: no values")
    return Spread(float(v.mean()), float(v.std(unbiased=False)), int(v.numel()))


def stratified_sem(values, groups) -> float:
    """Standard error of the mean of ``values`` when the examples were drawn in fixed numbers per group
    (``groups``: one label per value, such as the length): SE^2 = sum over groups of W_g^2 s_g^2 / n_g, with
    W_g = n_g / N and s_g^2 the sample variance (n_g - 1) within group g. Only the spread within each group
    counts, since another draw of the same design has the same mix of groups. Falls back to the plain standard
    error (``Spread.sem``) when a group has fewer than 2 values."""
    v = torch.as_tensor(list(values) if not torch.is_tensor(values) else values, dtype=torch.float64).flatten()
    groups = list(groups)
    if len(groups) != v.numel():
        raise TinyTFInputError(f"stratified_sem: {v.numel()} values but {len(groups)} group labels")
    labels = sorted(set(groups))
    members = {g: [i for i, x in enumerate(groups) if x == g] for g in labels}
    if any(len(idx) < 2 for idx in members.values()):
        return spread(v).sem
    n = v.numel()
    return math.sqrt(sum((len(idx) / n) ** 2 * float(v[idx].var(unbiased=True)) / len(idx)
                         for idx in members.values()))


@torch.no_grad()
def induction_summary(model, name: str, n_samples: int = 100, first_seed: int = 1, length: int = 10) -> dict:
    """Run ``model`` on ``n_samples`` fresh examples ``tinytf.pretrained.sample_input(name, seed, length)``
    (seeds first_seed, first_seed + 1, ...) and measure, per example: the mean weight layer 0 (head 0) puts
    on the previous position, the mean weight layer 1 (head 0) puts on the induction cells, and how many of
    the predictable next letters (second copy) the model's top prediction gets right.

    Returns {"previous": Spread, "induction": Spread, "accuracy": Spread (per example), "correct": int,
    "total": int}."""
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise TinyTFInputError(f"induction_summary: n_samples must be a positive int, got {n_samples!r}")
    samples = [P.sample_input(name, seed=first_seed + s, length=length) for s in range(n_samples)]
    ids = torch.stack([s.ids for s in samples])  # [N, T]
    target = torch.stack([s.target for s in samples])  # [N, T], -1 where not predictable
    logits, trace = model.run_with_trace(ids)
    w0, w1 = trace["blocks.0.attn.weights"][:, 0], trace["blocks.1.attn.weights"][:, 0]  # [N, T, T]
    T = ids.shape[1]
    i = torch.arange(1, T)
    previous = w0[:, i, i - 1].double().mean(-1)  # [N]
    q = torch.tensor([c[0] for c in samples[0].cells])
    k = torch.tensor([c[1] for c in samples[0].cells])
    induction = w1[:, q, k].double().mean(-1)  # [N]
    known = target >= 0
    right = (logits.argmax(-1) == target) & known  # [N, T]
    per_sample = right.sum(-1).double() / known.sum(-1).double()
    return {"previous": spread(previous), "induction": spread(induction), "accuracy": spread(per_sample),
            "correct": int(right.sum()), "total": int(known.sum())}


@torch.no_grad()
def anti_diagonal_summary(model, name: str = "reversal-2l", n_samples: int = 180, first_seed: int = 1) -> dict:
    """Run the encoder-decoder ``model`` on ``n_samples`` fresh examples ``tinytf.pretrained.sample_input(name,
    seed, length)`` (seeds first_seed, first_seed + 1, ...; the lengths cycle through the checkpoint's range, so
    every length gets the same number when ``n_samples`` is a multiple of the range's size) and measure, per
    example, each cross-attention head's mean weight on the anti-diagonal cells (target j, source L-1-j), as
    ``tinytf.tasks.cell_mass`` does, and that weight divided by the uniform share 1/S (S = L + 1 source positions).

    The examples are stratified by length (a fixed number per length), so besides each ``Spread`` (whose ``sem``
    treats the lengths as drawn at random) the summary gives the stratified standard error of every mean,
    ``stratified_sem``: the spread within each length only, which is what another draw of the same design would
    vary by.

    Returns {"heads": [[Spread per head] per layer], "mean": [Spread of the mean of the heads, per layer],
    "mean_range": [(5%, 95%) of that mean over the examples, per layer], "uniform_multiple": [Spread per layer],
    "uniform_multiple_range": [(5%, 95%) per layer], "heads_se", "mean_se", "uniform_multiple_se": the stratified
    standard errors of the same means (nested as "heads", "mean", "uniform_multiple"), "lengths": [L per example],
    "n": n_samples}."""
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 2:
        raise TinyTFInputError(f"anti_diagonal_summary: n_samples must be an int >= 2, got {n_samples!r}")
    task = P.info(name).get("task", {})
    if task.get("name") != "reversal":
        raise TinyTFInputError(f"anti_diagonal_summary: {name!r} is not a reversal checkpoint")
    lo, hi = task["min_length"], task["max_length"]
    n_layers = len(model.decoder.blocks)
    lengths = [lo + s % (hi - lo + 1) for s in range(n_samples)]
    w = torch.zeros(n_samples, n_layers, model.config.n_heads, dtype=torch.float64)  # [N, layers, H]
    for length in sorted(set(lengths)):  # one batch per length: the examples of a length share one shape
        idx = [s for s in range(n_samples) if lengths[s] == length]
        samples = [P.sample_input(name, seed=first_seed + s, length=length) for s in idx]
        _, trace = model.run_with_trace(torch.stack([x.src for x in samples]), torch.stack([x.tgt for x in samples]),
                                        names="decoder.blocks.*.cross_attn.weights")
        q, k = zip(*T.anti_diagonal_cells(length))
        for i in range(n_layers):  # each example's mean over its cells, as tasks.cell_mass computes it for one
            w[idx, i] = trace[f"decoder.blocks.{i}.cross_attn.weights"][:, :, list(q), list(k)].double().mean(-1)
    share = 1.0 / (torch.tensor(lengths, dtype=torch.float64) + 1)  # [N]: the uniform share 1/S
    mean = w.mean(-1)  # [N, layers]
    multiple = mean / share[:, None]
    q = torch.tensor([0.05, 0.95], dtype=torch.float64)

    def ranges(x):
        return [tuple(torch.quantile(x[:, i], q).tolist()) for i in range(n_layers)]

    return {"heads": [[spread(w[:, i, h]) for h in range(w.shape[2])] for i in range(n_layers)],
            "mean": [spread(mean[:, i]) for i in range(n_layers)], "mean_range": ranges(mean),
            "uniform_multiple": [spread(multiple[:, i]) for i in range(n_layers)],
            "uniform_multiple_range": ranges(multiple),
            "heads_se": [[stratified_sem(w[:, i, h], lengths) for h in range(w.shape[2])] for i in range(n_layers)],
            "mean_se": [stratified_sem(mean[:, i], lengths) for i in range(n_layers)],
            "uniform_multiple_se": [stratified_sem(multiple[:, i], lengths) for i in range(n_layers)],
            "lengths": lengths, "n": n_samples}


def format_anti_diagonal(summaries: dict) -> str:
    """``{model name: anti_diagonal_summary}`` as two plain-text tables: each head's mean weight on the
    anti-diagonal ± its stratified standard error (``stratified_sem``, within each length); then, per block, the
    mean of the heads ± its stratified standard error with the 5%-95% range over the examples, and the same as a
    multiple of the uniform share 1/S. Every row fits 80 characters (the per-head table for up to 4 heads)."""
    first = next(iter(summaries.values()))
    n_heads = len(first["heads"][0])
    lines = [f"{'model':10} {'block':>5}" + "".join(f"{'head ' + str(h):>15}" for h in range(n_heads))]
    for name, s in summaries.items():
        for i, (row, ses) in enumerate(zip(s["heads"], s["heads_se"])):
            lines.append(f"{name:10} {i:>5}" + "".join(f"{c.mean:.3f} ± {se:.3f}".rjust(15) for c, se in zip(row, ses)))
    lines += ["", f"{'model':10} {'block':>5} {'mean of heads':>15} {'5%-95%':>13}"  # 75 characters a row
                  f" {'x uniform share':>16} {'5%-95%':>11}"]
    for name, s in summaries.items():
        for i, (m, mse, r, u, use, ur) in enumerate(zip(s["mean"], s["mean_se"], s["mean_range"], s["uniform_multiple"],
                                                        s["uniform_multiple_se"], s["uniform_multiple_range"])):
            lines.append(f"{name:10} {i:>5} {f'{m.mean:.3f} ± {mse:.3f}':>15} {f'{r[0]:.2f} to {r[1]:.2f}':>13}"
                         f" {f'{u.mean:.2f} ± {use:.2f}':>16} {f'{ur[0]:.1f} to {ur[1]:.1f}':>11}")
    return "\n".join(lines)


def seen_in_training(name: str = "induction-2l", n_samples: int = 100, first_seed: int = 1,
                     length: int = 10) -> dict:
    """How many of the examples ``sample_input(name, seed, length)`` (seeds first_seed, first_seed + 1, ...)
    the checkpoint saw during training: the training batches are drawn again from the data seed, steps and
    batch size recorded in ``name``'s JSON (with the task of its ``tinytf.train`` preset), and an example
    counts as seen when a training sequence of the same length has the same letters.

    Returns {"sequences": training sequences drawn, "same_length": those of length ``length``,
    "seen": examples found among them, "examples": n_samples}."""
    info = P.info(name)
    preset = next((p for p in TR.PRESETS.values() if p.checkpoint == name), None)
    if preset is None or info.get("kind") != "decoder":
        raise TinyTFInputError(f"seen_in_training: {name!r} is not a shipped synthetic-task decoder")
    letters = {tuple(P.sample_input(name, seed=first_seed + s, length=length).ids[1:length + 1].tolist())
               for s in range(n_samples)}
    gen = torch.Generator().manual_seed(info["seed"])
    drawn = same_length = 0
    seen = set()
    for _ in range(info["steps"]):
        inputs, _, _ = preset.task.batch(info["batch_size"], gen)  # [B, 2L]: BOS, x, x without its last letter
        drawn += inputs.shape[0]
        if inputs.shape[1] == 2 * length:
            same_length += inputs.shape[0]
            seen |= letters & {tuple(row) for row in inputs[:, 1:length + 1].tolist()}
    return {"sequences": drawn, "same_length": same_length, "seen": len(seen), "examples": len(letters)}


@torch.no_grad()
def ablation_table(model, examples, patches: dict) -> str:
    """Chapter 2's ablation table of a two-block, one-head induction ``model``: for each ``{label: patches}``
    entry (``patches`` as in ``model.run_with_trace(ids, patches=...)``; ``{}`` for the model as trained), run
    all ``examples`` (``tinytf.pretrained.sample_input`` results of one length) in one batch and print block 1's
    mean weight on the induction cells, how many predictable next letters the top prediction gets right, and
    how many top predictions are letters of the example's first copy. The last line is the score of a random
    pick among the first copy's letters."""
    examples = list(examples)
    if not examples:
        raise TinyTFInputError("ablation_table: no examples")
    if not isinstance(patches, dict) or not patches:
        raise TinyTFInputError("ablation_table: patches must be a non-empty dict {label: patches}, "
                               f"got {patches!r}")
    lengths = {len(e.ids) for e in examples}
    if len(lengths) != 1:
        raise TinyTFInputError(f"ablation_table: the examples must all have the same length, got {sorted(lengths)}")
    ids = torch.stack([e.ids for e in examples])  # [N, T]
    target = torch.stack([e.target for e in examples])  # -1 where nothing predicts the letter
    known = target >= 0
    n_letters = (ids.shape[1] - 1) // 2  # <bos> and two copies
    first_copies = ids[:, 1:1 + n_letters]  # each example's letters
    q_cells, k_cells = zip(*examples[0].cells)  # the induction cells: (query, key) pairs, the same in every example
    total = int(known.sum())
    lines = [f"{'':22} {'block 1 weight':>14} {'right next':>11} {'top guess in':>13}",
             f"{'':22} {'on induction':>14} {'letters':>11} {'first copy':>13}"]
    for label, patch in patches.items():
        logits, trace = model.run_with_trace(ids, patches=patch)
        on_ind = trace["blocks.1.attn.weights"][:, 0, list(q_cells), list(k_cells)].mean()
        guess = logits.argmax(-1)
        right = ((guess == target) & known).sum()
        in_first = torch.stack([torch.isin(g, f) for g, f in zip(guess, first_copies)])[known].sum()
        lines.append(f"{label:22} {on_ind:14.2f} {int(right):>4} of {total} {int(in_first):>6} of {total}")
    lines.append(f"a random pick among the first copy's {n_letters} letters: "
                 f"about {total / n_letters:.0f} of {total} right")
    return "\n".join(lines)


@torch.no_grad()
def score_tables(model, windows) -> list:
    """``tinytf.heads.score_table`` on each window of byte ids (``windows``: [N, T] long, or a list of 1-D id
    tensors), then, per (layer, head), the mean and spread over windows of each pattern's score.

    Returns a list of dicts {layer, head, previous: Spread, word_start: Spread, first: Spread}."""
    windows = list(windows)
    if not windows:
        raise TinyTFInputError("score_tables: no windows")
    per_window = []
    for ids in windows:
        ids = torch.as_tensor(ids).long().flatten()
        _, trace = model.run_with_trace(ids)
        per_window.append(H.score_table(trace, bytes(ids.tolist())))
    rows = []
    for j, r in enumerate(per_window[0]):
        rows.append(dict(layer=r["layer"], head=r["head"],
                         **{p: spread([t[j][p] for t in per_window]) for p in H.PATTERNS}))
    return rows


def best_heads(rows: list) -> dict:
    """{pattern: the row of ``score_tables`` with the highest mean score for that pattern}."""
    return {p: max(rows, key=lambda r: r[p].mean) for p in H.PATTERNS}


def even_spread_scores(T: int) -> dict:
    """The scores of a head that spreads its weight evenly over the keys it may read, on T positions:
    previous token and first byte both give the mean over queries i = 1 .. T-1 of 1 / (i + 1)."""
    if isinstance(T, bool) or not isinstance(T, int) or T < 2:
        raise TinyTFInputError(f"even_spread_scores: T must be an int >= 2, got {T!r}")
    v = sum(1 / (i + 1) for i in range(1, T)) / (T - 1)
    return {"previous": v, "first": v}


def even_spread_word_start(texts) -> float:
    """The word-start score of a head that spreads its weight evenly over the keys it may read (query i puts
    1 / (i + 1) on each key 0 .. i), averaged over ``texts`` (str, or 1-D tensors of byte ids such as the rows of
    ``tinytf.textdata.eval_windows``). Unlike the other two patterns it depends on the text: on where the
    words start and how far into its word each counted query sits."""
    texts = list(texts)
    if not texts:
        raise TinyTFInputError("even_spread_word_start: no texts")
    scores = []
    for text in texts:
        data = text.encode("utf-8") if isinstance(text, str) else bytes(torch.as_tensor(text).tolist())
        T = len(data)
        if T < 2:
            raise TinyTFInputError(f"even_spread_word_start: each text needs at least 2 bytes, got {T}")
        even = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1)[:, None]  # [T, T]: row i is 1 / (i + 1)
        scores.append(float(H.word_start_score(even[None, None], data)[0]))  # [B=1, H=1, T, T] -> [1]
    return sum(scores) / len(scores)


def format_score_tables(rows: list) -> str:
    """The mean ± std table, one line per (layer, head), the best head of each pattern marked with ``*``."""
    best = best_heads(rows)
    lines = [f"{'block':>5} {'head':>4} {'previous':>13} {'word start':>13} {'first byte':>13}"]
    for r in rows:
        cells = "".join(f"{r[p]:.2f}{'*' if best[p] is r else ' '}".rjust(14) for p in H.PATTERNS)
        lines.append(f"{r['layer']:>5} {r['head']:>4}" + cells)
    return "\n".join(lines)


@torch.no_grad()
def scores_per_text(model, texts) -> dict:
    """``tinytf.heads.score_table`` of ``model`` on each text (a str, or a 1-D tensor of byte ids such as a
    row of ``tinytf.textdata.eval_windows``): {(layer, head): {pattern: tensor of one score per text}}."""
    texts = list(texts)
    if not texts:
        raise TinyTFInputError("scores_per_text: no texts")
    tables = [_score_table(model, t) for t in texts]
    return {(r["layer"], r["head"]): {p: torch.tensor([t[i][p] for t in tables]) for p in H.PATTERNS}
            for i, r in enumerate(tables[0])}


def _score_table(model, text) -> list:
    if not torch.is_tensor(text):
        return H.score_table(model, text)
    ids = text.long().flatten()
    _, trace = model.run_with_trace(ids)
    return H.score_table(trace, bytes(ids.tolist()))


def mean_rows(per_text: dict) -> list:
    """The rows of ``tinytf.heads.score_table`` (floats), each score the mean over the texts of
    ``scores_per_text``."""
    return [{"layer": L, "head": h, **{p: v.mean().item() for p, v in s.items()}} for (L, h), s in per_text.items()]


def best_per_block(model, texts, twin=None, tie: float = 1e-3) -> dict:
    """For every block and pattern, the head of ``model`` with the highest mean score over ``texts``, with
    the standard deviation of its score over the texts (population, as in ``spread`` and ``score_tables``),
    every head within ``tie`` of that mean (named together), and, if ``twin`` is given, the twin's best mean
    in the same block.

    Returns {"blocks": [{layer, pattern: {heads, mean, sd, twin}}], "rows": mean rows of ``model``,
    "twin_rows": those of ``twin`` (or None)}."""
    per_head = scores_per_text(model, texts)
    rows = mean_rows(per_head)
    twin_rows = mean_rows(scores_per_text(twin, texts)) if twin is not None else None
    blocks = []
    for layer in sorted({r["layer"] for r in rows}):
        mine = [r for r in rows if r["layer"] == layer]
        entry = {"layer": layer}
        for p in H.PATTERNS:
            best = max(mine, key=lambda r: r[p])
            entry[p] = dict(heads=sorted(r["head"] for r in mine if best[p] - r[p] < tie), mean=best[p],
                            sd=per_head[(layer, best["head"])][p].std(unbiased=False).item(),
                            twin=None if twin_rows is None else max(u[p] for u in twin_rows if u["layer"] == layer))
        blocks.append(entry)
    return {"blocks": blocks, "rows": rows, "twin_rows": twin_rows}


def format_best_per_block(table: dict, width: int = 24, digits: dict | None = None) -> str:
    """``best_per_block`` as text: one line per block, one cell per pattern, "h1/h2: mean ± sd; twin".

    ``digits``: decimals per pattern (default 2, and 3 for the first byte, whose scores are compared with an
    even spread of 0.035 on 128-byte windows, as in chapter 2). A column is at least ``width`` wide."""
    digits = {"first": 3} if digits is None else digits
    columns = []
    for p in H.PATTERNS:
        d = digits.get(p, 2)
        cells = []
        for entry in table["blocks"]:
            c = entry[p]
            twin = "" if c["twin"] is None else f"; {c['twin']:.{d}f}"
            cells.append(f"{'/'.join(f'h{h}' for h in c['heads'])}: {c['mean']:.{d}f} ± {c['sd']:.{d}f}{twin}")
        columns.append(cells)
    widths = [max([width] + [len(c) for c in cells]) for cells in columns]
    names = ("previous token", "word start", "first byte")
    lines = [f"{'block':>5} " + " ".join(f"{n:>{w}}" for n, w in zip(names, widths))
             + "   (best head: mean ± sd; twin's best)"]
    for i, entry in enumerate(table["blocks"]):
        lines.append(f"{entry['layer']:>5} " + " ".join(cells[i].rjust(w) for cells, w in zip(columns, widths)))
    return "\n".join(lines)
