"""text-4l's ReLU twin: the same recipe with a ReLU MLP of the same size in place of SwiGLU.

    from tinytf.lab import relu_twin
    r = relu_twin.load_results()              # measured once by scripts/relu_twin.py, shipped with tinytf
    print(relu_twin.format_bpb(r))            # held-out bits per byte of both trained models
    print(relu_twin.format_units(r))          # per block: silent units, units active on < 1% of positions, median share

The twin (``python -m tinytf train --task text --preset small-relu``) differs from text-4l only in its FFN: a
bias-free ReLU MLP with d_ff = 768, whose 2 * 192 * 768 weights equal SwiGLU's 3 * 192 * 512; same corpus, steps,
optimiser, learning rate, seed. Its weights are not shipped; this module measures a model and reads the stored
measurements. On the held-out windows (``textdata.eval_windows(val, 256, 128)``, 32,768 positions), for every FFN
unit of every block, the share of positions where it is *active*:

- ReLU MLP: its pre-activation ``ffn.pre`` > 0 (so its output ``ffn.post`` is not 0);
- SwiGLU: its gate ``ffn.gate`` > 0 (so SiLU(gate) > 0). A SwiGLU unit with a negative gate still passes a
  shrunk, sign-flipped value, so this is a looser analogue; its hidden value is exactly 0 at no position.

Per block: units *silent* on these positions (hidden value exactly 0 at all 32,768 positions of held-out text:
candidates for dead units, not a proof that no input could revive them; the key ``"dead"`` counts the units never
active, the same number for a ReLU MLP), units active on fewer than 1% of positions, and the median active share.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from ..errors import TinyTFInputError
from . import textdata

RESULTS_PATH = Path(__file__).resolve().parents[1] / "checkpoints" / "relu-twin.json"
N_WINDOWS, SEQ_LEN = 256, 128
RARE = 0.01  # "rarely active": active on fewer than this share of positions
MODELS = ("text-4l", "relu-twin", "relu-twin@step0")  # the keys of the "models" entry


def active_site(model) -> str:
    """The traced tensor whose sign says a unit is active: ``ffn.pre`` (ReLU MLP) or ``ffn.gate`` (SwiGLU)."""
    ffn = model.config.ffn
    if ffn == "relu":
        return "ffn.pre"
    if ffn == "swiglu":
        return "ffn.gate"
    raise TinyTFInputError(f"relu_twin.active_site: ffn={ffn!r}; this module measures 'relu' and 'swiglu' FFNs")


@torch.no_grad()
def active_counts(model, inputs: torch.Tensor, batch_size: int = 32):
    """Two [n_layers, d_ff] long tensors: for every FFN unit of every block, the number of positions of ``inputs``
    [n, T] where it is active (``active_site(model)`` > 0), and where its hidden value ``ffn.post`` is not
    exactly 0 (for a ReLU MLP the same count, up to pre-activations exactly 0)."""
    model.eval()
    site = active_site(model)
    n_layers, d_ff = model.config.n_layers, model.config.d_ff
    names = [f"blocks.{b}.{s}" for b in range(n_layers) for s in (site, "ffn.post")]
    active = torch.zeros(n_layers, d_ff, dtype=torch.long)
    nonzero = torch.zeros(n_layers, d_ff, dtype=torch.long)
    for i in range(0, len(inputs), batch_size):
        _, trace = model.run_with_trace(inputs[i:i + batch_size], names=names)
        for b in range(n_layers):
            active[b] += (trace[f"blocks.{b}.{site}"] > 0).flatten(0, -2).sum(0)
            nonzero[b] += (trace[f"blocks.{b}.ffn.post"] != 0).flatten(0, -2).sum(0)
    return active, nonzero


def block_summary(active: torch.Tensor, nonzero: torch.Tensor, n_positions: int) -> list:
    """Per block, from ``active_counts``: {"units"; "dead": never active; "rare": active on fewer than RARE of the
    positions, the dead included; "median_share": the median unit's active share; "silent": hidden value exactly
    0 at every position, the book's silent units of chapter 4}."""
    out = []
    for c, nz in zip(active, nonzero):
        share = c.double() / n_positions
        out.append({"units": int(c.numel()), "dead": int((c == 0).sum()), "rare": int((share < RARE).sum()),
                    "median_share": round(float(share.quantile(0.5)), 4), "silent": int((nz == 0).sum())})
    return out


def measure(model, corpus=None) -> dict:
    """Held-out bits per byte and the per-block activity summary of one model (ReLU or SwiGLU FFN)."""
    corpus = corpus if corpus is not None else textdata.stdlib_corpus()
    inputs, _ = textdata.eval_windows(corpus.val, N_WINDOWS, SEQ_LEN)
    active, nonzero = active_counts(model, inputs)
    return {"ffn": model.config.ffn, "d_ff": model.config.d_ff, "active": active_site(model) + " > 0",
            "val_bpb": round(float(textdata.bits_per_byte(model, corpus.val, N_WINDOWS, SEQ_LEN)), 4),
            "n_positions": int(inputs.numel()), "blocks": block_summary(active, nonzero, inputs.numel())}


def load_results(path=None) -> dict:
    """The stored measurements: {"models": {name: measure(...)}, "settings": {...}} (see ``check``)."""
    path = Path(path) if path is not None else RESULTS_PATH
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TinyTFInputError(f"{path}: not found; run python scripts/relu_twin.py to measure it") from None
    check(data, path)
    return data


def check(data: dict, where="relu-twin results") -> None:
    """Raise TinyTFInputError unless ``data`` has the structure ``load_results`` promises and its counts agree."""
    def fail(msg):
        raise TinyTFInputError(f"{where}: {msg}")

    for key in ("models", "settings"):
        if key not in data:
            fail(f"no {key!r} entry; is it a relu-twin file?")
    for key in ("command", "seed", "steps", "corpus_sha256"):
        if key not in data["settings"]:
            fail(f"settings has no {key!r}")
    if not set(MODELS) <= set(data["models"]):
        fail(f"models {sorted(data['models'])}, expected {sorted(MODELS)} (plus pairs from other seeds)")
    extra = set(data["models"]) - set(MODELS)
    for seed in extra_seeds(data):
        for key in (f"text-4l@seed{seed}", f"relu-twin@seed{seed}"):
            if key not in extra:
                fail(f"seed {seed}: {key!r} missing (each further seed is a SwiGLU-ReLU pair)")
            extra.discard(key)
        if str(seed) not in data["settings"].get("seed_runs", {}):
            fail(f"seed {seed}: settings['seed_runs'] has no entry {str(seed)!r}")
    if extra:
        fail(f"unknown models {sorted(extra)}; further seeds are named 'text-4l@seedN' and 'relu-twin@seedN'")
    for name, m in data["models"].items():
        want = "swiglu" if name.split("@seed")[0] == "text-4l" else "relu"
        if m.get("ffn") != want:
            fail(f"{name}: ffn {m.get('ffn')!r}, expected {want!r}")
        if not (isinstance(m.get("n_positions"), int) and m["n_positions"] > 0):
            fail(f"{name}: n_positions must be a positive integer")
        if not 0 < m.get("val_bpb", -1) <= 8.5:
            fail(f"{name}: val_bpb {m.get('val_bpb')} is not a byte model's bits per byte")
        for b, blk in enumerate(m.get("blocks", [])):
            if blk["units"] != m["d_ff"]:
                fail(f"{name} block {b}: {blk['units']} units, d_ff {m['d_ff']}")
            if not 0 <= blk["dead"] <= blk["rare"] <= blk["units"]:
                fail(f"{name} block {b}: need 0 <= dead <= rare <= units, got {blk}")
            if not 0 <= blk["silent"] <= blk["units"]:
                fail(f"{name} block {b}: need 0 <= silent <= units, got {blk}")
            if not 0.0 <= blk["median_share"] <= 1.0:
                fail(f"{name} block {b}: median_share {blk['median_share']} is not in [0, 1]")
        if not m.get("blocks"):
            fail(f"{name}: no blocks")
    if len({len(m["blocks"]) for m in data["models"].values()}) != 1:
        fail("the models have different numbers of blocks")
    if data["models"]["text-4l"]["d_ff"] * 3 != data["models"]["relu-twin"]["d_ff"] * 2:
        fail("the twin's FFN is not parameter-matched (3 * 512 = 2 * 768)")


def extra_seeds(data: dict) -> list:
    """The seeds, besides 0, with a recorded SwiGLU-ReLU pair (``"relu-twin@seedN"`` in ``data["models"]``)."""
    out = []
    for name in data["models"]:
        base, _, seed = name.partition("@seed")
        if base in ("text-4l", "relu-twin") and seed:
            if not seed.isdigit() or int(seed) == 0:
                raise TinyTFInputError(f"relu-twin results: model {name!r}; seed 0 is 'text-4l' / 'relu-twin'")
            out.append(int(seed))
    return sorted(set(out))


def pairs(data: dict) -> list:
    """One row per seed: (seed, SwiGLU bits per byte, ReLU twin bits per byte, SwiGLU minus ReLU), seed 0 first.
    Both models of a row come from the same recipe and seed, measured on the same held-out windows."""
    m = data["models"]
    rows = [(0, m["text-4l"]["val_bpb"], m["relu-twin"]["val_bpb"])]
    rows += [(s, m[f"text-4l@seed{s}"]["val_bpb"], m[f"relu-twin@seed{s}"]["val_bpb"]) for s in extra_seeds(data)]
    return [(s, swi, rel, swi - rel) for s, swi, rel in rows]


def format_pairs(data: dict) -> str:
    """The paired table: per seed, SwiGLU and ReLU twin bits per byte and their difference, then the mean."""
    rows = pairs(data)
    n = data["models"]["text-4l"]["n_positions"]
    lines = [f"bits per byte on {n:,} held-out positions", f"{'seed':>4}  {'SwiGLU':>6}  {'ReLU':>6}  {'SwiGLU - ReLU':>13}"]
    lines += [f"{s:>4}  {swi:>6.3f}  {rel:>6.3f}  {d:>+13.3f}" for s, swi, rel, d in rows]
    diffs = [d for *_, d in rows]
    lines.append(f"{'mean':>4}  {'':>6}  {'':>6}  {sum(diffs) / len(diffs):>+13.3f}   ({len(diffs)} pairs)")
    return "\n".join(lines)


def format_bpb(data: dict) -> str:
    """The two trained models' held-out bits per byte, one line each."""
    m = data["models"]
    n = m["text-4l"]["n_positions"]
    return "\n".join(f"{label:34} {m[k]['val_bpb']:.3f} bits per byte on {n:,} held-out positions"
                     for k, label in (("text-4l", "text-4l (SwiGLU, d_ff 512)"),
                                      ("relu-twin", "ReLU twin (ReLU MLP, d_ff 768)")))


UNIT_GROUPS = (("relu-twin@step0", "ReLU, untrained"), ("relu-twin", "ReLU, trained"),
               ("text-4l", "SwiGLU (gate > 0)"))


def format_units(data: dict, models=None) -> str:
    """Per block and model: silent units (hidden value exactly 0 at every position; for a ReLU MLP the units never
    active), units active on < 1% of positions, median active share. ``models``: the keys of the column groups to
    print, in order (default: all three, ``"relu-twin@step0"``, ``"relu-twin"``, ``"text-4l"``)."""
    labels = dict(UNIT_GROUPS)
    keys = [k for k, _ in UNIT_GROUPS] if models is None else list(models)
    unknown = [k for k in keys if k not in labels]
    if unknown:
        raise TinyTFInputError(f"format_units: unknown models {unknown}; choose from {list(labels)}")
    cols = tuple((k, labels[k]) for k in keys)
    head = f"{'block':>5}" + "".join(f"  {label:>26}" for _, label in cols)
    sub = f"{'':>5}" + "".join(f"  {'silent':>6} {'<1%':>5} {'median':>13}" for _ in cols)
    lines = [head, sub]
    for b in range(len(data["models"]["text-4l"]["blocks"])):
        row = f"{b:>5}"
        for key, _ in cols:
            blk = data["models"][key]["blocks"][b]
            row += f"  {blk['silent']:>6} {blk['rare']:>5} {blk['median_share']:>13.0%}"
        lines.append(row)
    units = ", ".join(f"{label}: {data['models'][k]['d_ff']}" for k, label in cols)
    lines.append(f"(units per block: {units})")
    return "\n".join(lines)
