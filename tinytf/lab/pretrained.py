"""Trained tiny models shipped with tinytf, loaded by name with no network access.

    import tinytf
    model = tinytf.pretrained("induction-2l")          # same as tinytf.pretrained.load("induction-2l")
    tinytf.pretrained.available()                       # {name: one-line description}
    s = tinytf.pretrained.sample_input("induction-2l", seed=1)
    logits, trace = model.run_with_trace(s.ids)
    trace[s.attention][0, s.head]                       # the head that does the job, on a fresh example
    random_twin = tinytf.pretrained.untrained("induction-2l")   # same architecture, random weights

A byte-level language model trained on real English (the docstrings of Python's standard library,
read at training time by ``tinytf.textdata``; nothing of it is stored here), with snapshots taken
along its training run:

    lm = tinytf.pretrained("text-4l")                   # the final weights
    tinytf.pretrained.snapshots("text-4l")              # {step: name}, e.g. {0: 'text-4l@step0', ..., 1800: 'text-4l'}
    early = tinytf.pretrained("text-4l", step=90)       # = tinytf.pretrained("text-4l@step90")
    tinytf.pretrained.info("text-4l")["curve"]          # train/validation bits per byte along the run
    tinytf.pretrained.names("text")                     # ['text-4l']; snapshots are not listed as models

``names()``/``available()`` take ``kind`` 'decoder' (the synthetic-task decoders), 'seq2seq' or 'text'
(byte-level language models; TinyTransformer too, listed apart because their views are text, not
a task); a snapshot ``<name>@step<N>`` is a checkpoint of its own (loadable by that name) but is
listed only by ``snapshots(name)``. Weights may be stored as float16 (halving the files); loading
always returns a float32 model, and the metrics in the JSON were measured on the loaded weights.

Each checkpoint is two files in ``tinytf/checkpoints/``: ``<name>.safetensors`` (the weights; the
safetensors format holds raw tensors only, so loading never unpickles or runs code) and
``<name>.json`` (the TinyConfig, the model kind, the exact command that trained it, seed, steps,
torch version and the metrics it reached). ``scripts/train_all.sh`` re-creates every checkpoint.
A file that is not valid safetensors, or weights that do not fit the config, raise
``CheckpointError`` (a ``TinyTFInputError``) naming the file and what is wrong.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import torch

from ..config import FLAT_KEYS, TinyConfig
from ..errors import TinyTFInputError
from ..models import EncoderDecoder, TinyTransformer
from . import tasks as T

CHECKPOINT_DIR = Path(__file__).resolve().parents[1] / "checkpoints"
FORMAT = "tinytf-checkpoint/1"  # marks a sidecar JSON as a checkpoint description
KINDS = ("decoder", "seq2seq")  # the architecture (sidecar "kind")
LIST_KINDS = ("decoder", "seq2seq", "text")  # what names()/available() filter on
SNAPSHOT_MARK = "@step"  # <name>@step<N>: the weights of checkpoint <name> after N training steps


class CheckpointError(TinyTFInputError):
    """A checkpoint file is missing, unreadable or does not match its config."""


# ---------------------------------------------------------------------------------------------- listing


def _sidecars() -> dict:
    out = {}
    for path in sorted(CHECKPOINT_DIR.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # listed names must stay usable even if an unrelated JSON file is broken
        if isinstance(data, dict) and data.get("format") == FORMAT and path.with_suffix(".safetensors").exists():
            out[path.stem] = data
    return out


def _list_kind(data: dict) -> str:
    return "text" if data.get("task", {}).get("name") == "text" else data.get("kind")


def available(kind: Optional[str] = None) -> dict:
    """{name: one-line description} of the shipped checkpoints (snapshots left out); ``kind`` 'decoder'
    (synthetic-task decoders), 'seq2seq' or 'text' (byte-level language models) filters."""
    if kind is not None and kind not in LIST_KINDS:
        raise TinyTFInputError(f"kind: expected one of {LIST_KINDS} or None, got {kind!r}")
    return {name: d.get("description", "") for name, d in _sidecars().items()
            if SNAPSHOT_MARK not in name and kind in (None, _list_kind(d))}


def names(kind: Optional[str] = None) -> list:
    """Names of the shipped checkpoints (optionally only 'decoder', 'seq2seq' or 'text' models)."""
    return list(available(kind))


def snapshots(name: str) -> dict:
    """{training step: checkpoint name} of the snapshots of ``name`` saved along its training run, in step
    order; the last step is ``name`` itself (the final weights). {step: name} of one entry if none were saved."""
    data = info(name)
    if SNAPSHOT_MARK in name:
        raise CheckpointError(f"{name!r} is itself a snapshot; ask for snapshots({name.split(SNAPSHOT_MARK)[0]!r})")
    out = {int(step): snap for step, snap in data.get("snapshots", {}).items()}
    out.setdefault(int(data.get("steps", 0)), name)
    return dict(sorted(out.items()))


def _snapshot_name(name: str, step) -> str:
    table = snapshots(name)
    if isinstance(step, bool) or not isinstance(step, int) or step not in table:
        raise CheckpointError(f"{name!r} has snapshots at steps {list(table)}; got step={step!r}")
    return table[step]


def _resolve(name: str) -> Path:
    if not isinstance(name, str) or not name:
        raise CheckpointError(f"checkpoint name: expected a non-empty string, got {name!r}")
    if "/" in name or "\\" in name or name.startswith("."):
        raise CheckpointError(f"checkpoint name: {name!r} is a path; give a name such as {', '.join(map(repr, names()))}")
    base = CHECKPOINT_DIR / name
    if not (CHECKPOINT_DIR / f"{name}.json").exists() or not (CHECKPOINT_DIR / f"{name}.safetensors").exists():
        known = ", ".join(map(repr, names())) or "none"
        raise CheckpointError(f"no shipped checkpoint named {name!r} in {CHECKPOINT_DIR}; available: {known}")
    return base


def info(name: str) -> dict:
    """The sidecar JSON of a shipped checkpoint: config, kind, command, seed, steps, metrics, ..."""
    return read_info(_resolve(name).with_suffix(".json"))


# ---------------------------------------------------------------------------------------------- files


def read_info(json_path) -> dict:
    """Read and check a checkpoint's sidecar JSON. Raises CheckpointError naming the file."""
    json_path = Path(json_path)
    try:
        data = json.loads(json_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{json_path}: sidecar file not found (every checkpoint needs <name>.json "
                              "with its config next to <name>.safetensors)") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise CheckpointError(f"{json_path}: not a readable JSON file ({e})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{json_path}: not a tinytf checkpoint description (expected \"format\": \"{FORMAT}\")")
    if data.get("kind") not in KINDS:
        raise CheckpointError(f"{json_path}: \"kind\" must be one of {KINDS}, got {data.get('kind')!r}")
    if not isinstance(data.get("config"), dict):
        raise CheckpointError(f"{json_path}: missing the \"config\" object (the TinyConfig fields)")
    return data


def config_from_info(data: dict, where="checkpoint") -> TinyConfig:
    fields = {f.name for f in dataclasses.fields(TinyConfig)} | set(FLAT_KEYS)  # older files: flat keys
    unknown = sorted(set(data["config"]) - fields)
    if unknown:
        raise CheckpointError(f"{where}: config has fields TinyConfig does not know: {', '.join(unknown)}")
    try:
        return TinyConfig.from_dict(data["config"])
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{where}: invalid config ({e})") from None


def _build(kind: str, cfg: TinyConfig):
    return TinyTransformer(cfg) if kind == "decoder" else EncoderDecoder(cfg)


def _expected_state(model) -> dict:
    """The tensors a checkpoint must hold for ``model``: its state_dict without tied duplicates."""
    out, seen = {}, set()
    for key, tensor in model.state_dict().items():
        ptr = tensor.data_ptr()
        if ptr in seen:
            continue  # tied weights (tie_embeddings): stored once
        seen.add(ptr)
        out[key] = tensor
    return out


def load_checkpoint(path):
    """Load a checkpoint from ``path`` (``<base>``, ``<base>.safetensors`` or ``<base>.json``): build the
    model its JSON describes and fill it with the safetensors weights. Returns the model in eval mode,
    with ``model.checkpoint_info`` set to the JSON dict. Raises CheckpointError on any mismatch."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(path)
    base = path.with_suffix("") if path.suffix in (".safetensors", ".json") else path
    st_path, json_path = base.with_name(base.name + ".safetensors"), base.with_name(base.name + ".json")
    data = read_info(json_path)
    cfg = config_from_info(data, str(json_path))
    if not st_path.exists():
        raise CheckpointError(f"{st_path}: weights file not found")
    try:
        tensors = load_file(str(st_path), device="cpu")  # safetensors: raw tensors only, never pickle
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise CheckpointError(f"{st_path}: not a valid safetensors file ({e})") from None
    with torch.random.fork_rng(devices=[]):  # building the model must not disturb the caller's RNG
        model = _build(data["kind"], cfg)
    expected = _expected_state(model)
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    wrong = sorted(f"{k}: file {list(tensors[k].shape)} vs config {list(expected[k].shape)}"
                   for k in set(expected) & set(tensors) if tensors[k].shape != expected[k].shape)
    bad_dtype = sorted(f"{k}: {tensors[k].dtype}" for k in set(expected) & set(tensors)
                       if not tensors[k].is_floating_point())
    if missing or unexpected or wrong or bad_dtype:
        parts = []
        for label, items in (("missing keys", missing), ("unexpected keys", unexpected),
                             ("shape mismatches", wrong), ("non-float tensors", bad_dtype)):
            if items:
                shown = items[:6] + ([f"... {len(items) - 6} more"] if len(items) > 6 else [])
                parts.append(f"{label} ({len(items)}): " + "; ".join(shown))
        raise CheckpointError(f"{st_path}: weights do not match the config in {json_path.name}: " + " | ".join(parts))
    tensors = {k: v.to(expected[k].dtype) for k, v in tensors.items()}  # float16 storage -> the model's float32
    model.load_state_dict(tensors, strict=False)  # strictness checked above (tied duplicates are absent)
    model.eval()
    model.checkpoint_info = data
    return model


def save_checkpoint(model, path, info: dict, dtype: Optional[torch.dtype] = None) -> tuple:
    """Write ``<path>.safetensors`` (weights) and ``<path>.json`` (``info`` + config + kind + format).
    ``dtype`` (e.g. torch.float16) stores the weights in that type (None: as they are); loading casts back
    to the model's float32. Returns the two paths. Used by ``python -m tinytf train --out``."""
    from safetensors.torch import save_file

    if isinstance(model, TinyTransformer):
        kind = "decoder"
    elif isinstance(model, EncoderDecoder):
        kind = "seq2seq"
    else:
        raise TinyTFInputError(
            f"save_checkpoint: expected a TinyTransformer or EncoderDecoder, got {type(model).__name__}")
    base = Path(path)
    base.parent.mkdir(parents=True, exist_ok=True)
    st_path, json_path = base.with_name(base.name + ".safetensors"), base.with_name(base.name + ".json")
    tensors = {k: v.detach().to(dtype or v.dtype).contiguous().cpu() for k, v in _expected_state(model).items()}
    save_file(tensors, str(st_path), metadata={"format": FORMAT})  # one key: the header bytes stay identical run to run
    st_path.chmod(0o644)
    data = {"format": FORMAT, "name": base.name, "kind": kind, "config": model.config.to_dict()}
    data.update({k: v for k, v in info.items() if k not in data})
    data["file_bytes"] = st_path.stat().st_size
    json_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return st_path, json_path


# ---------------------------------------------------------------------------------------------- by name


def load(name: str, step: Optional[int] = None):
    """The shipped checkpoint ``name`` (see ``available()``), in eval mode. No network access.
    ``step``: the snapshot of ``name`` saved after that many training steps (see ``snapshots(name)``)."""
    if step is not None:
        name = _snapshot_name(name, step)
    return load_checkpoint(_resolve(name))


def untrained(name: str, seed: int = 0):
    """A model with the same architecture as checkpoint ``name`` but random initial weights (drawn
    under ``seed`` without touching the global RNG): the 'before training' twin for side-by-side figures."""
    data = info(name)
    cfg = config_from_info(data, name)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = _build(data["kind"], cfg)
    return model.eval()


@dataclass
class Sample:
    """A fresh example for a shipped checkpoint, ready to feed and to label.

    * decoder (induction): ``ids`` = [BOS, x1..xL, x1..xL] is the model input; ``target`` the next token at
      each position (-1 where nothing is predictable), ``cells`` the (query, key) pairs an induction head
      lights up: query i in L+1..2L -> key i - L + 1.
    * seq2seq (reversal): ``src`` = [x1..xS, EOS] and ``tgt`` = [BOS, xS..x1] are the model inputs
      (model(src, tgt)), ``target`` = [xS..x1, EOS]; ``cells`` are (target position j, source S-1-j).

    ``attention`` is the trace name of the map to show and ``head`` the head index in it that the
    checkpoint's metrics found best (layer and head also as ``layer``)."""

    name: str
    kind: str
    text: str  # human-readable one-liner
    ids: Optional[torch.Tensor] = None  # decoder input [T]
    src: Optional[torch.Tensor] = None  # seq2seq source [S+1]
    tgt: Optional[torch.Tensor] = None  # seq2seq decoder input [S+1]
    target: Optional[torch.Tensor] = None  # expected next tokens
    labels: list = field(default_factory=list)  # labels of ids (decoder) or of tgt (seq2seq): the query axis
    key_labels: list = field(default_factory=list)  # key axis: = labels (decoder) or src labels (seq2seq)
    cells: list = field(default_factory=list)
    attention: str = ""
    layer: int = 0
    head: int = 0
    length: int = 0  # L (repeat length) or S (source length)


def _best_head(data: dict, key: str):
    layer, head = data.get("metrics", {}).get(key, "0.0").split(".")
    return int(layer), int(head)


def sample_input(name: str, seed: int = 0, length: Optional[int] = None, text: Optional[str] = None) -> Sample:
    """A fresh example for checkpoint ``name``: random letters drawn with ``seed`` (``length`` of them;
    default 10 for induction, 8 for reversal), or your own ``text`` (letters of the task's alphabet).
    Induction examples use distinct letters so every previous occurrence is unique."""
    data = info(name)
    task = data.get("task", {})
    if task.get("name") == "text":
        raise CheckpointError(f"sample_input: {name!r} is a text model, not a synthetic task; give it any text, "
                              "e.g. tinytf.encode('Return the number of ')")
    alphabet = task.get("alphabet", T.LETTERS)
    lo, hi = task.get("min_length", 2), task.get("max_length", 16)
    if text is not None:
        if not isinstance(text, str) or not text:
            raise TinyTFInputError("sample_input: text is empty; type a few letters")
        bad = sorted(set(text) - set(alphabet))
        if bad:
            raise TinyTFInputError(f"sample_input: {''.join(bad)!r} not in this model's alphabet {alphabet!r}")
        x = torch.tensor(list(text.encode("utf-8")), dtype=torch.long)
        length = len(x)
    else:
        length = (10 if data["kind"] == "decoder" else 8) if length is None else length
        if isinstance(length, bool) or not isinstance(length, int) or not lo <= length <= hi:
            raise TinyTFInputError(f"sample_input: {name!r} was trained on lengths {lo}..{hi}; got {length!r}")
        gen = torch.Generator().manual_seed(seed)
        if data["kind"] == "decoder":
            x = T.induction_batch(1, length, gen, alphabet, distinct=True)[0][0, 1:length + 1]
        else:
            x = T.reversal_batch(1, length, gen, alphabet)[0][0, :length]
    if not lo <= length <= hi:
        raise TinyTFInputError(f"sample_input: {name!r} was trained on lengths {lo}..{hi}; got {length}")
    if data["kind"] == "decoder":
        ids = torch.cat((torch.tensor([T.BOS]), x, x))  # [2L + 1]
        target = torch.full_like(ids, -1)
        target[length + 1:2 * length] = x[1:]  # second copy: next token known
        layer, head = _best_head(data, "induction_head")
        labels = T.labels(ids)
        return Sample(name=name, kind="decoder", text=T.text(ids), ids=ids, target=target, labels=labels,
                      key_labels=labels, cells=[(i, i - length + 1) for i in range(length + 1, 2 * length + 1)],
                      attention=f"blocks.{layer}.attn.weights", layer=layer, head=head, length=length)
    rev = x.flip(0)
    src = torch.cat((x, torch.tensor([T.EOS])))
    tgt = torch.cat((torch.tensor([T.BOS]), rev))
    target = torch.cat((rev, torch.tensor([T.EOS])))
    layer, head = _best_head(data, "anti_diagonal_head")
    return Sample(name=name, kind="seq2seq", text=f"{T.text(src)} -> {T.text(target)}", src=src, tgt=tgt,
                  target=target, labels=T.labels(tgt), key_labels=T.labels(src),
                  cells=T.anti_diagonal_cells(length), attention=f"decoder.blocks.{layer}.cross_attn.weights",
                  layer=layer, head=head, length=length)


# ---------------------------------------------------------------------------------------------- callable module


class _CallableModule(types.ModuleType):
    """Lets ``tinytf.pretrained(name)`` work while ``tinytf.pretrained.available()`` etc. stay attributes."""

    def __call__(self, name: str, step: Optional[int] = None):
        return load(name, step)


sys.modules[__name__].__class__ = _CallableModule
