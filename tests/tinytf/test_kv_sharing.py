"""tinytf.lab.kv_sharing: GQA/MQA parameter and cache counts against the formulas and a real cache."""
import pytest
import torch

import tinytf
from tinytf.lab import kv_sharing as ks


@pytest.mark.parametrize("G", [4, 2, 1])
def test_parameters_follow_the_formula(G):
    cfg = tinytf.TinyConfig()
    C, H, D = cfg.d_model, cfg.n_heads, cfg.d_head
    assert ks.projection_parameters(cfg, G) == C * H * D + 2 * C * G * D + H * D * C
    real = tinytf.Attention(cfg.replace(n_kv_heads=G))
    assert ks.projection_parameters(cfg, G) == sum(p.numel() for p in real.parameters())


@pytest.mark.parametrize("G", [4, 2, 1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_measured_cache_equals_the_formula(G, dtype):
    cfg = tinytf.TinyConfig()
    row = ks.kv_sharing(cfg, G, dtype=dtype)
    assert ks.cache_bytes_per_position(cfg, G, dtype=dtype) == row.cache_per_position == 2 * G * cfg.d_head * row.bytes_per_value
    assert row.cache_per_token == row.cache_per_position * cfg.n_layers
    assert row.cache_per_position_mha == 2 * cfg.n_heads * cfg.d_head * row.bytes_per_value


def test_agrees_with_the_whole_model_cache():
    cfg = tinytf.TinyConfig(n_kv_heads=2)
    assert ks.kv_sharing(cfg, dtype=torch.float32).cache_per_token * 7 == tinytf.kv_cache_bytes(cfg, 7)


def test_llama3_8b_and_qwen3():
    llama = ks.kv_sharing(tinytf.config_from_hf(tinytf.published_config("Llama-3-8B")))
    assert (llama.n_heads, llama.n_kv_heads, llama.group) == (32, 8, 4)
    assert llama.params == 2 * 4096 * 4096 + 2 * 4096 * 1024 and llama.params_mha == 4 * 4096 * 4096
    assert llama.cache_per_token == 2 * 32 * 8 * 128 * 2 == 128 * 1024
    qwen = ks.kv_sharing(tinytf.config_from_hf(tinytf.published_config("Qwen3-0.6B")))
    assert qwen.params == 1024 * 2048 * 2 + 2 * 1024 * 8 * 128  # QK-norm weights are not projections


def test_bad_input_is_named():
    with pytest.raises(tinytf.TinyTFInputError, match="n_kv_heads"):
        ks.kv_sharing(tinytf.TinyConfig(), 3)
    with pytest.raises(tinytf.TinyTFInputError, match="cfg"):
        ks.kv_sharing({"n_heads": 4})
    with pytest.raises(tinytf.TinyTFInputError, match="KVSharing"):
        ks.kv_sharing_table({"x": 1})
