"""Runs of chapter 7's training loop (section 7.7) on the copy task that the chapter loads instead of training
them itself: the loop with five seeds (weights and batches), exercise 6 (no ``zero_grad``) and exercise 7
(lengths 4 to 12). One torch thread, a progress bar over all steps; writes
tinytf/checkpoints/copy-loop-runs.json. About 1 minute on an idle core.

    PYTHONPATH=. python scripts/copy_loop_runs.py [--seeds 0 1 2 3 4] [--steps 120]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

from tinytf.lab.copy_loop import HALFWAY, copy_eval, leaves_plateau, train_copy

OUT = Path(__file__).resolve().parents[1] / "tinytf" / "checkpoints" / "copy-loop-runs.json"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    rounded = lambda xs: [round(x, 4) for x in xs]  # noqa: E731
    result = {"steps": args.steps, "batch_size": 32, "length": 8, "lr": 3e-3, "halfway": HALFWAY,
              "seeds": {}, "command": "python scripts/copy_loop_runs.py " + " ".join(argv or sys.argv[1:])}
    with tqdm(total=args.steps * (len(args.seeds) + 2), desc="copy-task runs") as bar:
        for seed in args.seeds:
            model, losses = train_copy(seed, args.steps, progress=bar.update)
            first, second = copy_eval(model, (8,))[8]
            result["seeds"][str(seed)] = {"losses": rounded(losses), "leaves_plateau": leaves_plateau(losses),
                                          "test_first_half": round(first, 4), "test_second_half": round(second, 4)}
            bar.set_postfix(seed=seed, final=f"{sum(losses[-10:]) / 10:.2f}")
        _, losses = train_copy(0, args.steps, zero_grad=False, progress=bar.update)
        result["no_zero_grad"] = {"losses": rounded(losses)}
        model, losses = train_copy(0, args.steps, min_length=4, max_length=12, progress=bar.update)
        result["varying_length"] = {"losses": rounded(losses),
                                    "eval": {str(n): [round(a, 4), round(b, 4)]
                                             for n, (a, b) in copy_eval(model, (4, 8, 12)).items()}}
    result["seconds"] = round(time.perf_counter() - t0, 1)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out} ({result['seconds']} s)")
    for seed, run in result["seeds"].items():
        print(f"seed {seed}: leaves the plateau at step {run['leaves_plateau']}, "
              f"last 10 steps {sum(run['losses'][-10:]) / 10:.3f}")
    print("no zero_grad, every 10th loss:", result["no_zero_grad"]["losses"][::10])
    print("lengths 4-12, eval:", result["varying_length"]["eval"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
