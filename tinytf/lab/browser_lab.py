"""The lab on the book's landing page: text-4l in the reader's browser, with head ablation, the logit lens
and a KV cache, from one ONNX graph per model.

    from tinytf.lab import browser_lab as lab
    model = tinytf.pretrained("text-4l")
    out = lab.run_lab(model, ids)                        # what the browser's graph computes, in PyTorch
    out = lab.run_lab(model, ids, head_mask=mask)         # mask [L, H]: 1 = head on, 0 = head off
    lab.export_lab_onnx(model, "text-4l.lab.onnx")        # the graph the page runs (onnxruntime-web)
    lab.next_byte_probs(out["logits"], temperature=0.8, top_k=20, top_p=0.9)   # = tinytf.next_token_probs
    lab.sample_text(model, "The ", 40, seed=1, temperature=0.8)                # = the page's Generate

**Head mask.** ``head_mask_patches(mask)`` multiplies the output ``z`` of head h of block l (trace
``blocks.l.attn.z``, [B, H, T, D], before the heads are merged and W_o applied) by ``mask[l, h]``: 1 keeps the
head, 0 switches it off (its contribution to the block's attention output is removed), any other value scales
it. It goes through the model's own hook points (``model.run_with_patches``), so the masked model is the
model, not a copy; the graph takes the mask as an input, so one file serves every ablation.

**The graph** (``export_lab_onnx``), batch 1:

* inputs ``ids`` int64 [1, T]; ``head_mask`` float32 [L, H]; ``past_k``, ``past_v`` float32 [L, H_kv, S, D],
  the keys (after RoPE) and values of the S positions already processed (S = 0: a fresh prompt);
* outputs ``logits`` [V] (the next byte after the last position), ``lens`` [L, T, V] (the logit lens: the
  model's final norm and LM head applied to the stream leaving each block, ``tinytf.lab.lens``; ``lens[L-1]``
  are the model's own logits), ``attn`` [L, H, T, S + T] (the attention weights of every layer and head),
  ``present_k``, ``present_v`` [L, H_kv, S + T, D] (the cache after these T positions).

A keystroke runs the prompt once with S = 0; generation then feeds one byte at a time with the cache
(chapter 10's KV cache), so each step costs one position, not the whole prompt. The page keeps
S + T <= max_seq_len; when the context is full it runs the last max_seq_len bytes afresh before each step, as
``tinytf.generate`` does (``sample_text`` follows the same rule, so Python and the page write the same text).

**The sampler** is chapter 10's (``tinytf.generation.next_token_probs``: temperature, then top-k, then
top-p, renormalised; temperature 0 = greedy). The random numbers come from ``mulberry32``, a 32-bit
generator that JavaScript computes exactly: u = mulberry32(seed) in [0, 1), and the byte drawn is the first
whose cumulative probability exceeds u. The same seed gives the same text in Python and on the page.
"""
from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import torch
from torch import nn

from ..attention import KVCache, LayerCache
from ..errors import TinyTFInputError
from ..generation import next_token_probs
from .onnx_export import _float16_storage

INPUTS = ("ids", "head_mask", "past_k", "past_v")
OUTPUTS = ("logits", "lens", "attn", "present_k", "present_v")
SNAPSHOTS = ("text-4l@step0", "text-4l@step90", "text-4l@step360", "text-4l@step900", "text-4l")


def _blocks(model):
    if not all(hasattr(model, a) for a in ("blocks", "final_norm", "lm_head", "config")):
        raise TinyTFInputError(f"browser_lab: expected a decoder-only TinyTransformer, got {type(model).__name__}")
    return model.blocks


def full_mask(model) -> torch.Tensor:
    """[L, H] of ones: every head on."""
    return torch.ones(len(_blocks(model)), model.config.n_heads)


def check_head_mask(model, mask) -> torch.Tensor:
    """``mask`` as a float32 [L, H] tensor, or TinyTFInputError naming what is wrong."""
    L, H = len(_blocks(model)), model.config.n_heads
    try:
        mask = torch.as_tensor(mask, dtype=torch.float32)
    except (TypeError, ValueError) as e:
        raise TinyTFInputError(f"head_mask: expected numbers [{L}, {H}] (layers, heads), got {type(mask).__name__} ({e})")
    if tuple(mask.shape) != (L, H):
        raise TinyTFInputError(f"head_mask: expected shape [{L}, {H}] (layers, heads), got {list(mask.shape)}")
    if not torch.isfinite(mask).all():
        raise TinyTFInputError("head_mask: every value must be a finite number (1 = head on, 0 = off)")
    return mask


def head_mask_patches(mask) -> dict:
    """{"blocks.l.attn.z": z -> z * mask[l, h] per head h}: the patches that apply a head mask [L, H]
    (``model.run_with_patches(ids, patches=...)``). ``mask`` may be a tensor of the graph's input."""
    return {f"blocks.{l}.attn.z": (lambda z, row=mask[l]: z * row[None, :, None, None]) for l in range(mask.shape[0])}


class _LabGraph(nn.Module):
    """(ids, head_mask, past_k, past_v) -> (logits [V], lens [L, T, V], attn [L, H, T, S+T], present_k, present_v)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, head_mask, past_k, past_v):
        model = self.model
        L = len(model.blocks)
        cache = KVCache([LayerCache(k=past_k[i][None], v=past_v[i][None]) for i in range(L)])
        names = [f"blocks.{i}.attn.weights" for i in range(L)] + [f"blocks.{i}.resid_post" for i in range(L)]
        logits, trace = model.run_with_trace(ids, cache=cache, names=names, patches=head_mask_patches(head_mask))
        lens = torch.stack([model.lm_head(model.final_norm(trace[f"blocks.{i}.resid_post"][0])) for i in range(L)])
        attn = torch.stack([trace[f"blocks.{i}.attn.weights"][0] for i in range(L)])
        present_k = torch.stack([c.k[0] for c in cache.layers])
        present_v = torch.stack([c.v[0] for c in cache.layers])
        return logits[0, -1], lens, attn, present_k, present_v


def empty_past(model) -> torch.Tensor:
    """[L, H_kv, 0, D]: the cache before the first position."""
    cfg = model.config
    return torch.zeros(len(_blocks(model)), cfg.kv_heads, 0, cfg.d_head)


@torch.no_grad()
def run_lab(model, ids, head_mask=None, past_k=None, past_v=None) -> dict:
    """What the lab's graph computes, in PyTorch: {name: tensor} for ``OUTPUTS`` (see the module docstring).
    ``ids``: [T] or [1, T] byte ids; ``head_mask`` [L, H] (None: every head on)."""
    ids = torch.as_tensor(ids, dtype=torch.long).reshape(1, -1)
    mask = full_mask(model) if head_mask is None else check_head_mask(model, head_mask)
    past_k = empty_past(model) if past_k is None else torch.as_tensor(past_k)
    past_v = empty_past(model) if past_v is None else torch.as_tensor(past_v)
    if past_k.shape[2] + ids.shape[1] > model.config.max_seq_len:
        raise TinyTFInputError(f"run_lab: {past_k.shape[2]} cached + {ids.shape[1]} new positions exceed the "
                               f"model's max_seq_len {model.config.max_seq_len}")
    was = model.training
    model.eval()
    try:
        return dict(zip(OUTPUTS, _LabGraph(model)(ids, mask, past_k, past_v)))
    finally:
        model.train(was)


def export_lab_onnx(model, path, opset: int = 17) -> list:
    """Write the lab's graph of ``model`` to ``path`` (float16 storage for weights that are float16 numbers,
    as ``tinytf.export_onnx``); return the output names."""
    _blocks(model)
    cfg = model.config
    L, Hkv, D = len(model.blocks), cfg.kv_heads, cfg.d_head
    example = (torch.arange(2, dtype=torch.long)[None] + 97, full_mask(model),
               torch.zeros(L, Hkv, 3, D), torch.zeros(L, Hkv, 3, D))
    axes = {"ids": {1: "T"}, "past_k": {2: "S"}, "past_v": {2: "S"}, "lens": {1: "T"}, "attn": {2: "T", 3: "ST"},
            "present_k": {2: "ST"}, "present_v": {2: "ST"}}
    was = model.training
    model.eval()
    buffer = io.BytesIO()
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx")
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            torch.onnx.export(_LabGraph(model), example, buffer, dynamo=False, opset_version=opset,
                              input_names=list(INPUTS), output_names=list(OUTPUTS), dynamic_axes=axes,
                              do_constant_folding=True)
    finally:
        model.train(was)
    Path(path).write_bytes(_float16_storage(buffer.getvalue()))
    return list(OUTPUTS)


# ---------------------------------------------------------------- the sampler (the page's, in Python)
def mulberry32(seed: int):
    """A generator of floats in [0, 1): mulberry32, 32-bit integer arithmetic that JavaScript's
    Math.imul and >>> reproduce exactly (the page's copy is in _static/tinytf-lab.js)."""
    state = int(seed) & 0xFFFFFFFF

    def imul(a, b):
        return (a * b) & 0xFFFFFFFF

    def draw() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        t = state
        t = imul(t ^ (t >> 15), t | 1)
        t ^= (t + imul(t ^ (t >> 7), t | 61)) & 0xFFFFFFFF
        t &= 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296

    return draw


def next_byte_probs(logits, temperature: float = 1.0, top_k=None, top_p=None) -> torch.Tensor:
    """[V] distribution of the next byte: chapter 10's ``next_token_probs`` (float64 here and on the page)."""
    return next_token_probs(torch.as_tensor(logits).double().reshape(1, -1), temperature, top_k, top_p)[0]


def pick(probs, u: float) -> int:
    """The first index whose cumulative probability exceeds ``u`` (the last non-zero one if rounding leaves
    the sum below u)."""
    total, last = 0.0, 0
    for i, p in enumerate(torch.as_tensor(probs).tolist()):
        if p > 0:
            total += p
            last = i
            if total > u:
                return i
    return last


@torch.no_grad()
def sample_text(model, prompt, n_bytes: int, seed: int = 0, temperature: float = 1.0, top_k=None, top_p=None,
                head_mask=None) -> list:
    """The bytes the page's Generate writes after ``prompt`` (str or byte ids): one run of the whole prompt,
    then one byte at a time through the KV cache; at a full context, the last max_seq_len bytes afresh.
    Temperature 0 is greedy (no random number is drawn)."""
    ids = list(prompt.encode("utf-8")) if isinstance(prompt, str) else [int(i) for i in prompt]
    n = model.config.max_seq_len
    ids = ids[-n:]
    draw = mulberry32(seed)
    out = run_lab(model, ids, head_mask)
    new = []
    for _ in range(int(n_bytes)):
        probs = next_byte_probs(out["logits"], temperature, top_k, top_p)
        b = int(probs.argmax()) if temperature == 0 else pick(probs, draw())
        new.append(b)
        ids.append(b)
        if out["present_k"].shape[2] + 1 > n:  # full: the last n bytes afresh, as tinytf.generate does
            ids = ids[-n:]
            out = run_lab(model, ids, head_mask)
        else:
            out = run_lab(model, [b], head_mask, out["present_k"], out["present_v"])
    return new


# ---------------------------------------------------------------- the page: its files and its words
LAB_FORMAT = "tinytf-lab/1"
LAB_JSON = "lab.json"
KEY_FILE = "lab.key"
TOP_BYTES = 10  # rows of the distribution table
DEFAULTS = {"prompt": "The function returns the ", "temperature": 0.8, "top_k": 40, "top_p": 0.95, "seed": 1,
            "n_bytes": 64, "layer": 3, "head": 0, "model": "text-4l"}
# the settings the page accepts: (low, high, whole number?, may be empty = no limit)
LIMITS = {"temperature": [0, 5, False, False], "top_k": [1, 256, True, True], "top_p": [0, 1, False, True],
          "seed": [0, 4294967295, True, False], "n_bytes": [1, 512, True, False]}
RULES = {
    "temperature": "a number from 0 to 5 (0 = always the most likely byte)",
    "top_k": "a whole number from 1 to 256, or empty for no limit",
    "top_p": "a number above 0 and at most 1, or empty for no limit",
    "seed": "a whole number from 0 to 4294967295",
    "n_bytes": "a whole number from 1 to 512",
}
MESSAGES = {
    "empty": ("The prompt is empty: type a few letters (for example “The ”) and the model shows which byte it "
              "expects next."),
    "cut": ("Your text is {n} bytes long, but the model reads at most {max} bytes (its context): it sees the "
            "last {max} bytes only, the first {cut} were cut."),
    "cut_one": ("Your text is {n} bytes long, but the model reads at most {max} bytes (its context): it sees the "
                "last {max} bytes only, the first byte was cut."),
    "non_ascii": ("Your text has characters outside ASCII ({chars}). The model reads UTF-8 bytes, not characters: "
                  "each CJK character is 3 bytes, an emoji 4, and the model was trained almost only on English, "
                  "so its guesses after them are poor."),
    "setting": "{name}: {rule}; got “{value}”. The lab keeps using {kept}.",
    "file": ("This page was opened as a file (file://), and browsers do not let such a page load the model. "
             "Serve the book's folder instead: run `python -m http.server --directory _build/html` and open "
             "http://localhost:8000/"),
    "failed": "The model could not be loaded ({error}). Reload the page to try again.",
    "loading": "Loading the model ({done} of {total} MB)…",
    "ready": "Loaded: {model}. It runs in your browser; nothing is sent anywhere.",
    "generating": "Writing byte {i} of {n}…",
    "generated": "Wrote {n} bytes in {seconds} s ({rate} bytes/s).",
    "generated_one": "Wrote 1 byte in {seconds} s.",
    "refill": " From byte {at} on, the context was full: each step reads the last {max} bytes afresh.",
    "ablated": "{k} of {total} heads switched off.",
    "ablated_one": "1 head of {total} switched off.",
    "idle": ("Waiting for the model: every control below works once it has loaded. Using any of them loads it "
             "(3.9 MB, and the 14 MB runtime that runs it), once."),
    "caption": "The next byte after the prompt: the {shown} most likely of the {kept} bytes the sampler can draw",
    "caption_all": "The next byte after the prompt: the {kept} bytes the sampler can draw, most likely first",
    "caption_one": "The next byte after the prompt: the only byte the sampler can draw with these settings",
}
NAMES = {"temperature": "Temperature", "top_k": "Top-k", "top_p": "Top-p", "seed": "Seed", "n_bytes": "Bytes to write"}
NOTE = ("<b>The model in your browser.</b> This lab runs text-4l, the book's model trained on English text, "
        "in your browser. It needs JavaScript; or open any chapter in Binder or Colab.")
# the model's shape, for the controls the page shows before the model has loaded (a test keeps it text-4l's)
SHAPE = {"n_layers": 4, "n_heads": 6}
# the chapter that teaches each part of the lab: its number -> its page, from the book's root
CHAPTERS = {2: "chapters/02_causal_self_attention.html", 6: "chapters/06_decoder_block.html",
            7: "chapters/07_tiny_transformer.html", 10: "chapters/10_generation_kv_cache.html",
            12: "chapters/12_misconceptions.html"}
# a line of plain words under each control and view, on first sight: what it is, what to look for; and the
# chapters that teach it
HELP = {
    "prompt": ("The model reads your text byte by byte and guesses the next byte.", [7]),
    "model": ("The same model saved during its training: after 0 steps it is untrained and guesses at random.",
              [7]),
    "temperature": ("Divides the model's scores before the softmax: below 1 the likely bytes get likelier, "
                    "above 1 the text gets wilder.", [10]),
    "top_k": ("Only the k most likely bytes may be drawn.", [10]),
    "top_p": ("Only the most likely bytes whose probabilities add up to at least p may be drawn.", [10]),
    "seed": "The same seed and settings write the same text again.",
    "table": ("What the sampler can draw next (the model's probabilities after temperature, top-k and top-p): "
              "Generate draws from this table, byte after byte.", [10]),
    "heads": ("A head is one attention pattern inside a block (here 6 per block, in 4 blocks, numbered from 0): "
              "it picks which earlier bytes each byte reads. Switching one off multiplies its output by 0, so "
              "you see what the model does without it. With every head off, each byte sees only itself: the "
              "model guesses from the last byte alone.", [2, 12]),
    "lens": ("Logit lens: the model's final norm and LM head applied after each block, as if the model stopped "
             "there. Look for the block where the guess settles on the byte that really comes next. Its "
             "probabilities are the model's own (temperature 1, nothing cut); the next-byte table shows the "
             "sampler's, after temperature, top-k and top-p.", [12]),
    "attention": ("A block is one of the model's 4 (0 = nearest the input); a head, one attention pattern in it. "
                  "Each row of the map is a byte of the prompt, its colours how much that byte reads each "
                  "earlier one.", [2, 6]),
}
# "try this": what a click sets (the prompt, settings, heads switched off, the model) and whether it then
# generates; shown in the views that have every part it needs. tests/tinytf/test_browser_lab_export.py checks
# each hint's claim against the model.
HINTS = [
    {"key": "lens", "needs": ["lens"], "views": ["all", "parts"], "set": {"prompt": "the quick brown f"},
     "text": "Type “the quick brown f” and watch the logit lens: which block first guesses the “o” that comes next?"},
    {"key": "block0", "needs": ["ablation", "generate"], "views": ["all"],
     "set": {"prompt": DEFAULTS["prompt"], "temperature": 0, "off": [[0, h] for h in range(6)], "generate": True},
     "text": ("Switch off all six heads of block 0 and press Generate at temperature 0: are the words still "
              "words? Switch them on again and compare.")},
    {"key": "step90", "needs": ["snapshots", "generate"], "views": ["all"],
     "set": {"prompt": DEFAULTS["prompt"], "model": "text-4l@step90", "temperature": 0, "generate": True},
     "text": ("Pick the model after 90 training steps, set temperature 0 and press Generate: which one word has "
              "it learnt so far?")},
    {"key": "step0", "needs": ["snapshots"], "views": ["parts"], "set": {"model": "text-4l@step0"},
     "text": ("Pick the model after 0 training steps: no byte stands out in its table, it has learnt nothing "
              "yet. Then pick the later snapshots and watch the lens.")},
    {"key": "greedy", "needs": ["generate"], "views": ["all", "sampling"],
     "set": {"prompt": DEFAULTS["prompt"], "temperature": 0, "top_k": DEFAULTS["top_k"], "top_p": DEFAULTS["top_p"],
             "seed": 1, "generate": True},
     "text": ("At temperature 0 every seed writes the same text, because each step takes the most likely byte: "
              "press Generate, set the seed to 2 and press it again. Then set temperature 1.5: seeds 1 and 2 "
              "write different texts, and the same seed writes its text again (that is what the seed is for).")},
    {"key": "hot", "needs": ["generate"], "views": ["sampling"],
     "set": {"prompt": DEFAULTS["prompt"], "temperature": 1.5, "top_k": None, "top_p": None, "generate": True},
     "text": ("Set temperature 1.5, empty top-k and top-p, and press Generate: made-up words appear. Then set "
              "temperature back to 0.8 and compare.")},
]


def hints(view: str = "all") -> list:
    """The "try this" hints a lab of ``view`` shows (``HINTS``: text, what a click sets)."""
    return [{"key": h["key"], "text": h["text"], "set": h["set"]} for h in HINTS if view in h["views"]]


def snapshot_models() -> list:
    """(key, label, step) of the models the lab offers: the training snapshots, then the final text-4l."""
    out = []
    for name in SNAPSHOTS:
        step = name.split("@step")[1] if "@step" in name else "final"
        label = f"text-4l after {step} training steps" if step != "final" else "text-4l, fully trained"
        out.append((name, label, step))
    return out


def file_name(key: str) -> str:
    return key.replace("@", "-") + ".onnx"


def lab_config(model) -> dict:
    cfg = model.config
    return {"vocab_size": cfg.vocab_size, "max_seq_len": cfg.max_seq_len, "n_layers": cfg.n_layers,
            "n_heads": cfg.n_heads, "n_kv_heads": cfg.kv_heads, "d_head": cfg.d_head}


def page_state(view: str = "all") -> dict:
    """What a lab div carries (JSON): the view, defaults, limits, rules, names, messages, the model's shape and
    snapshots (so every control shows before the model loads), the help lines and the hints."""
    help_lines = {k: ({"text": v[0], "chapters": v[1]} if isinstance(v, tuple) else {"text": v, "chapters": []})
                  for k, v in HELP.items()}
    return {"format": LAB_FORMAT, "view": view, "defaults": DEFAULTS, "limits": LIMITS, "rules": RULES,
            "names": NAMES, "messages": MESSAGES, "top": TOP_BYTES, "prng": "mulberry32", "shape": SHAPE,
            "models": [[key, label] for key, label, _ in snapshot_models()], "help": help_lines,
            "chapters": {str(k): v for k, v in CHAPTERS.items()}, "hints": hints(view)}


def lab_html(view: str = "all") -> str:
    """The HTML a page embeds: a div that _static/tinytf-lab.js turns into the lab (a note until then)."""
    import html as _html

    data = _html.escape(json.dumps(page_state(view), ensure_ascii=True, sort_keys=True), quote=True)
    return (f'<div class="tinytf-lab" data-lab="{data}">'
            f'<div class="tinytf-live-note">{NOTE}</div></div>')
