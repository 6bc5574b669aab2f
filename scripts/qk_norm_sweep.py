"""A small learning-rate sweep, plain attention against QK-norm, on the induction (copy) task (chapter 11,
section 11.1).

Trains the two tiny models of section 11.1 (d_model 64, 4 heads of 16, 2 layers; they differ only in
``qk_norm``), and a third, QK-norm whose gains start at 0.2 instead of 1 (``QK-norm g=0.2``: its largest logit at
step 0, about 0.13, then matches the plain model's, where unit gains start it near sqrt(D) = 4), with ``tinytf.lab.frontier.logit_growth`` (AdamW 0.9/0.95, constant learning rate, no warm-up,
no clipping, no weight decay, batches of 32) for 400 steps, at six learning rates (0.0001 to 0.03) and three seeds, and writes
every record (the largest |attention logit| on a fixed probe batch and the batch loss, every 10 steps) to
tinytf/checkpoints/qk_norm_sweep.json, which chapter 11 loads.

    python scripts/qk_norm_sweep.py          # 6 rates x 3 seeds x 3 variants = 54 runs, about 7 CPU-minutes
    python scripts/qk_norm_sweep.py --keep   # reuse the recorded runs (variant and rate) in the file, run the others

Every run trains on one thread, so its numbers are reproducible on one machine (``--keep`` checks that the
recorded settings other than the rates are the same).
"""
from __future__ import annotations

import argparse
import json
import math
import time

import torch

from tinytf.config import TinyConfig
from tinytf.lab.frontier import LOGIT_GROWTH_SETTINGS, LR_SWEEP_FILE, logit_growth

SETTINGS = dict(base=LOGIT_GROWTH_SETTINGS["base"], steps=400, every=10, lrs=[1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2],
                seeds=[0, 1, 2])
# variant: (qk_norm, starting value of the QK-norm gains; None keeps 1)
VARIANTS = {"plain": ("none", None), "QK-norm": ("head", None), "QK-norm g=0.2": ("head", 0.2)}
_KEEP_IGNORES = ("lrs", "variants")  # --keep reuses runs across these


def _recorded(settings: dict) -> tuple[dict, int]:
    """The runs already in the file, and their CPU seconds, if its settings other than the rates equal ``settings``."""
    if not LR_SWEEP_FILE.exists():
        return {}, 0
    old = json.loads(LR_SWEEP_FILE.read_text())
    same = ({k: v for k, v in old["settings"].items() if k not in _KEEP_IGNORES}
            == {k: v for k, v in settings.items() if k not in _KEEP_IGNORES})
    if not same or old["torch"] != torch.__version__:
        raise SystemExit(f"--keep: {LR_SWEEP_FILE} was recorded with other settings or torch {old['torch']}; "
                         "run without --keep")
    return old["runs"], old["cpu_seconds"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="reuse recorded runs of rates already in the file")
    args = parser.parse_args(argv)
    s = dict(SETTINGS, variants={v: {"qk_norm": qk, "qk_gain": g} for v, (qk, g) in VARIANTS.items()})
    start = time.process_time()
    old, old_seconds = _recorded(s) if args.keep else ({}, 0)
    runs, ran = {}, set()
    for variant, (qk, gain) in VARIANTS.items():
        cfg = TinyConfig(**s["base"], qk_norm=qk)
        runs[variant] = {}
        t0 = time.process_time()
        for lr in s["lrs"]:
            if str(lr) in old.get(variant, {}):
                runs[variant][str(lr)] = recs = old[variant][str(lr)]
            else:
                recs = [logit_growth(cfg, s["steps"], lr, seed, s["every"], qk_gain=gain) for seed in s["seeds"]]
                runs[variant][str(lr)] = recs
                ran.add(variant)
            late = [sum(r["loss"][-10:]) / 10 for r in recs]
            print(f"{variant:13} lr {lr:<6} max|logit| {[round(r['max_logit'][-1], 1) for r in recs]} "
                  f"late loss {[round(x, 2) if math.isfinite(x) else x for x in late]}", flush=True)
        if variant in ran:
            print(f"{variant}: ran in {round(time.process_time() - t0)} CPU seconds", flush=True)
    out = dict(command="python scripts/qk_norm_sweep.py", torch=torch.__version__, settings=s,
               task="induction, repeat length 4..12, batch 32", optimizer="AdamW(0.9, 0.95), constant lr, "
               "no warm-up, no clipping, no weight decay", cpu_seconds=old_seconds + round(time.process_time() - start), runs=runs)
    LR_SWEEP_FILE.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", LR_SWEEP_FILE, "in", out["cpu_seconds"], "CPU seconds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
