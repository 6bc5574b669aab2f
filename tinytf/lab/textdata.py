"""Real English text with no download: the docstrings of Python's own standard library.

    from tinytf import textdata
    corpus = textdata.stdlib_corpus()          # read now from the running interpreter's stdlib
    corpus.record()                            # what was read: Python version, files, bytes, sha256, split rule
    len(corpus.train), len(corpus.val)         # uint8 byte tensors (train / held-out validation)
    textdata.bits_per_byte(model, corpus.val)  # a byte-level model on 256 fixed windows of 128 validation bytes
    textdata.baselines(corpus.train, corpus.val)   # {'unigram', 'bigram'} fitted on train, scored on the same bytes
    textdata.kneser_ney_bits_per_byte(corpus.train, textdata.eval_windows(corpus.val, 256, 128), order=7)

The corpus is extracted with ``ast`` from every ``.py`` file under ``sysconfig.get_paths()["stdlib"]``,
in sorted order of the relative path, skipping test directories and test files, ``site-packages``,
files that do not decode or parse, and docstrings that are mostly not ASCII. Each docstring (of a
module, class or function, in source order) is cleaned by ``inspect.cleandoc``, trailing spaces are
stripped, runs of blank lines become one blank line, and it is followed by a blank line. Nothing is
copied into the repository: a checkpoint records what it read (see ``Corpus.record``), and because the
stdlib changes between Python versions, so does the corpus (its sha256 says whether it is the same).

Split by file, not by byte: the file with sorted index ``i`` is validation when ``i % 10 == 0``, so
validation text comes from modules the model never saw in training.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import json
import math
import os
import platform
import re
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import torch
from torch.nn import functional as F

from ..errors import TinyTFInputError

SPLIT_EVERY = 10  # file i (sorted order) is validation when i % SPLIT_EVERY == 0
SPLIT_RULE = (f"by file: the .py files are sorted by relative path; file i is validation when i % {SPLIT_EVERY} == 0, "
              "otherwise train")
SOURCE = ("docstrings (module, class, function; ast.get_docstring, in source order) of the .py files of the running "
          "interpreter's standard library, sysconfig.get_paths()['stdlib']")
MAX_NON_ASCII = 0.01  # a docstring with more than 1% non-ASCII characters is skipped
SKIP_DIRS = {"test", "tests", "idle_test", "site-packages", "__pycache__"}


def stdlib_dir() -> Path:
    """The standard-library directory of the running interpreter."""
    return Path(sysconfig.get_paths()["stdlib"])


def _is_skipped(rel: Path) -> bool:
    if any(part in SKIP_DIRS or part.startswith("test_") for part in rel.parts[:-1]):
        return True
    name = rel.name
    return name.startswith("test_") or name.endswith("_test.py") or name in ("test.py", "tests.py")


def corpus_files(root: Optional[Path] = None) -> list:
    """Relative paths (POSIX strings, sorted) of the .py files the corpus reads, tests excluded."""
    root = stdlib_dir() if root is None else Path(root)
    rels = (p.relative_to(root) for p in root.rglob("*.py"))
    return sorted(r.as_posix() for r in rels if not _is_skipped(r))


def normalise(doc: str) -> str:
    """Modest whitespace clean-up of one (already dedented) docstring: tabs -> 4 spaces, trailing spaces
    stripped, runs of blank lines -> one blank line, no leading/trailing blank lines."""
    lines = [line.rstrip() for line in doc.replace("\t", "    ").splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")


def _mostly_ascii(text: str) -> bool:
    return sum(ord(c) > 127 for c in text) <= MAX_NON_ASCII * len(text)


def file_docstrings(source: str) -> list:
    """The normalised docstrings of one module's source, in source order ([] if it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out = []

    def visit(node):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                doc = normalise(doc)
                if doc and _mostly_ascii(doc):
                    out.append(doc)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def file_text(path: Path) -> Optional[str]:
    """The corpus text of one file: its docstrings, each followed by a blank line (None if unreadable)."""
    try:
        source = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    docs = file_docstrings(source)
    return "".join(d + "\n\n" for d in docs) if docs else ""


@dataclass
class Corpus:
    """The extracted corpus: per-file texts in sorted order, and the train/validation byte tensors."""

    root: str
    files: list  # relative paths that contributed text, sorted
    split: list  # "train" / "val" per entry of files
    texts: list = field(repr=False, default_factory=list)  # the text of each file
    n_listed: int = 0  # .py files considered (after the test/site-packages filter)
    n_unreadable: int = 0  # of those, files that did not decode as UTF-8 or could not be read

    @functools.cached_property
    def train(self) -> torch.Tensor:
        return _bytes_tensor(t for t, s in zip(self.texts, self.split) if s == "train")

    @functools.cached_property
    def val(self) -> torch.Tensor:
        return _bytes_tensor(t for t, s in zip(self.texts, self.split) if s == "val")

    @functools.cached_property
    def sha256(self) -> str:
        """sha256 of the whole corpus: every file's text in sorted order, UTF-8 encoded."""
        h = hashlib.sha256()
        for t in self.texts:
            h.update(t.encode("utf-8"))
        return h.hexdigest()

    def words(self, split: str = "train") -> set:
        """The set of lower-cased alphabetic words (``[a-z]+`` runs) of one split."""
        text = "".join(t for t, s in zip(self.texts, self.split) if s == split)
        return set(re.findall(r"[a-z]+", text.lower()))

    def record(self) -> dict:
        """What was read, for a checkpoint's sidecar JSON."""
        return {
            "source": SOURCE,
            "stdlib_dir": f"python{platform.python_version_tuple()[0]}.{platform.python_version_tuple()[1]} "
                          "stdlib (sysconfig.get_paths()['stdlib'])",
            "python_version": platform.python_version(),
            "python_implementation": platform.python_implementation(),
            "n_files_listed": self.n_listed,
            "n_files_unreadable": self.n_unreadable,
            "n_files": len(self.files),
            "n_files_train": self.split.count("train"),
            "n_files_val": self.split.count("val"),
            "bytes": int(len(self.train) + len(self.val)),
            "bytes_train": int(len(self.train)),
            "bytes_val": int(len(self.val)),
            "sha256": self.sha256,
            "split_rule": SPLIT_RULE,
            "skipped": "directories named test/tests/idle_test/site-packages/__pycache__ or starting with test_, "
                       "files test_*.py/*_test.py/test.py/tests.py, files that are not UTF-8 or do not parse, "
                       f"docstrings with more than {MAX_NON_ASCII:.0%} non-ASCII characters",
            "normalisation": "ast.get_docstring(clean=True); tabs -> 4 spaces; trailing spaces stripped; runs of "
                             "blank lines -> one; each docstring followed by one blank line",
        }


def _bytes_tensor(texts) -> torch.Tensor:
    data = "".join(texts).encode("utf-8")
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).clone() if data else torch.zeros(0, dtype=torch.uint8)


def cache_dir() -> Path:
    """Where extracted corpora are kept between processes: $TINYTF_CACHE, else ~/.cache/tinytf."""
    return Path(os.environ.get("TINYTF_CACHE") or Path.home() / ".cache" / "tinytf")


def _files_key(root: str, rels: list) -> str:
    """A digest of what the extraction reads: the rules, the interpreter, and every file's path, size and mtime."""
    h = hashlib.sha256(json.dumps([SOURCE, SPLIT_RULE, MAX_NON_ASCII, sorted(SKIP_DIRS), platform.python_version(),
                                   root]).encode())
    for rel in rels:
        st = (Path(root) / rel).stat()
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:32]


@functools.lru_cache(maxsize=2)
def _stdlib_corpus(root: str) -> Corpus:
    """Extracting the docstrings parses ~700 files (several seconds), so the result is kept on disk, keyed by
    ``_files_key``: any change to a file, the interpreter or the rules extracts again."""
    rels = corpus_files(Path(root))
    path = cache_dir() / f"corpus-{_files_key(root, rels)}.json"
    try:
        return Corpus(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        pass
    corpus = _extract(root, rels)
    try:  # written to a temporary file and renamed, so a reader never sees half a file
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(dict(root=corpus.root, files=corpus.files, split=corpus.split, texts=corpus.texts,
                                       n_listed=corpus.n_listed, n_unreadable=corpus.n_unreadable)), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home: extract again next time
    return corpus


def _extract(root: str, rels: list) -> Corpus:
    files, split, texts, unreadable = [], [], [], 0
    for i, rel in enumerate(rels):
        text = file_text(Path(root) / rel)
        if text is None:
            unreadable += 1
            continue
        if not text:
            continue  # no docstring: contributes nothing (its index still counts for the split rule)
        files.append(rel)
        split.append("val" if i % SPLIT_EVERY == 0 else "train")
        texts.append(text)
    if not files:
        raise TinyTFInputError(f"stdlib_corpus: no docstrings found under {root}")
    return Corpus(root=root, files=files, split=split, texts=texts, n_listed=len(rels), n_unreadable=unreadable)


def stdlib_corpus(root=None) -> Corpus:
    """The docstring corpus of the running interpreter's stdlib (or of ``root``); cached per process."""
    return _stdlib_corpus(str(stdlib_dir() if root is None else Path(root)))


# ---------------------------------------------------------------------------------------------- batches


def random_windows(data: torch.Tensor, batch_size: int, seq_len: int, generator: torch.Generator):
    """(inputs, targets), each [batch_size, seq_len] long: windows at random offsets drawn with ``generator``;
    targets are the inputs shifted by one byte."""
    if len(data) < seq_len + 1:
        raise TinyTFInputError(f"random_windows: {len(data)} bytes is shorter than one window of {seq_len + 1}")
    starts = torch.randint(0, len(data) - seq_len, (batch_size,), generator=generator)
    idx = starts[:, None] + torch.arange(seq_len + 1)
    chunk = data[idx].long()
    return chunk[:, :-1], chunk[:, 1:]


def eval_windows(data: torch.Tensor, n_windows: int, seq_len: int):
    """(inputs, targets) [n, seq_len] long: ``n_windows`` fixed windows of ``data`` at evenly spaced, non-overlapping
    starts (window i starts at i * ((len(data) - 1) // n)), so a bounded evaluation still samples the whole split;
    targets are the inputs shifted by one byte. Fewer windows if ``data`` is short. Deterministic."""
    n = min(n_windows, (len(data) - 1) // seq_len)
    if n < 1:
        raise TinyTFInputError(f"eval_windows: {len(data)} bytes is shorter than one window of {seq_len + 1}")
    stride = (len(data) - 1) // n
    idx = (torch.arange(n) * stride)[:, None] + torch.arange(seq_len + 1)
    chunk = data[idx].long()
    return chunk[:, :-1], chunk[:, 1:]


@torch.no_grad()
def bits_per_byte(model, data: torch.Tensor, n_windows: int = 256, seq_len: int = 128, batch_size: int = 32,
                  per_window: bool = False):
    """Mean cross-entropy in bits per byte of a byte-level model on the ``n_windows`` fixed windows of ``seq_len``
    bytes of ``eval_windows(data, ...)`` (every position of every window counts; each window starts fresh).
    ``per_window=True``: a list with each window's mean bits per byte instead."""
    inputs, targets = eval_windows(data, n_windows, seq_len)
    was_training = model.training
    model.eval()
    total, windows = 0.0, []  # summed nats; per window, mean nats
    for i in range(0, len(inputs), batch_size):
        logits = model(inputs[i:i + batch_size])
        if per_window:
            windows.append(F.cross_entropy(logits.transpose(1, 2), targets[i:i + batch_size], reduction="none"
                                           ).mean(1))  # [b]
        else:
            total += float(F.cross_entropy(logits.transpose(1, 2), targets[i:i + batch_size], reduction="sum",
                                           ).double())
    model.train(was_training)
    if per_window:
        return (torch.cat(windows) / math.log(2)).tolist()
    return total / targets.numel() / math.log(2)


# ---------------------------------------------------------------------------------------------- baselines


def _check_bytes(data, what):
    data = torch.as_tensor(data)
    if data.dim() != 1 or data.numel() < 2 or data.is_floating_point():
        raise TinyTFInputError(f"{what}: expected a 1-D tensor of at least 2 byte values, got {tuple(data.shape)}")
    return data.long()


def unigram_probs(train: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    """[256] byte frequencies of ``train`` with add-``alpha`` smoothing."""
    train = _check_bytes(train, "unigram_probs")
    counts = torch.bincount(train, minlength=256).double() + alpha
    return counts / counts.sum()


def bigram_probs(train: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    """[256, 256] P(next | previous) from ``train`` with add-``alpha`` smoothing (row = previous byte)."""
    train = _check_bytes(train, "bigram_probs")
    counts = torch.bincount(train[:-1] * 256 + train[1:], minlength=256 * 256).double().view(256, 256) + alpha
    return counts / counts.sum(1, keepdim=True)


def _windows(text):
    """text: a 1-D byte tensor (one window: predict bytes 1.. from the bytes before) or an (inputs, targets) pair
    from ``eval_windows`` (predict every target from the input at the same position) -> (inputs, targets), [n, T]."""
    if isinstance(text, (tuple, list)) and len(text) == 2:
        inputs, targets = (torch.as_tensor(t).long() for t in text)
        if inputs.shape != targets.shape or inputs.dim() not in (1, 2):
            raise TinyTFInputError(f"baseline: inputs {tuple(inputs.shape)} and targets {tuple(targets.shape)} "
                                   "must be the same [n, T]")
        return inputs.view(-1, inputs.shape[-1]), targets.view(-1, targets.shape[-1])
    text = _check_bytes(text, "baseline text")
    return text[None, :-1], text[None, 1:]


def _pairs(text):
    """(previous, next) byte pairs of ``text`` (as in ``_windows``), flat."""
    inputs, targets = _windows(text)
    return inputs.flatten(), targets.flatten()


def unigram_bits_per_byte(train: torch.Tensor, text, alpha: float = 1.0) -> float:
    """Bits per byte of an add-``alpha`` unigram model fitted on ``train``, on ``text`` (a byte tensor: bytes 1..
    are predicted; or the (inputs, targets) of ``eval_windows``: exactly the bytes ``bits_per_byte`` predicts)."""
    _, nxt = _pairs(text)
    return float(-torch.log2(unigram_probs(train, alpha)[nxt]).mean())


def bigram_bits_per_byte(train: torch.Tensor, text, alpha: float = 1.0) -> float:
    """Bits per byte of an add-``alpha`` bigram model P(byte | previous byte) fitted on ``train``, on ``text``
    (as in ``unigram_bits_per_byte``)."""
    prev, nxt = _pairs(text)
    return float(-torch.log2(bigram_probs(train, alpha)[prev, nxt]).mean())


def kneser_ney_bits_per_byte(train: torch.Tensor, text, order: int = 5, per_window: bool = False):
    """Bits per byte of an interpolated Kneser–Ney byte ``order``-gram model (Kneser and Ney 1995; one discount
    D = n1 / (n1 + 2 n2) per order, as in Chen and Goodman 1999) fitted on ``train``, on ``text`` (as in
    ``unigram_bits_per_byte``). Each byte is predicted from at most ``order - 1`` bytes before it, all from its
    own window, as a model reading the window would see them; the lowest order interpolates with a uniform
    guess, so no byte has probability 0. ``order``: 1 to 7 (an n-gram is kept as one int64 number).
    ``per_window=True``: a list with each window's mean bits per byte instead (one entry for a byte tensor)."""
    import numpy as np

    if not 1 <= order <= 7:
        raise TinyTFInputError(f"kneser_ney_bits_per_byte: order must be 1 to 7, got {order}")
    x = _check_bytes(train, "kneser_ney_bits_per_byte").numpy()
    inputs, targets = _windows(text)
    seq = torch.cat([inputs, targets[:, -1:]], 1).numpy()  # [n, T + 1]: target t is seq[:, t + 1]
    T = inputs.shape[1]

    def grams(a, k):  # every k-gram along a's last axis, as one base-256 number
        out = np.zeros(a.shape[:-1] + (a.shape[-1] - k + 1,), dtype=np.int64)
        for j in range(k):
            out = out * 256 + a[..., j:a.shape[-1] - k + 1 + j]
        return out

    def lookup(keys, values, q):  # values where the sorted keys equal q, else 0
        i = np.searchsorted(keys, q).clip(max=len(keys) - 1)
        return np.where(keys[i] == q, values[i], 0)

    def smooth(keys, counts, q, lower):  # interpolated absolute discounting of counts[key], over `lower`
        ctx, inv = np.unique(keys // 256, return_inverse=True)  # a k-gram's context: it without its last byte
        total, types = np.bincount(inv, weights=counts), np.bincount(inv)
        n1, n2 = (counts == 1).sum(), (counts == 2).sum()
        d = n1 / (n1 + 2 * n2) if n1 + n2 else 0.5
        c, tot, typ = lookup(keys, counts, q), lookup(ctx, total, q // 256), lookup(ctx, types, q // 256)
        return np.where(tot > 0, (np.maximum(c - d, 0) + d * typ * lower) / np.maximum(tot, 1), lower)

    raw = [np.unique(grams(x, k), return_counts=True) for k in range(1, order + 1)]
    lower, top = np.full((len(inputs), T), 1 / 256), []
    for k in range(1, order + 1):
        i = np.arange(T) + 2 - k  # target t ends the k-gram that starts at seq[:, t + 2 - k]
        q = np.where(i >= 0, grams(seq, k)[:, i.clip(min=0)], -1)  # -1: fewer than k - 1 bytes before it
        top.append(smooth(*raw[k - 1], q, lower))  # order k as the top order: plain counts
        if k < order:  # order k below a higher one: how many distinct bytes precede each k-gram
            lower = smooth(*np.unique(raw[k][0] % 256 ** k, return_counts=True), q, lower)
    use = np.minimum(order, np.arange(T) + 2) - 1  # target t has t + 1 bytes of its window before it
    p = np.take_along_axis(np.stack(top, -1), np.broadcast_to(use[None, :, None], (len(inputs), T, 1)), -1)[..., 0]
    bits = -np.log2(p)  # [n, T]
    return bits.mean(1).tolist() if per_window else float(bits.mean())


def baselines(train: torch.Tensor, val: torch.Tensor, n_windows: int = 256, seq_len: int = 128,
              alpha: float = 1.0) -> dict:
    """{'unigram': bits/byte, 'bigram': bits/byte}: add-``alpha`` models fitted on ``train``, scored on exactly
    the bytes ``bits_per_byte(model, val, n_windows, seq_len)`` scores (the first byte of each window is
    predicted from the byte before it, which the windows' inputs hold)."""
    windows = eval_windows(val, n_windows, seq_len)
    return {"unigram": unigram_bits_per_byte(train, windows, alpha), "bigram": bigram_bits_per_byte(train, windows, alpha)}
