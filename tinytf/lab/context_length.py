"""How a RoPE model does past the length it was trained on, and what position interpolation changes (chapter 10).

``bits_by_position`` scores a byte-level model on fixed windows of held-out text and returns the mean loss
(bits per byte) at every position of the window: position t is the prediction of byte t + 1 from bytes
0..t. ``interpolated`` returns the same model with linear position interpolation: every RoPE frequency
divided by ``factor`` (``TinyConfig.rope_scaling``), so that position ``factor * t`` gets the angles position
t had in training; no weight changes (RoPE has none), no fine-tuning. ``windowed`` returns the same model with
every layer limited to a sliding window (``TinyConfig.sliding_window``): each query sees only its last ``size``
keys, so no query-key offset larger than ``size - 1`` ever occurs, however long the window of text.
``clamped_offsets`` keeps every key but scores each pair more than ``size - 1`` apart as if it were ``size - 1``
apart: the long offsets go, the number of keys stays, which separates the two causes ``windowed`` removes together.

``python -m tinytf.lab.context_length`` (or ``scripts/context_length.py``) measures text-4l on 512-byte
windows of its validation split, as it is, interpolated linearly by 2 and 4 and with YaRN by 4, and with every
layer limited to a sliding window of 128, 32 and 8 keys, and with offsets clamped at 127 (every key kept; in
every RoPE pair, in the slow pairs 6-15 only, in the fast pairs 0-5 only), and writes ``RESULTS_PATH``, which chapter 10 loads:

    results = load_results()
    results["bpb_by_position"]["1"]  # 512 numbers: bits per byte at positions 0..511, as shipped
    results["bpb_by_position"]["linear 4"]  # the same with every RoPE frequency divided by 4
    results["bpb_by_position"]["window 128"]  # the same weights, each query seeing only its last 128 keys
    results["bands_by_window"]["clamp 128"]["384-512"]  # one mean per window (recorded for "1" and the clamps)
    results["window_modules"]  # per window, the held-out file its middle byte comes from (for clustered_mean_se)

(keys "1", "linear 2", "linear 4", "yarn 4", "window 128", "window 32", "window 8", "clamp 128", and the clamp of
RoPE pairs 6-15 only and of pairs 0-5 only: "clamp 128, pairs 6-15", "clamp 128, pairs 0-5").

``attention_entropy`` measures, per window, how spread each query's attention is (in bits) and the bits per byte,
with every attention score optionally multiplied by YaRN's temperature (``yarn_logit_scale``).
"""
from __future__ import annotations

import bisect
import json
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from ..config import RopeScaling, SlidingWindow
from ..errors import TinyTFInputError
from ..models import TinyTransformer
from ..positions import RoPE, yarn_mscale
from . import pretrained, textdata

RESULTS_PATH = Path(__file__).resolve().parents[1] / "checkpoints" / "text-4l-context.json"
BANDS = ((0, 32), (96, 128), (128, 192), (192, 256), (256, 384), (384, 512))  # positions [start, end)


@torch.no_grad()
def bits_by_position(model, data: torch.Tensor, n_windows: int, seq_len: int, batch_size: int = 8,
                     progress=None, patches=None, by_window: bool = False):
    """[seq_len] float64: the mean cross-entropy, in bits, of predicting byte t + 1 at position t, over the
    ``n_windows`` fixed windows of ``textdata.eval_windows(data, n_windows, seq_len)`` (each window starts at
    position 0). ``progress``: an optional callable(n_windows_done) for a progress bar. ``patches``: applied in
    every forward pass, as in ``run_with_patches`` (e.g. ``clamped_offsets``). ``by_window=True``: also the
    [n_windows, seq_len] bits of every window, returned as (mean, per_window)."""
    if seq_len < 1:
        raise TinyTFInputError(f"bits_by_position: seq_len must be >= 1, got {seq_len}")
    inputs, targets = textdata.eval_windows(data, n_windows, seq_len)
    was_training = model.training
    model.eval()
    total = torch.zeros(seq_len, dtype=torch.float64)
    rows = []
    for i in range(0, len(inputs), batch_size):
        batch = inputs[i:i + batch_size]
        logits = model(batch) if patches is None else model.run_with_patches(batch, patches=patches)  # [b, T, V]
        nats = F.cross_entropy(logits.transpose(1, 2), targets[i:i + batch_size], reduction="none")  # [b, seq_len]
        total += nats.double().sum(0)
        if by_window:
            rows.append(nats.double() / math.log(2))
        if progress is not None:
            progress(min(batch_size, len(inputs) - i))
    model.train(was_training)
    mean = total / len(inputs) / math.log(2)
    return (mean, torch.cat(rows)) if by_window else mean


def band_means(bits, bands=BANDS) -> dict:
    """{"start-end": mean bits per byte over positions [start, end)} for the bands that fit in ``bits``."""
    bits = torch.as_tensor(bits, dtype=torch.float64)
    return {f"{a}-{b}": float(bits[a:b].mean()) for a, b in bands if b <= len(bits)}


def interpolated(model, factor: float, kind: str = "linear", max_seq_len=None, temperature: bool = True):
    """A copy of a RoPE ``model`` with its positions rescaled by ``factor``, declared ``max_seq_len`` = factor x
    the original (or ``max_seq_len``). ``kind="linear"``: position interpolation, every rotation frequency
    divided by ``factor`` (``RopeScaling("linear", factor)``); ``kind="yarn"``: YaRN's frequencies with the
    original length = the model's max_seq_len (fast pairs kept, slow ones interpolated, a ramp between, and
    its attention factor; ``temperature=False`` leaves the factor out: the frequencies alone). The weights are
    the same values; nothing is trained."""
    cfg = model.config
    if cfg.pos != "rope":
        raise TinyTFInputError(f"interpolated: position interpolation rescales RoPE; this model uses pos={cfg.pos!r}")
    if cfg.rope_scaling is not None:
        raise TinyTFInputError("interpolated: the model already has a rope_scaling")
    new_len = max_seq_len if max_seq_len is not None else int(round(cfg.max_seq_len * factor))
    if kind not in ("linear", "yarn"):
        raise TinyTFInputError(f"interpolated: kind must be 'linear' or 'yarn', got {kind!r}")
    scaling = (RopeScaling("linear", float(factor)) if kind == "linear"
               else RopeScaling("yarn", float(factor), original_max_seq_len=cfg.max_seq_len,
                                attention_factor=None if temperature else 1.0))
    new_cfg = cfg.replace(rope_scaling=scaling, max_seq_len=new_len)
    with torch.random.fork_rng(devices=[]):
        out = TinyTransformer(new_cfg)
    out.load_state_dict(model.state_dict())
    return out.eval()


def windowed(model, size: int, max_seq_len=None):
    """A copy of ``model`` with every layer local: each query sees only its last ``size`` keys, itself included
    (``TinyConfig(sliding_window=SlidingWindow(size))``, chapter 11), so no query-key offset over ``size - 1``
    ever occurs. Declared ``max_seq_len`` = ``max_seq_len`` (None: the model's). The weights are the same values
    and the positions are unchanged; nothing is trained."""
    cfg = model.config
    if cfg.sliding_window is not None:
        raise TinyTFInputError("windowed: the model already has a sliding_window")
    new_cfg = cfg.replace(sliding_window=SlidingWindow(size),
                          max_seq_len=max_seq_len if max_seq_len is not None else cfg.max_seq_len)
    with torch.random.fork_rng(devices=[]):
        out = TinyTransformer(new_cfg)
    out.load_state_dict(model.state_dict())
    return out.eval()


def clamped_offsets(model, size: int, pairs=None) -> dict:
    """Patches (for ``run_with_patches`` or ``bits_by_position``) under which every query-key pair more than
    ``size - 1`` positions apart is scored as if it were exactly ``size - 1`` apart, in every layer: each query
    still reads every earlier key, but no offset larger than ``size - 1`` ever reaches RoPE. Pairs within
    ``size - 1`` keep their own scores. The far scores are (R(size - 1) q) . k / sqrt(D), with q and k taken
    before their rotation: RoPE's score depends only on the offset, so this is the score of q and k placed
    ``size - 1`` apart. ``pairs``: the RoPE pairs (0 = fastest) whose offsets are clamped, the others keeping
    each pair's own offset (pair i is dimensions i and i + D/2, as ``rotate_half`` pairs them); None: every pair.
    A far score is a sum over pairs, so it is then the clamped pairs' part of (R(size - 1) q) . k plus the other
    pairs' part of the usual q_rot . k_rot. For the plain RoPE of a model without QK-norm (text-4l); the patches
    keep q and k of the current forward pass, so use them for one pass at a time."""
    cfg = model.config
    if (cfg.pos != "rope" or cfg.rope_scaling is not None or cfg.qk_norm != "none"
            or cfg.sliding_window is not None):
        raise TinyTFInputError("clamped_offsets: needs plain RoPE, no QK-norm and no sliding window (pos="
                               f"{cfg.pos!r}, rope_scaling={cfg.rope_scaling!r}, qk_norm={cfg.qk_norm!r}, "
                               f"sliding_window={cfg.sliding_window!r})")
    if size < 1:
        raise TinyTFInputError(f"clamped_offsets: size must be >= 1, got {size}")
    d_head = cfg.d_model // cfg.n_heads
    mask = None  # [D]: 1 on the dimensions of the clamped pairs
    if pairs is not None:
        pairs = sorted(set(int(i) for i in pairs))
        if any(not 0 <= i < d_head // 2 for i in pairs):
            raise TinyTFInputError(f"clamped_offsets: pairs must lie in 0..{d_head // 2 - 1}, got {pairs}")
        mask = torch.zeros(d_head)
        mask[pairs] = 1.0
        mask[[i + d_head // 2 for i in pairs]] = 1.0
    patches = {}
    for i, block in enumerate(model.blocks):
        attn = block.attn
        if type(attn.rotary) is not RoPE or attn.scale is not None:
            raise TinyTFInputError(f"clamped_offsets: block {i} does not use plain RoPE with 1/sqrt(D) scores")
        seen = {}

        def keep(name, store=seen):
            def patch(x):
                store[name] = x
                return x
            return patch

        def far_scores(scores, store=seen, rotary=attn.rotary, group=attn.n_heads // attn.n_kv_heads):
            q, k = store["q"], store["k"]  # [B, H, T, D], [B, H_kv, S, D]: before their rotation
            T, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
            cos, sin = rotary.angles(torch.full((T,), size - 1, device=q.device), q.device)  # [T, D] each
            q_far = rotary.turn(q, cos.to(q.dtype), sin.to(q.dtype))  # every query at offset size - 1
            k = k.repeat_interleave(group, dim=1)  # [B, H_kv, S, D] -> [B, H, S, D]
            if mask is None:  # every pair clamped
                far = q_far @ k.transpose(-2, -1) / math.sqrt(D)  # [B, H, T, S]
            else:  # the clamped pairs at offset size - 1, the others at their own offset
                m = mask.to(device=q.device, dtype=q.dtype)
                k_rot = store["k_rot"].repeat_interleave(group, dim=1)  # [B, H, S, D]: rotated at its own position
                far = ((q_far * m) @ k.transpose(-2, -1)
                       + (store["q_rot"] * (1 - m)) @ k_rot.transpose(-2, -1)) / math.sqrt(D)  # [B, H, T, S]
            query = torch.arange(S - T, S, device=q.device)[:, None]  # absolute positions of the T queries
            too_far = query - torch.arange(S, device=q.device)[None, :] > size - 1  # [T, S]
            return torch.where(too_far, far, scores)

        patches[f"blocks.{i}.attn.q"] = keep("q")
        patches[f"blocks.{i}.attn.k"] = keep("k")
        if mask is not None:
            patches[f"blocks.{i}.attn.q_rot"] = keep("q_rot")
            patches[f"blocks.{i}.attn.k_rot"] = keep("k_rot")
        patches[f"blocks.{i}.attn.scores"] = far_scores
    return patches


def yarn_logit_scale(factor: float) -> float:
    """YaRN's attention temperature as a multiplier of the attention logits: 1 / t = (0.1 ln s + 1)^2 (Peng et
    al., eq. 22, for LLaMA; 1 for s <= 1). YaRN applies it by scaling the query and the key each by 0.1 ln s + 1."""
    return yarn_mscale(factor) ** 2


@torch.no_grad()
def attention_entropy(model, inputs: torch.Tensor, targets: torch.Tensor, bands, logit_scale: float = 1.0,
                      batch_size: int = 8) -> dict:
    """Per window, for each band of query positions [start, end): the attention entropy in bits,
    -sum_j w_j log2 w_j over the keys a query reads, averaged over every block, head and query of the band
    (``"entropy"``, [n, len(bands)] float64), and the bits per byte of the predictions made there (``"bpb"``, the
    same shape). ``inputs``, ``targets``: [n, T] from ``textdata.eval_windows``. ``logit_scale`` multiplies every
    attention score before the softmax (``yarn_logit_scale(s)``: YaRN's temperature), in every block."""
    cfg = model.config
    if not all(0 <= a < b <= inputs.shape[1] for a, b in bands):
        raise TinyTFInputError(f"attention_entropy: bands {bands} must lie within the {inputs.shape[1]} positions")
    patches = None if logit_scale == 1 else {f"blocks.{i}.attn.scores": (lambda s: s * logit_scale)
                                               for i in range(cfg.n_layers)}
    was_training = model.training
    model.eval()
    entropy = torch.zeros(len(inputs), len(bands), dtype=torch.float64)
    bpb = torch.zeros_like(entropy)
    try:
        for i in range(0, len(inputs), batch_size):
            logits, trace = model.run_with_trace(inputs[i:i + batch_size], names=["blocks.*.attn.weights"],
                                                 patches=patches)
            nats = F.cross_entropy(logits.transpose(1, 2), targets[i:i + batch_size], reduction="none")  # [b, T]
            w = torch.stack([trace[f"blocks.{j}.attn.weights"] for j in range(cfg.n_layers)], 1)  # [b, L, H, T, S]
            bits = -(w * torch.log2(w.clamp_min(1e-30))).sum(-1)  # [b, L, H, T]; a weight of 0 adds 0
            for k, (a, b) in enumerate(bands):
                entropy[i:i + batch_size, k] = bits[..., a:b].double().mean((1, 2, 3))
                bpb[i:i + batch_size, k] = nats[:, a:b].double().mean(1) / math.log(2)
    finally:
        model.train(was_training)
    return {"entropy": entropy, "bpb": bpb}


def rope_angle_table(cfg, positions, factor: float = 1.0) -> list:
    """[(pair index, wavelength in positions, [angle in turns at each position])]: the rotation RoPE applies to
    each 2-D pair of a head (angle / 2 pi), frequency theta^(-2i/d) / factor. A pair has seen every angle it
    will ever use only if the training length covers its wavelength."""
    d = cfg.d_model // cfg.n_heads
    rows = []
    for i in range(d // 2):
        freq = cfg.rope_theta ** (-2 * i / d) / factor
        rows.append((i, 2 * math.pi / freq, [p * freq / (2 * math.pi) for p in positions]))
    return rows


def window_modules(corpus, n_windows: int, seq_len: int) -> list:
    """Per window of ``textdata.eval_windows(corpus.val, n_windows, seq_len)``: the held-out file (its path in
    ``corpus.files``) that the window's middle byte comes from. Windows cut from one module share its style, so a
    standard error over windows is taken by module (``clustered_mean_se``)."""
    n = len(textdata.eval_windows(corpus.val, n_windows, seq_len)[0])
    stride = (len(corpus.val) - 1) // n  # eval_windows: window i starts at i * stride
    files, ends, end = [], [], 0
    for f, t, s in zip(corpus.files, corpus.texts, corpus.split):
        if s == "val":
            end += len(t.encode("utf-8"))
            files.append(f)
            ends.append(end)
    return [files[bisect.bisect_right(ends, i * stride + seq_len // 2)] for i in range(n)]


def clustered_mean_se(values, groups) -> tuple:
    """(mean, standard error) of ``values``, one per window, with the windows clustered by ``groups`` (one label
    per window, e.g. ``window_modules``): the sandwich estimate sqrt(g / (g - 1) * sum over groups of (sum of
    the group's deviations from the mean)^2) / n, for g groups and n windows."""
    v = torch.as_tensor(values, dtype=torch.float64)
    if v.dim() != 1 or len(v) != len(groups) or len(v) < 2:
        raise TinyTFInputError(f"clustered_mean_se: {tuple(v.shape)} values for {len(groups)} group labels")
    labels = {g: i for i, g in enumerate(dict.fromkeys(groups))}
    if len(labels) < 2:
        raise TinyTFInputError("clustered_mean_se: needs at least two groups")
    idx = torch.tensor([labels[g] for g in groups])
    sums = torch.zeros(len(labels), dtype=torch.float64).index_add_(0, idx, v - v.mean())
    g = len(labels)
    return v.mean().item(), math.sqrt(g / (g - 1) * float((sums ** 2).sum())) / len(v)


def load_results(path=None) -> dict:
    path = Path(path) if path is not None else RESULTS_PATH
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TinyTFInputError(f"{path}: not found; run python -m tinytf.lab.context_length to measure it") from None


CONDITIONS = {"1": ("linear", 1), "linear 2": ("linear", 2), "linear 4": ("linear", 4), "yarn 4": ("yarn", 4),
              "window 128": ("window", 128), "window 32": ("window", 32), "window 8": ("window", 8),
              "clamp 128": ("clamp", 128), "clamp 128, pairs 6-15": ("clamp", 128, range(6, 16)),
              "clamp 128, pairs 0-5": ("clamp", 128, range(0, 6))}
"""{key: (kind, value)} measured by ``measure``: kind "linear" or "yarn" with the factor of ``interpolated``
(("linear", 1) is the model as shipped), "window" with the ``size`` of ``windowed``, or "clamp" with the
``size`` of ``clamped_offsets`` (every key kept, offsets over size - 1 scored as size - 1), and a third item
for a clamp of some pairs only: the ``pairs`` of ``clamped_offsets`` (pairs 6-15: text-4l's slow pairs,
under one turn over the offsets 0-127 of training; pairs 0-5: the fast ones)."""


def measure(name: str = "text-4l", n_windows: int = 128, seq_len: int = 512, conditions=CONDITIONS,
            progress: bool = True) -> dict:
    """Bits per byte by position of checkpoint ``name`` on ``n_windows`` windows of ``seq_len`` bytes of its
    validation split, for each condition {key: (kind, value)}: ("linear" or "yarn", factor) through
    ``interpolated`` (("linear", 1) = the model as shipped), ("window", size) through ``windowed``, ("clamp",
    size) through ``clamped_offsets``. One torch thread."""
    info = pretrained.info(name)
    corpus = textdata.stdlib_corpus()
    model = pretrained.load(name)
    n = len(textdata.eval_windows(corpus.val, n_windows, seq_len)[0])
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n * len(conditions), desc=f"{name}, {n} windows of {seq_len} bytes", unit="window")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    try:
        curves, per_window = {}, {}
        for key, (kind, f, *pairs) in conditions.items():
            patches = None
            if kind == "window":
                m = windowed(model, f, max_seq_len=seq_len)
            elif kind == "clamp":
                m, patches = model, clamped_offsets(model, f, pairs[0] if pairs else None)
            else:
                m = model if f == 1 else interpolated(model, f, kind)
            curves[key], per_window[key] = bits_by_position(m, corpus.val, n_windows, seq_len, patches=patches,
                                                            progress=bar.update if bar is not None else None,
                                                            by_window=True)
        windows = textdata.eval_windows(corpus.val, n_windows, seq_len)
        unigram = textdata.unigram_bits_per_byte(corpus.train, windows)
        bigram = textdata.bigram_bits_per_byte(corpus.train, windows)
    finally:
        torch.set_num_threads(threads)
        if bar is not None:
            bar.close()
    record = corpus.record()
    return {
        "model": name, "trained_seq_len": info["seq_len"], "declared_max_seq_len": info["config"]["max_seq_len"],
        "data": "validation split of tinytf.textdata.stdlib_corpus() (held-out files)",
        "corpus_sha256": record["sha256"], "python_version": record["python_version"],
        "windows": f"tinytf.textdata.eval_windows(val, {n_windows}, {seq_len}): evenly spaced, non-overlapping",
        "n_windows": n, "seq_len": seq_len,
        "window_modules": window_modules(corpus, n_windows, seq_len),
        "measured": "float16-stored weights loaded as float32, one torch thread; position t = the prediction of "
                    "byte t + 1 from bytes 0..t; 'linear f': RopeScaling('linear', f); 'yarn f': RopeScaling('yarn', f, "
                    "original_max_seq_len=128); 'window n': every layer limited to a sliding window of n keys "
                    "(SlidingWindow(n)), the same weights; 'clamp n': every key kept, each query-key pair more than n - 1 "
                    "positions apart scored as if n - 1 apart (clamped_offsets(model, n)); 'clamp n, pairs a-b': the same "
                    "for RoPE pairs a to b only, the other pairs keeping their own offset (clamped_offsets(model, n, "
                    "range(a, b + 1))); no fine-tuning",
        "torch_version": torch.__version__, "seconds": round(time.perf_counter() - t0, 1),
        "baselines": {"unigram": round(unigram, 4), "bigram": round(bigram, 4)},
        "bpb_by_position": {f: [round(float(x), 4) for x in c] for f, c in curves.items()},
        "bands": {f: {k: round(v, 4) for k, v in band_means(c).items()} for f, c in curves.items()},
        "bands_by_window": {f: {f"{a}-{b}": [round(float(x), 4) for x in w[:, a:b].mean(1)] for a, b in BANDS
                                if b <= seq_len} for f, w in per_window.items()},
    }


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(description="bits per byte by position of text-4l, as shipped, interpolated and windowed")
    p.add_argument("--windows", type=int, default=128)
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--out", type=Path, default=RESULTS_PATH)
    p.add_argument("--only", nargs="+", choices=sorted(CONDITIONS), metavar="KEY",
                   help="measure only these conditions and merge them into --out (which must exist, measured on "
                        "the same windows); the other conditions stay as recorded")
    args = p.parse_args(argv)
    conditions = CONDITIONS if args.only is None else {k: CONDITIONS[k] for k in args.only}
    results = measure(n_windows=args.windows, seq_len=args.seq_len, conditions=conditions)
    if args.only is not None:
        old = load_results(args.out)
        same = ("model", "corpus_sha256", "windows", "n_windows", "seq_len")
        if any(old[k] != results[k] for k in same):
            raise TinyTFInputError(f"{args.out}: measured on other windows or another model; measure everything again")
        seconds = dict(old.get("seconds_by_run", {"all": old["seconds"]}), **{", ".join(args.only): results["seconds"]})
        for part in ("bpb_by_position", "bands", "bands_by_window"):
            old.setdefault(part, {}).update(results[part])
        old.update(measured=results["measured"], torch_version=results["torch_version"], seconds_by_run=seconds,
                   window_modules=results["window_modules"])
        results = old
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: results["bands"][k] for k in conditions}, indent=1))
    print(f"wrote {args.out} ({results['seconds']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
