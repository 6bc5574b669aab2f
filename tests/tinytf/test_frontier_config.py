"""The frontier-block fields of TinyConfig: defaults change nothing, every bad value is a ValueError naming
its field, old checkpoint configs still load, and each option builds a working model with named traces."""
import dataclasses
import fnmatch
import json
import re

import pytest

from conftest import require_module
import torch

import tinytf
from tinytf import TinyConfig
from tinytf.config import MLAOptions, MoEOptions, RopeScaling, SlidingWindow

CORE_REPR = ("TinyConfig(vocab_size=256, d_model=128, pos='rope', max_seq_len=512, rope_theta=10000.0, n_heads=4, "
             "n_kv_heads=None, norm='rms', eps=1e-05, d_ff=512, ffn='swiglu', bias=False, norm_position='pre', "
             "residual=True, dropout=0.0, n_layers=2, tie_embeddings=False, n_encoder_layers=None)")


def test_defaults_change_nothing():
    assert repr(TinyConfig()) == CORE_REPR
    assert tinytf.count_parameters(TinyConfig()) == 590_464
    assert TinyConfig().diff(TinyConfig(moe=None, qk_norm="none")) == {}
    cfg = TinyConfig(qk_norm="head")
    assert repr(cfg) == CORE_REPR[:-1] + ", qk_norm='head')"  # only non-default new fields are shown
    assert TinyConfig().diff(cfg) == {"qk_norm": ("none", "head")}


def test_old_checkpoint_configs_still_load():
    from tinytf.pretrained import CHECKPOINT_DIR

    for path in sorted(CHECKPOINT_DIR.glob("*-2l.json")):  # configs written before the frontier fields existed
        data = json.loads(path.read_text())
        cfg = TinyConfig.from_dict(data["config"])
        assert cfg.moe is None and cfg.mla is None and cfg.sliding_window is None and cfg.qk_norm == "none"
        assert tinytf.TinyTransformer(cfg)(torch.zeros(3, dtype=torch.long)).shape == (3, cfg.vocab_size)
    model = tinytf.pretrained.load("induction-2l")
    assert isinstance(model.config, TinyConfig)


def test_asdict_round_trip_through_json():
    cfg = TinyConfig(sliding_window=SlidingWindow(4, layer_types=("local", "global"), rope_theta_local=1e4),
                     rope_scaling=RopeScaling("llama3", 8.0, 1.0, 4.0, 16), moe=MoEOptions(4, 2))
    again = TinyConfig(**json.loads(json.dumps(dataclasses.asdict(cfg))))
    assert again == cfg and hash(again) == hash(cfg)
    assert TinyConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg


MOE2 = dict(n_experts=4, experts_per_token=2)
BAD = [
    (dict(qk_norm="yes"), "qk_norm"),
    (dict(rope_pairing="odd"), "rope_pairing"),
    (dict(moe=dict(MOE2, router="argmax")), "moe.router"),
    (dict(norm_position="middle"), "norm_position"),
    (dict(sliding_window=dict(size=0)), "sliding_window.size"),
    (dict(sliding_window=4), "sliding_window"),
    (dict(sliding_window=dict(size=4, layer_types=("local",))), "sliding_window.layer_types"),
    (dict(sliding_window=dict(size=4, layer_types=("local", "near"))), "sliding_window.layer_types"),
    (dict(sliding_window=dict(size=4, rope_theta_local=-1.0)), "sliding_window.rope_theta_local"),
    (dict(sliding_window=dict(layer_types=("local", "global"))), "sliding_window"),
    (dict(rope_scaling=dict(kind="dynamic", factor=4.0)), "rope_scaling"),
    (dict(rope_scaling=dict(kind="linear", factor=0)), "rope_scaling.factor"),
    (dict(rope_scaling="llama3"), "rope_scaling"),
    (dict(scale_embeddings="yes"), "scale_embeddings"),
    (dict(attn_scale=0.0), "attn_scale"),
    (dict(logit_softcap=-3.0), "logit_softcap"),
    (dict(head_dim=0), "head_dim"),
    (dict(moe=dict(n_experts=-1, experts_per_token=1)), "moe.n_experts"),
    (dict(moe=dict(n_experts=4, experts_per_token=5)), "moe.experts_per_token"),
    (dict(moe=dict(n_experts=4, experts_per_token=0)), "moe.experts_per_token"),
    (dict(moe=dict(n_experts=4)), "moe"),
    (dict(moe=dict(MOE2, n_shared_experts=-1)), "moe.n_shared_experts"),
    (dict(moe=dict(MOE2, n_dense_layers=3)), "moe.n_dense_layers"),
    (dict(moe=dict(n_experts=6, experts_per_token=2, router_groups=4)), "moe.router_groups"),
    (dict(moe=dict(n_experts=8, experts_per_token=2, router_groups=2, router_topk_groups=3)), "moe.router_topk_groups"),
    (dict(moe=MOE2, ffn="relu"), "ffn"),
    (dict(moe=dict(MOE2, router_scale=0)), "moe.router_scale"),
    (dict(moe=dict(MOE2, d_expert=0)), "moe.d_expert"),
    (dict(moe=dict(MOE2, n_expert=3)), "moe"),
    (dict(moe=3), "moe"),
    (dict(mla=dict(kv_rank=16, q_rank=0, rope_dim=8)), "mla.q_rank"),
    (dict(mla=dict(kv_rank=0, rope_dim=8)), "mla.kv_rank"),
    (dict(mla=dict(kv_rank=16)), "mla.rope_dim"),
    (dict(mla=dict(kv_rank=16, rope_dim=8), n_kv_heads=2), "n_kv_heads"),
    (dict(mla=dict(kv_rank=16, rope_dim=8), sliding_window=dict(size=4)), "sliding_window"),
    (dict(norm_position="sandwich", residual=False), "residual"),
]


@pytest.mark.parametrize("kw,field", BAD, ids=[f for _, f in BAD])
def test_bad_values_name_their_field(kw, field):
    with pytest.raises(ValueError, match=rf"TinyConfig\.{re.escape(field)}"):
        TinyConfig(**kw)


def test_head_dim_decouples_heads_from_d_model():
    cfg = TinyConfig(d_model=64, n_heads=4, head_dim=32, n_kv_heads=2)
    assert cfg.d_head == 32
    model = tinytf.TinyTransformer(cfg)
    assert model.blocks[0].attn.q_proj.weight.shape == (128, 64)
    assert model(torch.zeros(5, dtype=torch.long)).shape == (5, 256)
    TinyConfig(d_model=100, n_heads=3, head_dim=16)  # d_model need not divide by n_heads any more


OPTIONS = {
    "qk-norm head": dict(qk_norm="head"),
    "qk-norm proj": dict(qk_norm="proj", n_kv_heads=2),
    "sliding all": dict(sliding_window=SlidingWindow(size=3)),
    "local/global": dict(sliding_window=SlidingWindow(size=3, layer_types=("local", "global"),
                                                      rope_theta_local=100.0)),
    "llama3 rope": dict(rope_scaling=RopeScaling("llama3", 8.0, 1.0, 4.0, 16)),
    "linear rope": dict(rope_scaling=RopeScaling("linear", 2.0)),
    "interleaved rope": dict(rope_pairing="interleaved"),
    "sandwich gemma": dict(norm="rms_offset", norm_position="sandwich", ffn="geglu", scale_embeddings=True,
                           attn_scale=0.1, logit_softcap=30.0),
    "post-sublayer": dict(norm_position="post_sublayer"),
    "gpt-2 mlp": dict(ffn="gelu_tanh", norm="layer", bias=True, pos="learned"),
    "moe": dict(moe=MoEOptions(n_experts=4, experts_per_token=2, d_expert=64)),
    "moe shared dense": dict(moe=MoEOptions(n_experts=4, experts_per_token=2, n_shared_experts=1, n_dense_layers=1,
                                            d_expert=64, router="sigmoid_renorm", router_groups=2,
                                            router_topk_groups=1, router_scale=2.5)),
    "mla": dict(mla=MLAOptions(kv_rank=16, q_rank=24, rope_dim=8, v_dim=16), head_dim=24),
    "mla full q, half rope": dict(mla=MLAOptions(kv_rank=16, rope_dim=8), head_dim=24),
}


@pytest.mark.parametrize("name", list(OPTIONS))
def test_each_option_builds_a_causal_model_with_documented_traces(name):
    cfg = TinyConfig(d_model=64, n_heads=4, d_ff=96, **OPTIONS[name])
    torch.manual_seed(0)
    model = tinytf.TinyTransformer(cfg).eval()
    x = torch.randint(0, 256, (2, 9))
    logits, trace = model.run_with_trace(x)
    assert logits.shape == (2, 9, 256) and torch.isfinite(logits).all()
    patterns = list(tinytf.TRACE_NAMES) + list(tinytf.FRONTIER_TRACE_NAMES)
    for key in trace:
        assert any(fnmatch.fnmatchcase(key, p.replace("{i}", "*")) for p in patterns), f"{key} is not documented"
    # causal: changing the last token changes no earlier logit
    y = x.clone()
    y[:, -1] = (y[:, -1] + 1) % 256
    torch.testing.assert_close(model(y)[:, :-1], logits[:, :-1], atol=1e-5, rtol=0)
    # the cache gives the same logits as the full pass, one token at a time
    cache = model.new_cache()
    steps = torch.cat([model(x[:, :4], cache=cache)] + [model(x[:, t:t + 1], cache=cache) for t in range(4, 9)], 1)
    torch.testing.assert_close(steps, logits, atol=1e-5, rtol=0)
    assert cache.length == 9


def test_sliding_window_mask_and_sandwich_wiring():
    m = tinytf.sliding_window_mask(5, 5, 0, window=2)
    assert m.int().tolist() == [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 0, 1, 1]]
    # with a cache holding the last 1 position (window 2): query at position 7 reads keys 6 and 7
    assert tinytf.sliding_window_mask(1, 2, 7, window=2).tolist() == [[True, True]]
    cfg = TinyConfig(d_model=32, n_heads=4, d_ff=64, norm_position="sandwich")
    block = tinytf.DecoderBlock(cfg).eval()
    x = torch.randn(1, 3, 32)
    _, trace = tinytf.run_with_trace(block, x)
    torch.testing.assert_close(trace["resid_mid"], x + trace["norm1.post.out"])
    torch.testing.assert_close(trace["norm1.post.out"], block.norm1.post(trace["attn.out"]))


def test_interleaved_rope_is_half_rope_on_permuted_dimensions():
    """Interleaved pairs (x0, x1), (x2, x3)... = half-split pairs after moving even dims first: the
    q . k scores agree, which is why HF converts Meta's Llama weights by permuting rows of W_q and W_k."""
    from tinytf.positions import RoPE, ScaledRoPE

    q, k = torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 8)
    perm = torch.cat((torch.arange(0, 8, 2), torch.arange(1, 8, 2)))
    qi, ki = ScaledRoPE(8, 10000.0, pairing="interleaved")(q, k)
    qh, kh = RoPE(8)(q[..., perm], k[..., perm])
    torch.testing.assert_close(qi @ ki.transpose(-1, -2), qh @ kh.transpose(-1, -2), atol=1e-5, rtol=0)
    torch.testing.assert_close(qi[..., perm], qh, atol=1e-6, rtol=0)


def test_gemma_local_and_global_layers_get_their_own_rope_base():
    cfg = TinyConfig(d_model=32, n_heads=2,
                     sliding_window=SlidingWindow(size=4, layer_types=("local", "global"), rope_theta_local=1e4),
                     rope_theta=1e6, rope_scaling=RopeScaling("linear", 8.0))
    model = tinytf.TinyTransformer(cfg)
    local, glob = model.blocks[0].attn.rotary, model.blocks[1].attn.rotary
    assert local.theta == 1e4 and getattr(local, "scaling", None) is None
    assert glob.theta == 1e6 and glob.scaling.factor == 8.0
    assert model.blocks[0].attn.window == 4 and model.blocks[1].attn.window is None


def test_llama3_rope_scaling_matches_transformers():
    transformers = require_module("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    from tinytf.positions import scaled_inv_freq

    params = dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                  original_max_position_embeddings=8192)
    hf_cfg = transformers.LlamaConfig(hidden_size=4096, num_attention_heads=32, rope_parameters=params)
    inv_freq, _ = ROPE_INIT_FUNCTIONS["llama3"](hf_cfg, "cpu")
    ours = scaled_inv_freq(128, 500000.0, RopeScaling("llama3", 8.0, 1.0, 4.0, 8192))
    torch.testing.assert_close(ours, inv_freq.float(), rtol=1e-6, atol=0)


@pytest.mark.parametrize("name", ["sandwich gemma", "moe shared dense", "mla", "qk-norm proj", "local/global"])
def test_frontier_models_pickle_and_deepcopy(name):
    import copy
    import io

    cfg = TinyConfig(d_model=64, n_heads=4, d_ff=96, **OPTIONS[name])
    model = tinytf.TinyTransformer(cfg).eval()
    x = torch.randint(0, 256, (1, 6))
    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    assert torch.equal(torch.load(buf, weights_only=False)(x), model(x))
    assert torch.equal(copy.deepcopy(model)(x), model(x))


def test_encoder_decoder_honours_scale_embeddings():
    import math

    import torch

    from tinytf.models import ScaledEmbedding

    cfg = tinytf.TinyConfig(d_model=32, n_heads=4, d_ff=64, n_layers=1, scale_embeddings=True)
    model = tinytf.EncoderDecoder(cfg)
    assert isinstance(model.encoder.embed, ScaledEmbedding) and isinstance(model.decoder.embed, ScaledEmbedding)
    ids = torch.tensor([[1, 2, 3]])
    plain = torch.nn.functional.embedding(ids, model.encoder.embed.weight)
    assert torch.allclose(model.encoder.embed(ids), plain * math.sqrt(32))
    assert not isinstance(tinytf.EncoderDecoder(cfg.replace(scale_embeddings=False)).encoder.embed, ScaledEmbedding)
