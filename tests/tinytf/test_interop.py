"""tinytf.interop: tinytf blocks copied into PyTorch's reference layers (and back) compute the same function."""
import pytest
import torch
from torch import nn

import tinytf
from tinytf import interop


def nudged(module, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=g))
    return module.eval()


CONFIGS = [dict(norm_position="post"), dict(norm_position="pre"), dict(ffn="gelu"), dict(bias=False),
           dict(norm_position="pre", bias=False, ffn="gelu")]


@pytest.mark.parametrize("change", CONFIGS)
def test_encoder_block_matches_torch(change):
    cfg = tinytf.config_2017(d_model=32, n_heads=4, **change)
    block = nudged(tinytf.EncoderBlock(cfg), 0)
    ref = interop.to_torch(block).eval()
    assert isinstance(ref, nn.TransformerEncoderLayer) and ref.norm_first == (cfg.norm_position == "pre")
    x = torch.randn(2, 7, 32, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(block(x), ref(x), atol=1e-5, rtol=0)


@pytest.mark.parametrize("change", CONFIGS)
def test_decoder_block_matches_torch(change):
    cfg = tinytf.config_2017(d_model=32, n_heads=4, **change)
    block = nudged(tinytf.CrossDecoderBlock(cfg), 0)
    ref = interop.to_torch(block).eval()
    g = torch.Generator().manual_seed(2)
    y, memory = torch.randn(2, 5, 32, generator=g), torch.randn(2, 7, 32, generator=g)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    with torch.no_grad():
        torch.testing.assert_close(block(y, memory), ref(y, memory, tgt_mask=mask, tgt_is_causal=True),
                                   atol=1e-5, rtol=0)
        # without the mask PyTorch's layer is not causal: the comparison must then fail
        assert (block(y, memory) - ref(y, memory)).abs().max() > 1e-3


def test_round_trip_copies_every_parameter():
    cfg = tinytf.config_2017(d_model=32, n_heads=4)
    source = nudged(tinytf.CrossDecoderBlock(cfg), 3)
    target = interop.from_torch(interop.to_torch(source), tinytf.CrossDecoderBlock(cfg))
    for (name, a), (_, b) in zip(source.named_parameters(), target.named_parameters()):
        assert torch.equal(a, b), name


def test_a_wrong_mapping_would_be_caught():
    """Swapping two of PyTorch's norms after the copy changes the output: the equality test has teeth."""
    cfg = tinytf.config_2017(d_model=32, n_heads=4)
    block = nudged(tinytf.CrossDecoderBlock(cfg), 4)
    ref = interop.to_torch(block).eval()
    ref.norm2, ref.norm3 = ref.norm3, ref.norm2
    y, memory = torch.randn(1, 4, 32), torch.randn(1, 6, 32)
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    with torch.no_grad():
        assert (block(y, memory) - ref(y, memory, tgt_mask=mask)).abs().max() > 1e-3


@pytest.mark.parametrize("change, words", [
    (dict(norm="rms"), "LayerNorm only"),
    (dict(ffn="swiglu"), "ungated two-matrix MLP only"),
    (dict(n_kv_heads=2), "grouped-query"),
    (dict(pos="rope"), "rotary"),
    (dict(residual=False), "no residual"),
    (dict(bias=False, qkv_bias=True), "all-or-nothing"),
])
def test_unmappable_blocks_get_a_clear_error(change, words):
    block = tinytf.EncoderBlock(tinytf.config_2017(d_model=32, n_heads=4).replace(**change))
    assert any(words in r for r in interop.torch_compatibility(block))
    with pytest.raises(tinytf.TinyTFInputError, match=words):
        interop.to_torch(block)


def test_decoder_only_block_and_wrong_layer_type_are_refused():
    cfg = tinytf.config_2017(d_model=32, n_heads=4)
    with pytest.raises(tinytf.TinyTFInputError, match="DecoderBlock has no PyTorch counterpart"):
        interop.to_torch(tinytf.DecoderBlock(cfg))
    enc_layer = interop.to_torch(tinytf.EncoderBlock(cfg))
    with pytest.raises(tinytf.TinyTFInputError, match="TransformerDecoderLayer"):
        interop.from_torch(enc_layer, tinytf.CrossDecoderBlock(cfg))
