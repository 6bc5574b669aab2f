"""Prefill and decode: the two phases of generation, counted and timed (chapter 10).

Prefill runs the prompt's T tokens through the model in one pass; decode then runs one token per step
against the KV cache. Both read every weight once per pass, but prefill does T tokens' worth of arithmetic
with it and decode one. ``step_cost`` counts, for one forward pass of ``new`` tokens after ``past`` cached
ones, the floating-point operations and the bytes that must come from memory (weights, plus the cache read
and written), and their ratio, the **arithmetic intensity** (FLOPs per byte). ``time_phases`` measures the
time per token of each phase on a real model.

    cost = step_cost(cfg, new=1, past=127)       # decode: about 1 FLOP per byte in float32
    timing = time_phases(model, prompt_len=128)  # seconds per token: prefill vs decode
    steps = time_steps(model, tokens, start=32)  # every generation step, naive and cached, by position

Every time is processor time (``time.process_time``): the time the processor spent on this program, which other
programs running at the same time do not inflate, unlike the wall clock. Each is repeated, and reported as a
``Spread``: the median and the interquartile range (the middle half of the measurements).
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field

import torch

from ..errors import TinyTFInputError
from ..models import TinyTransformer
from .parameters import count_parameters

CLOCK = time.process_time  # processor time of this program: other programs running meanwhile do not count


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


@dataclass(frozen=True)
class Spread:
    """The median of repeated measurements and their interquartile range (q1 to q3: the middle half)."""
    median: float
    q1: float
    q3: float

    @classmethod
    def of(cls, values) -> "Spread":
        xs = sorted(float(v) for v in values)
        if not xs:
            raise TinyTFInputError("Spread.of: no measurements")
        if len(xs) == 1:
            return cls(xs[0], xs[0], xs[0])
        q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
        return cls(q2, q1, q3)

    def scaled(self, factor: float) -> "Spread":
        return Spread(self.median * factor, self.q1 * factor, self.q3 * factor)

    def decimals(self) -> int:
        """Decimal places of two significant digits of the median, zeros kept (5.0, 4.6, 0.084, 36); the IQR
        is printed to the same decimal places."""
        m = abs(self.median)
        if m == 0:
            return 1
        d = max(0, 1 - math.floor(math.log10(m)))
        if d and abs(round(m, d)) >= 10 ** (2 - d):  # 9.96 rounds to 10.0: one decimal fewer
            d -= 1
        return d

    def __str__(self) -> str:
        d = self.decimals()
        return f"{self.median:.{d}f} (IQR {self.q1:.{d}f}–{self.q3:.{d}f})"

    def median_str(self) -> str:
        """The median alone, rounded as ``str`` rounds it."""
        return f"{self.median:.{self.decimals()}f}"

    def contains(self, x: float) -> bool:
        """Is ``x`` inside the interquartile range?"""
        return self.q1 <= x <= self.q3


def significant(x: float, digits: int, keep_zeros: bool = False, grouping: bool = False) -> str:
    """``x`` to ``digits`` significant digits; trailing zeros dropped (0.1 -> '0.1') or, with ``keep_zeros``,
    kept (0.1 -> '0.10' at two digits: a value whose last printed digit was measured); ``grouping`` puts a
    thousands comma into large values (3500 -> '3,500')."""
    if keep_zeros:
        text = format(float(x), f"#.{digits}g").rstrip(".")
        if "e" not in text:
            return text
    # no exponent: 105 at two digits prints as 100, not 1.0e+02
    if abs(x) >= 10 ** digits:
        return f"{float(f'{x:.{digits}g}'):,.0f}" if grouping else f"{float(f'{x:.{digits}g}'):.0f}"
    return f"{float(f'{x:.{digits}g}'):g}"


def two_digits(x: float, keep_zeros: bool = False, grouping: bool = False) -> str:
    """``x`` to two significant digits: 0.0123 -> '0.012', 41.7 -> '42' (see :func:`significant`)."""
    return significant(x, 2, keep_zeros, grouping)


def three_digits(x: float) -> str:
    """``x`` to three significant digits, zeros kept: 11.83 -> '11.8', 120.4 -> '120', 0.9213 -> '0.921'."""
    return significant(x, 3, keep_zeros=True)


@dataclass
class PhaseTiming:
    prompt_len: int
    decode_steps: int
    prefill_seconds: float  # median over repeats, the whole prompt
    decode_seconds: float  # median over steps and repeats, one token
    prefill: list = field(default_factory=list, repr=False)  # seconds of each repeat's whole prefill
    decode: list = field(default_factory=list, repr=False)  # seconds of each repeat's decode steps, one list per repeat

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

    def prefill_spread(self) -> Spread:
        """Seconds per prompt token over the repeats."""
        return Spread.of(t / self.prompt_len for t in self.prefill)

    def decode_spread(self) -> Spread:
        """Seconds of one decode step over every step of every repeat."""
        return Spread.of(t for steps in self.decode for t in steps)

    def ratio_spread(self) -> Spread:
        """Decode / prefill time per token, one ratio per repeat (its median decode step / its prefill per token)."""
        return Spread.of(statistics.median(d) / (p / self.prompt_len) for p, d in zip(self.prefill, self.decode))

    def decode_budget(self, cfg, read_rate: float) -> tuple:
        """The decode step's median (ms), how long its counted FLOPs would take at prefill's arithmetic rate, and
        how long reading its counted bytes would take at ``read_rate`` (bytes per second): three strings in ms,
        as ``report`` prints them (each computed from the values as printed, to two significant digits)."""
        pre, dec = step_cost(cfg, new=self.prompt_len), step_cost(cfg, new=1, past=self.prompt_len)
        pre_rate = float(two_digits(pre.flops / self.prefill_seconds / 1e9, keep_zeros=True)) * 1e9
        arith_ms = two_digits(float(f"{dec.flops / 1e6:.1f}") * 1e6 / pre_rate * 1e3, keep_zeros=True)
        read_s = two_digits(read_rate / 1e9, keep_zeros=True)
        read_ms = two_digits(float(f"{dec.bytes / 1e6:.1f}") * 1e6 / (float(read_s) * 1e9) * 1e3, keep_zeros=True)
        return self.decode_spread().scaled(1e3).median_str(), arith_ms, read_ms

    def report(self, label: str, cfg, read_rate: float | None = None) -> str:
        """The measured times of both phases, the arithmetic rate each achieved (counted FLOPs / median time,
        from ``step_cost``) and their reading in full sentences: how many prefill tokens' time a decode token
        costs, decode's rate as a fraction of prefill's, and how long decode's FLOPs would take at prefill's
        rate, against the decode step measured. With ``read_rate`` (bytes per second read from memory, measured
        by the caller) also how long reading decode's bytes would take at that rate, and what fraction of the
        measured decode step the two estimates together make. (The machine's balance, peak FLOP/s / bytes read
        per second, is a property of the processor, not of one model: the caller computes it once.)
        Timings vary by some 10 % from run to run, so every measured rate and every value derived from them is
        printed to two significant digits, and every quotient shown is computed from the values as printed
        (so that a reader can check it from them)."""
        pre, dec = step_cost(cfg, new=self.prompt_len), step_cost(cfg, new=1, past=self.prompt_len)
        pre_s = two_digits(pre.flops / self.prefill_seconds / 1e9, keep_zeros=True)
        dec_s = two_digits(dec.flops / self.decode_seconds / 1e9, keep_zeros=True)
        pre_rate = float(pre_s) * 1e9  # FLOP/s, as printed
        step_ms = self.decode_spread().scaled(1e3).median_str()
        mflops = f"{dec.flops / 1e6:.1f}"
        arith_ms = two_digits(float(mflops) * 1e6 / pre_rate * 1e3, keep_zeros=True)
        lines = [f"{label}:",
                 f"  prefill, ms per token: {self.prefill_spread().scaled(1e3)}",
                 f"  decode, ms per token:  {self.decode_spread().scaled(1e3)}",
                 f"  decode / prefill:      {self.ratio_spread()}",
                 f"  arithmetic rate (counted FLOPs / median time), GFLOP/s: prefill {pre_s}, decode {dec_s}",
                 f"  A decode token costs the time of {self.ratio_spread().median_str()} prefill tokens, and decode "
                 f"achieves {dec_s} / {pre_s} ≈ {two_digits(float(dec_s) / float(pre_s), keep_zeros=True)} of "
                 "prefill's arithmetic rate."]
        last = f"  Decode's {mflops} MFLOPs at prefill's {pre_s} GFLOP/s would take {arith_ms} ms"
        if read_rate:
            read_s = two_digits(read_rate / 1e9, keep_zeros=True)
            mb = f"{dec.bytes / 1e6:.1f}"
            read_ms = self.decode_budget(cfg, read_rate)[2]
            share = two_digits((float(arith_ms) + float(read_ms)) / float(step_ms), keep_zeros=True)
            last += (f", and reading its {mb} MB at the measured read rate of {read_s} GB/s {read_ms} ms; the decode "
                     f"step took {step_ms} ms, of which the two estimates together make ({arith_ms} + {read_ms}) / "
                     f"{step_ms} ≈ {share}"
                     + (" (reading and arithmetic overlap, so the two estimates can add up to slightly more than "
                        "the step)" if float(share) > 1 else ""))
        else:
            last += f"; the decode step took {step_ms} ms"
        lines.append(last + ".")
        return "\n".join(lines)


@torch.no_grad()
def time_phases(model, prompt_len: int = 128, decode_steps: int = 16, repeats: int = 5, seed: int = 0) -> PhaseTiming:
    """Wall time of prefill (one pass over ``prompt_len`` random tokens into an empty cache) and of decode
    (``decode_steps`` cached one-token steps after it), each the median over ``repeats`` runs (decode: over
    every step of every run), after one warm-up run, in processor time. One torch thread is the caller's choice."""
    if prompt_len < 1 or decode_steps < 1 or repeats < 1:
        raise TinyTFInputError("time_phases: prompt_len, decode_steps and repeats must be >= 1")
    model.eval()
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (1, prompt_len), generator=g)
    nxt = torch.randint(0, model.config.vocab_size, (1, 1), generator=g)
    prefill, decode = [], []
    for r in range(repeats + 1):
        cache = model.new_cache()
        t0 = CLOCK()
        model(ids, cache=cache)
        t1 = CLOCK()
        steps = []
        for _ in range(decode_steps):
            s0 = CLOCK()
            model(nxt, cache=cache)
            steps.append(CLOCK() - s0)
        if r:  # the first run warms up
            prefill.append(t1 - t0)
            decode.append(steps)
    return PhaseTiming(prompt_len, decode_steps, statistics.median(prefill),
                       statistics.median(t for steps in decode for t in steps), prefill, decode)


@dataclass
class StepTimes:
    """Seconds of every generation step, naive and cached: ``seconds[name][repeat][i]`` is the step that feeds
    the token at ``positions[i]`` (naive: the whole prefix up to it; cached: that token alone)."""
    positions: list
    seconds: dict

    def per_step(self, name: str) -> list:
        """Median over the repeats, one value per step."""
        return [statistics.median(col) for col in zip(*self.seconds[name])]

    def per_step_spread(self, name: str) -> list:
        """A Spread over the repeats, one per step."""
        return [Spread.of(col) for col in zip(*self.seconds[name])]

    def _band(self, lo: int, hi: int) -> list:
        idx = [i for i, p in enumerate(self.positions) if lo <= p < hi]
        if not idx:
            raise TinyTFInputError(f"StepTimes: no step at positions {lo}..{hi - 1}")
        return idx

    def band(self, name: str, lo: int, hi: int) -> Spread:
        """Every step at positions lo..hi-1, of every repeat."""
        idx = self._band(lo, hi)
        return Spread.of(run[i] for run in self.seconds[name] for i in idx)

    def ratio(self, lo: int, hi: int) -> Spread:
        """Naive / cached time per step at positions lo..hi-1, one ratio per repeat: that repeat's median naive
        step in the band / its median cached step in the band; the Spread is over the repeats. It pairs each
        naive run with the cached run beside it, so it need not equal the ratio of the pooled band medians."""
        idx = self._band(lo, hi)
        return Spread.of(statistics.median(n[i] for i in idx) / statistics.median(c[i] for i in idx)
                         for n, c in zip(self.seconds["naive"], self.seconds["cached"]))

    def fraction(self, lo: int, hi: int) -> Spread:
        """Cached / naive time per step at positions lo..hi-1: one ratio of medians per repeat (the inverse of
        ``ratio``)."""
        idx = self._band(lo, hi)
        return Spread.of(statistics.median(c[i] for i in idx) / statistics.median(n[i] for i in idx)
                         for n, c in zip(self.seconds["naive"], self.seconds["cached"]))

    def pooled_ratio(self, lo: int, hi: int) -> float:
        """The ratio of the two printed band medians (naive / cached, every step of every repeat pooled),
        computed from the medians as they print."""
        n, c = self.band("naive", lo, hi), self.band("cached", lo, hi)
        return float(n.median_str()) / float(c.median_str())

    def summary(self, bands, unit: str) -> str:
        """Each line's median and IQR (ms per ``unit``) in every band (lo, hi) of positions, then the ratio
        naive / cached per repeat in each band (``ratio``: each repeat's ratio, then their median), one line
        each."""
        lines = [f"{name:7} ms per {unit}:  "
                 + ";  ".join(f"positions {lo}-{hi - 1}: {self.band(name, lo, hi).scaled(1e3)}" for lo, hi in bands)
                 for name in ("naive", "cached")]
        lines.append("naive / cached, per repeat:   "
                     + ";  ".join(f"positions {lo}-{hi - 1}: {self.ratio(lo, hi)}" for lo, hi in bands))
        return "\n".join(lines)

    def reading(self, first: tuple, last: tuple, unit: str, names=("first quarter", "last quarter")) -> str:
        """Three sentences reading two bands (lo, hi) of positions, rounded as the bands print: each line's
        median from the first band to the last, with its relative change (to the nearest 10 %, as precise as the
        timings are) only where the change exceeds the spread of the step times (the two bands' IQRs do not
        overlap; otherwise the change is reported as within the spread, not as a percentage); how the two lines
        compare and how the ratio naive / cached changes; and what fraction of a naive step the cached step
        takes in the last band (the median of the per-repeat ratios cached / naive), to two significant digits with
        a trailing zero kept (0.30, not 0.3)."""
        cs = [self.band("cached", *b).scaled(1e3) for b in (first, last)]
        ns = [self.band("naive", *b).scaled(1e3) for b in (first, last)]
        (c0, c1), (n0, n1) = cs, ns
        r0, r1 = self.ratio(*first), self.ratio(*last)

        def overlap(a, b):
            return a.q1 <= b.q3 and b.q1 <= a.q3

        def change(a, b):  # from the medians as printed
            if overlap(a, b):
                return "within the spread: the two IQRs overlap"
            return f"{percent(change_percent(a, b))}, beyond the spread: the two IQRs do not overlap"

        c_flat, n_flat = overlap(c0, c1), overlap(n0, n1)
        pc, pn = change_percent(c0, c1), change_percent(n0, n1)
        text = (f"From the {names[0]} to the {names[1]}, median ms per {unit}: cached {c0.median_str()} → "
                f"{c1.median_str()} ({change(c0, c1)}); naive {n0.median_str()} → {n1.median_str()} ({change(n0, n1)}).")
        if n_flat or (not c_flat and abs(pn) <= abs(pc)):
            compare = "The naive line changes no more than the cached one"
        else:
            # the cached line changes beyond its spread, but by a smaller fraction than the naive one: in the
            # same direction ("rises too") or in the opposite one ("falls instead")
            same = (pc > 0) == (pn > 0)
            compare = (f"The naive line {'climbs' if pn > 0 else 'falls'}; the cached one "
                       + ("stays within the spread of its step times" if c_flat else
                          f"{'rises' if pc > 0 else 'falls'} {'too' if same else 'instead'} (beyond the spread, "
                          "but by a smaller fraction)"))
        grows = "grows" if r1.median > r0.median else "does not grow"
        compare += f"; the ratio naive / cached {grows}, from {r0.median_str()} to {r1.median_str()}."
        share = two_digits(self.fraction(*last).median, keep_zeros=True)
        frac = f"In the {names[1]} a cached step takes {share} of a naive step's time (median over the repeats)."
        return "\n".join((text, compare, frac))


def change_percent(a: Spread, b: Spread) -> float:
    """Relative change in % from ``a``'s median to ``b``'s, computed from the medians as they print (rounded),
    so that the printed percentage agrees with the printed values (unrounded if a rounds to 0)."""
    x, y = float(a.median_str()), float(b.median_str())
    return 100 * (y / x - 1) if x else 100 * (b.median / a.median - 1)


def percent(p: float) -> str:
    """A relative change between two timings, rounded to the nearest 10 % (the timings are not more precise),
    halves away from zero (+125 % is about +130 %, as a reader rounds it), signed: about +80 %, about −10 %
    (a minus sign), about 0 %. A tiny tolerance keeps a quotient such as 4.5 / 2.0 - 1 = 1.2499999... a half."""
    r = int(math.copysign(math.floor(abs(p) / 10 + 0.5 + 1e-9), p)) * 10
    return "about 0 %" if r == 0 else f"about {'+' if r > 0 else '−'}{abs(r)} %"


@torch.no_grad()
def time_steps(model, tokens, start: int, repeats: int = 5, every: int = 1) -> StepTimes:
    """Replay a generation of ``tokens`` ([T] ids, e.g. a greedy generation's output) step by step, naive and
    cached, timing every step that feeds positions ``start`` .. T - 1 in processor time. Naive: the step
    feeding position p runs the whole prefix ``tokens[:p + 1]``; cached: it runs ``tokens[p]`` alone against a
    cache of the p earlier positions (the prompt ``tokens[:start]`` is prefilled untimed). ``every`` = k times
    only every k-th step (start, start + k, ...; the cached version still runs every step). The two versions
    alternate, ``repeats`` times each, after one warm-up of each."""
    tokens = torch.as_tensor(tokens).reshape(-1)
    T = tokens.shape[0]
    if not 1 <= start < T:
        raise TinyTFInputError(f"time_steps: need 1 <= start < len(tokens), got start={start}, {T} tokens")
    if T > model.config.max_seq_len:
        raise TinyTFInputError(f"time_steps: {T} tokens do not fit in max_seq_len {model.config.max_seq_len}")
    if repeats < 1 or every < 1:
        raise TinyTFInputError(f"time_steps: repeats and every must be >= 1, got {repeats} and {every}")
    model.eval()
    positions = list(range(start, T, every))

    def naive():
        out = []
        for p in positions:
            t0 = CLOCK()
            model(tokens[:p + 1])
            out.append(CLOCK() - t0)
        return out

    def cached():
        cache = model.new_cache()
        model(tokens[:start], cache=cache)
        out = []
        for p in range(start, positions[-1] + 1):
            t0 = CLOCK()
            model(tokens[p:p + 1], cache=cache)
            if (p - start) % every == 0:
                out.append(CLOCK() - t0)
        return out

    seconds = {"naive": [], "cached": []}
    naive(), cached()  # warm-up
    for _ in range(repeats):
        seconds["naive"].append(naive())
        seconds["cached"].append(cached())
    return StepTimes(positions, seconds)


def bare_config(cfg):
    """``cfg``'s code path with almost no arithmetic: the same layers, heads, key/value heads, vocabulary, norms
    and positions, but 2 numbers per head and a ``d_ff`` of 8. A decode step of such a model times what every
    step pays whatever the size of its matrices: the cost of the call itself."""
    return cfg.replace(d_model=2 * cfg.n_heads, d_ff=8)


@torch.no_grad()
def time_call_cost(cfg, prompt_len: int = 128, decode_steps: int = 16, repeats: int = 7, seed: int = 0) -> Spread:
    """Seconds of one decode step of ``bare_config(cfg)`` (a model of random weights, timed as ``time_phases``
    times decode): the fixed cost per call of ``cfg``'s code path."""
    torch.manual_seed(seed)
    model = TinyTransformer(bare_config(cfg)).eval()
    return time_phases(model, prompt_len, decode_steps, repeats, seed).decode_spread()


@torch.no_grad()
def time_matvecs(model, repeats: int = 15, seed: int = 0) -> tuple:
    """Every ``nn.Linear`` weight of ``model`` (the LM head included) times one vector, one after the other,
    as a decode step calls them: ``(n_matrices, megabytes, Spread of seconds for all of them)``, timed in
    processor time ``repeats`` times after one warm-up. These products read all of the matrices' bytes, each
    at its own shape, with the cost of their own calls; the rest of a step (norms, rotations, softmax, the
    cache's appends) is left out."""
    if repeats < 1:
        raise TinyTFInputError(f"time_matvecs: repeats must be >= 1, got {repeats}")
    weights = [m.weight for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not weights:
        raise TinyTFInputError("time_matvecs: the model has no nn.Linear layer")
    g = torch.Generator().manual_seed(seed)
    xs = [torch.randn(1, 1, w.shape[1], generator=g) for w in weights]
    seconds = []
    for r in range(repeats + 1):
        t0 = CLOCK()
        for w, x in zip(weights, xs):
            torch.nn.functional.linear(x, w)
        if r:  # the first round warms up
            seconds.append(CLOCK() - t0)
    mb = sum(w.numel() * w.element_size() for w in weights) / 1e6
    return len(weights), mb, Spread.of(seconds)


@dataclass
class KernelTiming:
    """One [d x d] float32 matrix times one vector (``matvec``) and times ``cols`` vectors at once (``matmat``):
    seconds per call, each a Spread over the repeats."""
    d: int
    cols: int
    matvec: Spread
    matmat: Spread

    def matvec_gb_per_s(self) -> float:
        """The rate at which the mat-vec reads its matrix (median time)."""
        return 4 * self.d * self.d / self.matvec.median / 1e9

    def gflop_per_s(self) -> tuple:
        """The arithmetic rates of ``W @ x`` and of ``W @ X`` (median times), in GFLOP/s."""
        flops = 2 * self.d * self.d
        return flops / self.matvec.median / 1e9, flops * self.cols / self.matmat.median / 1e9

    def report(self) -> str:
        """Four lines of at most 78 characters: the time per vector of each product with its IQR, the rate
        at which the mat-vec reads the matrix, and each product's arithmetic rate (two significant digits)."""
        mb = 4 * self.d * self.d / 1e6
        vec, mat = self.matvec.scaled(1e3), self.matmat.scaled(1e3 / self.cols)
        vec_rate, mat_rate = self.gflop_per_s()
        return "\n".join((
            f"one {self.d} x {self.d} float32 matrix W ({mb:.1f} MB), ms per vector:",
            f"  W @ x, 1 vector:      {vec}",
            f"  W @ X, {self.cols} at once:   {mat}",
            f"  W @ x reads W at {two_digits(self.matvec_gb_per_s(), keep_zeros=True)} GB/s; arithmetic: W @ x "
            f"{two_digits(vec_rate, keep_zeros=True)}, W @ X {two_digits(mat_rate, keep_zeros=True)} GFLOP/s"))


@torch.no_grad()
def time_kernels(d: int = 2048, cols: int = 128, repeats: int = 15, seed: int = 0) -> KernelTiming:
    """Time ``W @ x`` (a matrix-vector product, as in decode) and ``W @ X`` with ``cols`` columns (a matrix
    product, as in prefill) for one random [d x d] float32 W, alternating, ``repeats`` times each after one
    warm-up, in processor time."""
    if d < 1 or cols < 1 or repeats < 1:
        raise TinyTFInputError(f"time_kernels: d, cols and repeats must be >= 1, got {d}, {cols}, {repeats}")
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(d, d, generator=g)
    x, xs = torch.randn(d, 1, generator=g), torch.randn(d, cols, generator=g)
    vec, mat = [], []
    for r in range(repeats + 1):
        t0 = CLOCK()
        w @ x
        t1 = CLOCK()
        w @ xs
        t2 = CLOCK()
        if r:  # the first round warms up
            vec.append(t1 - t0)
            mat.append(t2 - t1)
    return KernelTiming(d, cols, Spread.of(vec), Spread.of(mat))
