"""tinytf.lab.prefill_decode: the arithmetic of prefill and decode, and their timing."""
import pytest
import torch

import tinytf
from tinytf import TinyConfig, TinyTFInputError
from tinytf.lab.prefill_decode import step_cost, time_phases


def test_step_cost_counts_flops_and_bytes():
    cfg = TinyConfig(n_layers=1, d_model=64, n_heads=4, d_ff=128, vocab_size=100)
    params = tinytf.count_parameters(cfg)
    one = step_cost(cfg, new=1)
    assert one.bytes == params * 4 + 2 * 64 * 4  # weights + the new token's key and value (4 heads x 16)
    assert one.flops == 2 * (params - 100 * 64) + 4 * 4 * 16 * 1  # matrices + one (query, key) pair
    many = step_cost(cfg, new=128)
    assert many.flops > 100 * one.flops and many.bytes < 1.5 * one.bytes
    assert many.intensity > 50 * one.intensity
    later = step_cost(cfg, new=1, past=127)
    assert later.flops - one.flops == 4 * 4 * 16 * 127 and later.bytes - one.bytes == 127 * 2 * 64 * 4
    # decode in float32 moves about 4 bytes per multiply-add: intensity ~ 0.5
    assert 0.4 < step_cost(tinytf.LLAMA3_8B, new=1, past=0).intensity < 0.6
    assert step_cost(tinytf.LLAMA3_8B, new=1, past=0, bytes_per_value=2).intensity == pytest.approx(
        2 * step_cost(tinytf.LLAMA3_8B, new=1, past=0).intensity, rel=1e-6)
    with pytest.raises(TinyTFInputError):
        step_cost(cfg, new=0)


def test_time_phases():
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(TinyConfig(n_layers=1, d_model=32, n_heads=2, d_ff=64)).eval()
    t = time_phases(model, prompt_len=16, decode_steps=3, repeats=2)
    assert t.prefill_seconds > 0 and t.decode_seconds > 0
    assert t.prefill_per_token == t.prefill_seconds / 16 and t.ratio == t.decode_per_token / t.prefill_per_token
    with pytest.raises(TinyTFInputError):
        time_phases(model, prompt_len=0)
