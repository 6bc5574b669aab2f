"""TinyConfig: defaults of seed 000, the 2017/2026 presets, replace/diff, and validation."""
import dataclasses

import pytest
import torch

import tinytf
from tinytf import TinyConfig, config_2017, config_2026


def test_defaults_are_seed_000():
    cfg = TinyConfig()
    expected = dict(vocab_size=256, d_model=128, n_layers=2, n_heads=4, n_kv_heads=None, d_ff=512, norm="rms",
                    norm_position="pre", ffn="swiglu", pos="rope", bias=False, qkv_bias=False,
                    tie_embeddings=False, residual=True, dropout=0.0)
    assert {k: getattr(cfg, k) for k in expected} == expected
    assert cfg.d_head == 32
    assert cfg.kv_heads == 4
    assert cfg.encoder_layers == 2


def test_derived_sizes():
    cfg = TinyConfig(d_model=96, n_heads=6, n_kv_heads=2, n_layers=3, n_encoder_layers=5)
    assert (cfg.d_head, cfg.kv_heads, cfg.encoder_layers) == (16, 2, 5)


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        TinyConfig().d_model = 64


def test_2026_is_the_default():
    assert config_2026() == TinyConfig()
    assert config_2026(n_layers=4) == TinyConfig(n_layers=4)


def test_2017_preset():
    cfg = config_2017()
    assert (cfg.norm, cfg.norm_position, cfg.ffn, cfg.pos, cfg.bias) == ("layer", "post", "relu", "sinusoidal", True)
    assert cfg.d_ff == 4 * cfg.d_model
    # d_ff follows a changed d_model (4x), unless given explicitly
    assert config_2017(d_model=64, n_heads=4).d_ff == 256
    assert config_2017(d_model=64, n_heads=4, d_ff=100).d_ff == 100


def test_diff_2017_vs_2026_names_exactly_the_changed_fields():
    diff = config_2017().diff(config_2026())
    assert diff == {"norm": ("layer", "rms"), "norm_position": ("post", "pre"), "ffn": ("relu", "swiglu"),
                    "pos": ("sinusoidal", "rope"), "bias": (True, False)}
    assert TinyConfig().diff(TinyConfig()) == {}


def test_replace_returns_a_validated_copy():
    base = TinyConfig()
    changed = base.replace(n_layers=6)
    assert changed.n_layers == 6 and base.n_layers == 2
    with pytest.raises(ValueError, match="n_heads"):
        base.replace(n_heads=5)


@pytest.mark.parametrize("field", ["vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_seq_len",
                                   "n_kv_heads", "n_encoder_layers"])
@pytest.mark.parametrize("value", [0, -3, 2.0, True, "8"])
def test_sizes_must_be_positive_integers(field, value):
    with pytest.raises(ValueError, match=rf"TinyConfig\.{field} must be a positive integer, got {value!r}"):
        TinyConfig(**{field: value})


@pytest.mark.parametrize("field,bad,allowed", [
    ("norm", "batch", ("rms", "layer")),
    ("norm_position", "middle", ("pre", "post")),
    ("ffn", "tanh", ("swiglu", "relu", "gelu")),
    ("pos", "alibi", ("rope", "sinusoidal", "learned", "none")),
    ("norm", "RMS", ("rms", "layer")),  # case matters
])
def test_unknown_choice_names_field_and_allowed_values(field, bad, allowed):
    with pytest.raises(ValueError) as err:
        TinyConfig(**{field: bad})
    msg = str(err.value)
    assert f"TinyConfig.{field}" in msg and repr(bad) in msg
    for choice in allowed:
        assert repr(choice) in msg


def test_d_model_must_divide_into_heads():
    with pytest.raises(ValueError, match=r"d_model \(100\) must be divisible by n_heads \(3\)"):
        TinyConfig(d_model=100, n_heads=3)


@pytest.mark.parametrize("n_kv_heads", [3, 8])
def test_n_heads_must_divide_into_kv_heads(n_kv_heads):
    with pytest.raises(ValueError, match=rf"n_heads \(4\) must be divisible by n_kv_heads \({n_kv_heads}\)"):
        TinyConfig(n_kv_heads=n_kv_heads)


def test_rope_needs_even_head_size_but_other_positions_do_not():
    with pytest.raises(ValueError, match="pos='rope'"):
        TinyConfig(d_model=36, n_heads=4)  # d_head 9
    assert TinyConfig(d_model=36, n_heads=4, pos="sinusoidal").d_head == 9


@pytest.mark.parametrize("kw,field", [(dict(dropout=1.0), "dropout"), (dict(dropout=-0.1), "dropout"),
                                      (dict(eps=0.0), "eps"), (dict(eps=-1e-5), "eps")])
def test_dropout_and_eps_ranges(kw, field):
    with pytest.raises(ValueError, match=rf"TinyConfig\.{field}"):
        TinyConfig(**kw)


def test_valid_edge_values_are_accepted():
    cfg = TinyConfig(n_kv_heads=1, n_heads=4, dropout=0.5, n_layers=1, pos="none", vocab_size=1)
    assert cfg.kv_heads == 1
    assert tinytf.TinyTransformer(cfg)(torch.zeros(3, dtype=torch.long)).shape == (3, 1)


@pytest.mark.parametrize("field", ["bias", "qkv_bias", "tie_embeddings", "residual"])
@pytest.mark.parametrize("value", ["no", 0, None])
def test_switches_must_be_booleans(field, value):
    with pytest.raises(ValueError, match=rf"TinyConfig\.{field} must be True or False, got {value!r}"):
        TinyConfig(**{field: value})


@pytest.mark.parametrize("field,value", [("dropout", "0.1"), ("eps", None), ("rope_theta", 0.0), ("rope_theta", -1.0),
                                         ("rope_theta", "1e4")])
def test_real_valued_fields(field, value):
    with pytest.raises(ValueError, match=rf"TinyConfig\.{field}"):
        TinyConfig(**{field: value})
