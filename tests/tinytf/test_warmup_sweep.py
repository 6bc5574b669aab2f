"""The recorded learning-rate x warm-up sweep of chapter 5's lab notes (scripts/warmup_sweep.py)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("warmup_sweep", ROOT / "scripts" / "warmup_sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _recorded():
    return json.loads((ROOT / "tinytf" / "checkpoints" / "warmup_sweep.json").read_text())


def test_recorded_sweep_covers_the_scripts_grid_once():
    script, rec = _script(), _recorded()
    assert rec["settings"] == json.loads(json.dumps(script.SETTINGS))
    s = rec["settings"]
    grid = {(r["position"], r["lr"], r["warmup"], r["seed"]) for r in rec["runs"]}
    want = {(p, lr, w, seed) for p in s["positions"] for lr in s["lrs"] for w in s["warmups"] for seed in s["seeds"]}
    assert grid == want and len(rec["runs"]) == len(want) == 24
    for r in rec["runs"]:
        # a run counts as diverged when its loss is not finite or ends above where it started
        assert r["diverged"] == (r["final_loss"] is None or r["final_loss"] > r["first_loss"])


def test_one_recorded_run_is_reproduced():
    """Retrain one run (post-norm, peak rate 0.01, warm-up 100, seed 1) and compare with its record; the tolerance
    allows for another CPU's last bits over 200 steps."""
    script = _script()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run = script.one_run(("post", 0.01, 100, 1))
    finally:
        torch.set_num_threads(threads)
    recorded = next(r for r in _recorded()["runs"]
                    if (r["position"], r["lr"], r["warmup"], r["seed"]) == ("post", 0.01, 100, 1))
    assert run["first_loss"] == pytest.approx(recorded["first_loss"], abs=1e-3)
    assert run["final_loss"] == pytest.approx(recorded["final_loss"], abs=0.05)
    assert run["diverged"] == recorded["diverged"]
