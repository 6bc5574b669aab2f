"""Export a decoder-only TinyTransformer to ONNX with every trace point as a named output.

    import tinytf
    model = tinytf.pretrained("induction-2l")
    names = tinytf.export_onnx(model, "induction-2l.onnx")   # ['logits', 'tok_embed', 'embed', 'blocks.0.resid_pre', ...]

The file runs in any ONNX runtime; the book's pages run it in the browser with onnxruntime-web, so a reader
can type tokens and every figure recomputes without a Python kernel (``scripts/static_assets.py`` writes the
book's models). Its interface:

* input ``"ids"``: int64 ``[1, T]``, T dynamic from 1 to ``model.config.max_seq_len``;
* outputs: ``"logits"`` ``[1, T, V]``, then every entry of ``model.run_with_trace(ids)`` under its trace name
  (``"blocks.0.attn.weights"`` ``[1, H, T, T]``, ...; see ``tinytf.TRACE_NAMES``), float32, with the shapes
  of the trace (an entry without a batch dimension, such as a position table ``"pos.table"`` ``[T, C]``,
  stays as it is). ``export_onnx`` returns these names in this order.

The same model always gives the same bytes. Weights whose values are all float16 numbers (the shipped
checkpoints are stored as float16) are kept as float16 and cast to float32 in the graph: half the file, the
same numbers.

What the ONNX graph cannot do: check its input. In Python the model raises ``TinyTFInputError`` for a token
id outside ``[0, vocab_size)`` or a sequence longer than ``max_seq_len``; the graph has no such checks. With
onnxruntime (Python and onnxruntime-web 1.30 alike) an id >= vocab_size fails the run with "indices element
out of data bounds" (and onnxruntime-web logs it with console.error), a negative id silently reads the
table from the end (-1 = the last token), and a RoPE model runs on more than ``max_seq_len`` tokens without
a word. So the caller validates: token ids are whole numbers in ``[0, vocab_size)`` and 1 <= T <=
``max_seq_len`` (both are in the book's ``_static/models/manifest.json``).

The export uses PyTorch's TorchScript exporter (``torch.onnx.export(..., dynamo=False)``): it runs the
model once on an example and records the operations. The checks of ``tinytf.check_ids`` and of the position
modules turn tensor values into Python numbers (``int(ids.min())``), which the tracer warns about; they only
decide whether to raise, and never feed a number into the computation, so the graph holds neither T nor
the example's ids (``tests/tinytf/test_onnx_export.py`` runs one session on several lengths and compares every
output with PyTorch). Those warnings are silenced here.
"""
from __future__ import annotations

import functools
import io
import warnings
from pathlib import Path

import torch
from torch import nn

from ..config import TinyConfig
from ..errors import TinyTFInputError
from ..models import TinyTransformer
from ..seeding import seed_everything
from . import pretrained

INPUT_NAME = "ids"
LOGITS = "logits"
DEFAULT_OPSET = 17
EXAMPLE_LENGTH = 5  # the example the tracer runs; any length works, the graph keeps T symbolic


class _TracedOutputs(nn.Module):
    """ids [1, T] -> (logits, trace tensors in ``names`` order): the model's forward pass with every hook recorded."""

    def __init__(self, model: nn.Module, names: list):
        super().__init__()
        self.model, self.names = model, list(names)

    def forward(self, ids):
        logits, trace = self.model.run_with_trace(ids)
        return (logits, *(trace[name] for name in self.names))


def _check_model(model) -> None:
    if not isinstance(model, TinyTransformer):
        raise TinyTFInputError(f"export_onnx: expected a decoder-only tinytf.TinyTransformer, got {type(model).__name__}"
                               + (" (the encoder-decoder takes two inputs; it is not exported)"
                                  if type(model).__name__ == "EncoderDecoder" else ""))
    bad = [name for name, p in model.named_parameters() if p.dtype != torch.float32]
    if bad:
        raise TinyTFInputError(f"export_onnx: the exported graph is float32, but {bad[0]} is {dict(model.named_parameters())[bad[0]].dtype}; "
                               "call model.float() first")


def _shapes(model, T: int) -> dict:
    """{output name: shape} of a forward pass on T tokens, "logits" first."""
    with torch.no_grad():
        logits, trace = model.run_with_trace(torch.zeros(1, T, dtype=torch.long))
    out = {LOGITS: tuple(logits.shape)}
    out.update((name, tuple(t.shape)) for name, t in trace.items() if name != LOGITS)
    return out


def trace_output_names(model) -> list:
    """The output names ``export_onnx`` gives ``model``: "logits", then the trace names of one forward pass."""
    _check_model(model)
    return list(_shapes(model, 1))


def _dynamic_axes(model) -> dict:
    """{name: {axis: "T"}} for the input and every output: the axes that change with the sequence length
    (found by comparing the shapes of two passes, so a head count that happens to equal T is not taken)."""
    a, b = 2, 3
    if model.config.max_seq_len < b:
        a, b = 1, model.config.max_seq_len
    one, two = _shapes(model, a), _shapes(model, b)
    axes = {INPUT_NAME: {1: "T"}}
    if a == b:
        return axes  # max_seq_len 1: nothing varies
    for name in one:
        axes[name] = {i: "T" for i, (x, y) in enumerate(zip(one[name], two[name])) if x != y}
    return axes


def export_onnx(model, path, opset: int = DEFAULT_OPSET) -> list:
    """Write ``model`` (a TinyTransformer) to ``path`` as ONNX; return the output names ("logits", then the
    trace names). Input "ids" int64 [1, T], T dynamic (1..max_seq_len). See the module docstring."""
    _check_model(model)
    if isinstance(opset, bool) or not isinstance(opset, int) or opset < 14:
        raise TinyTFInputError(f"export_onnx: opset must be a whole number >= 14 (Trilu, used by the causal mask "
                               f"in some exports, needs 14), got {opset!r}")
    names = trace_output_names(model)
    dynamic = _dynamic_axes(model)
    wrapper = _TracedOutputs(model, names[1:])
    was_training = model.training
    model.eval()
    T = min(EXAMPLE_LENGTH, model.config.max_seq_len)
    example = (torch.arange(T, dtype=torch.long) % model.config.vocab_size)[None]  # [1, T]
    buffer = io.BytesIO()
    try:
        with torch.no_grad(), warnings.catch_warnings():
            # int(ids.min()) etc. in the input checks: they decide whether to raise, not what is computed
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            # torch >= 2.9 calls the TorchScript exporter "legacy" (the dynamo one is the default); it is the one
            # that gives one graph for every T here, and onnxruntime-web runs what it writes
            warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx")
            warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*TorchScript-based ONNX export")
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch\.onnx")
            torch.onnx.export(wrapper, (example,), buffer, dynamo=False, opset_version=opset,
                              input_names=[INPUT_NAME], output_names=names, dynamic_axes=dynamic,
                              do_constant_folding=True)
    finally:
        model.train(was_training)
    data = _float16_storage(buffer.getvalue())
    Path(path).write_bytes(data)
    return names


def _float16_storage(data: bytes, min_size: int = 64) -> bytes:
    """Store every float32 weight whose values are all exact float16 numbers as float16, followed by a Cast
    back to float32: the graph computes with the very same numbers, in half the bytes. The shipped
    checkpoints are stored as float16 (tinytf.pretrained), so their files halve; a freshly initialised
    model's weights are not float16 numbers and stay float32. Without the ``onnx`` package: unchanged."""
    try:
        import numpy as np
        import onnx
        from onnx import helper, numpy_helper
    except ImportError:
        return data
    proto = onnx.load_from_string(data)
    graph = proto.graph
    casts, kept = [], []
    for init in graph.initializer:
        if init.data_type == onnx.TensorProto.FLOAT:
            values = numpy_helper.to_array(init)
            half = values.astype(np.float16)
            if values.size >= min_size and np.array_equal(half.astype(np.float32), values):
                stored = numpy_helper.from_array(half, init.name + "_float16")
                kept.append(stored)
                casts.append(helper.make_node("Cast", [stored.name], [init.name], to=onnx.TensorProto.FLOAT,
                                              name=init.name + "_to_float32"))
                continue
        kept.append(init)
    if not casts:
        return data
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = casts + list(graph.node)  # the casts first: the graph's nodes stay topologically sorted
    del graph.node[:]
    graph.node.extend(nodes)
    return proto.SerializeToString()


def book_models() -> list:
    """The models the book's pages run in the browser, as (key, label, load) with ``load()`` -> model:
    "untrained" (``seed_everything(0); TinyTransformer(TinyConfig())``, what the live panel shows with
    seed 0), then every shipped decoder-only checkpoint, synthetic-task decoders first, then the byte-level
    text models; the labels are the live panel's weights menu (tinytf.viz.panel). Not the seq2seq model."""
    out = [("untrained", "untrained (seed 0)", _untrained)]
    decoders = list(pretrained.names(kind="decoder"))
    out += [(n, f"trained: {n}", functools.partial(pretrained.load, n)) for n in decoders]
    out += [(n, f"trained: {n} (English bytes)", functools.partial(pretrained.load, n))
            for n in pretrained.names(kind="text") if n not in decoders]
    return out


def _untrained():
    """seed_everything(0); TinyTransformer(TinyConfig()), leaving the caller's random state as it was."""
    import random

    state = random.getstate()
    try:
        with torch.random.fork_rng(devices=[]):
            seed_everything(0)
            return TinyTransformer(TinyConfig()).eval()
    finally:
        random.setstate(state)
