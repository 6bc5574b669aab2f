"""Training on the synthetic tasks of ``tinytf.tasks`` and on real text: a small, deterministic loop.

    from tinytf import TinyTransformer, tasks, train
    model = TinyTransformer(train.PRESETS["induction", "tiny"].config)
    history = train.train_decoder(model, "induction", steps=300, lr=3e-3, batch_size=32, seed=0, progress=False)
    print(history.summary())
    train.evaluate(model, "induction")            # accuracy on fresh sequences (another seed)

Command line (re-creates a shipped checkpoint; see scripts/train_all.sh):

    python -m tinytf train --task induction --preset tiny [--out tinytf/checkpoints]
    python -m tinytf train --task text --preset small [--out tinytf/checkpoints]

``--task text`` trains the byte-level ``text-4l`` (``TEXT_PRESETS``) on the docstrings of the running Python's
standard library (``tinytf.textdata.stdlib_corpus``, read at run time, split by file) with ``train_text``:
random 128-byte windows, batch 32, AdamW (0.9/0.95, weight decay 0.1), 100 warm-up steps then cosine decay,
clip 1.0, one thread. It writes the final checkpoint and snapshots ``text-4l@step<N>`` at 0, 5%, 20% and 50%
of the steps (float16 weights), and records in the sidecar the corpus (Python version, files, bytes,
sha256, split rule), the train/validation bits-per-byte curve, the metrics of the stored weights, the
unigram/bigram baselines and a greedy and a sampled continuation.

AdamW, linear warm-up then cosine decay (or a constant rate), gradient clipping. Data come from a ``torch.Generator``
seeded with ``seed``; dropout (if any) from a forked global RNG seeded with ``seed``, so a run does
not disturb the caller's random state. On one machine and thread count a run is bit-for-bit
repeatable; across machines, float summation order can differ slightly (see the checkpoint JSON
for the tolerance we state).

How the induction preset was found (measured while building it, all 2 layers, d_model 64, RoPE):
with 2 or 4 heads per layer the model reached 0.93-0.95 accuracy on the second copy with *no*
induction head -- it combined fixed-offset positional heads (looking ~9-11 tokens back) instead;
with learned absolute positions it reached 1.0 by attending near position i/2. Two changes gave the
textbook circuit: one head per layer (a shifted look-up then needs two layer-0 heads, which the
model does not have) and ``rule_prob=0.5`` (the previous token helps on its own, as in real text, so
a previous-token head forms first). A cosine learning-rate decay over the same 4000 steps ended
before the induction head formed (0.76 accuracy), hence the constant rate.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Optional

import torch
from torch import nn
from torch.nn import functional as F

from ..config import TinyConfig
from ..errors import TinyTFInputError
from ..generation import generate
from ..models import EncoderDecoder, TinyTransformer
from ..tokens import decode, encode
from . import tasks as T
from . import textdata
from .pretrained import SNAPSHOT_MARK, load_checkpoint, save_checkpoint

EVAL_SEED = 10_000  # evaluate() default: never used for training data (training uses small seeds)


@dataclass
class History:
    """What one training run did: per-step loss, gradient norm and learning rate, plus final metrics."""

    task: str
    steps: int
    lr: float
    batch_size: int
    seed: int
    losses: list = field(default_factory=list)  # training loss per step (masked cross-entropy)
    grad_norms: list = field(default_factory=list)  # total gradient norm per step, before clipping
    lrs: list = field(default_factory=list)  # learning rate used at each step
    seconds: float = 0.0  # wall time of the loop
    cpu_seconds: float = 0.0  # CPU time of this process during the loop (train_text only; 0 elsewhere)
    metrics: dict = field(default_factory=dict)  # evaluate() on fresh data after training
    evals: list = field(default_factory=list)  # [(step, metrics)] when trained with eval_every

    @property
    def final_loss(self) -> float:
        """Mean loss over the last 5% of steps (at least one)."""
        tail = self.losses[-max(1, len(self.losses) // 20):]
        return sum(tail) / len(tail) if tail else float("nan")

    def curve(self, points: int = 10) -> list:
        """[(step, mean loss of the window ending at that step)] at ``points`` evenly spaced steps."""
        n = len(self.losses)
        if n == 0:
            return []
        ends = sorted({max(1, round(n * (k + 1) / points)) for k in range(points)})
        out, start = [], 0
        for end in ends:
            window = self.losses[start:end]
            out.append((end, sum(window) / len(window)))
            start = end
        return out

    def summary(self, points: int = 10) -> str:
        """A plain-text loss curve: one line per window, with a bar, then the final metrics."""
        curve = self.curve(points)
        top = max((loss for _, loss in curve), default=1.0) or 1.0
        lines = [f"task={self.task} steps={self.steps} lr={self.lr:g} batch={self.batch_size} seed={self.seed} "
                 f"({self.seconds:.1f} s)", "  step   loss"]
        for step, loss in curve:
            lines.append(f"{step:>6} {loss:7.4f}  " + "#" * max(1, round(40 * loss / top)))
        if self.metrics:
            lines.append("metrics on fresh data: " + ", ".join(
                f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in self.metrics.items()))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------- losses


def decoder_loss(model, batch):
    """Masked next-token cross-entropy for a decoder-only model. batch = (inputs, targets, loss_mask)."""
    inputs, targets, mask = batch
    logits = model(inputs)  # [B, T, V]
    losses = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")  # [B, T]
    return (losses * mask).sum() / mask.sum(), logits


def seq2seq_loss(model, batch):
    """Cross-entropy over every target position for an EncoderDecoder. batch = (src, tgt_in, tgt_out)."""
    src, tgt_in, tgt_out = batch
    logits = model(src, tgt_in)  # [B, T, V]
    return F.cross_entropy(logits.transpose(1, 2), tgt_out), logits


def _check_model(model, task):
    want = TinyTransformer if task.kind == "decoder" else EncoderDecoder
    if not isinstance(model, want):
        raise TinyTFInputError(f"task {task.name!r} trains a {want.__name__}, got {type(model).__name__}")
    cfg = model.config
    need_vocab = max(max(T.SPECIAL_TOKENS), *task.alphabet.encode("utf-8")) + 1
    if cfg.vocab_size < need_vocab:
        raise TinyTFInputError(f"task {task.name!r} uses token ids up to {need_vocab - 1}; the model's vocab_size is "
                               f"{cfg.vocab_size} (use vocab_size >= {need_vocab}, e.g. tasks.VOCAB_SIZE = 128)")
    if cfg.pos in ("sinusoidal", "learned") and cfg.max_seq_len < task.max_seq_len:
        raise TinyTFInputError(f"task {task.name!r} needs sequences of {task.max_seq_len} positions; the model's "
                               f"max_seq_len is {cfg.max_seq_len}")


def lr_at(step: int, steps: int, lr: float, warmup_steps: int, schedule: str) -> float:
    """Learning rate at 0-based ``step``: linear warm-up, then constant or cosine decay to 10% of ``lr``."""
    if warmup_steps and step < warmup_steps:
        return lr * (step + 1) / warmup_steps
    if schedule == "constant":
        return lr
    progress = (step - warmup_steps) / max(1, steps - warmup_steps)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def _progress_bar(steps, progress):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=steps, desc="training", unit="step", mininterval=0.5, leave=True)


@contextlib.contextmanager
def num_threads(threads: Optional[int]):
    """Run a block with ``threads`` torch CPU threads (None = unchanged), restoring the old count after."""
    old = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def train(model, task, steps: int = 1000, lr: float = 3e-3, batch_size: int = 32, seed: int = 0, *,
          progress: bool = True, warmup_steps: Optional[int] = None, schedule: str = "cosine",
          weight_decay: float = 0.01, grad_clip: Optional[float] = 1.0, eval_samples: int = 512,
          eval_seed: int = EVAL_SEED, eval_every: int = 0, threads: Optional[int] = 1) -> History:
    """Train ``model`` in place on ``task`` ('induction', 'reversal' or a task object) and return a History.

    warmup_steps None = min(100, steps // 10); schedule 'cosine' (decay to 10% of lr) or 'constant';
    grad_clip None = no clipping (the norm is still recorded). eval_samples = 0 skips the final evaluation;
    eval_every = N > 0 also evaluates (on 128 examples) every N steps into ``history.evals``.
    threads: torch CPU threads during the run (restored afterwards; None = leave as is). The default 1 is
    deliberate: for models this small a second thread gains little, on a busy machine it can make every
    step many times slower, and one thread makes the result independent of the core count.
    """
    task = T.get_task(task)
    _check_model(model, task)
    for name, value in (("steps", steps), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TinyTFInputError(f"{name}: expected a positive integer, got {value!r}")
    if not lr > 0:
        raise TinyTFInputError(f"lr: expected a positive learning rate, got {lr!r}")
    if schedule not in ("cosine", "constant"):
        raise TinyTFInputError(f"schedule: expected 'cosine' or 'constant', got {schedule!r}")
    warmup_steps = min(100, steps // 10) if warmup_steps is None else warmup_steps
    loss_fn = decoder_loss if task.kind == "decoder" else seq2seq_loss
    history = History(task=task.name, steps=steps, lr=lr, batch_size=batch_size, seed=seed)
    data = torch.Generator().manual_seed(seed)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.98))
    bar = _progress_bar(steps, progress)
    t0 = time.perf_counter()
    model.train()
    with num_threads(threads), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # dropout, if the config has any
        for step in range(steps):
            rate = lr_at(step, steps, lr, warmup_steps, schedule)
            for group in opt.param_groups:
                group["lr"] = rate
            loss, _ = loss_fn(model, task.batch(batch_size, data))
            optimizer_step(model, opt, loss, grad_clip, history, rate)
            if eval_every and (step + 1) % eval_every == 0:
                history.evals.append((step + 1, evaluate(model, task, n_samples=128, seed=eval_seed, threads=None)))
                model.train()
            if bar is not None:
                bar.update(1)
                if step % 10 == 0 or step == steps - 1:
                    bar.set_postfix(loss=f"{history.final_loss:.3f}")
        if bar is not None:
            bar.close()
        history.seconds = time.perf_counter() - t0
        model.eval()
        if eval_samples:
            history.metrics = evaluate(model, task, n_samples=eval_samples, seed=eval_seed, threads=None)
    return history


def optimizer_step(model, opt, loss, grad_clip, history, rate: float) -> None:
    """One update from ``loss``: backward, clip the total gradient norm to ``grad_clip`` (None or 0: no clipping),
    step; record the loss, the gradient norm before clipping and the learning rate in ``history``."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    norm = nn.utils.clip_grad_norm_(model.parameters(), grad_clip if grad_clip else float("inf"))
    opt.step()
    history.losses.append(loss.item())
    history.grad_norms.append(float(norm))
    history.lrs.append(rate)


def train_decoder(model, task="induction", steps: int = 1000, lr: float = 3e-3, batch_size: int = 32,
                  seed: int = 0, progress: bool = True, **kwargs) -> History:
    """``train`` for a decoder-only TinyTransformer (default task: induction)."""
    if T.get_task(task).kind != "decoder":
        raise TinyTFInputError(f"train_decoder: task {T.get_task(task).name!r} is a seq2seq task; use train_seq2seq")
    return train(model, task, steps, lr, batch_size, seed, progress=progress, **kwargs)


def train_seq2seq(model, task="reversal", steps: int = 1000, lr: float = 3e-3, batch_size: int = 32,
                  seed: int = 0, progress: bool = True, **kwargs) -> History:
    """``train`` for an EncoderDecoder (default task: reversal)."""
    if T.get_task(task).kind != "seq2seq":
        raise TinyTFInputError(f"train_seq2seq: task {T.get_task(task).name!r} is decoder-only; use train_decoder")
    return train(model, task, steps, lr, batch_size, seed, progress=progress, **kwargs)


# ---------------------------------------------------------------------------------------------- evaluation


@torch.no_grad()
def evaluate(model, task, n_samples: int = 512, seed: int = EVAL_SEED, threads: Optional[int] = 1) -> dict:
    """Metrics on about ``n_samples`` fresh examples drawn with ``seed``: the same number at every length
    of the task's range (rounded up).

    induction: on plain repeated sequences [BOS, x, x] (whatever the task's training options),
      accuracy (argmax on the predictable second-half positions), loss, and the best
      head's mean weight on the induction cells (key i - L + 1): induction_score, induction_head 'layer.head'.
    reversal: token_accuracy, exact_match (every output token right; equals greedy decoding),
      loss, and the best cross-attention head's mean weight on the anti-diagonal:
      anti_diagonal_score, anti_diagonal_head 'layer.head'.
    """
    with num_threads(threads):
        return _evaluate(model, T.get_task(task), n_samples, seed)


def _evaluate(model, task, n_samples, seed):
    _check_model(model, task)
    was_training = model.training
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    lengths = list(range(task.min_length, task.max_length + 1))
    per_length = max(1, math.ceil(n_samples / len(lengths)))  # the same number of examples at every length
    correct = total = exact = n_seq = 0
    loss_sum = 0.0
    mass_sum, mass_n = None, 0
    for length in lengths:
        bs = per_length
        if task.kind == "decoder":  # always plain repeats [BOS, x, x]: the induction test itself
            inputs, targets, mask = T.induction_batch(bs, length, gen, task.alphabet)
            logits, trace = model.run_with_trace(inputs, names="blocks.*.attn.weights")
            ok = (logits.argmax(-1) == targets) & mask
            correct += int(ok.sum())
            total += int(mask.sum())
            loss_sum += float((F.cross_entropy(logits.transpose(1, 2), targets, reduction="none") * mask).sum())
            per_head = torch.stack([T.induction_mass(trace[f"blocks.{i}.attn.weights"], mask, length)
                                    for i in range(model.config.n_layers)])  # [layers, H]
        else:
            src, tgt_in, tgt_out = task.batch(bs, gen, length=length)
            logits, trace = model.run_with_trace(src, tgt_in, names="decoder.blocks.*.cross_attn.weights")
            ok = logits.argmax(-1) == tgt_out
            correct += int(ok.sum())
            total += ok.numel()
            exact += int(ok.all(dim=1).sum())
            n_seq += ok.shape[0]
            loss_sum += float(F.cross_entropy(logits.transpose(1, 2), tgt_out, reduction="sum"))
            cells = T.anti_diagonal_cells(length)
            per_head = torch.stack([T.cell_mass(trace[f"decoder.blocks.{i}.cross_attn.weights"], cells)
                                    for i in range(model.config.n_layers)])  # [layers, H]
        mass_sum = per_head * bs if mass_sum is None else mass_sum + per_head * bs
        mass_n += bs
    model.train(was_training)
    mass = mass_sum / mass_n
    best = int(mass.argmax())
    layer, head = divmod(best, mass.shape[1])
    if task.kind == "decoder":
        return {"accuracy": correct / total, "loss": loss_sum / total,
                "induction_score": float(mass.max()), "induction_head": f"{layer}.{head}"}
    return {"token_accuracy": correct / total, "exact_match": exact / n_seq, "loss": loss_sum / total,
            "anti_diagonal_score": float(mass.max()), "anti_diagonal_head": f"{layer}.{head}"}


# ---------------------------------------------------------------------------------------------- text


def train_text(model, corpus=None, steps: int = 1000, lr: float = 3e-3, batch_size: int = 32, seq_len: int = 128,
               seed: int = 0, *, progress: bool = True, warmup_steps: Optional[int] = None,
               weight_decay: float = 0.1, grad_clip: Optional[float] = 1.0, betas=(0.9, 0.95), eval_every: int = 50,
               eval_windows: int = 64, snapshot_steps=(), on_snapshot=None, threads: Optional[int] = 1) -> History:
    """Train a byte-level TinyTransformer (vocab_size >= 256) in place on ``corpus`` (default: the stdlib
    docstrings of ``tinytf.textdata.stdlib_corpus()``): random windows of ``seq_len + 1`` bytes of the train
    split, drawn from a generator seeded with ``seed``; AdamW, linear warm-up then cosine decay to 10% of lr,
    gradient clipping.

    Every ``eval_every`` steps (and at step 0, before any update) the bits per byte on ``eval_windows`` fixed
    windows of the train split and of the validation split go into ``history.evals`` as
    (step, {"train_bpb", "val_bpb"}). ``on_snapshot(step, model, history)`` is called at each step of
    ``snapshot_steps`` (0 = untrained, ``steps`` = final), after that step's update and evaluation.
    """
    corpus = textdata.stdlib_corpus() if corpus is None else corpus
    if model.config.vocab_size < 256:
        raise TinyTFInputError(f"train_text: byte-level text needs vocab_size >= 256, got {model.config.vocab_size}")
    for name, value in (("steps", steps), ("batch_size", batch_size), ("seq_len", seq_len)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TinyTFInputError(f"{name}: expected a positive integer, got {value!r}")
    if not lr > 0:
        raise TinyTFInputError(f"lr: expected a positive learning rate, got {lr!r}")
    snapshot_steps = sorted(set(snapshot_steps))
    if any(not 0 <= s <= steps for s in snapshot_steps):
        raise TinyTFInputError(f"snapshot_steps must lie in [0, {steps}], got {snapshot_steps}")
    warmup_steps = min(100, steps // 10) if warmup_steps is None else warmup_steps
    history = History(task="text", steps=steps, lr=lr, batch_size=batch_size, seed=seed)
    data = torch.Generator().manual_seed(seed)
    probes = {"train_bpb": corpus.train, "val_bpb": corpus.val}

    def record(step):
        history.evals.append((step, {k: textdata.bits_per_byte(model, d, eval_windows, seq_len)
                                     for k, d in probes.items()}))
        model.train()

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=tuple(betas))
    bar = _progress_bar(steps, progress)
    t0, c0 = time.perf_counter(), time.process_time()
    with num_threads(threads), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # dropout, if the config has any
        model.train()
        if eval_every:
            record(0)
        if 0 in snapshot_steps and on_snapshot is not None:
            on_snapshot(0, model, history)
            model.train()
        for step in range(steps):
            rate = lr_at(step, steps, lr, warmup_steps, "cosine")
            for group in opt.param_groups:
                group["lr"] = rate
            inputs, targets = textdata.random_windows(corpus.train, batch_size, seq_len, data)
            logits = model(inputs)
            loss = F.cross_entropy(logits.transpose(1, 2), targets)
            optimizer_step(model, opt, loss, grad_clip, history, rate)
            done = step + 1
            if eval_every and (done % eval_every == 0 or done == steps):
                record(done)
            if done in snapshot_steps and on_snapshot is not None:
                on_snapshot(done, model, history)
                model.train()
            if bar is not None:
                bar.update(1)
                if step % 10 == 0 or done == steps:
                    post = {"loss": f"{history.final_loss:.3f}"}
                    if history.evals:
                        post["val_bpb"] = f"{history.evals[-1][1]['val_bpb']:.3f}"
                    bar.set_postfix(post)
        if bar is not None:
            bar.close()
        history.seconds = time.perf_counter() - t0
        history.cpu_seconds = time.process_time() - c0
        model.eval()
    return history


# ---------------------------------------------------------------------------------------------- presets + CLI


@dataclass(frozen=True)
class Preset:
    """Everything a shipped checkpoint's training run needs."""

    checkpoint: str  # name under tinytf/checkpoints/
    description: str
    config: TinyConfig
    task: object  # a tasks.InductionTask / tasks.ReversalTask
    steps: int
    lr: float
    batch_size: int
    seed: int = 0
    warmup_steps: Optional[int] = None
    schedule: str = "cosine"
    # how far a re-run may land from the shipped metrics (absolute); on the same machine and torch
    # build with one thread a re-run is bit-identical
    tolerance: dict = field(default_factory=dict)


PRESETS = {
    ("induction", "tiny"): Preset(
        checkpoint="induction-2l",
        description="2-layer decoder, one head per block (d_model 64, RoPE), trained to continue a repeated "
                    "random letter sequence: block 0 holds a previous-token head, block 1 an induction head",
        config=TinyConfig(vocab_size=T.VOCAB_SIZE, d_model=64, n_layers=2, n_heads=1, d_ff=128, max_seq_len=64),
        task=T.InductionTask(min_length=4, max_length=16, rule_prob=0.5),
        steps=4000, lr=3e-3, batch_size=32, schedule="constant",
        tolerance={"accuracy": 0.02, "loss": 0.05, "induction_score": 0.05}),
    ("reversal", "tiny"): Preset(
        checkpoint="reversal-2l",
        description="encoder-decoder (2 + 2 layers, d_model 64, 4 heads, RoPE) trained to write its source "
                    "reversed: a cross-attention head follows the anti-diagonal",
        config=TinyConfig(vocab_size=T.VOCAB_SIZE, d_model=64, n_layers=2, n_heads=4, d_ff=128, max_seq_len=32),
        task=T.ReversalTask(min_length=4, max_length=12),
        steps=1200, lr=3e-3, batch_size=32,
        tolerance={"token_accuracy": 0.01, "exact_match": 0.03, "loss": 0.02, "anti_diagonal_score": 0.05}),
}


def build_model(kind: str, cfg: TinyConfig, seed: int = 0):
    """A freshly initialised model of ``kind`` ('decoder' or 'seq2seq'), initialised under ``seed``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TinyTransformer(cfg) if kind == "decoder" else EncoderDecoder(cfg)


@dataclass(frozen=True)
class TextPreset:
    """Everything the byte-level text model's training run needs (``--task text``)."""

    checkpoint: str
    description: str
    config: TinyConfig
    steps: int
    lr: float
    batch_size: int
    seq_len: int
    seed: int = 0
    warmup_steps: int = 100
    weight_decay: float = 0.1
    betas: tuple = (0.9, 0.95)
    eval_every: int = 50  # train/validation curve: bits per byte on eval_windows fixed windows of each split
    eval_windows: int = 64
    snapshot_fractions: tuple = (0.0, 0.05, 0.2, 0.5)  # of steps; the final weights are the checkpoint itself
    report_windows: int = 256  # the recorded metrics: bits per byte on this many fixed windows of seq_len bytes
    prompt: str = "Return the number of "
    sample: dict = field(default_factory=lambda: {"temperature": 0.8, "top_p": 0.95, "seed": 0})
    continuation_bytes: int = 160
    tolerance: dict = field(default_factory=dict)


TEXT_PRESETS = {
    "small": TextPreset(
        checkpoint="text-4l",
        description="byte-level language model (4 layers, d_model 192, 6 heads, pre-norm RMSNorm, SwiGLU, RoPE) "
                    "trained on the docstrings of Python's standard library",
        # max_seq_len = the training window: RoPE has no parameters, so the model would run on longer inputs,
        # but it degrades past the positions it was trained on (chapter 10); generate keeps the last 128 bytes
        config=TinyConfig(vocab_size=256, d_model=192, n_layers=4, n_heads=6, d_ff=512, max_seq_len=128),
        steps=1800, lr=3e-3, batch_size=32, seq_len=128,
        tolerance={"val_bpb": 0.02, "train_bpb": 0.02}),
}
# text-4l's twin with a ReLU MLP of the same parameter count in place of SwiGLU (2 * 192 * 768 = 3 * 192 * 512),
# everything else identical (scripts/relu_twin.py; not shipped: its measurements are in checkpoints/relu-twin.json)
TEXT_PRESETS["small-relu"] = replace(
    TEXT_PRESETS["small"], checkpoint="text-4l-relu",
    description=TEXT_PRESETS["small"].description.replace("SwiGLU", "ReLU MLP d_ff 768, no biases"),
    config=replace(TEXT_PRESETS["small"].config, ffn="relu", d_ff=768), snapshot_fractions=(0.0,))


CONTEXT_NOTE = ("config.max_seq_len is the training window, {n} bytes: RoPE has no parameters, so the weights do not "
                "depend on it and the model runs on longer inputs, but its bits per byte degrade past position {n} "
                "(chapter 10); tinytf.generate feeds it at most its last {n} bytes, at positions 0..{n}-1")


def _round(x, digits=5):
    return round(float(x), digits)


def _text_metrics(model, corpus, preset) -> dict:
    return {"train_bpb": _round(textdata.bits_per_byte(model, corpus.train, preset.report_windows, preset.seq_len)),
            "val_bpb": _round(textdata.bits_per_byte(model, corpus.val, preset.report_windows, preset.seq_len))}


def _continuations(model, preset) -> dict:
    prompt = encode(preset.prompt)
    greedy = generate(model, prompt, preset.continuation_bytes)
    sampled = generate(model, prompt, preset.continuation_bytes, **preset.sample)
    return {"prompt": preset.prompt, "n_bytes": preset.continuation_bytes,
            "greedy": decode(greedy.tokens[len(prompt):]),
            "sampled": decode(sampled.tokens[len(prompt):]), "sampling": dict(preset.sample)}


def _text_info(preset, history, n_params: int, load: float, snap_names: dict) -> dict:
    """The sidecar of the final text checkpoint, before its metrics: what was trained, how, and the curve."""
    curve = {"steps": [s for s, _ in history.evals],
             "train_bpb": [_round(m["train_bpb"], 4) for _, m in history.evals],
             "val_bpb": [_round(m["val_bpb"], 4) for _, m in history.evals],
             "eval_windows": preset.eval_windows, "seq_len": preset.seq_len,
             "measured": "during training, float32 weights, bits per byte on eval_windows fixed windows of each split",
             "batch_loss_bpb": {str(s): _round(v / math.log(2), 4) for s, v in history.curve(36)}}
    info = {
        "description": preset.description,
        "task": {"name": "text", "seq_len": preset.seq_len, "data": "tinytf.textdata.stdlib_corpus()"},
        "parameters": n_params,
        "lr": preset.lr, "batch_size": preset.batch_size, "seq_len": preset.seq_len,
        "optimizer": f"AdamW(betas {preset.betas[0]}/{preset.betas[1]}, weight decay {preset.weight_decay} on "
                     f"matrices), clip 1.0, {preset.warmup_steps} warm-up steps, then cosine decay to 10% of lr",
        "train_seconds": round(history.seconds, 1),
        "train_cpu_seconds": round(history.cpu_seconds, 1),
        "machine_load_average_5min": round(load, 1),
        "curve": curve,
        "snapshots": {str(s): n for s, n in snap_names.items()},
        "reproducibility": "one CPU thread; the same command on the same torch build and the same corpus (sha256) "
                           "gives bit-identical weights; the metrics are recomputed from the stored weights",
    }
    return info


def main_text(args, argv) -> int:
    """``python -m tinytf train --task text``: train the byte-level model, write the final checkpoint and
    snapshots (float16 weights; metrics measured on the re-loaded weights)."""
    preset = TEXT_PRESETS[args.preset or "small"]
    steps = args.steps or preset.steps
    seed = preset.seed if args.seed is None else args.seed
    t_read = time.perf_counter()
    corpus = textdata.stdlib_corpus()
    record = corpus.record()
    record["read_seconds"] = round(time.perf_counter() - t_read, 1)
    model = build_model("decoder", preset.config, seed)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{preset.checkpoint}: TinyTransformer, {n_params:,} parameters; corpus: {record['n_files']} files, "
          f"{record['bytes_train']:,} train + {record['bytes_val']:,} validation bytes (Python "
          f"{record['python_version']}, sha256 {record['sha256'][:12]}); {steps} steps of {preset.batch_size} x "
          f"{preset.seq_len} bytes, seed {seed}, torch {torch.__version__}, 1 thread", flush=True)
    given = argv if argv is not None else sys.argv[1:]
    command = "python -m tinytf train " + " ".join(a for a in given if a != "--no-progress")
    snap_steps = sorted({round(f * steps) for f in preset.snapshot_fractions} - {steps})
    snap_names = {s: f"{preset.checkpoint}{SNAPSHOT_MARK}{s}" for s in snap_steps}
    snap_metrics = {}
    common = {"command": command, "seed": seed, "torch_version": torch.__version__,
              "python_version": platform.python_version(), "threads": 1, "storage_dtype": "float16",
              "corpus": record, "tolerance": preset.tolerance, "context": CONTEXT_NOTE.format(n=preset.seq_len),
              "eval": {"function": "tinytf.textdata.bits_per_byte", "n_windows": preset.report_windows,
                       "seq_len": preset.seq_len, "windows": "tinytf.textdata.eval_windows: evenly spaced, "
                                                            "non-overlapping, fixed"}}

    def save(name, step, model, extra):
        if args.out is None:
            return None
        info = dict(common, name=name, step=step, steps=steps, **extra)
        save_checkpoint(model, args.out / name, info, dtype=torch.float16)
        loaded = load_checkpoint(args.out / name)  # the recorded numbers come from the stored (float16) weights
        return loaded

    def on_snapshot(step, model, history):
        name = snap_names[step]
        extra = {"description": f"{preset.checkpoint} after {step} of {steps} training steps",
                 "snapshot_of": preset.checkpoint, "task": {"name": "text", "seq_len": preset.seq_len}}
        loaded = save(name, step, model, extra)
        if loaded is not None:
            metrics = _text_metrics(loaded, corpus, preset)
            snap_metrics[step] = metrics
            save(name, step, model, dict(extra, metrics=metrics))
            tqdm_write(f"snapshot {name}: {metrics}")

    history = train_text(model, corpus, steps, preset.lr, preset.batch_size, preset.seq_len, seed,
                         progress=not args.no_progress, warmup_steps=preset.warmup_steps,
                         weight_decay=preset.weight_decay, betas=preset.betas, eval_every=preset.eval_every,
                         eval_windows=preset.eval_windows, snapshot_steps=snap_steps, on_snapshot=on_snapshot)
    load = os.getloadavg()[1] if hasattr(os, "getloadavg") else float("nan")
    print(f"trained in {history.seconds:.0f} s wall, {history.cpu_seconds:.0f} s CPU (load average {load:.1f}); "
          f"final batch loss {history.final_loss:.4f} nats "
          f"({history.final_loss / math.log(2):.3f} bits/byte)", flush=True)
    base = textdata.baselines(corpus.train, corpus.val, preset.report_windows, preset.seq_len)
    info = _text_info(preset, history, n_params, load, snap_names)
    if args.out is None:
        metrics = _text_metrics(model, corpus, preset)
        print(f"metrics (float32 weights): {metrics}; baselines: {base}")
        return 0
    loaded = save(preset.checkpoint, steps, model, info)
    metrics = _text_metrics(loaded, corpus, preset)
    metrics["val_bpb_all_windows"] = _round(textdata.bits_per_byte(
        loaded, corpus.val, (len(corpus.val) - 1) // preset.seq_len, preset.seq_len))
    info["metrics"] = metrics
    info["baselines"] = {k: _round(v) for k, v in base.items()}
    info["baselines_rule"] = ("add-one smoothed unigram / bigram byte models fitted on the train split, scored on "
                              "the same validation windows (tinytf.textdata.baselines)")
    info["snapshot_metrics"] = {str(s): m for s, m in snap_metrics.items()}
    with num_threads(1):
        info["continuations"] = _continuations(loaded, preset)
    save(preset.checkpoint, steps, model, info)
    print(json.dumps({k: info[k] for k in ("metrics", "baselines", "snapshot_metrics", "continuations")}, indent=1))
    return 0


def tqdm_write(msg):
    try:
        from tqdm.auto import tqdm

        tqdm.write(msg)
    except ImportError:  # pragma: no cover
        print(msg, flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinytf train", description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=sorted(T.TASKS) + ["text"], required=True)
    parser.add_argument("--preset", choices=sorted({p for _, p in PRESETS} | set(TEXT_PRESETS)),
                        help="tiny (induction, reversal; the default), small (text; the default) or small-relu "
                             "(text: text-4l with a ReLU MLP of the same size)")
    parser.add_argument("--steps", type=int, help="override the preset's number of steps")
    parser.add_argument("--seed", type=int, help="override the preset's seed")
    parser.add_argument("--out", type=Path, help="directory to write <checkpoint>.safetensors + .json into")
    parser.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    args = parser.parse_args(argv)
    if args.task == "text":
        if args.preset is not None and args.preset not in TEXT_PRESETS:
            parser.error(f"--task text has presets {sorted(TEXT_PRESETS)}, not {args.preset!r}")
        with num_threads(1):
            return main_text(args, argv)
    if (args.task, args.preset or "tiny") not in PRESETS:
        parser.error(f"--task {args.task} has no preset {args.preset!r}")
    preset = PRESETS[args.task, args.preset or "tiny"]
    steps = args.steps or preset.steps
    seed = preset.seed if args.seed is None else args.seed
    task = preset.task
    model = build_model(task.kind, preset.config, seed)
    print(f"{preset.checkpoint}: {type(model).__name__}, {sum(p.numel() for p in model.parameters()):,} parameters, "
          f"{task}, {steps} steps, seed {seed}, torch {torch.__version__}, 1 thread", flush=True)
    history = train(model, task, steps, preset.lr, preset.batch_size, seed, progress=not args.no_progress,
                    warmup_steps=preset.warmup_steps, schedule=preset.schedule)
    print(history.summary(), flush=True)
    if args.out is not None:
        given = argv if argv is not None else sys.argv[1:]
        command = "python -m tinytf train " + " ".join(a for a in given if a != "--no-progress")  # no effect on results
        info = {
            "name": preset.checkpoint,
            "description": preset.description,
            "task": asdict(task),
            "command": command,
            "seed": seed,
            "steps": steps,
            "lr": preset.lr,
            "batch_size": preset.batch_size,
            "optimizer": "AdamW(betas 0.9/0.98, weight decay 0.01 on matrices), clip 1.0, "
                         f"{min(100, steps // 10) if preset.warmup_steps is None else preset.warmup_steps}"
                         f" warm-up steps, then {preset.schedule} learning rate",
            "train_seconds": round(history.seconds, 1),
            "final_train_loss": round(history.final_loss, 5),
            "loss_curve": {str(s): round(v, 5) for s, v in history.curve(20)},  # step: mean loss of the window
            "metrics": {k: (round(v, 5) if isinstance(v, float) else v) for k, v in history.metrics.items()},
            "eval": {"n_samples": 512, "seed": EVAL_SEED,
                     "data": "plain repeats [BOS, x, x]" if task.kind == "decoder" else "reversal_batch"},
            "tolerance": preset.tolerance,
            "reproducibility": "one CPU thread; the same command on the same torch build gives bit-identical "
                               "weights and metrics; elsewhere the metrics stay within 'tolerance'",
            "torch_version": torch.__version__,
            "python_version": platform.python_version(),
            "threads": 1,
        }
        paths = save_checkpoint(model, args.out / preset.checkpoint, info)
        print("wrote " + ", ".join(str(p) for p in paths))
    return 0

