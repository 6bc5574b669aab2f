"""Zero- and mean-ablation of text-4l's sublayers on held-out text (chapter 12).

For the shipped checkpoint ``text-4l`` and the 256 fixed held-out windows of 128 bytes that
``tinytf.textdata.bits_per_byte`` scores (``eval_windows(corpus.val, 256, 128)``), measures the bits per byte of
every window with: the intact model; each sublayer kind (attention, FFN) removed in every block at once; each
sublayer of each block removed alone; and each whole block removed (both its sublayers); every removal both by
zeros and by its mean over all 32,768 positions of the same windows (``tinytf.lab.ablation``). For every
condition it also measures the mean KL divergence, in bits, from the intact model's next-byte distribution to
the ablated model's, per window. Writes tinytf/checkpoints/ablation-text-4l.json, which chapter 12 loads: the
per-window bits and KL of every condition, the mean vectors, and which held-out files each quarter of the
windows comes from.

    python scripts/measure_ablation.py            # one thread; about two minutes on a quiet core
"""
from __future__ import annotations

import argparse
import bisect
import json
import platform
import time
from pathlib import Path

import torch
from tqdm import tqdm

import tinytf
from tinytf import textdata
from tinytf.lab import ablation

ROOT = Path(__file__).resolve().parents[1]
N_WINDOWS, SEQ_LEN, GROUPS = 256, 128, 4


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "tinytf" / "checkpoints" / "ablation-text-4l.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    start = time.time()
    model = tinytf.pretrained("text-4l")
    corpus = textdata.stdlib_corpus()
    inputs, targets = textdata.eval_windows(corpus.val, N_WINDOWS, SEQ_LEN)
    sites = ablation.sites(model, "attn") + ablation.sites(model, "ffn")
    means = ablation.site_means(model, inputs, sites)
    conditions = ablation.conditions(model, means, per_block=True)
    reference = ablation.intact_logprobs(model, inputs)  # [256, 128, 256]: the intact next-byte distributions
    bits, kl = {}, {}
    for label, abl in tqdm(conditions.items(), desc="ablation conditions", unit="condition"):
        scores = ablation.window_scores(model, inputs, targets, abl, reference)
        bits[label] = [round(b, 5) for b in scores["bits"].tolist()]
        kl[label] = [round(max(k, 0.0), 5) for k in scores["kl"].tolist()]  # rounding error can make 0 slightly negative

    # which held-out files each quarter of the windows starts and ends in
    val_files = [f for f, s in zip(corpus.files, corpus.split) if s == "val"]
    val_texts = [t for t, s in zip(corpus.texts, corpus.split) if s == "val"]
    offsets, pos = [], 0
    for t in val_texts:
        offsets.append(pos)
        pos += len(t.encode("utf-8"))
    stride = (len(corpus.val) - 1) // N_WINDOWS
    per = N_WINDOWS // GROUPS
    groups = []
    for g in range(GROUPS):
        first, last = g * per * stride, ((g + 1) * per - 1) * stride + SEQ_LEN
        groups.append({"windows": [g * per, (g + 1) * per - 1],
                       "first_file": val_files[bisect.bisect_right(offsets, first) - 1],
                       "last_file": val_files[bisect.bisect_right(offsets, last) - 1]})
    result = {
        "model": "text-4l",
        "data": f"tinytf.textdata.eval_windows(stdlib_corpus().val, {N_WINDOWS}, {SEQ_LEN}): {N_WINDOWS} fixed, "
                f"evenly spaced, non-overlapping held-out windows of {SEQ_LEN} bytes (stride {stride} bytes)",
        "corpus_sha256": corpus.sha256,
        "groups": groups,
        "means_rule": "mean of each sublayer output over every position of the same windows, intact model",
        "means": {s: [round(v, 6) for v in m.tolist()] for s, m in means.items()},
        "bits": bits,
        "kl_rule": "mean over the 128 positions of each window of KL(intact || ablated) of the next-byte distributions, in bits",
        "kl": kl,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "threads": 1,
        "seconds": round(time.time() - start, 1),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    summary = ablation.summarise(bits, GROUPS)
    for label, s in summary.items():
        print(f"{label:20} {s['mean']:.3f}  " + " ".join(f"{v:.2f}" for v in s["groups"])
              + f"  KL {sum(kl[label]) / len(kl[label]):.3f}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
