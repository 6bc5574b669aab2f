"""Parameter counts of published models from their config.json (tinytf/configs), on the meta device:
the published figures where they are known, and transformers' own model built on the meta device from the
same dict (the ground truth) for every shipped config."""
import pytest

from conftest import require_module
import torch

import tinytf
from tinytf.hf import PUBLISHED_CONFIGS, published_config

KNOWN = {  # name: (total, active per token)
    "Llama-3-8B": (8_030_261_248, 8_030_261_248),
    "Llama-3.1-8B": (8_030_261_248, 8_030_261_248),
    "Mixtral-8x7B-v0.1": (46_702_792_704, 12_879_925_248),
    "Qwen3-0.6B": (596_049_920, 596_049_920),  # tied embeddings counted once
    "GPT-2": (124_439_808, 124_439_808),
}


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_published_counts(name):
    cfg = published_config(name)
    assert tinytf.count_parameters(cfg) == KNOWN[name][0]
    assert tinytf.active_parameters(cfg) == KNOWN[name][1]


def test_counts_take_a_tinyconfig_and_keep_the_old_signatures():
    llama = tinytf.config_from_hf(published_config("Llama-3-8B"))
    assert tinytf.count_parameters(llama) == tinytf.count_parameters(tinytf.LLAMA3_8B) == 8_030_261_248
    assert tinytf.count_parameters(tinytf.TinyConfig(), "decoder") == 590_464
    assert tinytf.count_parameters(tinytf.TinyConfig(), kind="encoder-decoder") > 590_464
    assert tinytf.active_parameters(tinytf.TinyConfig()) == 590_464


def test_moe_active_parameters_by_hand():
    cfg = tinytf.config_from_hf(published_config("Qwen3-30B-A3B"))
    expert = 3 * cfg.d_model * cfg.moe.d_expert
    total, active = tinytf.count_parameters(cfg), tinytf.active_parameters(cfg)
    assert total - active == cfg.n_layers * (cfg.moe.n_experts - cfg.moe.experts_per_token) * expert
    ds = tinytf.config_from_hf(published_config("DeepSeek-V3"), ignore=("rope_scaling", "quantization_config"))
    assert ds.moe.n_dense_layers == 3 and ds.moe.n_shared_experts == 1 and ds.mla.kv_rank == 512
    assert 36e9 < tinytf.active_parameters(ds) < 38e9  # "37B activated"
    assert 670e9 < tinytf.count_parameters(ds) < 672e9  # "671B total" (without the MTP module)


@pytest.mark.parametrize("name", PUBLISHED_CONFIGS)
def test_counts_equal_transformers_on_meta(name):
    transformers = require_module("transformers")
    d = {k: v for k, v in published_config(name).items() if k not in ("quantization_config",)}
    hf_cfg = transformers.AutoConfig.for_model(**d)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(hf_cfg)
    expected = sum(p.numel() for p in model.parameters())
    assert tinytf.count_parameters(published_config(name)) == expected


def test_parameter_table_of_a_model_with_dense_and_moe_layers():
    cfg = tinytf.TinyConfig(d_model=32, n_heads=4, n_layers=3, d_ff=64,
                            moe=tinytf.MoEOptions(n_experts=4, experts_per_token=2, d_expert=16, n_dense_layers=1))
    model = tinytf.TinyTransformer(cfg)
    rows = {r.label: r.count for r in tinytf.parameter_table(model)}
    assert rows["total"] == model.num_parameters() == tinytf.count_parameters(cfg)
    assert rows["x 3 layers"] == sum(sum(p.numel() for p in b.parameters()) for b in model.blocks)
