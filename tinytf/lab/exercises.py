"""Checkers for the book's implement-and-check exercises.

Each exercise asks the reader to write one piece of a Transformer (RoPE, causal attention, RMSNorm, ...)
as a plain function. :func:`check` runs that function on a fixed input taken from a tinytf model's trace,
compares the result with what tinytf computed for the same input, and says what differs: the shape, the
positions (or heads, or configurations) that disagree, and the largest error.

    >>> def my_rmsnorm(x, weight, eps):
    ...     return x / x.pow(2).mean(-1, keepdim=True).add(eps).sqrt() * weight
    >>> print(check("rmsnorm", my_rmsnorm))
    rmsnorm: passed: shape [2, 5, 128], max error < 1e-05

The report is the same on every machine: a passing error is printed as the bound it satisfies
(``tinytf.below``), never as its float32 digits. A stub that raises ``NotImplementedError`` is reported
as "not attempted yet", so a chapter can run its exercise cells before the reader fills them in.
Checking never changes the random state of the caller (the inputs come from a private generator).

``EXERCISES`` lists every exercise with the signature the reader implements; ``describe(name)`` prints it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch

from ..config import MoEOptions, TinyConfig
from ..generation import next_token_probs
from ..models import EncoderDecoder, TinyTransformer
from ..norms import RMSNorm
from ..tokens import encode
from .ablation import MeanAblation
from .lens import logit_lens
from .parameters import LLAMA3_8B, count_parameters
from .precision import below
from .pretrained import load
from .recent_blocks import sink_softmax

TOLERANCE = 1e-5  # max |yours - tinytf| for a pass: float32 rounding, not a different formula


@dataclass(frozen=True)
class Exercise:
    """One implement-and-check exercise: the function the reader writes and what it must return."""

    name: str
    chapter: int
    signature: str
    returns: str
    hint: str


EXERCISES: dict[str, Exercise] = {e.name: e for e in (
    Exercise("rope", 1, "rope(x)", "x rotated: same shape [B, H, T, D]",
             "pair (x_i, x_{i+D/2}) at position t turns by t * 10000**(-2i/D); positions count from 0"),
    Exercise("causal_attention", 2, "causal_attention(q, k, v)", "z: [B, H, T, D]",
             "softmax(q k^T / sqrt(D)) with -inf where a key comes after the query, times v"),
    Exercise("rmsnorm", 3, "rmsnorm(x, weight, eps)", "same shape as x",
             "divide each token's vector by sqrt(mean of squares + eps), then multiply by weight"),
    Exercise("swiglu", 4, "swiglu(x, w_gate, w_up, w_down)", "[B, T, C]",
             "weights are nn.Linear weights ([out, in]): x @ w.T; down(silu(gate(x)) * up(x))"),
    Exercise("post_norm_block", 5, "post_norm_block(x, block)", "[B, T, C]",
             "U = norm1(x + attn(x)); out = norm2(U + ffn(U)), with block.norm1, block.attn, block.norm2, block.ffn"),
    Exercise("pre_norm_block", 6, "pre_norm_block(x, block)", "[B, T, C]",
             "U = x + attn(norm1(x)); out = U + ffn(norm2(U)), with block.norm1, block.attn, block.norm2, block.ffn"),
    Exercise("sandwich_block", 6, "sandwich_block(x, block)", "[B, T, C]",
             "U = x + norm1.post(attn(norm1.pre(x))); out = U + norm2.post(ffn(norm2.pre(U))), with block.norm1.pre, "
             "block.norm1.post, block.attn, block.norm2.pre, block.norm2.post, block.ffn"),
    Exercise("parameter_count", 7, "parameter_count(cfg)", "an int",
             "use cfg.vocab_size, d_model, n_layers, n_heads, kv_heads, d_head, d_ff, tie_embeddings; "
             "RMSNorm, SwiGLU, RoPE, no biases"),
    Exercise("padded_loss", 7, "padded_loss(logits, ids, pad)", "a scalar tensor",
             "position t is scored on ids[:, t + 1]; leave out the last position and every target that is padding "
             "(pad True), then average over all the targets left in the batch; F.cross_entropy's ignore_index helps"),
    Exercise("cross_attention", 8, "cross_attention(x, memory, attn)", "[B, T, C]",
             "queries from x, keys and values from memory, with attn.q_proj/k_proj/v_proj/o_proj; "
             "attn.n_heads heads of attn.d_head; no mask, no RoPE"),
    Exercise("grouped_query_attention", 9, "grouped_query_attention(q, k, v)", "z: [B, H, T, D]",
             "k and v have fewer heads than q: query head h uses K/V head h // (H / H_kv); causal mask"),
    Exercise("sampler", 10, "sampler(logits, temperature, top_k, top_p)", "probabilities [B, V], each row summing to 1",
             "divide by the temperature; top_k: set every logit below the k-th largest to -inf; top_p: sort the "
             "probabilities, keep the smallest set of most likely tokens whose sum reaches p (ties with the last "
             "kept one too), set the rest to -inf; softmax (None: that filter is off)"),
    Exercise("moe_router", 11, "top_k_router(logits, k)", "(ids, weights), each [B, T, k]",
             "Mixtral's router: softmax over the E experts, keep the k largest probabilities, divide them by their "
             "sum; ids are the chosen experts (any order)"),
    Exercise("sink_softmax", 11, "sink_softmax(scores, sinks)", "weights [B, H, T, S], each row summing to less than 1",
             "gpt-oss's attention sink: head h's logit sinks[h] joins the softmax's denominator but gets no value: "
             "exp(score) / (exp(sinks[h]) + sum of exp(scores)); masked scores are -inf"),
    Exercise("kv_cache_step", 10, "kv_cache_step(q, k_past, v_past, k_new, v_new)", "z: [B, H, 1, D]",
             "append the new key and value to the past ones, then one query attends to all of them (no mask needed)"),
    Exercise("mean_ablated_block", 12, "mean_ablated_block(x, block, ffn_mean)", "[B, T, C]",
             "a pre-norm block whose FFN output is replaced by the vector ffn_mean [C] at every position: "
             "U = x + attn(norm1(x)); the residual add still happens"),
    Exercise("logit_lens", 12, "logit_lens(model, ids, position)",
             "log-probabilities [n_layers + 1, V] of the byte after ids[position], one row per depth",
             "model.run_with_trace(ids); the streams are trace['blocks.0.resid_pre'] (depth 0) and "
             "trace[f'blocks.{i}.resid_post'] (depth i + 1); apply model.final_norm, then model.lm_head, "
             "then log_softmax over the V bytes"),
)}


@dataclass
class CheckResult:
    """The outcome of :func:`check`; ``bool(result)`` is whether it passed, ``str(result)`` the report."""

    exercise: str
    status: str  # "passed", "failed" or "not attempted"
    detail: str
    details: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def __bool__(self) -> bool:
        return self.passed

    def report(self) -> str:
        lines = [f"{self.exercise}: {self.status}: {self.detail}"]
        lines += [f"  {d}" for d in self.details]
        return "\n".join(lines)

    __str__ = report

    def __repr__(self) -> str:
        return self.report()


def describe(name: str) -> str:
    """What the reader implements for exercise ``name``: signature, return value and a hint."""
    ex = _exercise(name)
    return f"{ex.signature} -> {ex.returns}\n  chapter {ex.chapter}; hint: {ex.hint}"


def check(name: str, fn: Callable, tolerance: float = TOLERANCE) -> CheckResult:
    """Run the reader's ``fn`` for exercise ``name`` on tinytf's input and compare with tinytf's output."""
    ex = _exercise(name)
    if not callable(fn):
        return CheckResult(name, "failed", f"expected a function {ex.signature}, got {type(fn).__name__}")
    with torch.random.fork_rng(devices=[]):  # the caller's random numbers stay as they were
        torch.manual_seed(1234)
        return _CHECKS[name](name, fn, tolerance)


# --------------------------------------------------------------------------------------------- helpers

def _exercise(name: str) -> Exercise:
    if name not in EXERCISES:
        raise KeyError(f"no exercise {name!r}; the exercises are {', '.join(EXERCISES)}")
    return EXERCISES[name]


def _call(name, fn, *args):
    """fn(*args) on copies of the inputs; returns (output, None) or (None, CheckResult)."""
    args = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
    try:
        with torch.no_grad():
            return fn(*args), None
    except NotImplementedError:
        return None, CheckResult(name, "not attempted",
                                 f"{getattr(fn, '__name__', 'the function')} still raises NotImplementedError "
                                 "(replace the stub with your code)")
    except Exception as err:  # the reader's bug, reported rather than raised
        return None, CheckResult(name, "failed", f"your function raised {type(err).__name__}: {err}")


def _fmt_index(index) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def compare(name: str, got, want: torch.Tensor, axes: tuple, tolerance: float = TOLERANCE,
            along: str = "position") -> CheckResult:
    """Compare a tensor result with tinytf's: shape, then values. ``axes`` names the dimensions of ``want``
    (e.g. ("batch", "head", "position", "feature")); ``along`` is the axis whose mismatching entries are listed."""
    if not isinstance(got, torch.Tensor):
        return CheckResult(name, "failed", f"your function returned {type(got).__name__}, expected a torch.Tensor "
                                           f"of shape {list(want.shape)}")
    if list(got.shape) != list(want.shape):
        axes_txt = ", ".join(f"{a} {n}" for a, n in zip(axes, want.shape))
        return CheckResult(name, "failed", f"shape {list(got.shape)}, expected {list(want.shape)} ({axes_txt})")
    got = got.detach().to(torch.float64)
    ref = want.detach().to(torch.float64)
    if not torch.isfinite(got).all():
        bad = torch.nonzero(~torch.isfinite(got))[0].tolist()
        return CheckResult(name, "failed", f"shape {list(want.shape)}, but your output has NaN or inf, "
                                           f"first at index {_fmt_index(bad)}")
    err = (got - ref).abs()
    max_err = err.max().item() if err.numel() else 0.0
    if max_err < tolerance:
        return CheckResult(name, "passed", f"shape {list(want.shape)}, max error {below(max_err, tolerance)}")
    details = []
    if along in axes:
        axis = axes.index(along)
        other = [d for d in range(err.dim()) if d != axis]
        per = err.amax(dim=other) if other else err
        wrong = torch.nonzero(per >= tolerance).flatten().tolist()
        right = [i for i in range(per.numel()) if i not in wrong]
        details.append(f"{along}s that differ: {wrong}" + (f"; {along}s that match: {right}" if right else ""))
    first = torch.nonzero(err >= tolerance)[0].tolist()
    where = ", ".join(f"{a} {i}" for a, i in zip(axes, first))
    details.append(f"first mismatch at index {_fmt_index(first)} ({where}): yours {got[tuple(first)].item():.4g}, "
                   f"tinytf {ref[tuple(first)].item():.4g}")
    return CheckResult(name, "failed", f"shape {list(want.shape)} is right, max error {max_err:.3g} "
                                       f"(tolerance {tolerance:.0e})", details)


def _model(**changes):
    return TinyTransformer(TinyConfig(**changes)).eval()


def _nudge(module, scale=0.1):
    """Random, non-trivial values in every parameter (gamma = 1 at initialisation would hide mistakes)."""
    with torch.no_grad():
        for p in module.parameters():
            p.add_(scale * torch.randn_like(p))
    return module


def _trace(model, text):
    with torch.no_grad():
        _, trace = model.run_with_trace(encode(text))
    return trace


HEADS = ("batch", "head", "position", "feature")
STREAM = ("batch", "position", "feature")


# ---------------------------------------------------------------------------------------------- checks

def _check_rope(name, fn, tol):
    tr = _trace(_model(), "rotary!")
    q, q_rot = tr["blocks.0.attn.q"], tr["blocks.0.attn.q_rot"]
    got, fail = _call(name, fn, q)
    return fail if fail is not None else compare(name, got, q_rot, HEADS, tol)


def _check_causal_attention(name, fn, tol):
    tr = _trace(_nudge(_model()), "attention")
    p = "blocks.0.attn."
    got, fail = _call(name, fn, tr[p + "q_rot"], tr[p + "k_rot"], tr[p + "v"])
    return fail if fail is not None else compare(name, got, tr[p + "z"], HEADS, tol)


def _check_rmsnorm(name, fn, tol):
    norm = _nudge(RMSNorm(128)).eval()
    x = torch.randn(2, 5, 128) * 2 + 0.5
    with torch.no_grad():
        want = norm(x)
    got, fail = _call(name, fn, x, norm.weight, norm.eps)
    return fail if fail is not None else compare(name, got, want, STREAM, tol)


def _check_swiglu(name, fn, tol):
    model = _nudge(_model(), 0.02)
    tr = _trace(model, "gated units")
    ffn = model.blocks[0].ffn
    got, fail = _call(name, fn, tr["blocks.0.norm2.out"], ffn.gate.weight, ffn.up.weight, ffn.down.weight)
    return fail if fail is not None else compare(name, got, tr["blocks.0.ffn.out"], STREAM, tol)


def _check_block(name, fn, tol, norm_position):
    model = _nudge(_model(norm_position=norm_position), 0.05)
    tr = _trace(model, "one block")
    got, fail = _call(name, fn, tr["blocks.0.resid_pre"], model.blocks[0])
    return fail if fail is not None else compare(name, got, tr["blocks.0.resid_post"], STREAM, tol)


def _check_parameter_count(name, fn, tol):
    configs = [("TinyConfig()", TinyConfig()),
               ("TinyConfig(n_layers=4, d_model=64, d_ff=256)", TinyConfig(n_layers=4, d_model=64, d_ff=256)),
               ("TinyConfig(n_kv_heads=2)", TinyConfig(n_kv_heads=2)),
               ("TinyConfig(tie_embeddings=True)", TinyConfig(tie_embeddings=True)),
               ("LLAMA3_8B", LLAMA3_8B)]
    wrong, right = [], []
    for label, cfg in configs:
        got, fail = _call(name, fn, cfg)
        if fail is not None:
            return fail
        want = count_parameters(cfg)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, float) and got.is_integer():
            got = int(got)
        if not isinstance(got, int) or isinstance(got, bool):
            return CheckResult(name, "failed", f"for {label} your function returned {type(got).__name__}, "
                                               "expected an int")
        (right if got == want else wrong).append((label, got, want))
    if not wrong:
        return CheckResult(name, "passed", f"{len(configs)} configurations, every count exact "
                                           f"(LLAMA3_8B: {right[-1][2]:,})")
    details = [f"{label}: yours {got:,}, tinytf {want:,} (difference {got - want:+,})" for label, got, want in wrong]
    if right:
        details.append("right for: " + ", ".join(label for label, _, _ in right))
    return CheckResult(name, "failed", f"{len(wrong)} of {len(configs)} counts differ", details)


def _check_padded_loss(name, fn, tol):
    # chapter 7's ten tokens "hello tiny" and a shorter text padded on the right with 0 bytes to the same length
    texts = ("hello tiny", "hi, tiny")
    rows = [encode(t) for t in texts]
    T = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), T, dtype=torch.long)  # [B, T]: 0 is the pad byte
    pad = torch.ones(len(rows), T, dtype=torch.bool)  # [B, T]: True at padding
    for b, r in enumerate(rows):
        ids[b, : len(r)], pad[b, : len(r)] = r, False
    model = _nudge(_model(), 0.02)
    with torch.no_grad():
        logits = model(ids)  # [B, T, V]; right padding: the causal mask keeps it away from the real positions
    V = logits.shape[-1]
    per_target = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1),
                                                   reduction="none").view(len(rows), T - 1)  # [B, T - 1]
    real = ~pad[:, 1:]  # [B, T - 1]: the targets that are real bytes
    want = per_target[real].mean()
    got, fail = _call(name, fn, logits, ids, pad)
    if fail is not None:
        return fail
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        got = torch.tensor(float(got))
    if isinstance(got, torch.Tensor) and got.numel() == 1 and got.dim() > 0:
        got = got.reshape(())
    result = compare(name, got, want, (), tol)
    if result or not isinstance(got, torch.Tensor) or got.dim() != 0 or not torch.isfinite(got):
        return result
    common = {  # typical wrong answers, so the report can say which one yours is
        "the loss with the pad targets counted": per_target.mean(),
        "the mean of the two sequences' own losses (each sequence weighted equally, not each target)":
            torch.stack([per_target[b][real[b]].mean() for b in range(len(rows))]).mean(),
        "the loss of the first sequence only": per_target[0][real[0]].mean(),
    }
    for what, value in common.items():
        if abs(got.item() - value.item()) < tol:
            result.details.append(f"your value equals {what}")
    return result


def _check_cross_attention(name, fn, tol):
    # chapter 8's shapes: source "banana" (S = 6) and target "anana" (T = 5), so S != T and a K/V reshape that
    # uses T where S belongs fails
    model = _nudge(EncoderDecoder(TinyConfig(n_layers=1)), 0.02).eval()
    with torch.no_grad():
        _, tr = model.run_with_trace(encode("banana"), encode("anana"))
    p = "decoder.blocks.0."
    x, memory = tr[p + "norm_cross.out"], tr["encoder.final_norm.out"]
    got, fail = _call(name, fn, x, memory, model.decoder.blocks[0].cross_attn)
    if fail is not None:
        return fail
    result = compare(name, got, tr[p + "cross_attn.out"], STREAM, tol)
    if result:  # say which length is which: T target queries read S source positions
        result.detail = f"queries {list(x.shape)} read memory {list(memory.shape)}; output {result.detail}"
    return result


def _check_gqa(name, fn, tol):
    tr = _trace(_nudge(_model(n_kv_heads=2)), "grouped")
    p = "blocks.0.attn."
    got, fail = _call(name, fn, tr[p + "q_rot"], tr[p + "k_rot"], tr[p + "v"])
    return fail if fail is not None else compare(name, got, tr[p + "z"], HEADS, tol, along="head")


def _check_kv_cache_step(name, fn, tol):
    model = _nudge(_model())
    cache = model.new_cache()
    with torch.no_grad():
        model(encode("the cache"), cache=cache)
        k_past, v_past = cache.layers[0].k.clone(), cache.layers[0].v.clone()
        _, tr = model.run_with_trace(encode("!"), cache=cache)
    p = "blocks.0.attn."
    got, fail = _call(name, fn, tr[p + "q_rot"], k_past, v_past, tr[p + "k_rot"], tr[p + "v"])
    return fail if fail is not None else compare(name, got, tr[p + "z"], HEADS, tol, along="head")


def _check_sampler(name, fn, tol):
    model = _model()
    with torch.no_grad():
        logits = model(encode("The cat sat"))[-1:] * 40  # [1, V]; scaled so that the settings differ clearly
    settings = [(1.0, None, None), (0.7, None, None), (1.0, 5, None), (0.5, 20, None), (2.0, None, 0.9),
                (5.0, None, 0.5), (5.0, 20, 0.8)]  # nuclei of 6, 12 and (within the top 20) several tokens
    for temperature, top_k, top_p in settings:
        got, fail = _call(name, fn, logits, temperature, top_k, top_p)
        if fail is not None:
            return fail
        want = next_token_probs(logits, temperature=temperature, top_k=top_k, top_p=top_p)
        result = compare(name, got, want, ("batch", "token"), tol, along="token")
        if not result.passed:
            result.detail = f"temperature {temperature}, top_k {top_k}, top_p {top_p}: {result.detail}"
            if len(result.details) and result.details[0].startswith("tokens that differ"):
                wrong = result.details[0].split(";")[0]
                result.details[0] = wrong if len(wrong) < 120 else wrong[:117] + "..."
            return result
    return CheckResult(name, "passed", f"{len(settings)} settings of temperature, top_k and top_p, shape [1, {logits.shape[-1]}], "
                                       f"max error < {tol:.0e}")


def _check_moe_router(name, fn, tol):
    model = _nudge(_model(moe=MoEOptions(n_experts=8, experts_per_token=2, d_expert=32)), 0.3)
    with torch.no_grad():
        _, tr = model.run_with_trace(encode("route each token"), names=["blocks.0.ffn.router_logits",
                                                                        "blocks.0.ffn.router_topk"])
    logits, chosen = tr["blocks.0.ffn.router_logits"], tr["blocks.0.ffn.router_topk"]
    E, k = logits.shape[-1], chosen.ids.shape[-1]
    want = torch.zeros_like(logits).scatter(-1, chosen.ids, chosen.weights)  # [B, T, E]: 0 for unchosen experts
    got, fail = _call(name, fn, logits, k)
    if fail is not None:
        return fail
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        return CheckResult(name, "failed", f"your function returned {type(got).__name__}, expected a pair "
                                           f"(ids, weights), each of shape {list(chosen.ids.shape)}")
    ids, weights = (torch.as_tensor(x) for x in got)
    if list(ids.shape) != list(chosen.ids.shape) or list(weights.shape) != list(chosen.ids.shape):
        return CheckResult(name, "failed", f"shapes {list(ids.shape)} and {list(weights.shape)}, expected "
                                           f"{list(chosen.ids.shape)} each (batch, position, k = {k})")
    ids = ids.long()
    if ids.min() < 0 or ids.max() >= E or (ids.sort(-1).values.diff(dim=-1) == 0).any():
        return CheckResult(name, "failed", f"ids must be {k} different experts in 0..{E - 1} for every token")
    dense = torch.zeros_like(logits, dtype=torch.float32).scatter(-1, ids, weights.float())
    return compare(name, dense, want, ("batch", "position", "expert"), tol)


def _check_sink_softmax(name, fn, tol):
    tr = _trace(_nudge(_model(), 0.05), "sinks hold weight")  # scores between about -1 and 1
    scores = tr["blocks.0.attn.masked_scores"]  # [B, H, T, T], -inf above the diagonal
    sinks = torch.linspace(-1.0, 3.0, scores.shape[1])  # one logit per head: the sink takes from 2% to 96% of a row
    got, fail = _call(name, fn, scores, sinks)
    if fail is not None:
        return fail
    return compare(name, got, sink_softmax(scores, sinks), ("batch", "head", "query", "key"), tol, along="head")


def _check_mean_ablated_block(name, fn, tol):
    model = _nudge(_model(), 0.05)
    ffn_mean = 0.5 * torch.randn(model.config.d_model) + 0.2  # stands in for the FFN's mean output [C]
    ids = encode("mean ablation")
    with torch.no_grad():  # tinytf's own mean-ablation, applied through the model's hook points
        _, intact = model.run_with_trace(ids)
        _, ablated = model.run_with_trace(ids, patches=MeanAblation({"blocks.0.ffn.out": ffn_mean}).patches())
    got, fail = _call(name, fn, intact["blocks.0.resid_pre"], model.blocks[0], ffn_mean)
    return fail if fail is not None else compare(name, got, ablated["blocks.0.resid_post"], STREAM, tol)


_LENS_TEXT = "Return the number of items."  # a docstring sentence, 27 bytes
_LENS_POSITIONS = (4, 26)  # the 'r' of 'Return' and the last byte


def _check_logit_lens(name, fn, tol):
    model = load("text-4l").eval()
    ids = encode(_LENS_TEXT)
    want = logit_lens(model, ids)  # [n_layers + 1, T, V]
    for position in _LENS_POSITIONS:
        got, fail = _call(name, fn, model, ids, position)
        if fail is not None:
            return fail
        # compared as probabilities: log(softmax) and log_softmax differ by rounding far out in the tail
        got = got.exp() if isinstance(got, torch.Tensor) else got
        result = compare(name, got, want[:, position].exp(), ("depth", "byte"), tol, along="depth")
        if not result:
            result.details.insert(0, f"at position {position} of {_LENS_TEXT!r} (as probabilities; depth 0 = the "
                                     "embeddings, depth d = after block d - 1)")
            return result
    return CheckResult(name, "passed", f"shape {list(want[:, 0].shape)} at positions {_LENS_POSITIONS[0]} and "
                                       f"{_LENS_POSITIONS[1]} of text-4l, as probabilities, max error < {tol:.0e}")


_CHECKS = {
    "rope": _check_rope,
    "causal_attention": _check_causal_attention,
    "rmsnorm": _check_rmsnorm,
    "swiglu": _check_swiglu,
    "post_norm_block": lambda n, f, t: _check_block(n, f, t, "post"),
    "pre_norm_block": lambda n, f, t: _check_block(n, f, t, "pre"),
    "sandwich_block": lambda n, f, t: _check_block(n, f, t, "sandwich"),
    "parameter_count": _check_parameter_count,
    "padded_loss": _check_padded_loss,
    "cross_attention": _check_cross_attention,
    "grouped_query_attention": _check_gqa,
    "moe_router": _check_moe_router,
    "sink_softmax": _check_sink_softmax,
    "kv_cache_step": _check_kv_cache_step,
    "sampler": _check_sampler,
    "mean_ablated_block": _check_mean_ablated_block,
    "logit_lens": _check_logit_lens,
}
assert set(_CHECKS) == set(EXERCISES)


# ----------------------------------------------------------------------------------- reference solutions
# The book's hidden solution cells write these out in full; the tests check that each one passes.

def _ref_rope(x):
    D, T = x.shape[-1], x.shape[-2]
    inv_freq = 10000.0 ** (-torch.arange(0, D, 2, dtype=torch.float32) / D)  # [D/2]
    angles = torch.arange(T, dtype=torch.float32)[:, None] * inv_freq  # [T, D/2]
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def _ref_causal_attention(q, k, v):
    T, S = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    mask = torch.ones(T, S, dtype=torch.bool).tril(S - T)
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v


def _ref_rmsnorm(x, weight, eps):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def _ref_swiglu(x, w_gate, w_up, w_down):
    return (torch.nn.functional.silu(x @ w_gate.T) * (x @ w_up.T)) @ w_down.T


def _ref_post_norm_block(x, block):
    u = block.norm1(x + block.attn(x))
    return block.norm2(u + block.ffn(u))


def _ref_pre_norm_block(x, block):
    u = x + block.attn(block.norm1(x))
    return u + block.ffn(block.norm2(u))


def _ref_sandwich_block(x, block):
    u = x + block.norm1.post(block.attn(block.norm1.pre(x)))
    return u + block.norm2.post(block.ffn(block.norm2.pre(u)))


def _ref_parameter_count(cfg):
    d, kv = cfg.d_model, cfg.kv_heads * cfg.d_head
    per_layer = d * cfg.n_heads * cfg.d_head * 2 + 2 * d * kv + 3 * d * cfg.d_ff + 2 * d
    embeddings = cfg.vocab_size * d * (1 if cfg.tie_embeddings else 2)
    return embeddings + cfg.n_layers * per_layer + d


def _ref_padded_loss(logits, ids, pad):
    targets = ids[:, 1:].masked_fill(pad[:, 1:], -100)  # [B, T - 1]: -100 where the target is padding
    V = logits.shape[-1]
    return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), targets.reshape(-1), ignore_index=-100)


def _ref_cross_attention(x, memory, attn):
    B, T, _ = x.shape
    H, D = attn.n_heads, attn.d_head

    def heads(t):
        return t.view(B, t.shape[1], H, D).transpose(1, 2)

    q, k, v = heads(attn.q_proj(x)), heads(attn.k_proj(memory)), heads(attn.v_proj(memory))
    z = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(D), dim=-1) @ v
    return attn.o_proj(z.transpose(1, 2).reshape(B, T, H * D))


def _ref_gqa(q, k, v):
    group = q.shape[1] // k.shape[1]
    return _ref_causal_attention(q, k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1))


def _ref_kv_cache_step(q, k_past, v_past, k_new, v_new):
    k, v = torch.cat([k_past, k_new], dim=-2), torch.cat([v_past, v_new], dim=-2)
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v


def _ref_sampler(logits, temperature, top_k, top_p):
    scaled = logits / temperature
    if top_k is not None:
        kth = torch.topk(scaled, top_k, dim=-1).values[..., -1:]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if top_p is not None:
        probs = torch.softmax(scaled, dim=-1)
        sorted_probs = torch.sort(probs, dim=-1, descending=True).values
        before = sorted_probs.cumsum(-1) - sorted_probs  # mass of the more likely tokens
        last = (before < top_p).sum(-1, keepdim=True) - 1  # the last token still needed to reach top_p
        scaled = scaled.masked_fill(probs < sorted_probs.gather(-1, last), float("-inf"))
    return torch.softmax(scaled, dim=-1)


def _ref_moe_router(logits, k):
    probs = torch.softmax(logits, dim=-1)
    weights, ids = torch.topk(probs, k, dim=-1)
    return ids, weights / weights.sum(dim=-1, keepdim=True)


def _ref_sink_softmax(scores, sinks):
    sink_column = sinks[:, None, None].expand(*scores.shape[:-1], 1)  # [B, H, T, 1]: head h's sink on every row
    return torch.softmax(torch.cat((scores, sink_column), dim=-1), dim=-1)[..., :-1]  # drop the sink's share


def _ref_mean_ablated_block(x, block, ffn_mean):
    u = x + block.attn(block.norm1(x))
    return u + ffn_mean  # [C] broadcasts over batch and positions


def _ref_logit_lens(model, ids, position):
    _, trace = model.run_with_trace(ids)
    streams = [trace["blocks.0.resid_pre"]] + [trace[f"blocks.{i}.resid_post"] for i in range(len(model.blocks))]
    x = torch.stack([s[0, position] for s in streams])  # [n_layers + 1, C]: the stream at `position`, every depth
    return torch.log_softmax(model.lm_head(model.final_norm(x)), dim=-1)


REFERENCE = {
    "rope": _ref_rope, "causal_attention": _ref_causal_attention, "rmsnorm": _ref_rmsnorm, "swiglu": _ref_swiglu,
    "post_norm_block": _ref_post_norm_block, "pre_norm_block": _ref_pre_norm_block,
    "sandwich_block": _ref_sandwich_block,
    "parameter_count": _ref_parameter_count, "padded_loss": _ref_padded_loss,
    "cross_attention": _ref_cross_attention,
    "grouped_query_attention": _ref_gqa, "kv_cache_step": _ref_kv_cache_step, "sampler": _ref_sampler,
    "moe_router": _ref_moe_router, "sink_softmax": _ref_sink_softmax,
    "mean_ablated_block": _ref_mean_ablated_block,
    "logit_lens": _ref_logit_lens,
}
