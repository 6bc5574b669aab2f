"""Layer-by-layer measurements of a freshly initialised stack (chapter 5).

Two questions about a deep stack of blocks:

* how large is the residual stream leaving each block? (``activation_rms``)
* how large is the gradient that each block's weights receive from a next-token loss? (``grad_norm``)

Every number comes from the real ``TinyTransformer`` forward and backward pass. By default the
stream entering block 0 is replaced (at the ``embed`` hook) by random vectors of RMS 1, so the
blocks are measured on their own ("stack 12 layers on random input").

    profile = layer_profile(TinyConfig(d_model=64, n_layers=12), seeds=(0, 1, 2))
    print(format_profiles([profile]))
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ..config import TinyConfig
from ..errors import TinyTFInputError
from ..models import TinyTransformer, check_ids, init_weights
from ..norms import is_norm
from ..tracing import run_with_trace


@dataclass
class LayerMeasurement:
    """One model, one batch, one forward + backward pass."""

    activation_rms: list  # per block: RMS of the stream leaving it (mean over tokens)
    grad_norm: list  # per block: L2 norm of d loss / d (every weight of the block)
    token_similarity: list  # per block: mean cosine similarity between the stream vectors of different positions
    loss: float
    grad_norm_without_norms: list = field(default_factory=list)  # per block: as grad_norm, without the norms' gains/biases


def stream_rms(h) -> float:
    """Size of a stream [..., T, C]: each position's root-mean-square over its C features, averaged
    over positions (and batch). A freshly initialised norm outputs exactly 1 (up to eps).

    Not finite only when the stream itself is not: a finite float32 stream above about 1.8e19 has squares past
    float32's largest number (3.4e38), so such a stream is measured again in float64."""
    h = h.detach()
    rms = h.pow(2).mean(-1).sqrt().mean().item()
    if not math.isfinite(rms) and bool(torch.isfinite(h).all()):
        rms = h.double().pow(2).mean(-1).sqrt().mean().item()
    return rms


def token_similarity(h) -> float:
    """Mean cosine similarity between the vectors of different positions of the same sequence.
    h: [B, T, C] with T >= 2. 0 for unrelated directions, 1 when every position carries the same direction."""
    if h.dim() != 3 or h.shape[1] < 2:
        raise TinyTFInputError(f"token_similarity needs [B, T, C] with T >= 2, got {list(h.shape)}")
    u = F.normalize(h, dim=-1)
    cos = u @ u.transpose(1, 2)  # [B, T, T]
    T = h.shape[1]
    off_diagonal = cos.sum((-1, -2)) - cos.diagonal(dim1=-2, dim2=-1).sum(-1)  # [B]
    return (off_diagonal / (T * (T - 1))).mean().item()


def relative_gain(f, d_model: int, rel: float = 1e-3) -> tuple:
    """(relative gain, output RMS) of a sublayer ``f`` (float64, as chapter 5 measures it): ``f`` reads 256 random
    inputs of RMS 1, as a norm hands them on ([16, 16, d_model], drawn from torch's global generator), each
    changed by a vector of relative size ``rel`` at right angles to it (the part along the input is what a norm
    removes). The relative gain is the mean over the inputs of ``|f(x + d) - f(x)| / |f(x)|`` divided by ``rel``:
    by how many % the output changes per 1% change of the input (1 for a linear map); the RMS is that of f(x)."""
    if not 0 < rel < 1:
        raise TinyTFInputError(f"relative_gain: rel must lie between 0 and 1, got {rel}")
    inp = torch.randn(256, d_model, dtype=torch.float64).view(16, 16, d_model)
    inp = inp / inp.pow(2).mean(-1, keepdim=True).sqrt()  # RMS 1
    d = torch.randn_like(inp)
    d = d - (d * inp).sum(-1, keepdim=True) / d_model * inp  # at right angles to each input
    d = rel * d * inp.norm(dim=-1, keepdim=True) / d.norm(dim=-1, keepdim=True)  # relative size rel
    with torch.no_grad():
        out = f(inp)
        change = (f(inp + d) - out).norm(dim=-1) / out.norm(dim=-1)
    return (change / rel).mean().item(), out.pow(2).mean().sqrt().item()


def measure_layers(model: TinyTransformer, ids, targets, stream=None) -> LayerMeasurement:
    """Run ``model`` on ``ids`` ([B, T]), take the next-token cross-entropy against ``targets``
    ([B, T]), backpropagate, and read activation and gradient sizes block by block.

    ``stream``: optional [B, T, C] tensor that replaces the embedding output, i.e. the residual
    stream entering block 0. Gradients already stored in ``model`` are cleared first."""
    ids, _ = check_ids(ids, model.config)
    targets = torch.as_tensor(targets)
    if targets.shape != ids.shape:
        raise TinyTFInputError(f"targets have shape {list(targets.shape)}, expected the shape of ids {list(ids.shape)}")
    patches = None
    if stream is not None:
        expected = [*ids.shape, model.config.d_model]
        if list(stream.shape) != expected:
            raise TinyTFInputError(f"stream has shape {list(stream.shape)}, expected [B, T, C] = {expected}")
        patches = {"embed": lambda _: stream}
    model.zero_grad(set_to_none=True)
    logits, trace = run_with_trace(model, ids, names=["blocks.*.resid_post"], patches=patches)  # [B, T, V]
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    n = len(model.blocks)
    streams = [trace[f"blocks.{i}.resid_post"] for i in range(n)]  # [B, T, C] each
    rms = [stream_rms(h) for h in streams]
    similarity = [token_similarity(h) if h.shape[1] > 1 else float("nan") for h in streams]
    grads = [math.sqrt(sum(float(p.grad.pow(2).sum()) for p in b.parameters() if p.grad is not None))
             for b in model.blocks]
    grads_without_norms = [math.sqrt(sum(float(p.grad.pow(2).sum()) for p in _non_norm_parameters(b)
                                         if p.grad is not None)) for b in model.blocks]
    model.zero_grad(set_to_none=True)
    return LayerMeasurement(rms, grads, similarity, loss.item(), grads_without_norms)


def _non_norm_parameters(block):
    """The block's parameters except those of its norms (their gains and, for LayerNorm, biases)."""
    norm_params = {id(p) for m in block.modules() if is_norm(m)
                   for p in m.parameters()}
    return [p for p in block.parameters() if id(p) not in norm_params]


@contextlib.contextmanager
def one_thread():
    """Run torch on one thread inside the block. The matrices here are tiny, so a second thread only
    adds synchronisation; on a busy 2-core machine two threads were ten times slower than one."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _geometric_mean(rows):
    """Per-layer geometric mean over seeds (sizes spread over orders of magnitude)."""
    return [math.exp(sum(math.log(max(v, 1e-30)) for v in col) / len(col)) for col in zip(*rows)]


@dataclass
class LayerProfile:
    """Measurements of one configuration, averaged (geometric mean) over several seeds."""

    label: str
    config: TinyConfig
    init_std: float
    seeds: tuple
    activation_rms: list  # per block
    grad_norm: list  # per block
    token_similarity: list  # per block (arithmetic mean over seeds)
    per_seed: list = field(default_factory=list, repr=False)  # the LayerMeasurement of each seed
    precision_gap: float = 0.0  # largest relative difference float32 vs float64, same weights (nan: not checked)
    grad_norm_float64: list = field(default_factory=list, repr=False)  # grad_norm of the float64 run (empty: not checked)
    activation_rms_float64: list = field(default_factory=list, repr=False)  # activation_rms of the float64 run
    token_similarity_float64: list = field(default_factory=list, repr=False)  # token_similarity of the float64 run
    per_seed_float64: list = field(default_factory=list, repr=False)  # the float64 LayerMeasurement of each seed
    grad_norm_without_norms: list = field(default_factory=list)  # per block: grad_norm without the norms' parameters

    @property
    def ill_conditioned(self) -> bool:
        """True when the float32 measurement and a float64 run of the same weights and inputs differ by more
        than ``CHAOS_THRESHOLD``: rounding errors are amplified as much as the gradient, so the float32 digits
        depend on the arithmetic (and on which CPU kernels torch picked); ``format_profiles`` shows only the
        leading digit, or the float64 run's values (``float64=True``)."""
        return not self.precision_gap <= CHAOS_THRESHOLD

    @property
    def chaotic(self) -> bool:
        """The former name of ``ill_conditioned``."""
        return self.ill_conditioned

    @property
    def depth(self) -> int:
        return len(self.grad_norm)

    @property
    def grad_ratio(self) -> float:
        """Gradient norm of the first block divided by that of the last block."""
        return self.grad_norm[0] / self.grad_norm[-1]

    @property
    def grad_ratio_spread(self) -> float:
        """Seed spread of ``grad_ratio``: the largest relative distance of any single seed's first/last ratio
        from the combined one (0 with one seed). A difference between two rows smaller than their spreads
        is not a measured difference."""
        ratios = [r.grad_norm[0] / r.grad_norm[-1] for r in self.per_seed]
        return max((abs(r - self.grad_ratio) / self.grad_ratio for r in ratios), default=0.0)

    @property
    def grad_ratio_range(self) -> tuple:
        """The smallest and largest single seed's first/last ratio (the combined ``grad_ratio``, a
        geometric mean, lies between them). Printed as the "seed range" column: unlike a ±percent spread,
        a range stays meaningful when the seeds differ by a factor of several."""
        ratios = [r.grad_norm[0] / r.grad_norm[-1] for r in self.per_seed] or [self.grad_ratio]
        return min(ratios), max(ratios)

    @property
    def per_layer_range(self) -> tuple:
        """The smallest and largest single seed's per-layer factor, ratio ** (1 / (depth - 1))."""
        lo, hi = self.grad_ratio_range
        n = max(self.depth - 1, 1)
        return lo ** (1.0 / n), hi ** (1.0 / n)

    @property
    def per_layer_factor(self) -> float:
        """The constant factor per layer that would produce ``grad_ratio`` over the stack:
        ratio ** (1 / (depth - 1)). If it stays the same as depth grows, the ratio is exponential in depth."""
        return self.grad_ratio ** (1.0 / max(self.depth - 1, 1))


CHAOS_THRESHOLD = 1e-3  # float32 vs float64 relative gap above which a profile is reported as ill-conditioned


def describe(cfg: TinyConfig) -> str:
    """Short label of the choices chapter 5 varies: '12 blocks, pre-norm, residual'."""
    return f"{cfg.n_layers} blocks, {cfg.norm_position}-norm, " + ("residual" if cfg.residual else "no residual")


_MEASURED: dict = {}  # layer_profile results by their arguments (measurements are deterministic)


def layer_profile(cfg: TinyConfig, *, seeds=(0, 1, 2), init_std: float | None = None, batch: int = 4,
                  seq_len: int = 16, random_stream: bool = True, label: str | None = None,
                  check_precision: bool = True) -> LayerProfile:
    """Build a fresh ``TinyTransformer(cfg)`` per seed, measure it with ``measure_layers`` on random
    token ids and random next-token targets, and average over the seeds.

    init_std: standard deviation of every Linear/Embedding weight (None = tinytf's default, 0.02).
    random_stream: feed random vectors of RMS 1 into block 0 instead of the (tiny) embeddings.
    check_precision: measure each seed a second time in float64 (same weights, inputs and targets) and store
    the largest relative difference of any gradient norm or stream RMS as ``precision_gap``. Deep stacks
    without residuals amplify rounding errors as much as the gradient: there the float32 digits depend on
    the arithmetic, and ``format_profiles`` shows only what is stable (see ``LayerProfile.ill_conditioned``).
    The caller's random-number state is left untouched. The result is a deterministic function of the
    arguments, so a repeated call (same config, seeds, init, sizes) returns the stored measurement."""
    if not seeds:
        raise TinyTFInputError("layer_profile needs at least one seed")
    if seq_len > cfg.max_seq_len:
        raise TinyTFInputError(f"seq_len={seq_len} is longer than the config's max_seq_len={cfg.max_seq_len}")
    key = (cfg, tuple(seeds), init_std, batch, seq_len, random_stream, check_precision)
    if key in _MEASURED:
        return _copy(_MEASURED[key], label or describe(cfg))
    runs, exact_runs, gap = [], [], 0.0
    with torch.random.fork_rng(), one_thread():
        for seed in seeds:
            torch.manual_seed(seed)
            model = TinyTransformer(cfg)
            if init_std is not None:
                init_weights(model, init_std)
            ids = torch.randint(0, cfg.vocab_size, (batch, seq_len))
            targets = torch.randint(0, cfg.vocab_size, (batch, seq_len))
            stream = torch.randn(batch, seq_len, cfg.d_model) if random_stream else None
            runs.append(measure_layers(model, ids, targets, stream))
            if check_precision:
                exact = measure_layers(model.double(), ids, targets, None if stream is None else stream.double())
                exact_runs.append(exact)
                gap = max(gap, _relative_gap(runs[-1].grad_norm + runs[-1].activation_rms,
                                             exact.grad_norm + exact.activation_rms))
    _MEASURED[key] = profile_from_runs(label or describe(cfg), cfg, 0.02 if init_std is None else init_std, seeds,
                                       runs, exact_runs, gap if check_precision else float("nan"))
    return _copy(_MEASURED[key], label or describe(cfg))


def profile_from_runs(label, cfg, init_std, seeds, runs, exact_runs, precision_gap) -> LayerProfile:
    """One LayerProfile from the per-seed ``measure_layers`` runs (and their float64 twins, possibly none):
    each per-block series is combined over the seeds by its geometric mean, the token similarities by their
    arithmetic mean. Shared by ``layer_profile`` (random stacks) and ``trained_gradients.trained_profile``."""
    return LayerProfile(
        label=label,
        config=cfg,
        init_std=init_std,
        seeds=tuple(seeds),
        activation_rms=_geometric_mean([r.activation_rms for r in runs]),
        grad_norm=_geometric_mean([r.grad_norm for r in runs]),
        token_similarity=[sum(col) / len(col) for col in zip(*(r.token_similarity for r in runs))],
        per_seed=runs,
        precision_gap=precision_gap,
        grad_norm_float64=_geometric_mean([r.grad_norm for r in exact_runs]) if exact_runs else [],
        activation_rms_float64=_geometric_mean([r.activation_rms for r in exact_runs]) if exact_runs else [],
        token_similarity_float64=[sum(col) / len(col) for col in zip(*(r.token_similarity for r in exact_runs))],
        per_seed_float64=exact_runs,
        grad_norm_without_norms=_geometric_mean([r.grad_norm_without_norms for r in runs]),
    )


def _relative_gap(values, reference) -> float:
    return max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(values, reference))


def _copy(profile: LayerProfile, label: str) -> LayerProfile:
    return dataclasses.replace(profile, label=label, activation_rms=list(profile.activation_rms),
                               grad_norm=list(profile.grad_norm), grad_norm_float64=list(profile.grad_norm_float64),
                               grad_norm_without_norms=list(profile.grad_norm_without_norms),
                               activation_rms_float64=list(profile.activation_rms_float64),
                               token_similarity=list(profile.token_similarity),
                               token_similarity_float64=list(profile.token_similarity_float64),
                               per_seed=list(profile.per_seed), per_seed_float64=list(profile.per_seed_float64))


def depth_sweep(cfg: TinyConfig, depths=(6, 12, 24, 48), **kwargs) -> list:
    """``layer_profile`` of ``cfg`` at each number of layers in ``depths``."""
    return [layer_profile(cfg.replace(n_layers=n), **kwargs) for n in depths]


def _float64(values, pick):
    return pick(values) if values else None


def _float64_profile(p: LayerProfile):
    """The float64 run of ``p`` as a LayerProfile of its own (None: not measured), so that every column can be
    read from it with the same getter as from the float32 run."""
    if not p.per_seed_float64:
        return None
    return dataclasses.replace(p, activation_rms=list(p.activation_rms_float64), grad_norm=list(p.grad_norm_float64),
                               token_similarity=list(p.token_similarity_float64), per_seed=list(p.per_seed_float64),
                               precision_gap=0.0)


COLUMNS = {  # name: (header, value of a LayerProfile, format[, the same value from the float64 run or None])
    "grad_first": ("grad block 0", lambda p: p.grad_norm[0], "#.3g", lambda p: _float64(p.grad_norm_float64, lambda g: g[0])),
    "grad_last": ("grad last", lambda p: p.grad_norm[-1], "#.3g", lambda p: _float64(p.grad_norm_float64, lambda g: g[-1])),
    "grad_ratio": ("first/last", lambda p: p.grad_ratio, "#.3g",
                   lambda p: _float64(p.grad_norm_float64, lambda g: g[0] / g[-1])),
    "ratio_spread": ("seed range", lambda p: p.grad_ratio_range, "range"),
    "per_layer": ("per block", lambda p: p.per_layer_factor, ".2f"),
    "per_layer_range": ("per block, seed range", lambda p: p.per_layer_range, "range.2f"),
    "rms_first": ("RMS block 0", lambda p: p.activation_rms[0], "#.3g",
                    lambda p: _float64(p.activation_rms_float64, lambda a: a[0])),
    "rms_last": ("RMS last", lambda p: p.activation_rms[-1], "#.3g",
                 lambda p: _float64(p.activation_rms_float64, lambda a: a[-1])),
    "similarity_last": ("cos last", lambda p: p.token_similarity[-1], ".3f"),
}


SEED_VALUES = {  # column: each seed's own value of it (a LayerMeasurement r of p.per_seed; p: the profile)
    "grad_first": lambda p, r: r.grad_norm[0],
    "grad_last": lambda p, r: r.grad_norm[-1],
    "grad_ratio": lambda p, r: r.grad_norm[0] / r.grad_norm[-1],
    "per_layer": lambda p, r: (r.grad_norm[0] / r.grad_norm[-1]) ** (1.0 / max(p.depth - 1, 1)),
    "rms_first": lambda p, r: r.activation_rms[0],
    "rms_last": lambda p, r: r.activation_rms[-1],
    "similarity_last": lambda p, r: r.token_similarity[-1],
}
RANGE_OF = {"grad_ratio": "ratio_spread", "per_layer": "per_layer_range"}  # a value's seed-range column


def round_to_seeds(value: float, seed_values, spec: str = "#.3g") -> str:
    """``value`` printed to what its seeds support: its last digit is the first one the seeds' own values
    (``seed_values``) disagree on, the leading digit of their range (1.27 with seeds from 1.2 to 1.4 prints 1.3);
    never more digits than ``spec`` gives (``"#.3g"``: a size, 3 significant digits, and at least 1; ``".2f"``:
    at most 2 decimals). With no spread to go by (one seed) ``value`` is printed as ``spec`` says."""
    seed_values = list(seed_values)
    width = max(seed_values) - min(seed_values) if len(seed_values) > 1 else 0.0
    decimals = -math.floor(math.log10(width)) if width > 0 and math.isfinite(width) else None
    if spec.startswith("#"):  # a size: 3 significant digits at most, 1 at least
        if decimals is None or not (value > 0 and math.isfinite(value)):
            return _format_value(value, spec, False)
        lead = math.floor(math.log10(value))
        decimals = max(min(decimals, 2 - lead), -lead)
    else:  # a fixed number of decimals (".2f", ".3f"): at most those
        if decimals is None or not math.isfinite(value):
            return _format_value(value, spec, False)
        decimals = max(min(decimals, int(spec[1:-1])), 0)
    if decimals > 0:
        return f"{value:.{decimals}f}"
    return f"{round(value, decimals):.0f}"


def format_profiles(profiles, columns=("grad_first", "grad_last", "grad_ratio", "per_layer", "rms_first", "rms_last"),
                    title: str | None = None, float64: bool = False, legend: bool = True,
                    formats: dict | None = None) -> str:
    """Plain-text table, one row per profile. Columns (see ``COLUMNS``): gradient norm of the first block
    (block 0, as in the trace names) and of the last block, their ratio, its seed range, the per-layer factor, the activation
    RMS leaving the first and last block, and the similarity between positions after the last block.

    A value printed beside its seed range (first/last with ``ratio_spread``, the per-layer factor with
    ``per_layer_range``) keeps 3 significant digits (2 decimals for a factor), and the range gives its precision. Any
    other value of a reproducible row is rounded to what its seeds support: its last digit is the first one on which
    the seeds' own values disagree (1.27 with seeds from 1.2 to 1.4 prints 1.3; see ``round_to_seeds``).

    An ill-conditioned row (``LayerProfile.ill_conditioned``) shows what survives of its float32 run, marked
    "~"; with ``float64=True`` it shows instead every value of its float64 run (same weights and inputs), marked
    "†", sizes to 2 significant digits (in e-notation, 6.2e+03, which the nbval comparison reads as one number:
    9.9e+03 against 1.0e+04 is one unit of the last digit). Where the two runs differ by more than ``FLOAT64_DIGIT_GAP`` (3%), a
    last-bit change of the weights or inputs, which perturbs the computation about as much as float32 rounding
    does, moves the float64 values too: sizes get 1 significant digit, similarities 2 decimals, and the seeds' own values (the seed
    ranges) are not shown ("—"). ``legend=False`` leaves out the lines under the table that explain these
    marks (for a table after the first that uses them). ``formats`` replaces a column's format in this table
    only, {column: spec}, e.g. ``{"similarity_last": ".2f"}``: cosines to at most 2 decimals, so that rows whose
    seeds agree on more digits do not print more than the others."""
    unknown = [c for c in list(columns) + list(formats or {}) if c not in COLUMNS]
    if unknown:
        raise TinyTFInputError(f"unknown column(s) {unknown}; choose from {list(COLUMNS)}")
    width = max([len(p.label) for p in profiles] + [len("configuration")])
    widths = [max(len(COLUMNS[c][0]), 10) for c in columns]
    head = f"{'configuration':<{width}}" + "".join(f"  {COLUMNS[c][0]:>{w}}" for c, w in zip(columns, widths))
    lines = ([title] if title else []) + [head, "-" * len(head)]
    marked = set()
    for p in profiles:
        exact = _float64_profile(p) if (float64 and p.ill_conditioned) else None
        if exact is not None:
            marked.add("†")
            coarse = not p.precision_gap <= FLOAT64_DIGIT_GAP
            marked.add("—" if coarse else "†")
            cells = [_format_float64(COLUMNS[c][1](exact), (formats or {}).get(c, COLUMNS[c][2]), coarse)
                     for c in columns]
        else:
            if p.ill_conditioned:
                marked.add("~")
            cells = [_cell(c, p, columns, (formats or {}).get(c)) for c in columns]
        lines.append(f"{p.label:<{width}}" + "".join(f"  {cell:>{w}}" for cell, w in zip(cells, widths)))
    if not legend:
        marked = set()
    if "~" in marked:
        lines.append(f"~ ill-conditioned row: float32 and float64 runs of the same weights differ by more than "
                     f"{CHAOS_THRESHOLD:.1%}; a size is shown to 1 significant digit (~6e+03), or as a power of ten "
                     f"only (~10^5) where the two runs differ by over {DIGIT_GAP:.0%}; a factor to 2")
    if "†" in marked:
        coarse = ", or to 1 and no seed range (—)" if "—" in marked else ""
        lines.append(f"† ill-conditioned row: float64 values, sizes to 2 significant digits{coarse}")
    return "\n".join(lines)


def format_setups(runs: dict, summaries: dict) -> str:
    """Plain-text table that compares pre-norm with post-norm across set-ups (chapter 5, section 5.4): one row
    per set-up, from ``runs`` = {set-up: (pre-norm profile, post-norm profile)}, the two stacks of the same
    depth. Columns: the pre-norm stream's RMS leaving block 0 and leaving the last block, the post-norm stream's
    RMS leaving the last block, and each placement's first/last gradient ratio; then ``summaries[set-up]``, the
    row's reading in one line. Every value ends at the first digit its seeds disagree on (``round_to_seeds``,
    at most the digits ``COLUMNS`` gives), as no seed range is printed beside it."""
    missing = [name for name in runs if name not in summaries]
    if missing:
        raise TinyTFInputError(f"format_setups: no summary for {missing}; summaries has {list(summaries)}")
    depths = {p.depth for pair in runs.values() for p in pair}
    if len(depths) != 1:
        raise TinyTFInputError(f"format_setups: every stack must have the same depth, got {sorted(depths)}")
    for name, pair in runs.items():
        placements = tuple(p.config.norm_position for p in pair)
        if placements != ("pre", "post"):
            raise TinyTFInputError(f"format_setups: {name!r} must be a pair (pre-norm, post-norm), got {placements}")
    last = depths.pop() - 1

    def agreed(p, column):  # the value to the digits its seeds agree on
        return round_to_seeds(COLUMNS[column][1](p), [SEED_VALUES[column](p, r) for r in p.per_seed],
                              COLUMNS[column][2])

    lines = [f"{'':15} {'stream RMS, pre-norm':>22} {'post-norm':>11} {'first/last':>11} {'first/last':>11}",
             f"{'set-up':15} {f'leaving block 0 → {last}':>22} {f'leaving {last}':>11} {'pre-norm':>11}"
             f" {'post-norm':>11}  in one line"]
    for name, (pre, post) in runs.items():
        lines.append(f"{name:15} {agreed(pre, 'rms_first') + ' → ' + agreed(pre, 'rms_last'):>22}"
                     f" {agreed(post, 'rms_last'):>11} {agreed(pre, 'grad_ratio'):>11} {agreed(post, 'grad_ratio'):>11}"
                     f"  {summaries[name]}")
    return "\n".join(lines)


def _cell(column: str, p: LayerProfile, columns, spec: str | None = None) -> str:
    """One value of a row that shows its float32 run: a value without its seed range in the table is rounded to
    what its seeds support (``round_to_seeds``), any other as ``_format_value`` does; ``spec`` replaces the
    column's own format."""
    value, spec = COLUMNS[column][1](p), spec or COLUMNS[column][2]
    if not p.ill_conditioned and column in SEED_VALUES and RANGE_OF.get(column) not in columns:
        return round_to_seeds(value, [SEED_VALUES[column](p, r) for r in p.per_seed], spec)
    return _format_value(value, spec, p.ill_conditioned, _reference(column, p))


def _format_float64(value, spec: str, coarse: bool = False) -> str:
    """A value of an ill-conditioned row's float64 run, marked "†": sizes (and their seed ranges) to 2 significant
    digits, factors and similarities as in a reproducible row. ``coarse`` (the float32 and float64 runs differ by
    more than ``FLOAT64_DIGIT_GAP``): sizes to 1 significant digit, similarities to 2 decimals, no seed range ("—");
    a per-layer factor keeps its 2 decimals (the (L-1)th root of the ratio moves far less than the ratio)."""
    if spec.startswith("range"):
        if coarse:
            return "—"
        if spec == "range":
            return "†" + "–".join(f"{v:#.2g}".rstrip(".") for v in value)
    if spec.startswith("#"):
        return "†" + (format(value, ".1g") if coarse else format(value, "#.2g").rstrip("."))
    if coarse and spec == ".3f":  # a similarity moves with the float64 values too: 2 decimals
        return "†" + format(value, ".2f")
    return "†" + _format_value(value, spec, False)


DIGIT_GAP = 0.1  # an ill-conditioned row's size keeps one significant digit when float32 is this close to float64
# A float64 run is only as good as its float32 weights and inputs: a last-bit change of them (another CPU's
# random-number kernels draw them) moves it about as much as rounding moves the float32 run. The float32/float64
# gap measured on one machine estimates that movement only to within a factor of several (chapter 5's 48-block
# post-norm stack at init std 1/sqrt(d): a gap of 7% on one CPU and 48% on another, while the two CPUs' float64
# first/last ratios differ by 18%), so a float64 row keeps its second significant digit only below this gap.
FLOAT64_DIGIT_GAP = 0.03


def _reference(column: str, p: LayerProfile):
    """The float64 run's value of this column for an ill-conditioned row (None: not available)."""
    getter = COLUMNS[column][3] if len(COLUMNS[column]) > 3 else None
    return getter(p) if (getter is not None and p.ill_conditioned) else None


def _format_value(value: float, spec: str, chaotic: bool, reference: float | None = None) -> str:
    """Full precision for a reproducible row (sizes: 3 significant digits, trailing zeros kept: 1.00, 4.20);
    for an ill-conditioned one, what survives the rounding: one significant digit of a size (~6e+03, ~4e-03) where the
    float32 value is within ``DIGIT_GAP`` of the float64 ``reference``, else its power of ten only (~10^5, written so that it cannot be read as a leading digit 1), two
    significant digits of a per-layer factor or a similarity; a seed range as "smallest–largest" seed value,
    3 significant digits each (2 decimals for a per-layer factor) (not shown for an ill-conditioned row, whose digits are
    not reproducible)."""
    if spec.startswith("range"):
        if chaotic:
            return "~"
        if spec == "range.2f":
            return f"{value[0]:.2f}–{value[1]:.2f}"
        return "–".join(f"{v:#.3g}".rstrip(".") for v in value)  # 3 significant digits, kept: 1.00, not 1
    if not chaotic:
        return format(value, spec).rstrip(".") if spec.startswith("#") else format(value, spec)  # "107", not "107."
    if spec.endswith("g"):
        if not value > 0:
            return format(value, ".1g")
        if reference is not None and abs(value - reference) <= DIGIT_GAP * abs(reference):
            return "~" + format(value, ".0e")  # one significant digit
        return f"~10^{round(math.log10(value))}"  # not even the leading digit survives: the power of ten only
    return "~" + format(value, ".2g")
