"""Parameter counts: seed 000's table row by row, real model sizes on the meta device, tied
weights counted once, the plain-text table, and seed 001's approximation beside the exact count."""
import pytest
import torch

import tinytf
from tinytf import GPT2_SMALL, LLAMA3_8B, TinyConfig, count_parameters, format_table, parameter_table


def rows_of(model):
    return {r.label: r.count for r in parameter_table(model)}


def test_default_model_matches_seed_000_row_by_row():
    rows = rows_of(tinytf.TinyTransformer())
    assert rows == {
        "embedding": 32_768,
        "per layer: attention (Q/K/V/O)": 65_536,
        "per layer: FFN": 196_608,
        "per layer: norms": 256,
        "per layer total": 262_400,
        "x 2 layers": 524_800,
        "final norm": 128,
        "LM head": 32_768,
        "total": 590_464,
    }


def test_default_table_text():
    text = format_table(parameter_table(tinytf.TinyTransformer()))
    assert text == """\
component                          parameters
---------------------------------------------
embedding                              32,768
per layer: attention (Q/K/V/O)         65,536
per layer: FFN                        196,608
per layer: norms                          256
per layer total                       262,400
x 2 layers                            524,800
final norm                                128
LM head                                32,768
---------------------------------------------
total                                 590,464"""
    assert format_table(parameter_table(tinytf.TinyTransformer()), title="TinyTransformer").startswith(
        "TinyTransformer\ncomponent")


def test_default_count_three_ways():
    model = tinytf.TinyTransformer()
    assert model.num_parameters() == sum(p.numel() for p in model.parameters()) == 590_464
    assert count_parameters(TinyConfig()) == 590_464


def test_llama3_8b_exact_on_meta_device():
    assert count_parameters(LLAMA3_8B) == 8_030_261_248
    model = tinytf.meta_model(LLAMA3_8B)
    assert all(p.device.type == "meta" for p in model.parameters())  # shapes only, no memory
    rows = rows_of(model)
    assert rows["embedding"] == rows["LM head"] == 128_256 * 4096
    # GQA: K and V have 8 heads of 128 = 1024 columns instead of 4096
    assert rows["per layer: attention (Q/K/V/O)"] == 2 * 4096 * 4096 + 2 * 4096 * 1024
    assert rows["per layer: FFN"] == 3 * 4096 * 14336
    assert rows["per layer: norms"] == 2 * 4096
    assert rows["total"] == 8_030_261_248


def test_gpt2_small_exact_tied_counted_once():
    assert count_parameters(GPT2_SMALL) == 124_439_808
    model = tinytf.meta_model(GPT2_SMALL)
    rows = rows_of(model)
    assert rows["embedding"] == 50_257 * 768
    assert rows["positions (learned)"] == 1024 * 768
    assert rows["per layer: attention (Q/K/V/O)"] == 4 * 768 * 768 + 4 * 768  # weights + biases
    assert rows["per layer: FFN"] == 2 * 768 * 3072 + 3072 + 768
    assert rows["per layer: norms"] == 4 * 768  # two LayerNorms with gamma and beta
    assert rows["LM head (tied: shares the embedding)"] == 0
    assert rows["total"] == 124_439_808
    # untied, the head would add a second vocab x d_model matrix
    assert count_parameters(GPT2_SMALL.replace(tie_embeddings=False)) == 124_439_808 + 50_257 * 768


@pytest.mark.parametrize("cfg", [
    TinyConfig(), tinytf.config_2017(), TinyConfig(n_kv_heads=1, tie_embeddings=True),
    TinyConfig(pos="learned", max_seq_len=64, qkv_bias=True, n_layers=3), TinyConfig(ffn="gelu", norm="layer"),
], ids=["default", "2017", "mqa-tied", "learned-qkvbias", "gelu-layer"])
def test_table_rows_add_up_to_the_real_count(cfg):
    model = tinytf.TinyTransformer(cfg)
    rows = rows_of(model)
    real = sum(p.numel() for p in model.parameters())
    assert rows["total"] == real == count_parameters(cfg)
    per_layer = sum(v for k, v in rows.items() if k.startswith("per layer:"))
    assert rows["per layer total"] == per_layer
    assert rows[f"x {cfg.n_layers} layers"] == per_layer * cfg.n_layers
    tops = sum(v for k, v in rows.items() if not k.startswith(("per layer", "x ", "total")))
    assert tops + rows[f"x {cfg.n_layers} layers"] == real


def test_encoder_decoder_table():
    model = tinytf.EncoderDecoder(tinytf.config_2017())
    rows = rows_of(model)
    assert rows["total"] == sum(p.numel() for p in model.parameters()) == count_parameters(tinytf.config_2017(), "encdec")
    assert rows["decoder per layer: cross-attention (Q/K/V/O)"] == rows["decoder per layer: attention (Q/K/V/O)"]
    assert rows["decoder per layer: norms"] == 3 * 2 * 128  # three LayerNorms, gamma + beta
    assert rows["encoder per layer: norms"] == 2 * 2 * 128
    assert "encoder per layer: cross-attention (Q/K/V/O)" not in rows
    parts = sum(v for k, v in rows.items() if not ("per layer" in k or k == "total"))
    assert parts == rows["total"]


def test_approximation_vs_exact_per_layer():
    # the source page's 4 d^2 + 3 r d^2 with r = d_ff / d_model = 4: exact but for the two norms
    exact = tinytf.exact_layer_params(TinyConfig())
    assert exact == {"attention": 65_536, "ffn": 196_608, "norms": 256, "total": 262_400}
    assert tinytf.approx_layer_params(128, 4) == 262_144 == exact["total"] - exact["norms"]
    # Llama 3 8B: GQA shrinks K and V, so the approximation overestimates the attention part
    llama = tinytf.exact_layer_params(LLAMA3_8B)
    approx = tinytf.approx_layer_params(4096, 14336 / 4096)
    assert llama["ffn"] == 3 * 3.5 * 4096**2
    assert approx - (llama["total"] - llama["norms"]) == 2 * 4096 * (4096 - 1024)


def test_meta_model_allocates_nothing_and_stays_usable():
    model = tinytf.meta_model(TinyConfig())
    assert all(p.is_meta for p in model.parameters())
    assert model(torch.zeros(1, 4, dtype=torch.long, device="meta")).shape == (1, 4, 256)


def test_meta_model_skips_initialisation_and_restores_it():
    """Counting builds on the meta device without running the initialisers, and leaves torch.nn.init intact."""
    from torch import nn

    before = nn.init.normal_
    cfg = tinytf.TinyConfig(d_model=32, n_heads=2, n_layers=2, d_ff=64)
    assert tinytf.count_parameters(cfg) == sum(p.numel() for p in tinytf.TinyTransformer(cfg).parameters())
    assert nn.init.normal_ is before
    w = tinytf.TinyTransformer(cfg).blocks[0].attn.q_proj.weight
    assert 0.01 < float(w.detach().std()) < 0.03  # a real model is still initialised (std 0.02)


def test_llama3_8b_carries_its_released_rope_base():
    # Llama 3's released rope_theta is 500,000; it adds no parameter, so the count above is unchanged
    assert LLAMA3_8B.rope_theta == 500_000
    assert count_parameters(LLAMA3_8B.replace(rope_theta=10_000.0)) == count_parameters(LLAMA3_8B)


def test_side_by_side_matches_each_table_and_fails_loudly():
    from tinytf.lab.parameters import format_side_by_side
    from tinytf.models import Encoder

    four = TinyConfig(n_layers=4)
    encdec = tinytf.EncoderDecoder(TinyConfig(n_layers=2))
    text = format_side_by_side({"encoder only": Encoder(four), "decoder only": tinytf.TinyTransformer(four),
                                "encoder-decoder": encdec})
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    row = {line.split("  ")[0].strip(): line for line in lines[3:]}
    assert row["per layer: cross-attention"].split()[-4:] == ["-", "-", "-", "65,536"]
    assert row["LM head"].split()[-4:] == ["-", "32,768", "-", "32,768"]  # the encoder alone has no LM head
    assert row["total"].split()[-3:] == ["1,082,496", "1,115,264", f"{sum(p.numel() for p in encdec.parameters()):,}"]
    with pytest.raises(ValueError):
        format_side_by_side({})
    with pytest.raises(ValueError):
        format_side_by_side({"a title that is too long": tinytf.TinyTransformer()})
    with pytest.raises(ValueError):
        format_side_by_side({"not a model": 3})
