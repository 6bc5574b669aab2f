"""Seed 002's shape chain (B=2, T=4, C=8, H=2, D=4, Cff=32), generated from a real trace.

The "shape" column is the shape of the traced tensors; the "mixes tokens?" column is
*measured*: for each stage, one position of the stage's input tensors is perturbed (a patch
on the trace hook) and we look at which positions of the stage's output move. If a position
other than the perturbed one moves, the stage mixes tokens."""
from __future__ import annotations

import torch

from ..config import TinyConfig
from ..errors import TinyTFInputError
from ..models import TinyTransformer
from ..seeding import seed_everything
from .common import outputs_shape
from .stages import block_stages

HEADER = ("stage", "shape", "mixes tokens?")


def _perturb_position(pos: int):
    """Patch function: add a fixed, non-constant ramp to position ``pos`` (axis -2) of a tensor."""

    def patch(x):
        x = x.clone()
        ramp = torch.linspace(0.5, 1.5, x.shape[-1], dtype=x.dtype)
        x[..., pos, :] = x[..., pos, :] + ramp
        return x

    return patch


def _moved_positions(base: torch.Tensor, other: torch.Tensor, atol: float = 1e-6) -> set:
    diff = (base - other).abs().nan_to_num(0.0, posinf=0.0, neginf=0.0)  # -inf == -inf stays 0
    same_inf = torch.isinf(base) & torch.isinf(other) & (base == other)
    diff = torch.where(same_inf, torch.zeros_like(diff), diff)
    moved = diff.amax(dim=tuple(d for d in range(diff.dim()) if d != diff.dim() - 2)) > atol
    return {int(i) for i in torch.nonzero(moved).flatten()}


def measure_mixing(model, ids, stages=None, layer: int = 0) -> dict:
    """{stage key: True if the stage's output at some position moves when the stage's input
    at a *different* position is perturbed}. Uses trace patches; one forward pass per stage and position."""
    with torch.no_grad():
        _, base = model.run_with_trace(ids)
        stages = stages or block_stages(base, layer, getattr(model, "config", None))
        T = base[stages[-1].outputs[0]].shape[-2]
        result = {}
        for st in stages:
            mixes = False
            for pos in range(T):
                patches = {name: _perturb_position(pos) for name in st.inputs}
                _, tr = model.run_with_trace(ids, patches=patches)
                moved = set()
                for out in st.outputs:
                    moved |= _moved_positions(base[out], tr[out])
                if moved - {pos}:
                    mixes = True
                    break
            result[st.key] = mixes
    return result


def shape_chain(B: int = 2, T: int = 4, C: int = 8, n_heads: int = 2, D: int = 4, d_ff: int = 32, seed: int = 0,
                with_key: bool = False, **config_changes) -> list:
    """Build a real tiny TinyTransformer (d_model=C, n_heads, d_ff, other settings from
    TinyConfig or ``config_changes``, e.g. ffn="relu"), run B random sequences of T byte tokens
    through it with tracing, and return one row per stage of block 0:
    (stage, shape of the traced tensor(s), "yes"/"no" measured mixing). ``with_key=True`` adds
    the stage's key (the name ``measure_mixing`` returns) after its label."""
    if C != n_heads * D:
        raise TinyTFInputError(f"C must equal n_heads * D (the heads split C); got C={C}, n_heads={n_heads}, D={D}")
    cfg = TinyConfig(**dict(dict(d_model=C, n_heads=n_heads, d_ff=d_ff, n_layers=1, max_seq_len=max(T, 8)),
                            **config_changes))
    seed_everything(seed)
    model = TinyTransformer(cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (B, T), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        _, trace = model.run_with_trace(ids)
    stages = block_stages(trace, 0, cfg)
    mixing = measure_mixing(model, ids, stages)
    rows = []
    for st in stages:
        row = (st.name, outputs_shape(trace, st.outputs), "yes" if mixing[st.key] else "no")
        rows.append(row[:1] + (st.key,) + row[1:] if with_key else row)
    return rows


def format_shape_chain(rows) -> str:
    """Plain-text table of shape_chain rows (for print(); nbval compares it exactly)."""
    header = HEADER if not rows or len(rows[0]) == 3 else HEADER[:1] + ("key",) + HEADER[1:]
    rows = [header] + [tuple(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
