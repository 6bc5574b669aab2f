"""KV-cache memory from a config for MHA, GQA, sliding-window layers (bounded by the window, per layer
pattern) and MLA (latent + RoPE key part), checked against the bytes of a real tinytf cache."""
import pytest
import torch

import tinytf
from tinytf.cache_memory import cache_by_layer, cache_bytes_per_token, kv_cache_bytes, layer_cache_values
from tinytf.hf import config_from_hf, published_config

SMALL = dict(d_model=64, n_heads=4, d_ff=96, n_layers=3)
CONFIGS = {
    "mha": dict(),
    "gqa": dict(n_kv_heads=2),
    "sliding every layer": dict(n_kv_heads=2, sliding_window=tinytf.SlidingWindow(size=5)),
    "local, global, local": dict(sliding_window=tinytf.SlidingWindow(size=4, layer_types=("local", "global", "local"))),
    "mla": dict(mla=tinytf.MLAOptions(kv_rank=16, rope_dim=8, v_dim=16), head_dim=24),
    "mla low-rank q": dict(mla=tinytf.MLAOptions(kv_rank=12, q_rank=20, rope_dim=4), head_dim=20),
}


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("prompt,steps", [(3, 0), (7, 5), (2, 9)])
def test_formula_equals_a_real_cache(name, prompt, steps):
    cfg = tinytf.TinyConfig(**SMALL, **CONFIGS[name])
    model = tinytf.TinyTransformer(cfg).eval()
    cache = model.new_cache()
    B = 2
    with torch.no_grad():
        model(torch.randint(0, 256, (B, prompt)), cache=cache)
        for _ in range(steps):
            model(torch.randint(0, 256, (B, 1)), cache=cache)
    T = prompt + steps
    assert cache.length == T
    assert cache.nbytes() == kv_cache_bytes(cfg, T, batch=B)
    for layer, m in zip(cache.layers, cache_by_layer(cfg, T, batch=B)):
        assert layer.nbytes() == m.nbytes


def test_classic_formula_unchanged():
    cfg = tinytf.TinyConfig(n_kv_heads=2)
    assert kv_cache_bytes(cfg, 100) == 2 * 2 * 100 * 2 * 32 * 4
    assert kv_cache_bytes(cfg, 100) == tinytf.cache_memory.cache_memory(cfg, 100).nbytes
    assert cache_bytes_per_token(cfg) == tinytf.cache_memory.cache_memory(cfg, 1).per_token


def test_published_models_per_token():
    bf16 = torch.bfloat16
    llama = config_from_hf(published_config("Llama-3-8B"))
    assert cache_bytes_per_token(llama, bf16) == 2 * 32 * 8 * 128 * 2  # 128 KiB per token
    ds = config_from_hf(published_config("DeepSeek-V3"), ignore=("rope_scaling", "quantization_config"))
    assert layer_cache_values(ds) == 512 + 64  # latent + shared RoPE key part, against 2 x 128 x 192 for MHA
    assert cache_bytes_per_token(ds, bf16) == 61 * 576 * 2
    gemma = config_from_hf(published_config("Gemma-3-1B"))
    assert gemma.sliding_window.layer_types.count("global") == 4 and gemma.sliding_window.size == 512
    per_layer = 2 * 1 * 256 * 2
    assert cache_bytes_per_token(gemma, bf16) == 26 * per_layer  # short context: every layer grows
    assert cache_bytes_per_token(gemma, bf16, seq_len=32768) == 4 * per_layer  # later: only the global layers
    assert kv_cache_bytes(gemma, 32768, dtype=bf16) == (4 * 32768 + 22 * 511) * per_layer
    mistral = config_from_hf(published_config("Mistral-7B-v0.1"))
    assert kv_cache_bytes(mistral, 100_000, dtype=bf16) == kv_cache_bytes(mistral, 4095, dtype=bf16)


def test_cache_memory_refuses_configs_its_formula_does_not_describe():
    with pytest.raises(tinytf.TinyTFInputError, match="kv_cache_bytes"):
        tinytf.cache_memory.cache_memory(tinytf.TinyConfig(sliding_window=tinytf.SlidingWindow(size=8)), 10)
