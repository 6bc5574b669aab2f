"""Hugging Face interop: read a model's ``config.json`` into a TinyConfig and load its checkpoint tensors.

    cfg = tinytf.config_from_hf(json.load(open("config.json")))
    model = tinytf.from_hf(state_dict, hf_config)   # logits equal to the HF model's (float32, within 1e-4)

Families (``model_type``): llama, mistral, qwen2, qwen3, qwen3_moe, mixtral, gemma3_text, olmo2,
deepseek_v3, gpt2. Both the published ``config.json`` layout (``rope_theta`` / ``rope_scaling``) and the
layout that transformers 5 writes (``rope_parameters``) are read.

Nothing is silently dropped: a ``model_type`` tinytf does not know, or a field whose value changes the math
and that tinytf does not implement (e.g. ``rope_scaling`` of type "dynamic" or "longrope", biases where the
family has none, sliding windows on Qwen, fp8 ``quantization_config``), raises :class:`HFConfigError` naming the field. ``ignore=("rope_scaling",)`` accepts such
fields on purpose (e.g. to count parameters, which they do not change); the model then differs from the
HF one in exactly those fields.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import torch

from ..config import MLAOptions, MoEOptions, RopeScaling, SlidingWindow, TinyConfig
from ..models import TinyTransformer
from ..positions import yarn_mscale

__all__ = ["HFConfigError", "config_from_hf", "from_hf", "hf_state_dict_names", "SUPPORTED_MODEL_TYPES",
           "published_config", "PUBLISHED_CONFIGS"]

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
#: names of the published config.json files shipped in tinytf/configs (e.g. "Llama-3-8B", "DeepSeek-V3")
PUBLISHED_CONFIGS = tuple(sorted(p.stem for p in CONFIG_DIR.glob("*.json")))

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "mixtral", "gemma3_text", "olmo2",
                         "deepseek_v3", "gpt2")


class HFConfigError(ValueError):
    """A Hugging Face config (or checkpoint) that tinytf cannot reproduce exactly; the message names the field."""


def published_config(name: str) -> dict:
    """The published config.json of a model (as shipped in tinytf/configs), e.g. published_config("Qwen3-0.6B")."""
    if name not in PUBLISHED_CONFIGS:
        raise HFConfigError(f"no shipped config {name!r}; choose one of {', '.join(PUBLISHED_CONFIGS)}")
    return json.loads((CONFIG_DIR / f"{name}.json").read_text())


def _as_dict(config) -> dict:
    if isinstance(config, dict):
        return config
    if hasattr(config, "to_dict"):  # a transformers PretrainedConfig
        return config.to_dict()
    raise HFConfigError(f"expected a config.json dict (or a transformers config), got {type(config).__name__}")


class _Reader:
    """Reads fields of one HF config; remembers the model_type for messages and the accepted ``ignore``s."""

    def __init__(self, d: dict, ignore):
        self.d, self.ignore = d, set(ignore)
        self.model_type = d.get("model_type")

    def get(self, key, default=None):
        value = self.d.get(key, default)
        return default if value is None else value

    def need(self, key):
        if self.d.get(key) is None:
            raise HFConfigError(f"{self.model_type} config: the field {key!r} is missing")
        return self.d[key]

    def refuse(self, key, why):
        if key not in self.ignore:
            raise HFConfigError(f"{self.model_type} config: {key}={self.d.get(key)!r} is not supported by tinytf "
                                f"({why}); pass ignore=({key!r},) to accept a model whose math differs there")

    def expect(self, key, allowed, why):
        value = self.d.get(key)
        if value is not None and value not in allowed:
            self.refuse(key, why)

    def rope(self, layer_type: str = "full_attention", default_theta: float = 10000.0):
        """(theta, RopeScaling or None) for one kind of layer."""
        params = self.d.get("rope_parameters")
        if isinstance(params, dict) and layer_type in params and isinstance(params[layer_type], dict):
            params = params[layer_type]  # per-layer-type RoPE (Gemma 3 in transformers 5)
        if params is None:  # the published config.json layout
            theta = self.get("rope_theta", default_theta)
            scaling = self.d.get("rope_scaling")
        else:
            theta = params.get("rope_theta", self.get("rope_theta", default_theta))
            scaling = params
        if params is not None and params.get("partial_rotary_factor", 1.0) != 1.0:
            self.refuse("partial_rotary_factor", "RoPE on part of each head is implemented for MLA only")
        if self.get("partial_rotary_factor", 1.0) != 1.0:
            self.refuse("partial_rotary_factor", "RoPE on part of each head is implemented for MLA only")
        if not scaling:
            return float(theta), None
        kind = scaling.get("rope_type", scaling.get("type", "default"))
        if kind == "default":
            return float(theta), None
        if kind == "linear":
            return float(theta), RopeScaling("linear", float(scaling["factor"]))
        if kind == "llama3":
            return float(theta), RopeScaling("llama3", float(scaling["factor"]), float(scaling["low_freq_factor"]),
                                             float(scaling["high_freq_factor"]),
                                             int(scaling["original_max_position_embeddings"]))
        if kind == "yarn":
            orig = scaling.get("original_max_position_embeddings") or self.need("max_position_embeddings")
            factor = scaling.get("factor") or self.need("max_position_embeddings") / orig
            opt = {k: (float(scaling[k]) if scaling.get(k) is not None else None)
                   for k in ("mscale", "mscale_all_dim", "attention_factor")}
            return float(theta), RopeScaling("yarn", float(factor), original_max_seq_len=int(orig),
                                             beta_fast=float(scaling.get("beta_fast") or 32),
                                             beta_slow=float(scaling.get("beta_slow") or 1),
                                             truncate=bool(scaling.get("truncate", True)), **opt)
        key = "rope_scaling" if "rope_scaling" in self.d else "rope_parameters"
        self.refuse(key, f"rope type {kind!r}: tinytf implements 'default', 'linear', 'llama3' and 'yarn'")
        return float(theta), None

    def activation(self, key, allowed=("silu",)):
        value = self.get(key, allowed[0])
        if value not in allowed:
            self.refuse(key, f"tinytf's gated FFN here uses {allowed[0]!r}")


def _common(r: _Reader) -> dict:
    """Fields shared by the Llama-like families."""
    d_model, n_heads = r.need("hidden_size"), r.need("num_attention_heads")
    kv = r.get("num_key_value_heads", n_heads)
    head_dim = r.get("head_dim")
    out = dict(vocab_size=r.need("vocab_size"), d_model=d_model, n_layers=r.need("num_hidden_layers"),
               n_heads=n_heads, n_kv_heads=None if kv == n_heads else kv, d_ff=r.need("intermediate_size"),
               norm="rms", norm_position="pre", ffn="swiglu", pos="rope",
               max_seq_len=r.get("max_position_embeddings", 2048), bias=False,
               tie_embeddings=bool(r.get("tie_word_embeddings", False)), eps=float(r.get("rms_norm_eps", 1e-6)))
    if head_dim is not None and (d_model % n_heads or head_dim != d_model // n_heads):
        out["head_dim"] = head_dim
    theta, scaling = r.rope()
    out.update(rope_theta=theta, rope_scaling=scaling)
    r.activation("hidden_act")
    if r.get("attention_bias", False):
        r.refuse("attention_bias", "this family's attention has no biases in tinytf")
    if r.get("mlp_bias", False):
        r.refuse("mlp_bias", "this family's FFN has no biases in tinytf")
    return out


def _no_qwen_window(r: _Reader):
    if r.get("use_sliding_window", False):
        r.refuse("use_sliding_window", "Qwen's sliding window on the layers past max_window_layers")


def _moe(r: _Reader, n_experts_keys, renorm: bool) -> dict:
    n = next((r.d[k] for k in n_experts_keys if r.d.get(k) is not None), None)
    if n is None:
        raise HFConfigError(f"{r.model_type} config: the field {n_experts_keys[0]!r} is missing")
    return dict(n_experts=n, experts_per_token=r.need("num_experts_per_tok"),
                router="softmax_renorm" if renorm else "softmax")  # the entries of MoEOptions


def config_from_hf(config, *, ignore=()) -> TinyConfig:
    """A TinyConfig from a Hugging Face config.json dict (or transformers config object).

    Raises HFConfigError for an unsupported model_type or for any field whose value changes the math in a
    way tinytf does not implement (unless that field is named in ``ignore``)."""
    d = _as_dict(config)
    r = _Reader(d, ignore)
    mt = r.model_type
    if mt not in SUPPORTED_MODEL_TYPES:
        raise HFConfigError(f"model_type {mt!r} is not supported by tinytf.config_from_hf; supported: "
                            f"{', '.join(SUPPORTED_MODEL_TYPES)}")
    if d.get("quantization_config"):
        r.refuse("quantization_config", "tinytf computes with the float weights; quantised storage rounds them")
    if mt == "gpt2":
        return _gpt2(r)
    if mt == "deepseek_v3":
        return _deepseek_v3(r)
    out = _common(r)
    if mt in ("llama", "mistral", "mixtral"):
        if mt == "llama" and r.get("attention_bias", False):
            pass  # already refused in _common
        window = r.get("sliding_window") if mt in ("mistral", "mixtral") else None
        if window is not None:
            out["sliding_window"] = SlidingWindow(window)  # every layer local
        if mt == "mixtral":
            out["moe"] = MoEOptions(**_moe(r, ("num_local_experts",), renorm=True))
    elif mt in ("qwen2", "qwen3", "qwen3_moe"):
        _no_qwen_window(r)
        if mt == "qwen2":
            out["qkv_bias"] = True  # Qwen2 always has a Q/K/V bias
        else:
            out["qk_norm"] = "head"
        if mt == "qwen3_moe":
            out["moe"] = MoEOptions(**_moe(r, ("num_experts", "num_local_experts"),
                                           renorm=bool(r.get("norm_topk_prob", False))),
                                    d_expert=r.need("moe_intermediate_size"))
            if r.get("decoder_sparse_step", 1) != 1:
                r.refuse("decoder_sparse_step", "tinytf puts an MoE FFN in every layer past n_dense_layers")
            if r.get("mlp_only_layers", []):
                r.refuse("mlp_only_layers", "tinytf's dense layers are the first n_dense_layers only")
    elif mt == "olmo2":
        out.update(norm_position="post_sublayer", qk_norm="proj")
    elif mt == "gemma3_text":
        _gemma3(r, out)
    return TinyConfig(**out)


def _gemma3(r: _Reader, out: dict):
    r.activation("hidden_activation", ("gelu_pytorch_tanh",))
    if r.d.get("hidden_activation") is None and r.d.get("hidden_act") not in (None, "gelu_pytorch_tanh"):
        r.refuse("hidden_act", "Gemma 3's FFN is GeLU(tanh)-gated")
    n = out["n_layers"]
    types = r.d.get("layer_types")
    if types is None:
        pattern = r.get("sliding_window_pattern", r.get("_sliding_window_pattern", 6))
        types = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)]
    bad = [t for t in types if t not in ("sliding_attention", "full_attention")]
    if bad:
        r.refuse("layer_types", f"unknown layer type {bad[0]!r}")
    theta, scaling = r.rope("full_attention", 1_000_000.0)
    params = r.d.get("rope_parameters")
    if isinstance(params, dict) and isinstance(params.get("sliding_attention"), dict):
        local_theta, local_scaling = r.rope("sliding_attention")
        if local_scaling is not None:
            r.refuse("rope_parameters", "RoPE scaling of the local layers")
    else:
        local_theta = float(r.get("rope_local_base_freq", 10000.0))
    for key in ("attn_logit_softcapping",):
        if r.d.get(key) is not None:
            r.refuse(key, "soft-capping of attention scores is not implemented (Gemma 2 only)")
    if r.get("use_bidirectional_attention", False):
        r.refuse("use_bidirectional_attention", "tinytf's decoder is causal")
    out.update(norm="rms_offset", norm_position="sandwich", ffn="geglu", qk_norm="head", scale_embeddings=True,
               attn_scale=float(r.get("query_pre_attn_scalar", out.get("head_dim") or out["d_model"] // out["n_heads"]))
               ** -0.5, sliding_window=SlidingWindow(
                   r.need("sliding_window"), rope_theta_local=local_theta,
                   layer_types=tuple("local" if t == "sliding_attention" else "global" for t in types)),
               rope_theta=theta, rope_scaling=scaling,
               logit_softcap=r.d.get("final_logit_softcapping"), tie_embeddings=bool(r.get("tie_word_embeddings", True)))
    if "head_dim" not in out and r.d.get("head_dim") is not None:
        out["head_dim"] = r.d["head_dim"]


def _deepseek_v3(r: _Reader) -> TinyConfig:
    n_heads = r.need("num_attention_heads")
    kv = r.get("num_key_value_heads", n_heads)
    if kv != n_heads:
        r.refuse("num_key_value_heads", "MLA has one key/value head per query head")
    r.activation("hidden_act")
    if r.get("attention_bias", False):
        r.refuse("attention_bias", "tinytf's MLA has no biases")
    r.expect("topk_method", ("noaux_tc",), "tinytf implements DeepSeek-V3's noaux_tc routing")
    r.expect("scoring_func", ("sigmoid",), "tinytf implements DeepSeek-V3's sigmoid scores")
    if r.get("moe_layer_freq", 1) != 1:
        r.refuse("moe_layer_freq", "tinytf puts an MoE FFN in every layer past n_dense_layers")
    rope_dim, nope = r.need("qk_rope_head_dim"), r.need("qk_nope_head_dim")
    theta, scaling = r.rope()
    attn_scale = None
    if scaling is not None and scaling.kind != "yarn":
        key = "rope_scaling" if "rope_scaling" in r.d else "rope_parameters"
        r.refuse(key, f"RoPE scaling {scaling.kind!r} with MLA (DeepSeek-V3 uses 'yarn')")
    if scaling is not None and scaling.mscale_all_dim:  # YaRN also rescales MLA's softmax (as transformers does)
        attn_scale = (nope + rope_dim) ** -0.5 * yarn_mscale(scaling.factor, scaling.mscale_all_dim) ** 2
    return TinyConfig(
        rope_scaling=scaling, attn_scale=attn_scale,
        vocab_size=r.need("vocab_size"), d_model=r.need("hidden_size"), n_layers=r.need("num_hidden_layers"),
        n_heads=n_heads, d_ff=r.need("intermediate_size"), norm="rms", norm_position="pre", ffn="swiglu",
        pos="rope", max_seq_len=r.get("max_position_embeddings", 4096), bias=False,
        tie_embeddings=bool(r.get("tie_word_embeddings", False)), eps=float(r.get("rms_norm_eps", 1e-6)),
        rope_theta=theta, head_dim=nope + rope_dim,
        rope_pairing="interleaved" if r.get("rope_interleave", True) else "half",
        mla=MLAOptions(kv_rank=r.need("kv_lora_rank"), rope_dim=rope_dim, q_rank=r.d.get("q_lora_rank"),
                       v_dim=r.need("v_head_dim")),
        moe=MoEOptions(
            n_experts=r.need("n_routed_experts"), experts_per_token=r.need("num_experts_per_tok"),
            d_expert=r.need("moe_intermediate_size"), n_shared_experts=r.get("n_shared_experts", 0),
            n_dense_layers=r.get("first_k_dense_replace", 0),
            router="sigmoid_renorm" if r.get("norm_topk_prob", True) else "sigmoid",
            router_groups=r.get("n_group", 1), router_topk_groups=r.get("topk_group", 1),
            router_scale=float(r.get("routed_scaling_factor", 1.0))))


def _gpt2(r: _Reader) -> TinyConfig:
    act = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
    a = r.get("activation_function", "gelu_new")
    if a not in act:
        r.refuse("activation_function", "tinytf's MLP has relu, gelu and gelu_tanh (gelu_new)")
    if not r.get("scale_attn_weights", True):
        r.refuse("scale_attn_weights", "tinytf always scales q . k by 1/sqrt(d_head)")
    if r.get("scale_attn_by_inverse_layer_idx", False):
        r.refuse("scale_attn_by_inverse_layer_idx", "a per-layer attention scale")
    if r.get("add_cross_attention", False):
        r.refuse("add_cross_attention", "tinytf's GPT-2 is decoder-only")
    d = r.need("n_embd")
    return TinyConfig(vocab_size=r.need("vocab_size"), d_model=d, n_layers=r.need("n_layer"), n_heads=r.need("n_head"),
                      d_ff=r.get("n_inner", 4 * d), norm="layer", norm_position="pre", ffn=act.get(a, "gelu_tanh"),
                      pos="learned", max_seq_len=r.get("n_positions", 1024), bias=True,
                      tie_embeddings=bool(r.get("tie_word_embeddings", True)),
                      eps=float(r.get("layer_norm_epsilon", 1e-5)))


# --- checkpoint tensors -----------------------------------------------------------------------------------

_LLAMA_LAYER = {
    "self_attn.q_proj": "attn.q_proj", "self_attn.k_proj": "attn.k_proj", "self_attn.v_proj": "attn.v_proj",
    "self_attn.o_proj": "attn.o_proj", "self_attn.q_norm": "attn.q_norm", "self_attn.k_norm": "attn.k_norm",
    "mlp.gate_proj": "ffn.gate", "mlp.up_proj": "ffn.up", "mlp.down_proj": "ffn.down",
    # MLA (DeepSeek-V3)
    "self_attn.q_a_proj": "attn.q_down", "self_attn.q_a_layernorm": "attn.q_norm", "self_attn.q_b_proj": "attn.q_up",
    "self_attn.kv_a_proj_with_mqa": "attn.kv_down", "self_attn.kv_a_layernorm": "attn.kv_norm",
    "self_attn.kv_b_proj": "attn.kv_up",
    # MoE
    "mlp.gate": "ffn.router", "block_sparse_moe.gate": "ffn.router",
    "mlp.shared_experts.gate_proj": "ffn.shared.gate", "mlp.shared_experts.up_proj": "ffn.shared.up",
    "mlp.shared_experts.down_proj": "ffn.shared.down",
}
_NORMS = {  # per norm placement: HF layer norm name -> tinytf
    "pre": {"input_layernorm": "norm1", "post_attention_layernorm": "norm2"},
    "post_sublayer": {"post_attention_layernorm": "norm1", "post_feedforward_layernorm": "norm2"},
    "sandwich": {"input_layernorm": "norm1.pre", "post_attention_layernorm": "norm1.post",
                 "pre_feedforward_layernorm": "norm2.pre", "post_feedforward_layernorm": "norm2.post"},
}
_EXPERT = re.compile(r"^(mlp|block_sparse_moe)\.experts\.(\d+)\.(w1|w2|w3|gate_proj|up_proj|down_proj)\.weight$")
_EXPERT_PART = {"w1": "gate", "gate_proj": "gate", "w3": "up", "up_proj": "up", "w2": "down", "down_proj": "down"}
_SKIP = re.compile(r"(rotary_emb\.inv_freq|\.attn\.masked_bias|\.attn\.bias)$")


def _llama_like(hf: dict, cfg: TinyConfig, model_sd: dict) -> dict:
    out, experts = {}, {}
    norms = _NORMS[cfg.norm_position]
    for name, t in hf.items():
        if _SKIP.search(name):
            continue
        if name == "lm_head.weight":
            if not cfg.tie_embeddings:
                out["lm_head.weight"] = t
            continue
        m = re.match(r"^model\.(embed_tokens|norm)\.weight$", name)
        if m:
            out["embed.weight" if m.group(1) == "embed_tokens" else "final_norm.weight"] = t
            continue
        m = re.match(r"^model\.layers\.(\d+)\.(.+)$", name)
        if not m:
            raise HFConfigError(f"checkpoint tensor {name!r} has no place in tinytf's model")
        i, rest = int(m.group(1)), m.group(2)
        pre = f"blocks.{i}."
        mod, _, leaf = rest.rpartition(".")
        e = _EXPERT.match(rest)
        if e:  # one expert per tensor (the published Mixtral / Qwen3-MoE / DeepSeek files)
            experts.setdefault((i, _EXPERT_PART[e.group(3)]), {})[int(e.group(2))] = t
        elif rest in ("mlp.experts.gate_up_proj", "mlp.experts.down_proj"):  # transformers 5: stacked experts
            if rest.endswith("gate_up_proj"):
                gate, up = t.chunk(2, dim=1)
                out[pre + "ffn.experts.gate"], out[pre + "ffn.experts.up"] = gate, up
            else:
                out[pre + "ffn.experts.down"] = t
        elif rest == "mlp.gate.e_score_correction_bias":
            out[pre + "ffn.router.bias"] = t
        elif mod in norms:
            out[pre + norms[mod] + "." + leaf] = t
        elif mod in _LLAMA_LAYER:
            target = _LLAMA_LAYER[mod]
            if target == "attn.q_proj" and cfg.mla:
                target = "attn.q_proj"
            out[pre + target + "." + leaf] = t
        else:
            raise HFConfigError(f"checkpoint tensor {name!r} has no place in tinytf's model")
    for (i, part), ts in experts.items():
        out[f"blocks.{i}.ffn.experts.{part}"] = torch.stack([ts[j] for j in sorted(ts)])
    return out


def _gpt2_names(hf: dict, cfg: TinyConfig, model_sd: dict) -> dict:
    out, C = {}, cfg.d_model
    for name, t in hf.items():
        name = name.removeprefix("transformer.")
        if _SKIP.search(name):
            continue
        top = {"wte.weight": "embed.weight", "wpe.weight": "pos.weight", "ln_f.weight": "final_norm.weight",
               "ln_f.bias": "final_norm.bias"}
        if name in top:
            out[top[name]] = t
            continue
        if name == "lm_head.weight":
            if not cfg.tie_embeddings:
                out["lm_head.weight"] = t
            continue
        m = re.match(r"^h\.(\d+)\.(.+)\.(weight|bias)$", name)
        if not m:
            raise HFConfigError(f"checkpoint tensor {name!r} has no place in tinytf's model")
        pre, mod, leaf = f"blocks.{m.group(1)}.", m.group(2), m.group(3)
        if mod in ("ln_1", "ln_2"):
            out[pre + ("norm1." if mod == "ln_1" else "norm2.") + leaf] = t
        elif mod == "attn.c_attn":  # Conv1D: weight [C, 3C] (in, out), the transpose of nn.Linear's
            parts = t.split(C, dim=-1)
            for p, piece in zip("qkv", parts):
                out[f"{pre}attn.{p}_proj.{leaf}"] = piece.t() if leaf == "weight" else piece
        elif mod in ("attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
            target = {"attn.c_proj": "attn.o_proj", "mlp.c_fc": "ffn.up", "mlp.c_proj": "ffn.down"}[mod]
            out[f"{pre}{target}.{leaf}"] = t.t() if leaf == "weight" else t
        else:
            raise HFConfigError(f"checkpoint tensor {name!r} has no place in tinytf's model")
    return out


def hf_state_dict_names(state_dict: dict, config) -> dict:
    """The checkpoint's tensors renamed (and reshaped where the layouts differ) to tinytf's state_dict names."""
    d = _as_dict(config)
    cfg = config_from_hf(d)
    convert = _gpt2_names if d.get("model_type") == "gpt2" else _llama_like
    return convert(state_dict, cfg, None)


def from_hf(state_dict: dict, config, *, ignore=()):
    """A TinyTransformer holding a Hugging Face checkpoint's weights (names as in the HF model's state_dict,
    or the per-expert names of the published MoE files). Every tinytf parameter must be filled and every
    checkpoint tensor used, else HFConfigError names the tensor."""
    d = _as_dict(config)
    cfg = config_from_hf(d, ignore=ignore)
    with torch.device("meta"):
        model = TinyTransformer(cfg)
    convert = _gpt2_names if d.get("model_type") == "gpt2" else _llama_like
    tensors = convert(state_dict, cfg, None)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors) - ({"lm_head.weight"} if cfg.tie_embeddings else set()))
    unknown = sorted(set(tensors) - set(expected))
    if missing or unknown:
        raise HFConfigError(f"checkpoint does not match the {d.get('model_type')} config: "
                            f"missing {missing[:5]}{'...' if len(missing) > 5 else ''}, "
                            f"unexpected {unknown[:5]}{'...' if len(unknown) > 5 else ''}")
    for name, t in tensors.items():
        if tuple(t.shape) != tuple(expected[name].shape):
            raise HFConfigError(f"tensor {name}: checkpoint shape {list(t.shape)}, tinytf expects "
                                f"{list(expected[name].shape)}")
    model = TinyTransformer(cfg)  # a real model (initialised), then filled
    model.load_state_dict({k: v.detach().to(torch.float32) if v.is_floating_point() else v
                           for k, v in tensors.items()}, strict=not cfg.tie_embeddings)
    if cfg.tie_embeddings:
        model.lm_head.weight = model.embed.weight
    return model.eval()
