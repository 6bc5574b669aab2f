"""tinytf.cache_memory: the KV-cache formula against the bytes of real caches."""
import pytest
import torch

import tinytf
from tinytf.cache_memory import cache_memory, cache_memory_table, format_bytes, kv_cache_bytes


@pytest.mark.parametrize("change", [dict(), dict(n_kv_heads=2), dict(n_kv_heads=1), dict(n_layers=3, d_model=64)])
@pytest.mark.parametrize("T", [1, 9])
def test_formula_equals_a_real_cache(change, T):
    cfg = tinytf.TinyConfig(**change)
    model = tinytf.TinyTransformer(cfg).eval()
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.randint(0, 256, (2, T)), cache=cache)  # batch 2
        model(torch.randint(0, 256, (2, 1)), cache=cache)  # one more step
    assert kv_cache_bytes(cfg, T + 1, batch=2) == cache.nbytes() == cache_memory(cfg, T + 1, batch=2).nbytes


def test_half_precision_halves_the_bytes():
    cfg = tinytf.TinyConfig()
    assert kv_cache_bytes(cfg, 100, dtype=torch.float16) * 2 == kv_cache_bytes(cfg, 100)
    assert kv_cache_bytes(cfg, 100, dtype=2) == kv_cache_bytes(cfg, 100, dtype=torch.bfloat16)


def test_llama3_8b():
    m = cache_memory(tinytf.LLAMA3_8B, 8192, dtype=torch.bfloat16)
    assert m.nbytes == 2 * 32 * 8192 * 8 * 128 * 2 == 2**30
    assert m.without_gqa == 4 * 2**30
    assert m.per_token == 128 * 1024
    assert "1,073,741,824 bytes (1.00 GiB)" in m.formula()


def test_table_and_units():
    table = cache_memory_table({"tiny": cache_memory(tinytf.TinyConfig(n_kv_heads=1), 512),
                                "tiny, batch 16": cache_memory(tinytf.TinyConfig(), 512, batch=16)})
    lines = table.splitlines()
    assert lines[2].split() == ["tiny", "2", "4", "1", "32", "4", "1", "512"]
    assert lines[3].split()[-7:] == ["2", "4", "4", "32", "4", "16", "512"] and lines[4] == ""
    assert lines[7].split()[0] == "tiny" and lines[7].endswith("4x") and lines[8].endswith("1x")
    assert max(len(line) for line in lines) <= 88
    assert all(len(line) <= 88 for line in cache_memory(tinytf.LLAMA3_8B, 8192, 16).formula().splitlines())
    assert format_bytes(512) == "512 bytes" and format_bytes(1536) == "1.50 KiB" and format_bytes(2**30) == "1.00 GiB"


@pytest.mark.parametrize("kwargs, words", [(dict(seq_len=-1), "seq_len"), (dict(seq_len=3, batch=1.5), "batch"),
                                           (dict(seq_len=3, dtype="fp16"), "dtype")])
def test_bad_input(kwargs, words):
    with pytest.raises(tinytf.TinyTFInputError, match=words):
        kv_cache_bytes(tinytf.TinyConfig(), **kwargs)
    with pytest.raises(tinytf.TinyTFInputError):
        cache_memory_table({"x": 3})
