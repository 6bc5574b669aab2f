"""Ablation: remove what one sublayer writes into the residual stream and measure what the model loses.

    from tinytf import ablation
    sites = ablation.sites(model, "ffn")                  # ["blocks.0.ffn.out", ..., "blocks.3.ffn.out"]
    sites = ablation.sites(model, "attn", blocks=[2])     # ["blocks.2.attn.out"]
    zero = ablation.ZeroAblation(sites)                   # each output replaced by zeros
    means = ablation.site_means(model, inputs, sites)     # {site: [C]} its mean over every position of inputs
    mean = ablation.MeanAblation(means)                   # each output replaced by that mean vector
    centred = ablation.CentredAblation(means)             # each output minus that mean vector
    logits = mean.run(model, ids)                         # one forward pass with the replacement
    bits = ablation.window_bits(model, inputs, targets, mean)   # [n] bits per byte of each window
    kl = ablation.window_kl(model, inputs, mean)          # [n] mean KL(intact || ablated) per window, in bits
    bits = ablation.ffn_patched_bits(model, inputs, targets, lambda a: a * (a <= 1))  # SiLU(gate) > 1 set to 0
    whole = ablation.ZeroAblation(ablation.block_sites(model, 2))  # block 2 becomes the identity
    results = ablation.load_results()                     # text-4l, 29 conditions, measured once and shipped
    moved = ablation.logprob_change(logits, new_logits)   # [...] largest |change| of a log-probability per row

A sublayer's output ``blocks.{i}.attn.out`` / ``blocks.{i}.ffn.out`` is what the pre-norm block adds to the
stream (``U = H + Attn(Norm1(H))``, ``H' = U + FFN(Norm2(U))``), so replacing it leaves the residual path
itself intact. The replacement is a function chosen when the ablation is constructed and applied through the
model's hook points (``run_with_patches``); the blocks' forward passes are the ordinary ones.

Zeroing is the crudest removal: the later layers then read a stream that lacks a vector they always saw, so
part of the damage is the stream leaving its usual distribution. Mean-ablation replaces the output by its
average over many positions instead: what is removed is only the part that depends on the particular input.
"""
from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from pathlib import Path

import torch
from torch.nn import functional as F

from ..errors import TinyTFInputError

SUBLAYERS = ("attn", "ffn")
RESULTS_PATH = Path(__file__).resolve().parents[1] / "checkpoints" / "ablation-text-4l.json"
SITE = re.compile(r"^blocks\.(\d+)\.(attn|ffn)\.out$")


def _n_blocks(model) -> int:
    blocks = getattr(model, "blocks", None)
    if blocks is None or not hasattr(model, "run_with_patches"):
        raise TinyTFInputError(f"ablation: expected a decoder-only TinyTransformer, got {type(model).__name__}")
    return len(blocks)


def sites(model, sublayer: str, blocks=None) -> list:
    """The hook names of ``sublayer`` ("attn" or "ffn") in the listed ``blocks`` (None: every block)."""
    if sublayer not in SUBLAYERS:
        raise TinyTFInputError(f"ablation.sites: sublayer must be one of {SUBLAYERS}, got {sublayer!r}")
    n = _n_blocks(model)
    blocks = range(n) if blocks is None else list(blocks)
    bad = [b for b in blocks if not isinstance(b, int) or not 0 <= b < n]
    if bad or not blocks:
        raise TinyTFInputError(f"ablation.sites: blocks must be a non-empty list of indices 0..{n - 1}, got {blocks}")
    return [f"blocks.{b}.{sublayer}.out" for b in blocks]


def block_sites(model, block: int) -> list:
    """Both sublayer outputs of one block: zeroing them turns the pre-norm block into the identity (H' = H)."""
    return sites(model, "attn", [block]) + sites(model, "ffn", [block])


def _check_sites(names) -> list:
    names = [names] if isinstance(names, str) else list(names)
    if not names:
        raise TinyTFInputError("ablation: no site given (use ablation.sites(model, 'attn' or 'ffn'))")
    bad = [s for s in names if not isinstance(s, str) or not SITE.match(s)]
    if bad:
        raise TinyTFInputError(f"ablation: {bad} are not sublayer outputs; a site looks like 'blocks.0.ffn.out'")
    return names


class Ablation:
    """Replace the output of each site by ``replacement(site)(output)``. Subclasses choose the replacement."""

    def __init__(self, site_names):
        self.sites = _check_sites(site_names)

    def replacement(self, site: str):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def patches(self) -> dict:
        """{site: function tensor -> tensor}, for ``model.run_with_patches(ids, patches=...)``."""
        return {s: self.replacement(s) for s in self.sites}

    @torch.no_grad()
    def run(self, model, ids):
        """The model's logits with the ablation applied (``ids`` [T] or [B, T])."""
        n = _n_blocks(model)
        too_deep = [s for s in self.sites if int(SITE.match(s).group(1)) >= n]
        if too_deep:
            raise TinyTFInputError(f"ablation: {too_deep} name blocks the model does not have (it has {n})")
        return model.run_with_patches(ids, patches=self.patches())

    def __repr__(self):
        return f"{type(self).__name__}({self.sites})"


class ZeroAblation(Ablation):
    """Each site's output replaced by zeros: the sublayer adds nothing to the stream."""

    def replacement(self, site: str):
        return torch.zeros_like


class MeanAblation(Ablation):
    """Each site's output replaced by a fixed vector [C] (its mean over many positions, from ``site_means``):
    the sublayer still adds its average contribution, but nothing that depends on the input."""

    def __init__(self, means: dict):
        name = type(self).__name__
        if not isinstance(means, dict) or not means:
            raise TinyTFInputError(f"{name}: expected {{site: mean vector [C]}}, e.g. from ablation.site_means")
        super().__init__(list(means))
        self.means = {}
        for s, m in means.items():
            m = torch.as_tensor(m)
            if m.dim() != 1 or not m.is_floating_point():
                raise TinyTFInputError(f"{name}: the mean of {s} must be a float vector [C], got "
                                       f"{list(m.shape)} of {m.dtype}")
            self.means[s] = m.detach().clone()

    def apply(self, x, mean):
        """The site's new output from its output ``x`` [..., C] and its mean [C]: the mean at every position."""
        return mean.expand_as(x)

    def replacement(self, site: str):
        mean = self.means[site]

        def replace(x):
            if x.shape[-1] != mean.shape[0]:
                raise TinyTFInputError(f"{type(self).__name__}: the mean of {site} has {mean.shape[0]} features, "
                                       f"the model's output has {x.shape[-1]}")
            return self.apply(x, mean.to(x.dtype))

        return replace


class CentredAblation(MeanAblation):
    """Each site's output minus a fixed vector [C] (its mean, from ``site_means``): only the constant part the
    sublayer adds at every position is removed, the input-dependent part stays. Zero-ablation removes both,
    mean-ablation only the input-dependent part."""

    def apply(self, x, mean):
        return x - mean


class ResampleAblation(Ablation):
    """Each site's output replaced by a stored activation of the same shape, the intact model's output at that
    site on other inputs (resample-ablation, or patching), e.g. from ``resample_sources``. The model must then
    run on exactly the inputs the sources were aligned with, in one batch."""

    def __init__(self, sources: dict):
        if not isinstance(sources, dict) or not sources:
            raise TinyTFInputError("ResampleAblation: expected {site: activations [n, T, C]}, e.g. from "
                                   "ablation.resample_sources")
        super().__init__(list(sources))
        self.sources = {s: torch.as_tensor(a).detach() for s, a in sources.items()}

    def replacement(self, site: str):
        source = self.sources[site]

        def to_source(x):
            if x.shape != source.shape:
                raise TinyTFInputError(f"ResampleAblation: the source of {site} is {list(source.shape)}, the "
                                       f"model's output {list(x.shape)} (run all the windows in one batch)")
            return source.to(x.dtype)

        return to_source


@torch.no_grad()
def resample_sources(model, inputs, site_names, shift: int = 1) -> dict:
    """{site: [n, T, C]}: each site's output on the intact model, rolled by ``shift`` windows, so that window i
    receives what the sublayer wrote on window i - shift (for ``ResampleAblation``)."""
    inputs = _check_windows(inputs)
    names = _check_sites(site_names)
    model.eval()
    _, trace = model.run_with_trace(inputs, names=names)
    return {s: trace[s].roll(shift, dims=0) for s in names}


def _check_windows(inputs, targets=None):
    inputs = torch.as_tensor(inputs)
    if inputs.dim() != 2 or inputs.is_floating_point() or inputs.numel() == 0:
        raise TinyTFInputError(f"ablation: expected token ids [n, T], got {list(inputs.shape)} of {inputs.dtype}")
    if targets is not None and torch.as_tensor(targets).shape != inputs.shape:
        raise TinyTFInputError(f"ablation: targets {list(torch.as_tensor(targets).shape)} differ from inputs "
                               f"{list(inputs.shape)}")
    return inputs


@torch.no_grad()
def site_means(model, inputs, site_names, batch_size: int = 32) -> dict:
    """{site: [C] float32}: the mean of each site's output over every position of every window of ``inputs``
    ([n, T] ids), measured on the intact model."""
    inputs = _check_windows(inputs)
    names = _check_sites(site_names)
    model.eval()
    sums, count = {s: 0.0 for s in names}, 0
    for i in range(0, len(inputs), batch_size):
        _, trace = model.run_with_trace(inputs[i:i + batch_size], names=names)
        missing = [s for s in names if s not in trace]
        if missing:
            raise TinyTFInputError(f"site_means: the model has no {missing}")
        for s in names:
            sums[s] = sums[s] + trace[s].double().sum(dim=(0, 1))
        count += inputs[i:i + batch_size].numel()
    return {s: (sums[s] / count).float() for s in names}


@torch.no_grad()
def window_bits(model, inputs, targets, ablation: Ablation | None = None, batch_size: int = 32) -> torch.Tensor:
    """[n] float64: the mean cross-entropy in bits per byte of each window (every position counts), with
    ``ablation`` applied (None: the intact model). ``inputs``, ``targets``: [n, T] ids, as from
    ``textdata.eval_windows``."""
    inputs = _check_windows(inputs, targets)
    targets = torch.as_tensor(targets)
    model.eval()
    out = []
    for i in range(0, len(inputs), batch_size):
        x = inputs[i:i + batch_size]
        logits = model(x) if ablation is None else ablation.run(model, x)
        ce = F.cross_entropy(logits.transpose(1, 2), targets[i:i + batch_size], reduction="none")  # [b, T]
        out.append(ce.double().mean(-1) / math.log(2))
    return torch.cat(out)


@torch.no_grad()
def ffn_patched_bits(model, inputs, targets, patch, site: str = "act", per_block: bool = False) -> float:
    """Bits per byte of ``model`` on ``inputs`` against ``targets`` ([n, T] ids, as from ``textdata.eval_windows``;
    the mean over every position) with ``patch`` applied at ``blocks.{b}.ffn.{site}`` in every block b. The default
    site ``"act"`` is the FFN's activation: SiLU(gate) in SwiGLU, what multiplies ``up``. ``patch(a)`` returns what
    replaces the traced tensor ``a`` ([n, T, d_ff]); with ``per_block=True`` it is called as ``patch(a, b)``, with
    the block's index. All windows run in one forward pass, so a patch may hold tensors of ``a``'s shape, e.g. masks
    read from ``model.run_with_trace(inputs)``. ``patch=lambda a: a`` gives the intact model's bits per byte."""
    inputs = _check_windows(inputs, targets)
    if not isinstance(site, str) or "." in site or not site:
        raise TinyTFInputError(f"ffn_patched_bits: site is the last part of an FFN hook name ('act', 'post', ...), "
                               f"got {site!r}")
    if not callable(patch):
        raise TinyTFInputError(f"ffn_patched_bits: patch must be a function tensor -> tensor, got "
                               f"{type(patch).__name__}")
    if per_block:
        patches = {f"blocks.{b}.ffn.{site}": lambda a, b=b: patch(a, b) for b in range(_n_blocks(model))}
    else:
        patches = {f"blocks.{b}.ffn.{site}": patch for b in range(_n_blocks(model))}
    logits = model.run_with_patches(inputs, patches=patches)
    return F.cross_entropy(logits.transpose(1, 2), torch.as_tensor(targets)).item() / math.log(2)


@torch.no_grad()
def next_byte_bits(model, x) -> torch.Tensor:
    """[B, T-1] float32: entry j is the cost in bits of byte j + 1 of each row of ``x`` ([B, T] ids), predicted by
    the intact model from bytes 0..j."""
    x = torch.as_tensor(x)
    if x.dim() != 2 or x.shape[1] < 2:
        raise TinyTFInputError(f"next_byte_bits: need [B, T] ids with T >= 2, got shape {list(x.shape)}")
    logits = model(x)
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), x[:, 1:], reduction="none") / math.log(2)


@torch.no_grad()
def intact_logprobs(model, inputs, batch_size: int = 32) -> torch.Tensor:
    """[n, T, V] float64: the intact model's next-token log-probabilities on ``inputs`` ([n, T] ids), the
    reference of ``window_kl`` and ``window_scores``."""
    inputs = _check_windows(inputs)
    model.eval()
    return torch.cat([F.log_softmax(model(inputs[i:i + batch_size]).double(), -1)
                      for i in range(0, len(inputs), batch_size)])


def _kl_bits(reference, logits) -> torch.Tensor:
    """[b]: per window, the mean over positions of KL(P || Q) in bits; P from ``reference`` log-probs [b, T, V],
    Q from ``logits`` [b, T, V]."""
    q = F.log_softmax(logits.double(), -1)
    return (reference.exp() * (reference - q)).sum(-1).mean(-1) / math.log(2)


@torch.no_grad()
def window_scores(model, inputs, targets, ablation: Ablation | None = None, reference=None,
                  batch_size: int = 32) -> dict:
    """{"bits": [n], "kl": [n]} float64 from one forward pass per batch: ``window_bits`` and ``window_kl`` of the
    same windows. ``reference``: the intact model's log-probabilities (``intact_logprobs``), computed if None."""
    inputs = _check_windows(inputs, targets)
    targets = torch.as_tensor(targets)
    reference = intact_logprobs(model, inputs, batch_size) if reference is None else torch.as_tensor(reference)
    if reference.shape[:2] != inputs.shape:
        raise TinyTFInputError(f"ablation: reference log-probs {list(reference.shape)} do not match the windows "
                               f"{list(inputs.shape)}")
    model.eval()
    bits, kl = [], []
    for i in range(0, len(inputs), batch_size):
        x = inputs[i:i + batch_size]
        logits = model(x) if ablation is None else ablation.run(model, x)
        ce = F.cross_entropy(logits.transpose(1, 2), targets[i:i + batch_size], reduction="none")  # [b, T]
        bits.append(ce.double().mean(-1) / math.log(2))
        kl.append(_kl_bits(reference[i:i + batch_size], logits))
    return {"bits": torch.cat(bits), "kl": torch.cat(kl)}


@torch.no_grad()
def window_kl(model, inputs, ablation: Ablation | None = None, reference=None, batch_size: int = 32) -> torch.Tensor:
    """[n] float64: for each window, the mean over its positions of KL(P || Q) in bits, where P is the intact
    model's next-token distribution and Q the ablated model's. 0 when nothing is removed. Unlike the change in
    bits per byte, it does not depend on which byte actually comes next: it measures how far the whole
    distribution moves."""
    inputs = _check_windows(inputs)
    return window_scores(model, inputs, torch.zeros_like(inputs), ablation, reference, batch_size)["kl"]


def logprob_change(logits, new_logits) -> torch.Tensor:
    """[...]: for each row of two logit tensors [..., V], the largest absolute change of a log-probability,
    ``max_v |log_softmax(new)_v - log_softmax(old)_v|``. Unlike the largest change of a raw logit, it ignores a
    shift common to all V logits of a row, which leaves the softmax unchanged; and differences of log-probabilities
    equal differences of logits, so it can be compared with the gap between the top two logits."""
    logits, new_logits = torch.as_tensor(logits), torch.as_tensor(new_logits)
    if logits.shape != new_logits.shape or logits.dim() < 1 or logits.shape[-1] < 2:
        raise TinyTFInputError(f"logprob_change: expected two logit tensors of the same shape [..., V], V >= 2; "
                               f"got {list(logits.shape)} and {list(new_logits.shape)}")
    old = F.log_softmax(logits.double(), dim=-1)
    new = F.log_softmax(new_logits.double(), dim=-1)
    return (new - old).abs().amax(-1)


def conditions(model, means: dict | None = None, per_block: bool = True) -> dict:
    """{label: Ablation or None}: "intact"; "attn zero", "attn mean", "ffn zero", "ffn mean" (every block at
    once); with ``per_block``, also "block {i} attn zero" etc. (one sublayer of one block) and "block {i} whole
    zero" / "block {i} whole mean" (both sublayers of block i: zeroed, the block is the identity). ``means`` (from
    ``site_means`` over every site) is needed for the mean-ablations; without it they are left out."""
    out = {"intact": None}
    n = _n_blocks(model)
    groups = [(None, "")] + ([([b], f"block {b} ") for b in range(n)] if per_block else [])
    for blocks, prefix in groups:
        for sub in SUBLAYERS:
            names = sites(model, sub, blocks)
            out[f"{prefix}{sub} zero"] = ZeroAblation(names)
            if means is not None:
                out[f"{prefix}{sub} mean"] = MeanAblation({s: means[s] for s in names})
    if per_block:
        for b in range(n):
            names = block_sites(model, b)
            out[f"block {b} whole zero"] = ZeroAblation(names)
            if means is not None:
                out[f"block {b} whole mean"] = MeanAblation({s: means[s] for s in names})
    return out


def summarise(bits: dict, groups: int) -> dict:
    """{label: {"mean": bits/byte over all windows, "groups": [mean of each of ``groups`` consecutive equal
    groups of windows]}} from {label: [n] per-window bits}."""
    out = {}
    for label, b in bits.items():
        b = torch.as_tensor(b, dtype=torch.float64)
        if groups < 1 or len(b) % groups:
            raise TinyTFInputError(f"summarise: {len(b)} windows do not split into {groups} equal groups")
        out[label] = {"mean": float(b.mean()), "groups": b.view(groups, -1).mean(-1).tolist()}
    return out


def format_ablation_table(summary: dict, kl: dict, labels, legend: bool = False) -> str:
    """Plain text, one row per label of ``summarise`` output ``summary``: bits per byte over all windows and per
    quarter, the range of the quarters, and for labels in ``kl`` (a ``summarise`` of the KL divergences) the cost
    against ``summary["intact"]`` and the mean KL [lowest, highest quarter]; ``legend`` explains the columns.
    Starts with an empty line."""
    missing = [label for label in labels if label not in summary]
    if "intact" not in summary or missing:
        raise TinyTFInputError(f"format_ablation_table: no summary for {missing or ['intact']}; have {sorted(summary)}")
    intact = summary["intact"]["mean"]
    lines = ["", f"{'removed':22} {'all 256':>7}   {'quarters 0–3':^23}   {'range':>5}   {'cost':>5}   "
                 f"{'KL [quarters]':>17}"]
    for label in labels:
        s = summary[label]
        quarters_ = " ".join(f"{v:5.2f}" for v in s["groups"])
        row = f"{label:22} {s['mean']:7.2f}   {quarters_}   {max(s['groups']) - min(s['groups']):5.2f}"
        if label in kl:
            k = kl[label]
            row += f"   {s['mean'] - intact:+5.2f}   {k['mean']:5.2f} [{min(k['groups']):.2f}, {max(k['groups']):.2f}]"
        lines.append(row)
    if legend:
        lines.append("range: highest minus lowest quarter; cost: all 256 minus intact (bits per byte);\n"
                     "KL: KL(intact ‖ removed) in bits, mean over all 256 [lowest, highest quarter]")
    return "\n".join(lines)


def format_cost_table(summary: dict, labels, reference: str = "intact") -> str:
    """Plain text, the slim form of ``format_ablation_table``: one row per label of ``summarise`` output
    ``summary`` (a ``{"mean": ...}`` entry is enough), its bits per byte over all windows and the change against
    ``summary[reference]`` (positive: worse than the reference). The change is the difference of the two printed,
    rounded values, so a reader's subtraction of the printed columns gives it. Starts with an empty line."""
    missing = [label for label in [reference, *labels] if label not in summary]
    if missing:
        raise TinyTFInputError(f"format_cost_table: no summary for {missing}; have {sorted(summary)}")
    base = Decimal(f"{summary[reference]['mean']:.2f}")  # as printed
    lines = ["", f"{'variant':22} {'bits per byte':>13} {'change':>8}"]
    for label in labels:
        mean = summary[label]["mean"]
        change = "" if label == reference else f"{Decimal(f'{mean:.2f}') - base:+8.2f}"
        lines.append(f"{label:22} {mean:13.2f} {change:>8}".rstrip())
    return "\n".join(lines)


def load_results(path=None) -> dict:
    """The ablation results shipped with the package (scripts/measure_ablation.py wrote them): ``"bits"``
    {label: [256] per-window bits per byte of text-4l on its held-out windows, for 29 conditions}, ``"kl"``
    {label: [256] per-window mean KL(intact || ablated) in bits, same conditions},
    ``"means"`` {site: [C] mean output over every position of those windows}, ``"groups"`` (the quarters)."""
    path = Path(path) if path is not None else RESULTS_PATH
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TinyTFInputError(f"{path}: not found; run python scripts/measure_ablation.py to measure it") from None
