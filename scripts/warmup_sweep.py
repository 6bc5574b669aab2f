"""A learning-rate x warm-up sweep, pre-norm against post-norm, on the induction (copy) task (chapter 5,
section 5.4, and its lab notes).

Trains a tiny decoder (d_model 32, 4 heads of 8, 4 layers, SwiGLU d_ff 96, RMSNorm, a final norm after
the last block; the two variants differ only in ``norm_position``) with ``tinytf.lab.train.train``
on the induction task for 200 steps: AdamW (0.9/0.98), batches of 32, no gradient clipping, no weight decay,
warm-up of 0 or 100 steps (linear, from lr/100 up) then a constant rate, at three peak learning rates
(0.003, 0.01, 0.03) and two seeds: 2 x 3 x 2 x 2 = 24 runs. Records, for every run, the final loss (mean over the
last 10 steps), the largest loss after the first 10 steps, the largest gradient norm and whether the run
diverged (a non-finite loss, or a final loss above the loss of its first step), and writes them to
tinytf/checkpoints/warmup_sweep.json, which chapter 5's lab notes load.

    python scripts/warmup_sweep.py --jobs 2   # 24 runs, about 3 CPU-minutes in all

Every run trains on one thread, so its numbers are reproducible on one machine; ``--jobs N`` trains N runs at
once in separate processes, with the same numbers.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import time
from pathlib import Path

import torch

import tinytf
from tinytf.lab.train import train

OUT = Path(__file__).resolve().parents[1] / "tinytf" / "checkpoints" / "warmup_sweep.json"
SETTINGS = dict(base=dict(vocab_size=128, d_model=32, n_heads=4, n_layers=4, d_ff=96, max_seq_len=64),
                task="induction", steps=200, batch_size=32, lrs=[3e-3, 1e-2, 3e-2], warmups=[0, 100],
                seeds=[0, 1], positions=["pre", "post"])


def one_run(job: tuple) -> dict:
    """Train one (placement, peak rate, warm-up, seed) and return its record."""
    where, lr, warmup, seed = job
    s = SETTINGS
    start = time.process_time()
    cfg = tinytf.TinyConfig(**s["base"], norm_position=where)
    torch.manual_seed(seed)
    model = tinytf.TinyTransformer(cfg)
    h = train(model, s["task"], steps=s["steps"], lr=lr, batch_size=s["batch_size"], seed=seed, progress=False,
              warmup_steps=warmup, schedule="constant", weight_decay=0.0, grad_clip=None, eval_samples=0)
    finite = all(math.isfinite(x) for x in h.losses)
    final = h.final_loss
    diverged = (not finite) or not math.isfinite(final) or final > h.losses[0]
    return dict(position=where, lr=lr, warmup=warmup, seed=seed, first_loss=round(h.losses[0], 4),
                final_loss=round(final, 4) if math.isfinite(final) else None,
                max_loss_after_10=round(max(h.losses[10:]), 4) if finite else None,
                max_grad_norm=round(max(h.grad_norms), 3) if finite else None,
                diverged=diverged, cpu_seconds=round(time.process_time() - start, 1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="runs trained at once, one process each")
    args = parser.parse_args(argv)
    s, wall = SETTINGS, time.perf_counter()
    jobs = [(w, lr, wu, seed) for seed in s["seeds"] for lr in s["lrs"] for wu in s["warmups"]
            for w in s["positions"]]
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        runs = []
        for r in pool.imap(one_run, jobs):
            runs.append(r)
            print(f"{r['position']:4}-norm lr {r['lr']:<6} warm-up {r['warmup']:3} seed {r['seed']}: final loss "
                  f"{r['final_loss']}, diverged {r['diverged']} ({r['cpu_seconds']} s)", flush=True)
    out = dict(command=f"python scripts/warmup_sweep.py --jobs {args.jobs}", torch=torch.__version__,
               settings=s, optimizer="AdamW(0.9, 0.98), linear warm-up then constant lr, no clipping, "
               "no weight decay", cpu_seconds=round(sum(r["cpu_seconds"] for r in runs)),
               wall_seconds=round(time.perf_counter() - wall), runs=runs)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", OUT, "in", out["cpu_seconds"], "CPU seconds,", out["wall_seconds"], "s wall")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
