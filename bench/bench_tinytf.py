"""Benchmark for tinytf core (a script, not a timed test).

Measures, side by side in one run on the same machine:

1. tinytf forward (tracing off) vs an equivalent PyTorch stack of
   nn.TransformerEncoderLayer(norm_first=True, batch_first=True) with a causal mask;
   same weights (copied), same function (outputs compared). Goal: ratio <= 1.1.
2. tinytf forward with tracing on (run_with_trace, every hook recorded) vs off. Goal: <= 2x.
3. KV-cached vs naive greedy generation of 256 tokens: time per token against position
   (flat with the cache, growing without) and the total speed-up. Goal: >= 5x.

Timings alternate between the contenders (A B A B ...) so that load from other processes on
the machine hits both alike; each figure is the median over the repetitions, with the
spread (min..max) printed beside it. Prints a markdown table and writes
bench/results/tinytf.json.

    python bench/bench_tinytf.py              # full run, torch's default threads (2 here)
    python bench/bench_tinytf.py --threads 1  # the same on one thread (stored beside it)
    python bench/bench_tinytf.py --quick      # 2 rounds, 1 generation each, nothing written

On an idle 2-core machine a full run takes a few minutes; when other processes share the cores
it takes much longer and the ratios spread (see the min..max columns and the load average).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch
from torch import nn

import tinytf

RESULTS = Path(__file__).resolve().parent / "results" / "tinytf.json"

# (1) and (2): the block of the issue, expressed once for tinytf and once for PyTorch.
FWD_CFG = tinytf.TinyConfig(vocab_size=256, d_model=512, n_heads=8, n_layers=4, d_ff=2048, norm="layer",
                            norm_position="pre", ffn="relu", bias=True, pos="none", max_seq_len=256)
BATCH, SEQ = 8, 256
GEN_TOKENS = 256


class TorchReference(nn.Module):
    """Embedding -> nn.TransformerEncoderLayer x N (pre-norm, causal mask) -> LayerNorm -> LM head:
    the same function as tinytf.TinyTransformer(FWD_CFG), built from PyTorch's own layers."""

    def __init__(self, cfg: tinytf.TinyConfig):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, dropout=0.0, activation="relu",
                                       layer_norm_eps=cfg.eps, batch_first=True, norm_first=True, bias=True)
            for _ in range(cfg.n_layers))
        self.final_norm = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def forward(self, ids):  # ids: [B, T]
        T = ids.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(T)  # [T, T] float, -inf above the diagonal
        x = self.embed(ids)  # [B, T, C]
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=True)
        return self.lm_head(self.final_norm(x))  # [B, T, V]


@torch.no_grad()
def copy_into_reference(tiny: tinytf.TinyTransformer, ref: TorchReference):
    ref.embed.weight.copy_(tiny.embed.weight)
    for blk, layer in zip(tiny.blocks, ref.layers):
        a = blk.attn
        layer.self_attn.in_proj_weight.copy_(torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]))
        layer.self_attn.in_proj_bias.copy_(torch.cat([a.q_proj.bias, a.k_proj.bias, a.v_proj.bias]))
        layer.self_attn.out_proj.weight.copy_(a.o_proj.weight)
        layer.self_attn.out_proj.bias.copy_(a.o_proj.bias)
        layer.linear1.weight.copy_(blk.ffn.up.weight)
        layer.linear1.bias.copy_(blk.ffn.up.bias)
        layer.linear2.weight.copy_(blk.ffn.down.weight)
        layer.linear2.bias.copy_(blk.ffn.down.bias)
        for mine, theirs in ((blk.norm1, layer.norm1), (blk.norm2, layer.norm2)):
            theirs.weight.copy_(mine.weight)
            theirs.bias.copy_(mine.bias)
    ref.final_norm.weight.copy_(tiny.final_norm.weight)
    ref.final_norm.bias.copy_(tiny.final_norm.bias)
    ref.lm_head.weight.copy_(tiny.lm_head.weight)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def alternate(fns: dict, reps: int, warmup: int = 1) -> dict:
    """Run each function warmup times, then reps rounds of A B C ...; seconds per call, per name."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    out = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            out[name].append(timed(fn))
    return out


def summary(xs) -> dict:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


@torch.no_grad()
def bench_forward(reps: int) -> dict:
    print(f"forward: {reps} rounds of torch / tinytf / tinytf traced ...", flush=True)
    tinytf.seed_everything(0)
    tiny = tinytf.TinyTransformer(FWD_CFG).eval()
    ref = TorchReference(FWD_CFG).eval()
    copy_into_reference(tiny, ref)
    ids = torch.randint(0, FWD_CFG.vocab_size, (BATCH, SEQ))
    max_diff = (tiny(ids) - ref(ids)).abs().max().item()  # same function? (must be ~1e-5)
    times = alternate({
        "torch": lambda: ref(ids),
        "tinytf": lambda: tiny(ids),
        "tinytf_traced": lambda: tiny.run_with_trace(ids),
    }, reps)
    _, trace = tiny.run_with_trace(ids)
    trace_mb = sum(t.numel() * t.element_size() for t in trace.values()) / 2**20
    s = {k: summary(v) for k, v in times.items()}
    per_rep_ratio = [a / b for a, b in zip(times["tinytf"], times["torch"])]
    per_rep_trace = [a / b for a, b in zip(times["tinytf_traced"], times["tinytf"])]
    return {
        "config": {"d_model": FWD_CFG.d_model, "n_heads": FWD_CFG.n_heads, "n_layers": FWD_CFG.n_layers,
                   "d_ff": FWD_CFG.d_ff, "batch": BATCH, "seq_len": SEQ},
        "max_abs_diff_vs_torch": max_diff,
        "seconds": s,
        "ratio_tinytf_vs_torch": s["tinytf"]["median"] / s["torch"]["median"],
        "ratio_tinytf_vs_torch_per_round": summary(per_rep_ratio),
        "ratio_tinytf_vs_torch_best": s["tinytf"]["min"] / s["torch"]["min"],  # least disturbed by other load
        "ratio_traced_vs_untraced": s["tinytf_traced"]["median"] / s["tinytf"]["median"],
        "ratio_traced_vs_untraced_per_round": summary(per_rep_trace),
        "ratio_traced_vs_untraced_best": s["tinytf_traced"]["min"] / s["tinytf"]["min"],
        "trace_tensors": len(trace),
        "trace_megabytes": trace_mb,
    }


def buckets(step_seconds, width: int = 32) -> list:
    """Mean milliseconds per token over consecutive windows of generated positions."""
    return [1000 * statistics.fmean(step_seconds[i:i + width]) for i in range(0, len(step_seconds), width)]


def bench_generation(name: str, key: str, cfg: tinytf.TinyConfig, prompt: torch.Tensor, reps: int) -> dict:
    print(f"generation, {name}: {reps} rounds of cached / naive ...", flush=True)
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(cfg).eval()
    runs = {"cached": [], "naive": []}
    for _ in range(reps):  # alternate cached / naive
        for mode in runs:
            runs[mode].append(tinytf.generate(model, prompt, GEN_TOKENS, use_cache=(mode == "cached"), timed=True))
    same = all(torch.equal(c.tokens, n.tokens) for c, n in zip(runs["cached"], runs["naive"]))
    totals = {mode: [sum(g.step_seconds) for g in gens] for mode, gens in runs.items()}
    # per-token profile: for each step, the median over repetitions
    profile = {mode: [statistics.median(s) for s in zip(*(g.step_seconds for g in gens))] for mode, gens in runs.items()}
    b = {mode: buckets(p) for mode, p in profile.items()}
    return {
        "model": name,
        "key": key,
        "config": {"d_model": cfg.d_model, "n_layers": cfg.n_layers, "n_heads": cfg.n_heads, "pos": cfg.pos,
                   "norm": cfg.norm, "ffn": cfg.ffn},
        "prompt_tokens": int(prompt.shape[-1]),
        "new_tokens": GEN_TOKENS,
        "same_tokens": same,
        "total_seconds": {mode: summary(t) for mode, t in totals.items()},
        "speedup": statistics.median(totals["naive"]) / statistics.median(totals["cached"]),
        "speedup_best": min(totals["naive"]) / min(totals["cached"]),
        "ms_per_token_by_32_positions": b,
        "last_over_first_bucket": {mode: v[-1] / v[0] for mode, v in b.items()},
    }


def markdown(res: dict) -> str:
    f = res["forward"]
    s = f["seconds"]
    rows = [
        "| measurement | tinytf | reference | ratio of medians | ratio of best times | goal |",
        "|---|---|---|---|---|---|",
        f"| forward, {f['config']['n_layers']} layers, d_model {f['config']['d_model']}, {f['config']['n_heads']} heads, "
        f"B={f['config']['batch']}, T={f['config']['seq_len']} (median s) | {s['tinytf']['median']:.3f} | "
        f"{s['torch']['median']:.3f} (nn.TransformerEncoderLayer) | {f['ratio_tinytf_vs_torch']:.2f} | "
        f"{f['ratio_tinytf_vs_torch_best']:.2f} | <= 1.1 |",
        f"| tracing on vs off (median s) | {s['tinytf_traced']['median']:.3f} | {s['tinytf']['median']:.3f} "
        f"(tracing off) | {f['ratio_traced_vs_untraced']:.2f} | {f['ratio_traced_vs_untraced_best']:.2f} | <= 2 |",
    ]
    for g in res["generation"]:
        t = g["total_seconds"]
        rows.append(f"| generate {g['new_tokens']} tokens, {g['model']} (median s) | {t['cached']['median']:.2f} (KV cache) | "
                    f"{t['naive']['median']:.2f} (naive) | {g['speedup']:.1f}x | {g['speedup_best']:.1f}x | >= 5x |")
    lines = rows + ["", f"tinytf vs torch max |diff| of logits: {f['max_abs_diff_vs_torch']:.2e}; "
                        f"per-round ratio min..max {f['ratio_tinytf_vs_torch_per_round']['min']:.2f}.."
                        f"{f['ratio_tinytf_vs_torch_per_round']['max']:.2f}; tracing ratio min..max "
                        f"{f['ratio_traced_vs_untraced_per_round']['min']:.2f}.."
                        f"{f['ratio_traced_vs_untraced_per_round']['max']:.2f}; one trace = {f['trace_tensors']} "
                        f"tensors, {f['trace_megabytes']:.0f} MB", ""]
    for g in res["generation"]:
        b = g["ms_per_token_by_32_positions"]
        lines += [f"ms per generated token, {g['model']} (mean over each window of 32 new tokens; "
                  f"tokens identical: {g['same_tokens']})", "",
                  "| new tokens | " + " | ".join(f"{i * 32}-{i * 32 + 31}" for i in range(len(b["cached"]))) + " |",
                  "|---" * (len(b["cached"]) + 1) + "|"]
        for mode in ("cached", "naive"):
            lines.append(f"| {mode} | " + " | ".join(f"{x:.2f}" for x in b[mode]) + " |")
        lines.append("")
    return "\n".join(lines)


def headline(res: dict) -> dict:
    """The numbers the goals are about, kept per run so that reruns show the spread."""
    f = res["forward"]
    return {"date": res["machine"]["date"], "loadavg_before": res["machine"]["loadavg_before"][0],
            "forward_ratio": round(f["ratio_tinytf_vs_torch"], 3),
            "forward_ratio_best": round(f["ratio_tinytf_vs_torch_best"], 3),
            "tracing_ratio": round(f["ratio_traced_vs_untraced"], 3),
            **{f"generation_speedup[{g['key']}]": round(g["speedup"], 2) for g in res["generation"]}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (smoke test; results not written)")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)")
    ap.add_argument("--fwd-reps", type=int, default=8)
    ap.add_argument("--gen-reps", type=int, default=2)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    fwd_reps, gen_reps = (2, 1) if args.quick else (args.fwd_reps, args.gen_reps)
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    prompt = tinytf.encode("Once upon a time")  # 16 tokens; 16 + 256 positions fit max_seq_len 512
    res = {
        "machine": {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
                    "python": platform.python_version(), "platform": platform.platform(),
                    "date": time.strftime("%Y-%m-%d %H:%M:%S"), "loadavg_before": load_before},
        "forward": bench_forward(fwd_reps),
        "generation": [
            bench_generation("bench config (d_model 512, 4 layers, learned positions)", "d512",
                             FWD_CFG.replace(pos="learned", max_seq_len=512), prompt, gen_reps),
            bench_generation("TinyConfig() (book default: d_model 128, 2 layers, RoPE)", "default",
                             tinytf.TinyConfig(), prompt, gen_reps),
        ],
    }
    res["machine"]["loadavg_after"] = os.getloadavg()
    res["machine"]["wall_seconds"] = time.perf_counter() - t0
    print(markdown(res))
    print(f"threads {res['machine']['torch_threads']}, load average before {load_before[0]:.2f}, "
          f"after {res['machine']['loadavg_after'][0]:.2f}, wall {res['machine']['wall_seconds']:.0f} s")
    if args.quick:
        return
    # one section per thread count; earlier runs' headline numbers are kept to show the run-to-run spread
    data = json.loads(args.out.read_text()) if args.out.exists() else {}
    key = f"threads={res['machine']['torch_threads']}"
    history = data.get(key, {}).get("history", []) + [headline(res)]
    data[key] = {**res, "history": history[-6:]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {args.out} [{key}]; headline numbers of the last runs:")
    for h in data[key]["history"]:
        print("  ", h)


if __name__ == "__main__":
    main()
