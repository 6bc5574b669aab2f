"""A small learning-rate sweep, plain attention against QK-norm, on the induction (copy) task (chapter 10,
section 10.1).

Trains the two tiny models of section 10.1 (d_model 64, 4 heads of 16, 2 layers; they differ only in
``qk_norm``) with ``tinytf.lab.frontier.logit_growth`` (AdamW 0.9/0.95, constant learning rate, no warm-up,
no clipping, no weight decay, batches of 32) for 400 steps, at five learning rates (0.0003 to 0.03) and three seeds, and writes
every record (the largest |attention logit| on a fixed probe batch and the batch loss, every 10 steps) to
tinytf/checkpoints/qk_norm_sweep.json, which chapter 10 loads.

    python scripts/qk_norm_sweep.py          # 5 rates x 3 seeds x 2 variants = 30 runs, about 4 CPU-minutes

Every run trains on one thread, so its numbers are reproducible on one machine.
"""
from __future__ import annotations

import json
import math
import time

import torch

from tinytf.config import TinyConfig
from tinytf.lab.frontier import LOGIT_GROWTH_SETTINGS, LR_SWEEP_FILE, logit_growth

SETTINGS = dict(base=LOGIT_GROWTH_SETTINGS["base"], steps=400, every=10, lrs=[3e-4, 1e-3, 3e-3, 1e-2, 3e-2],
                seeds=[0, 1, 2])


def main() -> int:
    s, start = SETTINGS, time.process_time()
    runs = {}
    for variant, qk in (("plain", "none"), ("QK-norm", "head")):
        cfg = TinyConfig(**s["base"], qk_norm=qk)
        runs[variant] = {}
        for lr in s["lrs"]:
            runs[variant][str(lr)] = recs = [logit_growth(cfg, s["steps"], lr, seed, s["every"]) for seed in s["seeds"]]
            late = [sum(r["loss"][-10:]) / 10 for r in recs]
            print(f"{variant:8} lr {lr:<6} max|logit| {[round(r['max_logit'][-1], 1) for r in recs]} "
                  f"late loss {[round(x, 2) if math.isfinite(x) else x for x in late]}", flush=True)
    out = dict(command="python scripts/qk_norm_sweep.py", torch=torch.__version__, settings=s,
               task="induction, repeat length 4..12, batch 32", optimizer="AdamW(0.9, 0.95), constant lr, "
               "no warm-up, no clipping, no weight decay", cpu_seconds=round(time.process_time() - start), runs=runs)
    LR_SWEEP_FILE.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", LR_SWEEP_FILE, "in", out["cpu_seconds"], "CPU seconds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
