"""attention_parameter_split: one layer's attention parameters by role (chapter 11, section 11.4)."""
import pytest

import tinytf
from tinytf.lab.frontier import attention_parameter_split


def test_plain_gqa_split_is_exact():
    cfg = tinytf.TinyConfig(d_model=64, n_heads=4, n_kv_heads=2, n_layers=1, d_ff=128)
    split = attention_parameter_split(cfg)
    assert split == {"queries": 64 * 64, "keys and values": 2 * 64 * 32, "output": 64 * 64}
    assert sum(split.values()) == tinytf.exact_layer_params(cfg)["attention"]


def test_mla_split_counts_low_rank_query_and_latent():
    cfg = tinytf.TinyConfig(d_model=64, n_heads=4, n_layers=1, d_ff=128, head_dim=28,
                            mla=tinytf.MLAOptions(kv_rank=10, rope_dim=8, v_dim=16, q_rank=12))
    split = attention_parameter_split(cfg)
    assert split["queries"] == 64 * 12 + 12 + 12 * 4 * 28
    assert split["keys and values"] == 64 * (10 + 8) + 10 + 10 * 4 * (20 + 16)
    assert split["output"] == 4 * 16 * 64
    assert sum(split.values()) == tinytf.exact_layer_params(cfg)["attention"]


def test_qk_norm_gains_go_to_their_side():
    base = tinytf.TinyConfig(d_model=64, n_heads=4, n_layers=1, d_ff=128)
    plain, qk = attention_parameter_split(base), attention_parameter_split(base.replace(qk_norm="head"))
    assert qk["queries"] - plain["queries"] == 16 and qk["keys and values"] - plain["keys and values"] == 16


def test_bad_input():
    with pytest.raises(ValueError, match="expected a TinyConfig"):
        attention_parameter_split({"model_type": "llama"})
