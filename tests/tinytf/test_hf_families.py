"""tinytf.from_hf against tiny random Hugging Face models of every supported family: the same logits
(within 1e-4), the same attention weights, and the same greedy generation with tinytf's KV cache.
Nothing is downloaded: each HF model is built from a config with ``transformers`` (a test-only dependency)."""
import pytest

from conftest import require_module
import torch

import tinytf
from tinytf.generation import generate

transformers = require_module("transformers")

SMALL = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6, tie_word_embeddings=False)

FAMILIES = {
    "llama": dict(SMALL),
    "llama3_rope_scaling": dict(SMALL, model_type="llama", rope_parameters=dict(
        rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
        original_max_position_embeddings=16)),
    "llama_tied": dict(SMALL, model_type="llama", tie_word_embeddings=True, head_dim=8),
    "mistral": dict(SMALL, sliding_window=4),
    "qwen2": dict(SMALL),
    "qwen3": dict(SMALL, head_dim=32),
    "gpt2": dict(vocab_size=97, n_embd=64, n_layer=2, n_head=4, n_positions=64),
    "olmo2": dict(SMALL),
    "gemma3_text": dict(SMALL, num_hidden_layers=3, head_dim=32, query_pre_attn_scalar=24, sliding_window=4,
                        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                        final_logit_softcapping=30.0, tie_word_embeddings=True,
                        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                         "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}}),
    "mixtral": dict(SMALL, num_local_experts=4, num_experts_per_tok=2),
    "qwen3_moe": dict(SMALL, num_experts=4, num_local_experts=4, num_experts_per_tok=2, moe_intermediate_size=48,
                      norm_topk_prob=False),
    "qwen3_moe_renorm": dict(SMALL, model_type="qwen3_moe", num_experts=4, num_local_experts=4,
                             num_experts_per_tok=2, moe_intermediate_size=48, norm_topk_prob=True),
    "deepseek_v3": dict(SMALL, num_hidden_layers=3, num_key_value_heads=4, n_routed_experts=8, n_group=4,
                        topk_group=2, num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32,
                        first_k_dense_replace=1, kv_lora_rank=16, q_lora_rank=24, qk_rope_head_dim=8,
                        qk_nope_head_dim=16, v_head_dim=12, routed_scaling_factor=2.5),
    "deepseek_v3_yarn": dict(SMALL, model_type="deepseek_v3", num_hidden_layers=2, num_key_value_heads=4,
                             n_routed_experts=8, n_group=2, topk_group=1, num_experts_per_tok=2, n_shared_experts=1,
                             moe_intermediate_size=32, first_k_dense_replace=1, kv_lora_rank=16, q_lora_rank=24,
                             qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=12, routed_scaling_factor=2.5,
                             rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=40.0, beta_fast=32,
                                                  beta_slow=1, mscale=1.0, mscale_all_dim=1.0,
                                                  original_max_position_embeddings=4)),
    "qwen3_yarn": dict(SMALL, model_type="qwen3", head_dim=32, rope_parameters=dict(
        rope_type="yarn", rope_theta=10000.0, factor=4.0, original_max_position_embeddings=8)),
    "deepseek_v3_full_rank_q": dict(SMALL, model_type="deepseek_v3", num_key_value_heads=4, n_routed_experts=4,
                                    n_group=1, topk_group=1, num_experts_per_tok=2, n_shared_experts=2,
                                    moe_intermediate_size=32, first_k_dense_replace=0, kv_lora_rank=16,
                                    q_lora_rank=None, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16,
                                    rope_interleave=False),
}


def hf_model(name):
    kw = dict(FAMILIES[name])
    model_type = kw.pop("model_type", name)
    cfg = transformers.AutoConfig.for_model(model_type, **kw)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager", dtype=torch.float32)
    with torch.no_grad():  # every weight random (norm scales around 1, router bias too), so each one matters
        for pname, p in model.named_parameters():
            if p.dim() == 1 and "norm" in pname:
                p.copy_(torch.randn_like(p) * 0.1 + (0.0 if model_type == "gemma3_text" else 1.0))
            else:
                p.normal_(0.0, 0.05)
        for bname, b in model.named_buffers():
            if bname.endswith("e_score_correction_bias"):
                b.copy_(torch.randn_like(b) * 0.05)
    return model.eval(), cfg


def ids(T=11, B=2, vocab=97, seed=1):
    return torch.randint(0, vocab, (B, T), generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def pair(request):
    hf, cfg = hf_model(request.param)
    tiny = tinytf.from_hf(hf.state_dict(), cfg.to_dict())
    return request.param, hf, tiny


def test_logits_equal(pair, one_torch_thread):
    name, hf, tiny = pair
    x = ids()
    with torch.no_grad():
        ref = hf(x).logits
        out = tiny(x)
    diff = (out - ref).abs().max().item()
    print(f"{name}: max |logits difference| = {diff:.2e}")
    assert diff < 1e-4, f"{name}: max |logits difference| = {diff:.2e}"


def test_attention_weights_equal(pair, one_torch_thread):
    name, hf, tiny = pair
    x = ids(T=9)
    with torch.no_grad():
        ref = hf(x, output_attentions=True).attentions
        _, trace = tiny.run_with_trace(x, names="blocks.*.attn.weights")
    assert len(ref) == len(tiny.blocks)
    for i, a in enumerate(ref):
        torch.testing.assert_close(trace[f"blocks.{i}.attn.weights"], a, atol=1e-5, rtol=0)


def test_cached_generation_equals_hf_generate(pair, one_torch_thread):
    name, hf, tiny = pair
    prompt = ids(T=6, B=1)
    ours = generate(tiny, prompt, 8, use_cache=True)
    naive = generate(tiny, prompt, 8, use_cache=False)
    assert torch.equal(ours.tokens, naive.tokens)
    for a, b in zip(ours.step_logits, naive.step_logits):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=0)
    with torch.no_grad():
        theirs = hf.generate(prompt, max_new_tokens=8, do_sample=False, eos_token_id=None, pad_token_id=0,
                             min_new_tokens=8)
    assert torch.equal(ours.tokens, theirs), name


def test_router_choice_is_traced():
    hf, cfg = hf_model("mixtral")
    tiny = tinytf.from_hf(hf.state_dict(), cfg.to_dict())
    _, trace = tiny.run_with_trace(ids(T=5), names="blocks.*.ffn.router_*")
    topk = trace["blocks.0.ffn.router_topk"]
    assert topk.ids.shape == topk.weights.shape == (2, 5, 2)
    assert trace["blocks.0.ffn.router_logits"].shape == (2, 5, 4)
    torch.testing.assert_close(topk.weights.sum(-1), torch.ones(2, 5))  # Mixtral renormalises its top 2
    probs = trace["blocks.0.ffn.router_logits"].softmax(-1)
    assert torch.equal(topk.ids, probs.topk(2, dim=-1).indices)
    assert "router_topk" in trace.table()


def test_unsupported_model_type_and_fields_raise():
    with pytest.raises(tinytf.HFConfigError, match="model_type 'bert'"):
        tinytf.config_from_hf({"model_type": "bert"})
    base = dict(transformers.AutoConfig.for_model("llama", **SMALL).to_dict())
    with pytest.raises(tinytf.HFConfigError, match="rope_scaling.*longrope"):
        tinytf.config_from_hf(dict(base, rope_parameters=None, rope_theta=1e4,
                                   rope_scaling={"rope_type": "longrope", "factor": 4.0}))
    with pytest.raises(tinytf.HFConfigError, match="quantization_config"):
        tinytf.config_from_hf(dict(base, quantization_config={"quant_method": "fp8"}))
    with pytest.raises(tinytf.HFConfigError, match="attention_bias"):
        tinytf.config_from_hf(dict(base, attention_bias=True))
    with pytest.raises(tinytf.HFConfigError, match="hidden_act"):
        tinytf.config_from_hf(dict(base, hidden_act="gelu"))
    q = transformers.AutoConfig.for_model("qwen2", **SMALL).to_dict()
    with pytest.raises(tinytf.HFConfigError, match="use_sliding_window"):
        tinytf.config_from_hf(dict(q, use_sliding_window=True))
    g = transformers.AutoConfig.for_model("gpt2", n_embd=64, n_layer=2, n_head=4).to_dict()
    with pytest.raises(tinytf.HFConfigError, match="scale_attn_by_inverse_layer_idx"):
        tinytf.config_from_hf(dict(g, scale_attn_by_inverse_layer_idx=True))
    # an explicit ignore accepts the field (the math then differs there)
    cfg = tinytf.config_from_hf(dict(base, attention_bias=True), ignore=("attention_bias",))
    assert cfg.d_model == 64


def test_checkpoint_mismatch_names_the_tensor():
    hf, cfg = hf_model("llama")
    sd = dict(hf.state_dict())
    sd.pop("model.layers.1.mlp.up_proj.weight")
    with pytest.raises(tinytf.HFConfigError, match="blocks.1.ffn.up.weight"):
        tinytf.from_hf(sd, cfg.to_dict())
    sd = dict(hf.state_dict(), **{"model.layers.0.extra.weight": torch.zeros(3)})
    with pytest.raises(tinytf.HFConfigError, match="model.layers.0.extra.weight"):
        tinytf.from_hf(sd, cfg.to_dict())


@pytest.mark.parametrize("name,prefix,parts", [
    ("mixtral", "block_sparse_moe", ("w1", "w3", "w2")),  # the published Mixtral files
    ("qwen3_moe", "mlp", ("gate_proj", "up_proj", "down_proj")),
    ("deepseek_v3", "mlp", ("gate_proj", "up_proj", "down_proj")),
])
def test_published_per_expert_names_load_too(name, prefix, parts, one_torch_thread):
    """The published MoE checkpoints store one tensor per expert (experts.{j}.w1 ...); transformers 5 stacks
    them. from_hf takes either."""
    hf, cfg = hf_model(name)
    sd = {}
    for key, t in hf.state_dict().items():
        if key.endswith("mlp.experts.gate_up_proj"):
            base = key[: -len("mlp.experts.gate_up_proj")] + prefix + ".experts."
            gate, up = t.chunk(2, dim=1)
            for j in range(t.shape[0]):
                sd[f"{base}{j}.{parts[0]}.weight"], sd[f"{base}{j}.{parts[1]}.weight"] = gate[j], up[j]
        elif key.endswith("mlp.experts.down_proj"):
            base = key[: -len("mlp.experts.down_proj")] + prefix + ".experts."
            for j in range(t.shape[0]):
                sd[f"{base}{j}.{parts[2]}.weight"] = t[j]
        elif key.endswith("mlp.gate.weight") and prefix != "mlp":
            sd[key.replace("mlp.gate", prefix + ".gate")] = t
        else:
            sd[key] = t
    assert not any("gate_up_proj" in k for k in sd)
    tiny = tinytf.from_hf(sd, cfg.to_dict())
    x = ids()
    with torch.no_grad():
        assert (tiny(x) - hf(x).logits).abs().max() < 1e-4
