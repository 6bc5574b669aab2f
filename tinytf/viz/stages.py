"""The stages of one decoder block, in the order a token meets them, read from a trace.

One list drives both the block stepper (one animation frame per stage) and the shape
chain table, so the two can never disagree. Every tensor here is a trace entry; a stage
only *selects* and *labels* them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..errors import TinyTFInputError
from .common import block_prefix, is_post_norm

# Does a stage move information between positions? Decided per stage by measurement in
# tinytf.viz.shapes.measure_mixing (perturb one position of the inputs, see which rows of
# the output move); the stepper draws the edges from the trace's attention weights.


@dataclass
class Panel:
    """One matrix drawn in a stepper frame: rows = positions, columns = features (or keys)."""

    name: str  # label for hover, e.g. "Q head 0"
    source: str  # trace name
    index: tuple = ()  # index into the trace tensor after the batch, e.g. (head,)
    kind: str = "signed"  # "signed" (diverging colours) | "weights" (0..1, sequential)
    keys: bool = False  # columns are key positions (scores / weights) rather than features
    masked: bool = False  # draw -inf cells as masked (from masked_scores)
    op: str = ""  # operator drawn before this panel in its row: "+", "=", "⊙", "→"
    short: str = ""  # label drawn above it when narrow (default: name)

    @property
    def label(self) -> str:
        return self.short or self.name


@dataclass
class Stage:
    key: str  # stable id, used as the frame name
    name: str  # short label for the slider / table
    title: str  # one line: what the reader sees
    inputs: list  # trace names the stage reads (perturbed when measuring mixing)
    outputs: list  # trace names the stage writes (the "shape" column)
    rows: list = field(default_factory=list)  # list of rows, each a list of Panel
    edges: str = "straight"  # the position diagram: straight (per row: also the mask and softmax) | attention | weights


def block_stages(trace, layer: int = 0, config=None, include_embedding: Optional[bool] = None) -> list:
    """The stages of decoder block ``layer`` present in ``trace`` (pre- or post-norm; any FFN)."""
    p = block_prefix(trace, layer)
    post = is_post_norm(trace, p, config)
    swiglu = p + "ffn.gate" in trace
    rope = not _same(trace, p + "attn.q", p + "attn.q_rot")
    if p + "attn.q" not in trace:
        raise TinyTFInputError("this trace has no attention entries; record it with names=None (all hooks)")
    H = trace[p + "attn.q"].shape[1]
    Hkv = trace[p + "attn.k"].shape[1]
    x_in = p + "resid_pre"
    stages = [_input_stage(trace, p, layer, rope, include_embedding, x_in)]
    stages += _attention_stages(p, H, Hkv, rope, post, x_in)
    ffn_in = p + ("resid_mid" if post else "norm2.out")
    return stages + _ffn_stages(trace, p, post, swiglu, config, ffn_in)


def _input_stage(trace, p: str, layer: int, rope: bool, include_embedding, x_in: str) -> Stage:
    """The first stage: the embeddings (block 0) or the stream entering the block."""
    stages = []
    top = p.startswith("blocks.0.") if include_embedding is None else include_embedding
    top = top and "embed" in trace and "tok_embed" in trace
    if top:
        row = [Panel("token embedding", "tok_embed")]
        label = "embed + pos" if "pos.table" in trace else "embed"  # RoPE and NoPE models add no position vector
        if "pos.table" in trace:
            row += [Panel("position vector", "pos.table", op="+"), Panel("embedding + position", "embed", op="=")]
            how = "Block input H (block 0: each token's embedding plus its position's vector, seen as rows)"
        else:
            how = ("Block input H (block 0: the token embeddings); with RoPE (chapter 1) the positions enter later,"
                   " by rotating Q and K"
                   if rope else "Block input H (block 0: the token embeddings; this model adds no position vector)")
        stages.append(Stage("embed", label, how, ["tok_embed"], ["embed"], [row]))
    else:
        stages.append(Stage("embed", "stream in", f"Block input H: the residual stream entering block {layer}",
                            [x_in], [x_in], [[Panel(f"H (stream into block {layer})", x_in)]]))

    return stages[0]


def _attention_stages(p: str, H: int, Hkv: int, rope: bool, post: bool, x_in: str) -> list:
    """Norm1, Q/K/V, RoPE, scores, mask, softmax, weighted sum, merge and the first residual add (+ Norm2)."""
    stages = []
    attn_in = x_in if post else p + "norm1.out"
    if not post:
        stages.append(Stage("norm1", "Norm1", "Norm1 rescales each token's vector on its own; shape unchanged",
                            [x_in], [p + "norm1.out"],
                            [[Panel("H", x_in), Panel("Norm1(H)", p + "norm1.out", op="→")]]))
    qkv = ([Panel(f"Q head {h}", p + "attn.q", (h,), short=f"Q h{h}") for h in range(H)]
           + [Panel(f"K head {h}", p + "attn.k", (h,), op="|" if h == 0 else "", short=f"K h{h}") for h in range(Hkv)]
           + [Panel(f"V head {h}", p + "attn.v", (h,), op="|" if h == 0 else "", short=f"V h{h}") for h in range(Hkv)])
    gqa = f" ({Hkv} K/V heads shared by {H} query heads)" if Hkv != H else ""
    stages.append(Stage("qkv", "Q/K/V heads",
                        f"Q, K, V: three projections of every token, split into {H} heads{gqa}",
                        [attn_in], [p + "attn.q", p + "attn.k", p + "attn.v"], [qkv]))
    if rope:
        rows = [[Panel(f"Q head {h} rotated", p + "attn.q_rot", (h,), short=f"Q h{h}") for h in range(H)]
                + [Panel(f"K head {h} rotated", p + "attn.k_rot", (h,), op="|" if h == 0 else "", short=f"K h{h}")
                   for h in range(Hkv)]]
        stages.append(Stage("rope", "RoPE", "RoPE turns each Q and K pair by an angle set by the token's position",
                            [p + "attn.q", p + "attn.k"], [p + "attn.q_rot", p + "attn.k_rot"], rows))
    stages.append(Stage("scores", "scores",
                        "Scores: every query row is compared with every key column, q·k/√D per head",
                        [p + "attn.q_rot", p + "attn.k_rot"], [p + "attn.scores"],
                        [[Panel(f"head {h}", p + "attn.scores", (h,), keys=True) for h in range(H)]],
                        edges="attention"))
    stages.append(Stage("mask", "causal mask",
                        "Causal mask: a query may not read later keys; those cells become -inf (grey)",
                        [p + "attn.scores"], [p + "attn.masked_scores"],
                        [[Panel(f"head {h}", p + "attn.masked_scores", (h,), keys=True, masked=True) for h in range(H)]]))
    stages.append(Stage("softmax", "softmax",
                        "Softmax turns each query row into weights that sum to 1; masked cells get 0",
                        [p + "attn.masked_scores"], [p + "attn.weights"],
                        [[Panel(f"head {h}", p + "attn.weights", (h,), kind="weights", keys=True, masked=True)
                          for h in range(H)]]))
    stages.append(Stage("wsum", "weights × V",
                        "Weighted sum of V: each token collects values from the positions it may read",
                        [p + "attn.weights", p + "attn.v"], [p + "attn.z"],
                        [[Panel(f"head {h} output", p + "attn.z", (h,), short=f"z h{h}") for h in range(H)]],
                        edges="weights"))
    stages.append(Stage("merge", "merge + W_o",
                        "Heads are concatenated again and W_o maps them back to C features, per token",
                        [p + "attn.z"], [p + "attn.merged", p + "attn.out"],
                        [[Panel("heads merged", p + "attn.merged"), Panel("Attn(·) = merged · W_o", p + "attn.out", op="→")]]))
    if post:
        stages.append(Stage("resid1", "add + Norm1",
                            "Post-norm: the stream adds the attention output, then Norm1 rescales the sum",
                            [p + "attn.out"], [p + "resid_mid"],
                            [[Panel("H", x_in), Panel("Attn(H)", p + "attn.out", op="+"),
                              Panel("U = Norm1(H + Attn(H))", p + "resid_mid", op="→")]]))
    else:
        stages.append(Stage("resid1", "residual add 1",
                            "Residual add: the stream passes through and the attention output is added to it",
                            [p + "attn.out"], [p + "resid_mid"],
                            [[Panel("H", x_in), Panel("Attn(Norm1(H))", p + "attn.out", op="+"),
                              Panel("U", p + "resid_mid", op="=")]]))
        stages.append(Stage("norm2", "Norm2", "Norm2 rescales each token's vector again, with its own weights",
                            [p + "resid_mid"], [p + "norm2.out"],
                            [[Panel("U", p + "resid_mid"), Panel("Norm2(U)", p + "norm2.out", op="→")]]))
    return stages


def _ffn_stages(trace, p: str, post: bool, swiglu: bool, config, ffn_in: str) -> list:
    """The FFN (gated or not) and the second residual add."""
    stages = []
    F = trace[p + "ffn.out"].shape[-1]
    Fh = trace[p + "ffn.post"].shape[-1]
    if swiglu:
        stages.append(Stage("up", "FFN up",
                            f"FFN up-projection: two linear maps take each token from {F} to {Fh} features (gate and up)",
                            [ffn_in], [p + "ffn.gate", p + "ffn.up"],
                            [[Panel(f"x = {_short(ffn_in)} [{F} features]", ffn_in)],
                             [Panel("gate = x·W_gate", p + "ffn.gate")], [Panel("up = x·W_up", p + "ffn.up")]]))
        stages.append(Stage("act", "SiLU ⊙ up",
                            "Activation and gate: SiLU(gate) multiplies up, feature by feature, per token",
                            [p + "ffn.gate", p + "ffn.up"], [p + "ffn.act", p + "ffn.post"],
                            [[Panel("SiLU(gate)", p + "ffn.act")], [Panel("⊙ up", p + "ffn.up")],
                             [Panel("= hidden", p + "ffn.post")]]))
    else:
        kind = config.ffn if config is not None else _act_name(trace, p)
        act = {"relu": "ReLU", "gelu": "GELU"}.get(kind, "activation")
        stages.append(Stage("up", "FFN up",
                            f"FFN up-projection: each token goes from {F} to {Fh} features with the same W1",
                            [ffn_in], [p + "ffn.pre"],
                            [[Panel(f"x = {_short(ffn_in)} [{F} features]", ffn_in)], [Panel("x·W1", p + "ffn.pre")]]))
        stages.append(Stage("act", act,
                            f"{act}, applied to every hidden feature of every token on its own",
                            [p + "ffn.pre"], [p + "ffn.post"],
                            [[Panel("x·W1", p + "ffn.pre")], [Panel(f"{act}(x·W1)", p + "ffn.post")]]))
    stages.append(Stage("down", "FFN down",
                        f"FFN down-projection: back from {Fh} to {F} features per token, same {'W_down' if swiglu else 'W2'} for all",
                        [p + "ffn.post"], [p + "ffn.out"],
                        [[Panel(f"hidden [{Fh} features]", p + "ffn.post")], [Panel(f"FFN(x) [{F} features]", p + "ffn.out")]]))
    if post:
        stages.append(Stage("resid2", "add + Norm2",
                            "Post-norm: add the FFN output to the stream, then Norm2; shape is [B, T, C] again",
                            [p + "ffn.out"], [p + "resid_post"],
                            [[Panel("U", p + "resid_mid"), Panel("FFN(U)", p + "ffn.out", op="+"),
                              Panel("H' = Norm2(U + FFN(U))", p + "resid_post", op="→")]]))
    else:
        stages.append(Stage("resid2", "residual add 2",
                            "Residual add 2: the FFN output is added; the block leaves [B, T, C] as it came in",
                            [p + "ffn.out"], [p + "resid_post"],
                            [[Panel("U", p + "resid_mid"), Panel("FFN(Norm2(U))", p + "ffn.out", op="+"),
                              Panel("H'", p + "resid_post", op="=")]]))
    return stages


def _short(name: str) -> str:
    return "Norm2(U)" if name.endswith("norm2.out") else "U"


def _same(trace, a, b) -> bool:
    import torch

    return a in trace and b in trace and torch.equal(trace[a], trace[b])


def _act_name(trace, p) -> str:
    """ReLU or GELU? A ReLU output is exactly max(pre, 0); anything else is taken as GELU."""
    pre, post = trace[p + "ffn.pre"], trace[p + "ffn.post"]
    return "relu" if bool(((pre > 0) | (post == 0)).all() and (post[pre > 0] == pre[pre > 0]).all()) else "gelu"
