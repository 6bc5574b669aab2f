"""RoPE's cos/sin tables: computed in every layer (before) or taken from a table cached per length, device and
dtype (now), against Hugging Face's Llama, which computes them once per forward (a script, not a timed test).

One tiny Llama-shaped model (random weights, no download): ``transformers.LlamaForCausalLM`` built from a
``LlamaConfig``, and the same weights in tinytf (``tinytf.from_hf``; logits compared). Timed, alternating the
three contenders (A B C A B C ...) so that load from other processes hits them alike, median over the rounds:

* prefill: one forward over a prompt of T tokens;
* decode: one cached step of one token at position T (tinytf: ``model(ids, cache=...)``; HF:
  ``past_key_values``), the step where recomputing the angles in every layer weighs most.

"before" runs tinytf with the per-layer computation (``RoPE.forward`` as it was: ``rotate`` q, ``rotate`` k).

    python bench/bench_rope.py            # prints a markdown table and the load average
    python bench/bench_rope.py --quick    # fewer rounds
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.cache_utils import DynamicCache

import tinytf
from tinytf.positions import RoPE

FAST_FORWARD = RoPE.forward


def before_forward(self, q, k, offset: int = 0):  # what RoPE.forward did: the angles again for q, for k, per layer
    return self.rotate(q, offset), self.rotate(k, offset)


def models(layers: int, d_model: int, heads: int):
    hf_cfg = LlamaConfig(vocab_size=256, hidden_size=d_model, intermediate_size=4 * d_model,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                         max_position_embeddings=1024, rms_norm_eps=1e-5, tie_word_embeddings=False)
    torch.manual_seed(0)
    hf = LlamaForCausalLM(hf_cfg).eval()
    tiny = tinytf.from_hf(hf.state_dict(), hf_cfg.to_dict()).eval()
    return hf, tiny


def timer(fn, reps: int) -> float:
    fn()  # warm-up (and the table, for the cached version)
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps * 1e3  # ms per call


@torch.no_grad()
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    rounds, reps = (3, 5) if args.quick else (9, 10)
    layers, d_model, heads, T = 8, 128, 4, 128
    hf, tiny = models(layers, d_model, heads)
    ids = torch.randint(0, 256, (1, T), generator=torch.Generator().manual_seed(0))
    diff = (hf(ids).logits - tiny(ids)).abs().max().item()
    nxt = ids[:, -1:]

    def tiny_prefill():
        tiny(ids)

    def hf_prefill():
        hf(ids)

    tiny_cache = tiny.new_cache()
    tiny(ids, cache=tiny_cache)
    hf_cache = hf(ids, past_key_values=DynamicCache(), use_cache=True).past_key_values

    def tiny_decode():  # one step at position T (the cache is cut back to T positions after each step)
        tiny(nxt, cache=tiny_cache)
        for layer in tiny_cache.layers:
            layer.k, layer.v = layer.k[..., :T, :], layer.v[..., :T, :]

    def hf_decode():
        hf(nxt, past_key_values=hf_cache, use_cache=True, cache_position=torch.tensor([T]))
        hf_cache.crop(-1)  # drop the step just added: the next call is at position T again

    results = {k: [] for k in ("prefill before", "prefill now", "prefill HF", "decode before", "decode now",
                               "decode HF")}
    for _ in range(rounds):
        for phase, tiny_fn, hf_fn in (("prefill", tiny_prefill, hf_prefill), ("decode", tiny_decode, hf_decode)):
            RoPE.forward = before_forward
            results[f"{phase} before"].append(timer(tiny_fn, reps))
            RoPE.forward = FAST_FORWARD
            results[f"{phase} now"].append(timer(tiny_fn, reps))
            results[f"{phase} HF"].append(timer(hf_fn, reps))
    load = os.getloadavg()
    print(f"tinytf vs transformers LlamaForCausalLM ({layers} layers, d_model {d_model}, {heads} heads, T={T}, "
          f"batch 1, {args.threads} thread(s); logits differ by at most {diff:.1e}); torch {torch.__version__}; "
          f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}; median (min..max) of {rounds} rounds "
          f"x {reps} calls\n")
    print("| ms per call | tinytf before (angles in every layer) | tinytf now (cached table) | HF Llama |")
    print("|---|---:|---:|---:|")
    for phase in ("prefill", "decode"):
        cells = []
        for who in ("before", "now", "HF"):
            xs = results[f"{phase} {who}"]
            cells.append(f"{statistics.median(xs):.2f} ({min(xs):.2f}..{max(xs):.2f})")
        label = f"prefill, {T} tokens" if phase == "prefill" else f"decode, 1 token at position {T}"
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
