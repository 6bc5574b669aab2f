"""Tracing: every documented name shows up with its documented shape, every recorded name is
documented, the recorded values are consistent with each other (the trace is the real forward
pass), tracing does not change outputs, and patches intervene where they say."""
import math
import re

import pytest
import torch
import torch.nn.functional as F

import tinytf
from tinytf import TRACE_NAMES, TinyConfig, TinyTFInputError

ATOL = 1e-5


DECODER_CONFIGS = {
    "2026 swiglu rope rms pre": TinyConfig(),
    "2017 relu sinusoidal layer post": tinytf.config_2017(),
    "gelu learned gqa": TinyConfig(ffn="gelu", pos="learned", n_kv_heads=2, n_layers=3, max_seq_len=32),
    "no residual, pos none": TinyConfig(residual=False, pos="none", norm="layer", bias=True),
    "post-norm swiglu mqa": TinyConfig(norm_position="post", n_kv_heads=1),
}
ENCDEC_CONFIGS = {
    "2017 enc-dec": tinytf.config_2017(),
    "2026 enc-dec gqa, 3 enc layers": TinyConfig(n_kv_heads=2, n_encoder_layers=3),
}
B, T, S_SRC = 2, 7, 5


def ids(*shape, seed=0):
    return torch.randint(0, 256, shape, generator=torch.Generator().manual_seed(seed))


def model_for(cfg, kind=tinytf.TinyTransformer):
    tinytf.seed_everything(0)
    model = kind(cfg).eval()
    with torch.no_grad():  # norm weights and biases start at 1 / 0: make them visible in the checks
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith("bias"):
                p.add_(torch.randn(p.shape) * 0.1)
    return model


# ------------------------------------------------------------- names and shapes
def documented(name, prefix=""):
    """The TRACE_NAMES entry (pattern, (shape, doc)) that documents ``name``, or None."""
    for pattern, entry in TRACE_NAMES.items():
        regex = re.escape(prefix + pattern).replace(re.escape("{i}"), r"\d+") + "$"
        if re.match(regex, name):
            return pattern, entry
    return None


def shape_of(spec, sizes):
    """'[B, H_kv, T, D]' -> (2, 2, 7, 32) for the given symbol sizes."""
    return tuple(eval(part, {"__builtins__": {}}, sizes) for part in spec.strip("[]").split(","))


def applicable(cfg, prefix="", n_layers=None, head=True):
    """The documented names that must appear for this config (with {i} expanded)."""
    out = []
    for pattern in TRACE_NAMES:
        if pattern.startswith(("decoder.", "encoder.")):
            continue
        if pattern == "pos.table" and cfg.pos not in ("sinusoidal", "learned"):
            continue
        if pattern.endswith("ffn.pre") and cfg.ffn == "swiglu":
            continue
        if pattern.endswith(("ffn.gate", "ffn.up", "ffn.act")) and cfg.ffn != "swiglu":
            continue
        if pattern == "logits" and not head:
            continue
        n = cfg.n_layers if n_layers is None else n_layers
        names = [pattern.replace("{i}", str(i)) for i in range(n)] if "{i}" in pattern else [pattern]
        out += [prefix + p for p in names]
    return out


@pytest.mark.parametrize("name", list(DECODER_CONFIGS))
def test_decoder_names_and_shapes(name):
    cfg = DECODER_CONFIGS[name]
    model = model_for(cfg)
    logits, trace = model.run_with_trace(ids(B, T))
    assert list(trace) == list(dict.fromkeys(trace))  # no duplicates
    missing = set(applicable(cfg)) - set(trace)
    assert not missing, f"documented names not recorded: {sorted(missing)}"
    sizes = dict(B=B, T=T, S=T, C=cfg.d_model, H=cfg.n_heads, H_kv=cfg.kv_heads, D=cfg.d_head, F=cfg.d_ff,
                 V=cfg.vocab_size)
    for key, tensor in trace.items():
        doc = documented(key)
        assert doc is not None and not doc[0].startswith(("encoder.", "decoder.")), f"{key} is not in TRACE_NAMES"
        assert tuple(tensor.shape) == shape_of(doc[1][0], sizes), (key, doc[1][0], tuple(tensor.shape))
    assert torch.equal(trace["logits"], logits)


@pytest.mark.parametrize("name", list(ENCDEC_CONFIGS))
def test_encoder_decoder_names_and_shapes(name):
    cfg = ENCDEC_CONFIGS[name]
    model = model_for(cfg, tinytf.EncoderDecoder)
    logits, trace = model.run_with_trace(ids(B, S_SRC), ids(B, T, seed=1))
    expected = (applicable(cfg, "encoder.", cfg.encoder_layers, head=False)
                + applicable(cfg, "decoder.", head=False) + ["logits"]
                + [p.replace("{i}", str(i)) for p in TRACE_NAMES if p.startswith("decoder.") for i in range(cfg.n_layers)])
    missing = set(expected) - set(trace)
    assert not missing, f"documented names not recorded: {sorted(missing)}"
    base = dict(B=B, C=cfg.d_model, H=cfg.n_heads, H_kv=cfg.kv_heads, D=cfg.d_head, F=cfg.d_ff, V=cfg.vocab_size)
    for key, tensor in trace.items():
        if key.startswith("encoder."):
            doc, sizes = documented(key, "encoder."), dict(base, T=S_SRC, S=S_SRC)
        elif key.startswith("decoder."):
            doc = documented(key)  # decoder-specific entries (S = source length) first
            sizes = dict(base, T=T, S=S_SRC)
            if doc is None:
                doc, sizes = documented(key, "decoder."), dict(base, T=T, S=T)
        else:
            doc, sizes = documented(key), dict(base, T=T, S=T)
        assert doc is not None, f"{key} is not in TRACE_NAMES"
        assert tuple(tensor.shape) == shape_of(doc[1][0], sizes), (key, doc[1][0], tuple(tensor.shape))
    assert "logits" in trace and torch.equal(trace["logits"], logits)
    assert not any(k.startswith("encoder.") and k.endswith("logits") for k in trace)


def test_every_entry_is_documented():
    for pattern, (shape, doc) in TRACE_NAMES.items():
        assert re.fullmatch(r"\[[A-Za-z_*, ]+\]", shape), pattern
        assert len(doc) > 10, pattern


def test_1d_input_is_traced_with_batch_one():
    model = model_for(TinyConfig())
    logits, trace = model.run_with_trace(ids(T))
    assert logits.shape == (T, 256)
    assert trace["logits"].shape == (1, T, 256) and trace["blocks.0.attn.weights"].shape == (1, 4, T, T)
    lines = trace.table().splitlines()
    assert len(lines) == len(trace)
    assert re.match(r"blocks\.0\.attn\.weights +\[1, 4, 7, 7\]$", lines[list(trace).index("blocks.0.attn.weights")])
    assert repr(trace).startswith(f"Trace({len(trace)} tensors)")


# ------------------------------------------------------------- values are consistent
def close(a, b, what):
    assert a.shape == b.shape, (what, a.shape, b.shape)
    err = (a - b).abs().max().item()
    assert err <= ATOL, f"{what}: max |diff| = {err:.3g}"


def heads(x, n, d):  # [B, T, n*d] -> [B, n, T, d]
    return x.view(x.shape[0], x.shape[1], n, d).transpose(1, 2)


def check_attention(tr, p, attn, x_in, context=None, mask=None):
    """The named intermediates of one attention sublayer recompute from each other."""
    cfg_h, cfg_kv, d = attn.n_heads, attn.n_kv_heads, attn.d_head
    src = x_in if context is None else context
    close(tr[p + "q"], heads(attn.q_proj(x_in), cfg_h, d), p + "q")
    close(tr[p + "k"], heads(attn.k_proj(src), cfg_kv, d), p + "k")
    close(tr[p + "v"], heads(attn.v_proj(src), cfg_kv, d), p + "v")
    q_rot, k_rot = attn.rotary(tr[p + "q"], tr[p + "k"])
    close(tr[p + "q_rot"], q_rot, p + "q_rot")
    close(tr[p + "k_rot"], k_rot, p + "k_rot")
    group = cfg_h // cfg_kv
    k = tr[p + "k_rot"].repeat_interleave(group, dim=1)  # [B, H, S, D]
    v = tr[p + "v"].repeat_interleave(group, dim=1)  # [B, H, S, D]
    close(tr[p + "scores"], tr[p + "q_rot"] @ k.transpose(-2, -1) / math.sqrt(d), p + "scores")
    expected_masked = tr[p + "scores"] if mask is None else tr[p + "scores"].masked_fill(~mask, float("-inf"))
    assert torch.equal(tr[p + "masked_scores"], expected_masked), p + "masked_scores"
    close(tr[p + "weights"], torch.softmax(tr[p + "masked_scores"], -1), p + "weights")
    close(tr[p + "weights"].sum(-1), torch.ones(tr[p + "weights"].shape[:-1]), p + "weights rows")
    close(tr[p + "z"], tr[p + "weights"] @ v, p + "z")
    Bz, _, Tz, _ = tr[p + "z"].shape
    close(tr[p + "merged"], tr[p + "z"].transpose(1, 2).reshape(Bz, Tz, cfg_h * d), p + "merged")
    close(tr[p + "out"], attn.o_proj(tr[p + "merged"]), p + "out")


def check_sublayer(tr, cfg, x, norm_name, out_name, after, norm):
    """resid after = connection(x, norm, F) with F's output traced as out_name; returns F's input."""
    f_out = tr[out_name]
    if cfg.norm_position == "pre":
        close(tr[norm_name], norm(x), norm_name)
        close(tr[after], (x if cfg.residual else 0) + f_out, after)
        return tr[norm_name]
    close(tr[norm_name], norm((x if cfg.residual else 0) + f_out), norm_name)
    assert torch.equal(tr[after], tr[norm_name])  # post-norm: the norm output is the stream
    return x


def check_ffn(tr, p, ffn, x_in, cfg):
    if cfg.ffn == "swiglu":
        close(tr[p + "gate"], ffn.gate(x_in), p + "gate")
        close(tr[p + "up"], ffn.up(x_in), p + "up")
        close(tr[p + "act"], F.silu(tr[p + "gate"]), p + "act")
        close(tr[p + "post"], tr[p + "act"] * tr[p + "up"], p + "post")
    else:
        close(tr[p + "pre"], ffn.up(x_in), p + "pre")
        close(tr[p + "post"], {"relu": F.relu, "gelu": F.gelu}[cfg.ffn](tr[p + "pre"]), p + "post")
    close(tr[p + "out"], ffn.down(tr[p + "post"]), p + "out")


def check_embedding(tr, prefix, stack, tokens, cfg):
    close(tr[prefix + "tok_embed"], stack.embed.weight[tokens], prefix + "tok_embed")
    pos = tr.get(prefix + "pos.table", 0)
    assert (prefix + "pos.table" in tr) == (cfg.pos in ("sinusoidal", "learned"))
    close(tr[prefix + "embed"], tr[prefix + "tok_embed"] + pos, prefix + "embed")


@pytest.mark.parametrize("name", list(DECODER_CONFIGS))
@torch.no_grad()
def test_decoder_trace_values_are_consistent(name):
    cfg = DECODER_CONFIGS[name]
    model = model_for(cfg)
    tokens = ids(B, T)
    logits, tr = model.run_with_trace(tokens)
    check_embedding(tr, "", model, tokens, cfg)
    close(tr["blocks.0.resid_pre"], tr["embed"], "blocks.0.resid_pre")
    mask = tinytf.causal_mask(T, T)
    for i, block in enumerate(model.blocks):
        p = f"blocks.{i}."
        if i:
            assert torch.equal(tr[p + "resid_pre"], tr[f"blocks.{i - 1}.resid_post"])
        attn_in = check_sublayer(tr, cfg, tr[p + "resid_pre"], p + "norm1.out", p + "attn.out", p + "resid_mid",
                                 block.norm1)
        check_attention(tr, p + "attn.", block.attn, attn_in, mask=mask)
        ffn_in = check_sublayer(tr, cfg, tr[p + "resid_mid"], p + "norm2.out", p + "ffn.out", p + "resid_post",
                                block.norm2)
        check_ffn(tr, p + "ffn.", block.ffn, ffn_in, cfg)
    close(tr["final_norm.out"], model.final_norm(tr[f"blocks.{cfg.n_layers - 1}.resid_post"]), "final_norm.out")
    close(tr["logits"], model.lm_head(tr["final_norm.out"]), "logits")
    # tracing does not change the output
    assert torch.equal(model(tokens), logits)


@pytest.mark.parametrize("name", list(ENCDEC_CONFIGS))
@torch.no_grad()
def test_encoder_decoder_trace_values_are_consistent(name):
    cfg = ENCDEC_CONFIGS[name]
    model = model_for(cfg, tinytf.EncoderDecoder)
    src, tgt = ids(B, S_SRC), ids(B, T, seed=1)
    logits, tr = model.run_with_trace(src, tgt)
    check_embedding(tr, "encoder.", model.encoder, src, cfg)
    check_embedding(tr, "decoder.", model.decoder, tgt, cfg)
    for i, block in enumerate(model.encoder.blocks):
        p = f"encoder.blocks.{i}."
        attn_in = check_sublayer(tr, cfg, tr[p + "resid_pre"], p + "norm1.out", p + "attn.out", p + "resid_mid",
                                 block.norm1)
        check_attention(tr, p + "attn.", block.attn, attn_in, mask=None)  # bidirectional
        assert torch.isfinite(tr[p + "attn.masked_scores"]).all()
    memory = model.encoder.final_norm(tr[f"encoder.blocks.{cfg.encoder_layers - 1}.resid_post"])
    close(tr["encoder.final_norm.out"], memory, "encoder.final_norm.out")
    for i, block in enumerate(model.decoder.blocks):
        p = f"decoder.blocks.{i}."
        attn_in = check_sublayer(tr, cfg, tr[p + "resid_pre"], p + "norm1.out", p + "attn.out", p + "resid_mid",
                                 block.norm1)
        check_attention(tr, p + "attn.", block.attn, attn_in, mask=tinytf.causal_mask(T, T))
        cross_in = check_sublayer(tr, cfg, tr[p + "resid_mid"], p + "norm_cross.out", p + "cross_attn.out",
                                  p + "resid_cross", block.norm_cross)
        check_attention(tr, p + "cross_attn.", block.cross_attn, cross_in, context=tr["encoder.final_norm.out"])
        assert torch.equal(tr[p + "cross_attn.q_rot"], tr[p + "cross_attn.q"])  # no RoPE across sequences
        ffn_in = check_sublayer(tr, cfg, tr[p + "resid_cross"], p + "norm2.out", p + "ffn.out", p + "resid_post",
                                block.norm2)
        check_ffn(tr, p + "ffn.", block.ffn, ffn_in, cfg)
    close(tr["logits"], model.lm_head(tr["decoder.final_norm.out"]), "logits")
    assert torch.equal(model(src, tgt), logits)


def test_cached_step_trace_reads_all_earlier_keys():
    model = model_for(TinyConfig(n_kv_heads=2))
    cache = model.new_cache()
    model(ids(1, 6), cache=cache)
    _, tr = model.run_with_trace(torch.tensor([[5]]), cache=cache)
    assert tr["blocks.0.attn.k"].shape == (1, 2, 1, 32)  # only the new position is projected
    assert tr["blocks.0.attn.weights"].shape == (1, 4, 1, 7)  # but it reads all 7 keys
    assert torch.isfinite(tr["blocks.0.attn.masked_scores"]).all()  # the newest token may read everything


# ------------------------------------------------------------- options and patches
def test_names_filter_and_no_leftover_recording():
    model = model_for(TinyConfig())
    _, tr = model.run_with_trace(ids(T), names="blocks.*.attn.weights")
    assert list(tr) == ["blocks.0.attn.weights", "blocks.1.attn.weights"]
    _, tr2 = model.run_with_trace(ids(T), names=["logits", "embed"])
    assert list(tr2) == ["embed", "logits"]  # in forward order
    assert all(h.store is None and h.patch is None for h in model.modules() if isinstance(h, tinytf.hooks.Hook))


def test_detach_true_copies_detach_false_keeps_the_graph():
    model = model_for(TinyConfig()).train()
    tokens = ids(T)
    _, tr = model.run_with_trace(tokens)
    assert not tr["blocks.0.attn.weights"].requires_grad
    logits, live = model.run_with_trace(tokens, detach=False)
    w = live["blocks.0.attn.weights"]
    assert w.requires_grad
    w.retain_grad()
    logits.sum().backward()
    assert w.grad is not None and w.grad.abs().sum() > 0  # gradients reach the traced tensor
    model.zero_grad()


def test_trace_holds_copies():
    """detach=True (the default) stores copies: the same tensor seen by two hooks (a block's output is
    the next block's input) gives two independent entries, and editing one changes nothing else."""
    model = model_for(TinyConfig())
    tokens = ids(T)
    logits, tr = model.run_with_trace(tokens)
    assert torch.equal(tr["blocks.1.resid_pre"], tr["blocks.0.resid_post"])
    before = tr["blocks.1.resid_pre"].clone()
    tr["blocks.0.resid_post"].zero_()
    assert torch.equal(tr["blocks.1.resid_pre"], before)
    assert torch.equal(model(tokens), logits)


@torch.no_grad()
def test_patch_zero_attention_output():
    model = model_for(TinyConfig())
    tokens = ids(T)
    base = model(tokens)
    patched = model.run_with_patches(tokens, patches={"blocks.0.attn.out": torch.zeros_like})
    assert not torch.allclose(patched, base)
    _, tr = model.run_with_trace(tokens, patches={"blocks.0.attn.out": torch.zeros_like})
    assert (tr["blocks.0.attn.out"] == 0).all()  # the trace shows the patched value
    assert torch.equal(tr["blocks.0.resid_mid"], tr["blocks.0.resid_pre"])  # and the stream used it
    assert torch.equal(tr["logits"][0], patched)
    assert torch.equal(model(tokens), base)  # patches are removed afterwards


@torch.no_grad()
def test_patch_uniform_attention_makes_z_the_running_mean_of_v():
    model = model_for(TinyConfig())
    tokens = ids(T)

    def uniform(w):  # [B, H, T, S]: each query spreads its attention evenly over the allowed keys
        allowed = tinytf.causal_mask(w.shape[-2], w.shape[-1]).float()
        return (allowed / allowed.sum(-1, keepdim=True)).expand_as(w)

    _, tr = model.run_with_trace(tokens, patches={"blocks.1.attn.weights": uniform})
    v = tr["blocks.1.attn.v"]  # [1, H, T, D]
    assert torch.equal(tr["blocks.1.attn.weights"][0, 0, 2, :4], torch.tensor([1 / 3, 1 / 3, 1 / 3, 0.0]))
    running_mean = v.cumsum(-2) / torch.arange(1, T + 1)[:, None]
    close(tr["blocks.1.attn.z"], running_mean, "z")


@torch.no_grad()
def test_identity_patch_changes_nothing_and_unknown_name_fails():
    model = model_for(tinytf.config_2017())
    tokens = ids(T)
    assert torch.equal(model.run_with_patches(tokens, patches={"blocks.1.ffn.post": lambda x: x}), model(tokens))
    with pytest.raises(KeyError, match="blocks.0.attn.wieghts"):
        model.run_with_patches(tokens, patches={"blocks.0.attn.wieghts": torch.zeros_like})
    assert all(h.patch is None for h in model.modules() if isinstance(h, tinytf.hooks.Hook))


def test_hooks_reset_after_an_error_inside_the_pass():
    model = model_for(TinyConfig())
    with pytest.raises(TinyTFInputError):
        model.run_with_trace(torch.tensor([1, 999]), patches={"logits": torch.zeros_like})
    hooks = [h for h in model.modules() if isinstance(h, tinytf.hooks.Hook)]
    assert all(h.store is None and h.patch is None for h in hooks)


def test_trace_a_single_block_with_relative_names():
    cfg = TinyConfig(d_model=32, n_heads=4, d_ff=64)
    block = tinytf.DecoderBlock(cfg).eval()
    x = torch.randn(2, 5, 32)
    out, tr = tinytf.run_with_trace(block, x)
    assert list(tr)[:3] == ["resid_pre", "norm1.out", "attn.q"]
    assert tr["attn.weights"].shape == (2, 4, 5, 5)
    assert torch.equal(tr["resid_post"], out)
    # and a bare Attention module
    attn = tinytf.Attention(cfg)
    _, tr = tinytf.run_with_trace(attn, x)
    assert set(tr) == {"q", "k", "v", "q_rot", "k_rot", "scores", "masked_scores", "weights", "z", "merged", "out"}
