"""Benchmark: LayerNorm vs RMSNorm forward time (a script, not a timed test; moved out of chapter 3).

Times, on a [2, 512, 4096] float32 input (Llama 3 8B's width), tinytf's two readable modules and PyTorch's
built-in ``F.layer_norm`` and ``F.rms_norm``, and lists the ATen operators each built-in call runs.

Why the built-in ratio can go "the wrong way" on CPU: with torch 2.13 (CPU build) ``F.layer_norm`` is one
native kernel (``aten::native_layer_norm``, one pass per row), while ``F.rms_norm`` dispatches to
``aten::_fused_rms_norm``, which on CPU is composed of separate operators (pow, mean, add, rsqrt, mul, mul,
plus dtype copies): each one a full pass over the 16 MB tensor. The formula is cheaper; the kernel is not.

    python bench/bench_norms.py
"""
from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch.profiler import profile

import tinytf


def median_seconds(fn, repeats=7):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def main():
    torch.manual_seed(0)
    width = 4096
    x = torch.randn(2, 512, width)
    ln, rms = tinytf.LayerNorm(width), tinytf.RMSNorm(width)
    variants = {
        "tinytf.LayerNorm": lambda: ln(x),
        "tinytf.RMSNorm": lambda: rms(x),
        "F.layer_norm": lambda: F.layer_norm(x, (width,), ln.weight, ln.bias, ln.eps),
        "F.rms_norm": lambda: F.rms_norm(x, (width,), rms.weight, rms.eps),
    }
    with torch.no_grad():
        seconds = {name: median_seconds(fn) for name, fn in variants.items()}
        for name in ("F.layer_norm", "F.rms_norm"):
            with profile() as prof:
                variants[name]()
            ops = [e.name for e in prof.events() if e.name.startswith("aten::")]
            print(f"{name}: {len(ops)} ATen operators: {', '.join(ops)}")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, input {list(x.shape)}")
    for name, sec in seconds.items():
        print(f"{name:18} {sec * 1e3:8.2f} ms")
    print(f"RMSNorm / LayerNorm, tinytf:   {seconds['tinytf.RMSNorm'] / seconds['tinytf.LayerNorm']:.2f}")
    print(f"RMSNorm / LayerNorm, built-in: {seconds['F.rms_norm'] / seconds['F.layer_norm']:.2f}")


if __name__ == "__main__":
    main()
