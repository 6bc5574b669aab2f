"""Key-padding masks in tinytf's encoder-decoder (True = padded, PyTorch's convention).

- a padded copy of a sequence gives the same outputs at its real positions as the unpadded one, with the
  masks; without them it does not;
- the whole EncoderDecoder equals nn.Transformer (interop.to_torch_transformer) with src_key_padding_mask,
  tgt_key_padding_mask and memory_key_padding_mask, and each mask is really compared;
- a query that may read no key gets weights 0 (no NaN), so real positions stay finite and unchanged;
- bad masks raise TinyTFInputError; batched generation with a source mask equals one-by-one generation.
"""
import pytest
import torch
from torch import nn

import tinytf
from tinytf import interop
from tinytf.attention import Attention, attention, with_key_padding
from tinytf.errors import TinyTFInputError
from tinytf.lab.padding import pad_batch

PAD = 0


def pad(seqs):
    return pad_batch(seqs, PAD)


def nudged(model, seed=0, scale=0.1):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g))
    return model.eval()


@pytest.fixture(scope="module")
def model():
    tinytf.seed_everything(0)
    return tinytf.EncoderDecoder(tinytf.TinyConfig(n_layers=2)).eval()


SRC = [tinytf.encode("banana"), tinytf.encode("a much longer source")]
TGT = [tinytf.encode("anana"), tinytf.encode("a longer target")]


def test_padded_equals_unpadded_with_masks_only(model):
    src, src_mask = pad(SRC)
    tgt, tgt_mask = pad(TGT)
    with torch.no_grad():
        alone = model(SRC[0], TGT[0])  # [5, V]
        masked = model(src, tgt, src_padding_mask=src_mask, tgt_padding_mask=tgt_mask)[0, :5]
        unmasked = model(src, tgt)[0, :5]
    assert (masked - alone).abs().max() < 1e-5
    assert (unmasked - alone).abs().max() > 0.1
    with torch.no_grad():  # the other row is not padded: masks change nothing there
        assert (masked - model(src, tgt)[0, :5]).abs().max() > 0.1
        full = model(SRC[1], TGT[1])
        assert (model(src, tgt, src_padding_mask=src_mask, tgt_padding_mask=tgt_mask)[1] - full).abs().max() < 1e-5


def test_right_padded_target_needs_no_target_mask_at_real_positions(model):
    """Under the causal mask, a real target position never reads a later (padded) key."""
    src, src_mask = pad(SRC)
    tgt, tgt_mask = pad(TGT)
    with torch.no_grad():
        a = model(src, tgt, src_padding_mask=src_mask)
        b = model(src, tgt, src_padding_mask=src_mask, tgt_padding_mask=tgt_mask)
    assert torch.equal(a[~tgt_mask], b[~tgt_mask])
    assert not torch.equal(a[tgt_mask], b[tgt_mask])  # the padded query rows do change


def test_left_padded_target_needs_the_mask_and_stays_finite(model):
    """Left padding: a real query reads earlier pad keys unless masked; the first pad query reads no key at
    all (a fully masked row), which must give 0 weights, not NaN."""
    src = SRC[0][None]
    n_pad = 3
    tgt = torch.cat([torch.full((n_pad,), PAD), TGT[0]])[None]  # [1, 8]
    tgt_mask = torch.arange(tgt.shape[1])[None] < n_pad
    with torch.no_grad():
        alone = model(SRC[0], TGT[0])
        logits, trace = model.run_with_trace(src, tgt, tgt_padding_mask=tgt_mask)
        unmasked = model(src, tgt)
    assert torch.isfinite(logits).all()
    w = trace["decoder.blocks.0.attn.weights"]  # [1, H, 8, 8]
    assert torch.equal(w[0, :, 0], torch.zeros_like(w[0, :, 0]))  # pad query 0: no key to read
    assert torch.allclose(w[0, :, n_pad:].sum(-1), torch.ones(1))  # real queries: rows sum to 1
    assert (unmasked[0, n_pad:] - alone).abs().max() > 1e-3
    # RoPE only sees offsets, so the shifted real positions give the same result as the unpadded target
    assert (logits[0, n_pad:] - alone).abs().max() < 1e-5


def test_fully_padded_source_row_gives_zero_cross_attention_not_nan(model):
    src, src_mask = pad(SRC)
    src_mask[0] = True  # row 0: every source position padded
    tgt, tgt_mask = pad(TGT)
    with torch.no_grad():
        logits, trace = model.run_with_trace(src, tgt, src_padding_mask=src_mask, tgt_padding_mask=tgt_mask)
        other = model(SRC[1], TGT[1])
    assert torch.isfinite(logits).all()
    assert torch.equal(trace["decoder.blocks.0.cross_attn.weights"][0], torch.zeros_like(
        trace["decoder.blocks.0.cross_attn.weights"][0]))
    assert (logits[1] - other).abs().max() < 1e-5  # the other row is untouched


def test_masked_scores_are_minus_inf_at_padded_keys(model):
    src, src_mask = pad(SRC)
    tgt, tgt_mask = pad(TGT)
    with torch.no_grad():
        _, trace = model.run_with_trace(src, tgt, src_padding_mask=src_mask, tgt_padding_mask=tgt_mask)
    enc = trace["encoder.blocks.0.attn.masked_scores"]  # [B, H, S, S]
    assert torch.isinf(enc[0, :, :, 6:]).all() and torch.isfinite(enc[0, :, :, :6]).all()
    cross = trace["decoder.blocks.1.cross_attn.weights"]  # [B, H, T, S]
    assert torch.equal(cross[0, :, :, 6:], torch.zeros_like(cross[0, :, :, 6:]))


def test_attention_function_masks_broadcast():
    q, k, v = torch.randn(2, 1, 3, 4), torch.randn(2, 1, 3, 4), torch.randn(2, 1, 3, 4)
    kpm = torch.tensor([[False, False, True], [False, False, False]])
    mask = with_key_padding(None, kpm)  # [2, 1, 1, 3]
    assert mask.shape == (2, 1, 1, 3)
    _, w = attention(q, k, v, mask)
    assert torch.equal(w[0, ..., 2], torch.zeros(1, 3))
    _, w_ref = attention(q[1:], k[1:], v[1:])
    assert torch.allclose(w[1:], w_ref)
    assert with_key_padding(None, None) is None


# ---- against nn.Transformer ------------------------------------------------------------------------------

def ref_and_model(norm_position):
    tinytf.seed_everything(1)
    model = nudged(tinytf.EncoderDecoder(tinytf.config_2017(d_model=32, n_heads=4, n_layers=2,
                                                            norm_position=norm_position)))
    return model, interop.to_torch_transformer(model).eval()


def padded_batch():
    g = torch.Generator().manual_seed(0)
    src, tgt = torch.randint(4, 256, (3, 7), generator=g), torch.randint(4, 256, (3, 6), generator=g)
    src_mask = torch.arange(7)[None] >= torch.tensor([[7], [4], [1]])  # real lengths 7, 4, 1
    tgt_mask = torch.arange(6)[None] >= torch.tensor([[2], [6], [3]])
    return src, tgt, src_mask, tgt_mask


def torch_out(ref, trace, src_mask=None, tgt_mask=None, memory_mask=None):
    T = trace["decoder.embed"].shape[1]
    causal = torch.ones(T, T, dtype=torch.bool).triu(1)  # True = may not attend (PyTorch's bool convention)
    return ref(trace["encoder.embed"], trace["decoder.embed"], tgt_mask=causal, tgt_is_causal=True,
               src_key_padding_mask=src_mask, tgt_key_padding_mask=tgt_mask, memory_key_padding_mask=memory_mask)


@pytest.mark.parametrize("norm_position", ["post", "pre"])
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_matches_nn_transformer_with_all_three_padding_masks(norm_position, grad):
    model, ref = ref_and_model(norm_position)
    src, tgt, src_mask, tgt_mask = padded_batch()
    with torch.set_grad_enabled(grad):
        _, trace = model.run_with_trace(src, tgt, src_padding_mask=src_mask, tgt_padding_mask=tgt_mask)
        theirs = torch_out(ref, trace, src_mask, tgt_mask, src_mask)
    err = (trace["decoder.final_norm.out"] - theirs).abs().max().item()  # every position, padded ones too
    assert err < 1e-5, err


@pytest.mark.parametrize("missing", ["src", "tgt", "memory"])
def test_each_padding_mask_is_really_compared(missing):
    """Leaving out one of PyTorch's three masks breaks the match (at real positions, except for the
    target mask, whose effect under right padding is only on padded query rows)."""
    model, ref = ref_and_model("pre")
    src, tgt, src_mask, tgt_mask = padded_batch()
    masks = dict(src=src_mask, tgt=tgt_mask, memory=src_mask)
    masks[missing] = None
    with torch.no_grad():
        _, trace = model.run_with_trace(src, tgt, src_padding_mask=src_mask, tgt_padding_mask=tgt_mask)
        theirs = torch_out(ref, trace, masks["src"], masks["tgt"], masks["memory"])
    diff = (trace["decoder.final_norm.out"] - theirs).abs()
    assert diff.max() > 1e-3
    if missing != "tgt":
        assert diff[~tgt_mask].max() > 1e-3


def test_to_torch_transformer_matches_without_masks():
    model, ref = ref_and_model("post")
    src, tgt, _, _ = padded_batch()
    with torch.no_grad():
        _, trace = model.run_with_trace(src, tgt)
        assert (trace["decoder.final_norm.out"] - torch_out(ref, trace)).abs().max() < 1e-5
    assert isinstance(ref.encoder.norm, nn.LayerNorm) and isinstance(ref.decoder.norm, nn.LayerNorm)


def test_to_torch_transformer_refuses_rmsnorm():
    with pytest.raises(TinyTFInputError, match="cannot be mapped"):
        interop.to_torch_transformer(tinytf.EncoderDecoder(tinytf.TinyConfig(n_layers=1)))


# ---- bad input, 1-D input, generation, cache ------------------------------------------------------------

@pytest.mark.parametrize("bad, message", [
    (torch.zeros(2, 20), "dtype torch.float32, expected torch.bool"),
    (torch.zeros(2, 20, dtype=torch.long), "dtype torch.int64, expected torch.bool"),
    (torch.zeros(2, 19, dtype=torch.bool), r"shape \[2, 19\], expected \[2, 20\]"),
    (torch.zeros(20, dtype=torch.bool), r"shape \[20\], expected \[2, 20\]"),
    (torch.zeros(2, 1, 20, dtype=torch.bool), r"shape \[2, 1, 20\]"),
])
def test_bad_source_mask_raises(model, bad, message):
    src, _ = pad(SRC)
    tgt, _ = pad(TGT)
    with pytest.raises(TinyTFInputError, match="src_padding_mask: .*" + message):
        model(src, tgt, src_padding_mask=bad)


def test_bad_target_mask_raises(model):
    src, _ = pad(SRC)
    tgt, _ = pad(TGT)
    with pytest.raises(TinyTFInputError, match=r"tgt_padding_mask: got shape \[2, 20\], expected \[2, 15\]"):
        model(src, tgt, tgt_padding_mask=torch.zeros(2, 20, dtype=torch.bool))


def test_bad_mask_on_attention_module_raises():
    attn = Attention(tinytf.TinyConfig(), causal=False).eval()
    with pytest.raises(TinyTFInputError, match=r"key_padding_mask: got shape \[1, 4\], expected \[1, 5\]"):
        attn(torch.randn(1, 5, 128), key_padding_mask=torch.zeros(1, 4, dtype=torch.bool))


def test_one_dimensional_input_takes_a_one_dimensional_mask(model):
    src, tgt = SRC[0], TGT[0]
    none = torch.zeros(len(src), dtype=torch.bool)
    with torch.no_grad():
        assert torch.equal(model(src, tgt, src_padding_mask=none), model(src, tgt))


def test_batched_generation_with_source_mask_equals_one_by_one(model):
    seqs = [tinytf.encode("bird"), tinytf.encode("transformer")]
    src, src_mask = pad(seqs)
    with torch.no_grad():
        batch = tinytf.generate_seq2seq(model, src, bos=2, max_new_tokens=6, src_padding_mask=src_mask)
        no_cache = tinytf.generate_seq2seq(model, src, bos=2, max_new_tokens=6, src_padding_mask=src_mask,
                                           use_cache=False)
        for i, s in enumerate(seqs):
            assert torch.equal(batch[i], tinytf.generate_seq2seq(model, s, bos=2, max_new_tokens=6))
    assert torch.equal(batch, no_cache)


def test_target_mask_with_cache_covers_every_position_so_far(model):
    src, src_mask = pad(SRC)
    tgt, tgt_mask = pad(TGT)
    cache = model.new_cache()
    with torch.no_grad():
        full = model(src, tgt, src_padding_mask=src_mask, tgt_padding_mask=tgt_mask)
        model(src, tgt[:, :4], cache=cache, src_padding_mask=src_mask, tgt_padding_mask=tgt_mask[:, :4])
        step = model(src, tgt[:, 4:5], cache=cache, src_padding_mask=src_mask, tgt_padding_mask=tgt_mask[:, :5])
        with pytest.raises(TinyTFInputError, match=r"expected \[2, 6\]"):
            model(src, tgt[:, 5:6], cache=cache, src_padding_mask=src_mask, tgt_padding_mask=tgt_mask[:, 5:6])
    assert (step[:, 0] - full[:, 4]).abs().max() < 1e-5


def test_pad_batch():
    ids, mask = pad_batch([[5, 6], [7, 8, 9]], pad_id=1)
    assert ids.tolist() == [[5, 6, 1], [7, 8, 9]]
    assert mask.tolist() == [[False, False, True], [False, False, False]]
    for bad in ([], [torch.tensor([])], [torch.zeros(2, 2, dtype=torch.long)], torch.zeros(2, 3)):
        with pytest.raises(TinyTFInputError, match="pad_batch"):
            pad_batch(bad)


def test_bad_mask_leaves_the_cache_untouched():
    attn = Attention(tinytf.TinyConfig(), causal=True).eval()
    cache = attn.new_cache()
    with torch.no_grad():
        attn(torch.randn(1, 3, 128), cache=cache, key_padding_mask=torch.zeros(1, 3, dtype=torch.bool))
        with pytest.raises(TinyTFInputError, match=r"expected \[1, 4\]"):
            attn(torch.randn(1, 1, 128), cache=cache, key_padding_mask=torch.zeros(1, 1, dtype=torch.bool))
    assert cache.length == 3
