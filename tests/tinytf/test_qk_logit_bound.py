"""tinytf.lab.frontier.qk_logit_bound: the bound per-head QK-norm's gains put on every attention logit, and the
recorded QK-norm runs of chapter 11 that carry it."""
import torch

import tinytf
from tinytf import TinyConfig
from tinytf.lab import frontier


def test_bound_is_sqrt_d_at_unit_gains_and_holds_for_grown_gains():
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(TinyConfig(d_model=32, n_heads=2, n_layers=2, qk_norm="head")).eval()
    assert abs(frontier.qk_logit_bound(model) - 16 ** 0.5) < 1e-6  # D = 16, gains 1
    with torch.no_grad():
        for b in model.blocks:  # grown, uneven gains, as training leaves them
            b.attn.q_norm.weight.uniform_(-3.0, 3.0)
            b.attn.k_norm.weight.uniform_(-2.0, 2.0)
            b.attn.q_proj.weight.mul_(50.0)
        bound = frontier.qk_logit_bound(model)
        ids = torch.randint(0, 256, (4, 64), generator=torch.Generator().manual_seed(1))
        _, trace = model.run_with_trace(ids, names=["blocks.*.attn.scores"])
    largest = max(float(t.abs().max()) for t in trace.values())
    assert 4.0 < largest <= bound  # the gains raised the logits past sqrt(D), but not past the bound
    assert frontier.qk_logit_bound(tinytf.TinyTransformer(TinyConfig(n_layers=1))) is None


def test_recorded_qk_norm_runs_never_exceed_their_bound():
    runs = frontier.load_logit_growth()["runs"]
    for rec in runs["QK-norm"]:
        assert len(rec["bound"]) == len(rec["steps"]) == len(rec["max_logit"])
        assert all(m <= b + 1e-4 for m, b in zip(rec["max_logit"], rec["bound"]))
    assert all(b is None for rec in runs["plain"] for b in rec["bound"])
