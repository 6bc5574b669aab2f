"""What a norm does in a deep stack, and what LayerNorm's mean subtraction adds (chapter 3).

Two questions, each answered on real ``TinyTransformer`` forward and backward passes:

* **Without a norm, what goes wrong?** ``depth_profile`` builds a deep pre-norm stack whose norms are
  ``"rms"``, ``"layer"`` or ``"none"`` (every norm replaced by the identity, :class:`NoNorm`), feeds random
  vectors of RMS 1 into block 0 and reads, block by block, the size of the residual stream and of each block's
  weight gradient, for several seeds (``tinytf.experiments.measure_layers`` does the measuring).
* **Is the re-centring worth it?** ``mean_shares`` measures, at every norm of a model, how large the per-token
  mean is compared with the vector's root mean square: the part LayerNorm removes and RMSNorm keeps.
  ``swap_norms`` replaces every RMSNorm by a LayerNorm with the same gain (or the reverse), so the same trained
  weights can be evaluated with and without the re-centring; ``fixed_scale_norms`` keeps the centring choice but
  divides every token by one constant per norm instead of by its own size, which removes the re-scaling;
  ``shifted_norms`` subtracts each token's mean but keeps the RMS divisor, or, as a control, subtracts the same
  amount along a random direction.

    profiles = [depth_profile(norm, n_layers=48, init_std=1 / 8) for norm in ("none", "layer", "rms")]
    print(format_depth_table(profiles, "activation_rms", blocks=(0, 1, 2, 3, 4, 5, 47)))
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import torch
from torch import nn

from ..config import TinyConfig
from ..errors import TinyTFInputError
from ..hooks import Hook
from ..models import TinyTransformer, init_weights
from ..norms import LayerNorm, RMSNorm, is_norm
from .experiments import measure_layers, one_thread, stream_rms

NORM_CHOICES = ("none", "layer", "rms")


class NoNorm(nn.Module):
    """The identity in a norm's place (experiments only). It keeps a norm's ``hook_out``, so traces still
    have a ``...norm1.out`` entry: the unnormalised stream the sublayer now reads."""

    def __init__(self):
        super().__init__()
        self.hook_out = Hook()

    def forward(self, x):
        return self.hook_out(x)


def _replace(model: nn.Module, make) -> nn.Module:
    """Replace, in place, every norm module ``m`` of ``model`` by ``make(m)``; return ``model``."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if is_norm(child):
                setattr(parent, name, make(child))
    return model


def remove_norms(model: nn.Module, keep_final: bool = False) -> nn.Module:
    """Replace every norm of ``model`` (both per block and the final one) by :class:`NoNorm`, in place.
    ``keep_final=True`` keeps each stack's final norm (``final_norm``, before the LM head) and removes only the
    blocks' norms, so the LM head still reads a normalised stream."""
    if not keep_final:
        return _replace(model, lambda _: NoNorm())
    kept = {id(m) for name, m in model.named_modules() if name.rsplit(".", 1)[-1] == "final_norm"}
    return _replace(model, lambda norm: norm if id(norm) in kept else NoNorm())


def swap_norms(model: nn.Module, to: str) -> nn.Module:
    """A copy of ``model`` whose every RMSNorm became a LayerNorm (``to="layer"``), or whose every LayerNorm
    became an RMSNorm (``to="rms"``), with the same gain gamma and eps. A LayerNorm's beta, if it has one, is
    dropped by ``to="rms"``. With the same gamma the two differ only by the mean subtraction (and beta)."""
    if to not in ("layer", "rms"):
        raise TinyTFInputError(f"swap_norms: to must be 'layer' or 'rms', got {to!r}")
    source = RMSNorm if to == "layer" else LayerNorm

    def make(norm):
        if not isinstance(norm, source):
            return norm
        d = norm.weight.shape[0]
        new = LayerNorm(d, norm.eps, bias=False) if to == "layer" else RMSNorm(d, norm.eps)
        with torch.no_grad():
            new.weight.copy_(norm.weight)
        return new

    return _replace(copy.deepcopy(model), make)


def build_stack(norm: str, n_layers: int, seed: int = 0, init_std: float | None = None, d_model: int = 64,
                n_heads: int = 4, ffn: str = "swiglu") -> TinyTransformer:
    """A pre-norm TinyTransformer with ``n_layers`` blocks (SwiGLU with d_ff = 4 d_model, RoPE, no biases) whose
    norms are ``norm``: "rms", "layer" (LayerNorm without beta) or "none" (:class:`NoNorm`). Weights drawn
    after ``torch.manual_seed(seed)``; ``init_std`` None keeps tinytf's initialisation (std 0.02). ``ffn`` picks
    the FFN as in :class:`TinyConfig` ("relu" for a bias-free ReLU MLP of the same d_ff, a control)."""
    if norm not in NORM_CHOICES:
        raise TinyTFInputError(f"norm must be one of {', '.join(map(repr, NORM_CHOICES))}; got {norm!r}")
    cfg = TinyConfig(d_model=d_model, n_heads=n_heads, d_ff=4 * d_model, n_layers=n_layers,
                     norm="rms" if norm == "none" else norm, ffn=ffn)
    torch.manual_seed(seed)
    model = TinyTransformer(cfg)
    if init_std is not None:
        init_weights(model, init_std)
    return remove_norms(model) if norm == "none" else model


@dataclass
class DepthProfile:
    """One kind of norm in one deep stack, measured once per seed."""

    norm: str
    n_layers: int
    init_std: float
    seeds: tuple
    activation_rms: list = field(default_factory=list)  # per seed: per block, RMS of the stream leaving it
    grad_norm: list = field(default_factory=list)  # per seed: per block, L2 norm of its weight gradient
    loss: list = field(default_factory=list)  # per seed
    input_rms: list = field(default_factory=list)  # per seed: RMS of the random stream entering block 0

    def median(self, what: str) -> list:
        """Per block, the median over seeds of ``what`` ("activation_rms" or "grad_norm"); inf or nan as
        measured when the stack overflowed."""
        rows = getattr(self, what)
        return [_median(col) for col in zip(*rows)]

    def spread(self, what: str, blocks) -> float:
        """Largest relative distance of any seed's value from the median, over the finite entries of
        ``blocks`` (0 when there is one seed; nan when no entry is finite)."""
        rows, mid = getattr(self, what), self.median(what)
        gaps = [abs(row[b] - mid[b]) / abs(mid[b]) for b in blocks for row in rows
                if math.isfinite(mid[b]) and mid[b] != 0 and math.isfinite(row[b])]
        return max(gaps) if gaps else float("nan")

    def spread_factor(self, what: str, blocks) -> float:
        """Largest factor between any seed's value and the median, over the finite, positive entries of
        ``blocks``: max(value / median, median / value) (1 when there is one seed; nan when no entry counts)."""
        rows, mid = getattr(self, what), self.median(what)
        factors = [max(row[b] / mid[b], mid[b] / row[b]) for b in blocks for row in rows
                   if math.isfinite(mid[b]) and mid[b] > 0 and math.isfinite(row[b]) and row[b] > 0]
        return max(factors) if factors else float("nan")

    def first_overflow(self) -> int | None:
        """The first block after which the stream is no longer finite in some seed (None: finite throughout).
        The stream itself is tested: its RMS is measured in float64 when the float32 squares would overflow."""
        bad = [next((i for i, v in enumerate(row) if not math.isfinite(v)), None) for row in self.activation_rms]
        bad = [b for b in bad if b is not None]
        return min(bad) if bad else None


def _median(values) -> float:
    values = sorted(values, key=lambda v: (math.isnan(v), v))  # nan last
    finite = [v for v in values if not math.isnan(v)]
    if len(finite) < len(values):
        return float("nan")
    return finite[len(finite) // 2] if len(finite) % 2 else 0.5 * (finite[len(finite) // 2 - 1]
                                                                      + finite[len(finite) // 2])


def _seed_input(seed: int, vocab_size: int, batch: int, seq_len: int, d_model: int):
    """The input ``depth_profile`` draws for ``seed``: token ids, next-token targets and the random stream
    (standard normal features, RMS about 1) that replaces the embeddings' output, drawn in that order after
    ``torch.manual_seed(10_000 + seed)``."""
    torch.manual_seed(10_000 + seed)
    ids = torch.randint(0, vocab_size, (batch, seq_len))  # [B, T]
    targets = torch.randint(0, vocab_size, (batch, seq_len))  # [B, T]
    stream = torch.randn(batch, seq_len, d_model)  # [B, T, C]
    return ids, targets, stream


def seed_case(norm: str, n_layers: int = 48, seed: int = 0, init_std: float | None = None, d_model: int = 64,
              batch: int = 4, seq_len: int = 16, ffn: str = "swiglu"):
    """One seed of ``depth_profile``, to run by hand: ``(stack, ids, stream)``, the stack it builds for ``seed``
    and the input it feeds it. ``ids`` [B, T] are any token ids (only their shape matters, since their
    embeddings are replaced); ``stream`` [B, T, C] is the random stream entering block 0. Run it with
    ``run_with_trace(stack, ids, patches={"embed": lambda _: stream})``. Leaves the caller's random state alone."""
    with torch.random.fork_rng():
        stack = build_stack(norm, n_layers, seed, init_std, d_model, ffn=ffn)
        ids, _, stream = _seed_input(seed, stack.config.vocab_size, batch, seq_len, d_model)
    return stack, ids, stream


def depth_profile(norm: str, n_layers: int = 48, seeds=(0, 1, 2), init_std: float | None = None,
                  d_model: int = 64, batch: int = 4, seq_len: int = 16, ffn: str = "swiglu") -> DepthProfile:
    """Measure a freshly built ``build_stack(norm, n_layers, seed, init_std, d_model, ffn=ffn)`` once per seed: random
    token ids and next-token targets, with the stream entering block 0 replaced by random vectors of RMS 1 (as
    in chapter 5), one forward and backward pass. Runs on one thread and leaves the caller's random state alone.
    Overflow is measured, not hidden: a stack that overflows float32 reports inf/nan from that block on."""
    if not seeds:
        raise TinyTFInputError("depth_profile needs at least one seed")
    if isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers < 1:
        raise TinyTFInputError(f"n_layers must be a positive integer, got {n_layers!r}")
    profile = DepthProfile(norm, n_layers, 0.02 if init_std is None else init_std, tuple(seeds))
    with torch.random.fork_rng(), one_thread():
        for seed in seeds:
            model = build_stack(norm, n_layers, seed, init_std, d_model, ffn=ffn)
            ids, targets, stream = _seed_input(seed, model.config.vocab_size, batch, seq_len, d_model)
            m = measure_layers(model, ids, targets, stream)
            profile.activation_rms.append(m.activation_rms)
            profile.grad_norm.append(m.grad_norm)
            profile.loss.append(m.loss)
            profile.input_rms.append(stream_rms(stream))
    return profile


LABELS = {"none": "no norm", "layer": "LayerNorm", "rms": "RMSNorm"}


def format_depth_table(profiles, what: str = "activation_rms", blocks=None, spread: bool = True) -> str:
    """One row per block of ``blocks`` (default: every block), one column per profile: the median over seeds
    of ``what`` ("activation_rms": RMS of the stream leaving the block; "grad_norm": the block's weight
    gradient). A last line gives, per column, the largest factor between a seed's value and the median
    (``DepthProfile.spread_factor``); ``spread=False`` leaves that line out. A column whose seeds differ by more than a factor 1.5 is printed to two
    significant figures, the others to three; trailing zeros are kept in both (2.0, 2.10)."""
    if what not in ("activation_rms", "grad_norm"):
        raise TinyTFInputError(f"what must be 'activation_rms' or 'grad_norm', got {what!r}")
    if not profiles:
        raise TinyTFInputError("format_depth_table needs at least one profile")
    depth = min(p.n_layers for p in profiles)
    blocks = list(range(depth)) if blocks is None else list(blocks)
    if any(not 0 <= b < depth for b in blocks):
        raise TinyTFInputError(f"blocks must lie in [0, {depth}), got {blocks}")
    head = "after block" if what == "activation_rms" else "block"
    lines = [f"{head:>12}" + "".join(f"  {LABELS[p.norm]:>10}" for p in profiles)]
    medians = [p.median(what) for p in profiles]
    factors = [p.spread_factor(what, blocks) for p in profiles]
    digits = [2 if f > 1.5 else 3 for f in factors]
    for b in blocks:
        lines.append(f"{b:>12}" + "".join(f"  {_cell(m[b], n):>10}" for m, n in zip(medians, digits)))
    if spread:
        lines.append(f"{'seeds within':>12}" + "".join(f"  {_factor(f):>10}" for f in factors))
    return "\n".join(lines)


def _cell(v: float, digits: int = 3) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf"
    return f"{v:#.{digits}g}".rstrip(".") if v < 10 ** digits else f"{v:.1e}"  # zeros kept: 2.10, 0.250


def _factor(f: float) -> str:
    if math.isnan(f):
        return "-"
    if f < 1.5:
        return f"×{f:.2f}"
    return f"×{f:.2g}" if f < 10 else f"×{float(f'{f:.2g}'):,.0f}"  # two significant figures


@torch.no_grad()
def mean_shares(model: nn.Module, ids) -> dict:
    """For every norm of ``model`` (by module name), two averages over the tokens of ``ids`` of the vector x that
    norm receives: ``"mean_share"``, |mean(x)| / RMS(x), the share of a token's size that LayerNorm's centring
    removes and RMSNorm keeps (0: already centred; 1: a constant vector; about sqrt(2 / (pi C)) for random
    vectors of C independent features), ``"rms"``, RMS(x), the size of what the norm receives, and
    ``"offset_share"``, the RMS over the features of the average vector (x averaged over the tokens) divided by
    the average RMS(x): the share of a token's size that an offset shared by all tokens accounts for (0: no
    shared offset; 1: every token is the same vector)."""
    found, handles = {}, []
    for name, module in model.named_modules():
        if is_norm(module):
            def hook(_module, inputs, _output, name=name):
                x = inputs[0].float()
                rms = x.pow(2).mean(-1).sqrt().clamp_min(1e-12)
                shared = x.reshape(-1, x.shape[-1]).mean(0)  # [C]: the average token vector
                found[name] = {"mean_share": (x.mean(-1).abs() / rms).mean().item(), "rms": rms.mean().item(),
                               "offset_share": (shared.pow(2).mean().sqrt() / rms.mean()).item()}
            handles.append(module.register_forward_hook(hook))
    if not handles:
        raise TinyTFInputError("mean_shares: the model has no RMSNorm or LayerNorm")
    try:
        model(ids)
    finally:
        for h in handles:
            h.remove()
    return found


class FixedScaleNorm(nn.Module):
    """A norm that divides every token by the same constant ``scale`` instead of by its own RMS (or standard
    deviation): ``x / scale * gamma`` (``centre``: ``(x - mean) / scale * gamma``; plus beta if given)."""

    def __init__(self, weight, scale: float, centre: bool = False, bias=None):
        super().__init__()
        self.weight = nn.Parameter(weight.detach().clone())
        self.bias = None if bias is None else nn.Parameter(bias.detach().clone())
        self.scale, self.centre = float(scale), centre
        self.hook_out = Hook()

    def forward(self, x):
        if self.centre:
            x = x - x.mean(-1, keepdim=True)
        y = x / self.scale * self.weight
        return self.hook_out(y if self.bias is None else y + self.bias)


def _is_final(name: str) -> bool:
    """Whether the module called ``name`` is a stack's final norm (the one before the LM head)."""
    return name.rsplit(".", 1)[-1] == "final_norm"


def _norm_sizes(model: nn.Module, ids, only=None, keep_final: bool = False) -> tuple[dict, list]:
    """{norm name: mean over the tokens of ``ids`` of the RMS (standard deviation) that norm computes} and the
    norms' names in the order the forward pass calls them; ``only``: measure just these names; ``keep_final``:
    leave out the final norm."""
    sizes, order, handles = {}, [], []
    for name, module in model.named_modules():
        if (isinstance(module, (RMSNorm, LayerNorm)) and (only is None or name in only)
                and not (keep_final and _is_final(name))):
            def hook(mod, inputs, _output, name=name):
                x = inputs[0]
                spread = x.var(-1, unbiased=False) if isinstance(mod, LayerNorm) else x.pow(2).mean(-1)
                sizes[name] = (spread + mod.eps).sqrt().mean().item()
                order.append(name)
            handles.append(module.register_forward_hook(hook))
    if not handles:
        raise TinyTFInputError("fixed_scale_norms: the model has no RMSNorm or LayerNorm")
    try:
        model(ids)
    finally:
        for h in handles:
            h.remove()
    return sizes, order


def _fix(model: nn.Module, sizes: dict) -> None:
    """Replace, in place, each norm named in ``sizes`` by a FixedScaleNorm dividing by its size."""
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if full in sizes and isinstance(child, (RMSNorm, LayerNorm)):
                setattr(module, child_name, FixedScaleNorm(child.weight, sizes[full], isinstance(child, LayerNorm),
                                                           getattr(child, "bias", None)))


@torch.no_grad()
def fixed_scale_norms(model: nn.Module, ids, sequential: bool = False, keep_final: bool = False) -> nn.Module:
    """A copy of ``model`` whose every RMSNorm (LayerNorm) divides by one constant: the mean, over the tokens of
    ``ids``, of the RMS (standard deviation) that norm computes on them. On average the tokens keep their size;
    what is lost is the per-token re-scaling, each token's division by its own size.

    By default every constant is measured in one pass of the unmodified model, so only the first norm is
    calibrated on the inputs it receives in the copy. With ``sequential=True`` the norms are fixed one at a time in
    the order the forward pass calls them, each calibrated on the input it actually receives once the norms before
    it already divide by their constants (one pass per norm). ``keep_final=True`` leaves the final norm (before
    the LM head) as it is and fixes only the blocks' norms."""
    sizes, order = _norm_sizes(model, ids, keep_final=keep_final)
    new = copy.deepcopy(model)
    if not sequential:
        _fix(new, sizes)
        return new
    for name in dict.fromkeys(order):  # each norm once, in call order
        size, _ = _norm_sizes(new, ids, only={name})
        _fix(new, size)
    return new


class ShiftedNorm(nn.Module):
    """An RMSNorm that first subtracts, from each token ``x``, its component along the all-ones direction ``u``
    (``x - (x.u) u``: the mean, as LayerNorm's centring) or, with ``direction`` given, the same amount along that
    unit vector instead (``x - (x.u) direction``), then divides by the RMS of the token as it came in:
    ``(x - (x.u) d) / RMS(x) * gamma``. The divisor is not changed, so only the subtraction differs from the
    trained RMSNorm (LayerNorm would also divide by the standard deviation)."""

    def __init__(self, weight, eps: float, direction=None):
        super().__init__()
        self.weight = nn.Parameter(weight.detach().clone())
        self.eps = eps
        c = weight.shape[0]
        self.register_buffer("u", torch.full((c,), 1 / math.sqrt(c)))
        self.register_buffer("d", self.u.clone() if direction is None else direction.detach().clone())
        self.hook_out = Hook()

    def forward(self, x):
        rms = x.pow(2).mean(-1, keepdim=True).add(self.eps).sqrt()  # the token's own RMS, as trained
        along_u = (x * self.u).sum(-1, keepdim=True)  # x.u = mean * sqrt(C)
        return self.hook_out((x - along_u * self.d) / rms * self.weight)


def shifted_norms(model: nn.Module, random_seed: int | None = None) -> nn.Module:
    """A copy of ``model`` whose every RMSNorm becomes a :class:`ShiftedNorm`: with ``random_seed`` None it
    subtracts each token's mean and keeps the RMS divisor (centring only); with a seed, each norm instead
    subtracts the same amount (``|mean| * sqrt(C)`` in length, per token) along a random unit direction of its
    own, drawn with a generator seeded by ``random_seed`` (a size-matched control for the centring)."""
    gen = None if random_seed is None else torch.Generator().manual_seed(random_seed)

    def make(norm):
        if not isinstance(norm, RMSNorm):
            return norm
        direction = None
        if gen is not None:
            direction = torch.randn(norm.weight.shape[0], generator=gen)
            direction = direction / direction.norm()
        return ShiftedNorm(norm.weight, norm.eps, direction)

    return _replace(copy.deepcopy(model), make)


def gain_only_norms(model: nn.Module, keep_final: bool = False) -> nn.Module:
    """A copy of ``model`` whose every RMSNorm (LayerNorm) keeps its gain gamma (and a LayerNorm its centring and
    beta) but divides by nothing: ``x * gamma``, a :class:`FixedScaleNorm` with scale 1. ``keep_final=True``
    leaves the final norm (before the LM head) as it is. Between ``fixed_scale_norms`` (divide by a constant) and
    ``remove_norms`` (no gamma either), it separates the constant's effect from gamma's."""
    names = {name for name, m in model.named_modules()
             if isinstance(m, (RMSNorm, LayerNorm)) and not (keep_final and _is_final(name))}
    if not names:
        raise TinyTFInputError("gain_only_norms: the model has no RMSNorm or LayerNorm")
    new = copy.deepcopy(model)
    _fix(new, dict.fromkeys(names, 1.0))
    return new
