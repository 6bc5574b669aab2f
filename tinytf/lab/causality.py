"""The causality check: change the token at position t and see
which positions' logits move. In a decoder-only model nothing before t may move."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from ..attention import Attention
from ..errors import TinyTFInputError
from ..models import check_ids


@dataclass
class CausalityResult:
    position: int  # the position whose token was changed
    old_token: int
    new_token: int
    max_change: list  # per position: max |logits_after - logits_before|

    @property
    def ok(self) -> bool:
        """True when no position before ``position`` changed at all."""
        return all(c == 0.0 for c in self.max_change[: self.position])

    def report(self) -> str:
        lines = [f"changed token at position {self.position}: {self.old_token} -> {self.new_token}",
                 "position  max |change in logits|"]
        for t, c in enumerate(self.max_change):
            if t < self.position:
                mark = "unchanged" if c == 0.0 else "MOVED (sees the future!)"
            else:
                mark = "changed here" if t == self.position else "may change (sees position %d)" % self.position
            lines.append(f"{t:>8}  {c:>10.3g}   {mark}")
        verdict = ("causal ✅: no earlier position saw the change" if self.ok
                   else "NOT causal ✗: an earlier position saw a later token")
        return "\n".join(lines + [verdict])


@torch.no_grad()
def causality_check(model, ids, position: int = -1, new_token=None) -> CausalityResult:
    """Replace ids[position] (by default with (id + 1) mod vocab) and compare logits position by position."""
    ids, _ = check_ids(ids, model.config)
    ids = ids[:1]  # one sequence
    T = ids.shape[1]
    if not -T <= position < T:  # a silent wrap-around would check the wrong position
        raise TinyTFInputError(f"position {position} is outside a sequence of {T} tokens; expected {-T}..{T - 1}")
    t = position % T
    old = int(ids[0, t])
    new = (old + 1) % model.config.vocab_size if new_token is None else int(new_token)
    changed = ids.clone()
    changed[0, t] = new
    model.eval()
    before, after = model(ids)[0], model(changed)[0]  # [T, V] each
    diff = (after - before).abs().amax(-1).tolist()
    return CausalityResult(t, old, new, diff)


def causality_sweep(model, ids) -> list:
    """Run the check for every position t; returns one CausalityResult per t."""
    ids, _ = check_ids(ids, model.config)
    return [causality_check(model, ids, t) for t in range(ids.shape[1])]


def _moved(r) -> list:
    """The earlier positions whose output changed when position ``r.position`` of the input changed."""
    return [t for t, c in enumerate(r.max_change[: r.position]) if c != 0.0]


def sweep_report(results, broken=None) -> str:
    """One line per changed position: how many earlier positions moved.

    With ``broken`` (the sweep of the same ids under a broken mask, e.g. inside ``broken_mask``), the two sweeps
    side by side: per changed position, the count under each mask and the positions that moved under the broken
    one, then one verdict per mask."""
    if broken is None:
        lines = ["changed position  earlier positions that moved"]
        for r in results:
            moved = _moved(r)
            lines.append(f"{r.position:>16}  {len(moved)} of {r.position}" + ("" if not moved else f"  {moved}"))
        ok = all(r.ok for r in results)
        lines.append("causal ✅ for every position" if ok else "NOT causal ✗")
        return "\n".join(lines)
    if [r.position for r in results] != [b.position for b in broken]:
        raise TinyTFInputError("sweep_report: the two sweeps must change the same positions")
    lines = [" changed  earlier positions that moved", "position  real mask   broken mask"]
    for r, b in zip(results, broken):
        t, moved_broken = r.position, _moved(b)
        lines.append(f"{t:>8}  {len(_moved(r))} of {t:<7}{len(moved_broken)} of {t}  {moved_broken or ''}".rstrip())
    lines.append("real mask: " + ("causal ✅ for every position" if all(r.ok for r in results) else "NOT causal ✗")
                 + " | broken mask: " + ("causal ✅" if all(b.ok for b in broken) else "NOT causal ✗"))
    return "\n".join(lines)


def off_by_one_mask(n_queries, n_keys, offset=0, device=None):
    """A classic bug: `k <= q + 1` lets every position peek at the next token."""
    q = torch.arange(offset, offset + n_queries, device=device)[:, None]
    k = torch.arange(n_keys, device=device)[None, :]
    return k <= q + 1


@contextlib.contextmanager
def broken_mask(model, mask_fn=off_by_one_mask):
    """Temporarily give every causal attention of ``model`` a wrong mask (to show the check catching it)."""
    layers = [m for m in model.modules() if isinstance(m, Attention) and m.causal]
    saved = [m.mask_fn for m in layers]
    try:
        for m in layers:
            m.mask_fn = mask_fn
        yield model
    finally:
        for m, fn in zip(layers, saved):
            m.mask_fn = fn
