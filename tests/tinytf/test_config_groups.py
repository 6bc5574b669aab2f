"""TinyConfig's option groups (issue #21 item 4): a dense config is a one-liner, every variant's options sit in
one group, old flat dicts (JSON sidecars, saved results) still load, and bad keys or group values are clear
TinyTFInputErrors naming the field."""
import dataclasses
import json
from pathlib import Path

import pytest

import tinytf
from tinytf import MLAOptions, MoEOptions, SlidingWindow, TinyConfig, TinyTFInputError
from tinytf.config import FLAT_KEYS, GROUPS, nest_flat

ROOT = Path(tinytf.__file__).resolve().parent


def _flat(cfg: TinyConfig) -> dict:
    """The flat dict an older tinytf wrote for ``cfg`` (dataclasses.asdict before the groups existed)."""
    out = {k: v for k, v in cfg.to_dict().items() if k not in ("sliding_window", "moe", "mla")}
    out.update(sliding_window=None, layer_types=None, rope_theta_local=None, n_experts=0, experts_per_token=0,
               n_shared_experts=0, d_expert=None, n_dense_layers=0, router="softmax_renorm", router_groups=1,
               router_topk_groups=1, router_scale=1.0, mla_kv_rank=None, mla_q_rank=None, mla_rope_dim=0,
               mla_v_dim=None)
    old_name = {v: k for k, v in FLAT_KEYS.items()}
    for group in ("sliding_window", "moe", "mla"):
        value = getattr(cfg, group)
        if value is not None:
            for f in dataclasses.fields(value):
                entry = getattr(value, f.name)
                out[old_name[(group, f.name)]] = list(entry) if isinstance(entry, tuple) else entry
    return out


def test_a_plain_dense_config_is_a_one_liner():
    cfg = TinyConfig(d_model=64, n_layers=2)
    assert cfg.moe is None and cfg.mla is None and cfg.sliding_window is None and cfg.rope_scaling is None
    assert not cfg.is_moe_layer(0) and cfg.layer_type(1) == "global" and cfg.expert_width == cfg.d_ff
    assert tinytf.TinyTransformer(cfg).blocks[0].ffn.__class__.__name__ != "MoE"
    assert "moe" not in repr(cfg) and "sliding_window" not in repr(cfg)


def test_groups_hold_each_variant_and_repr_shows_only_what_is_set():
    cfg = TinyConfig(d_model=64, n_heads=4, d_ff=96, n_layers=3,
                     moe=MoEOptions(n_experts=4, experts_per_token=2, n_dense_layers=1))
    assert repr(cfg.moe) == "MoEOptions(n_experts=4, experts_per_token=2, n_dense_layers=1)"
    assert [cfg.is_moe_layer(i) for i in range(3)] == [False, True, True]
    assert cfg.diff(cfg.replace(moe=cfg.moe.replace(experts_per_token=1))) == {"moe.experts_per_token": (2, 1)}
    assert TinyConfig().diff(cfg)["moe"] == (None, cfg.moe)
    window = TinyConfig(n_layers=2, sliding_window=SlidingWindow(4, layer_types=("local", "global")))
    assert [window.layer_type(i) for i in range(2)] == ["local", "global"]
    assert TinyConfig(sliding_window=SlidingWindow(4)).layer_type(1) == "local"
    mla = TinyConfig(d_model=64, n_heads=4, head_dim=24, mla=MLAOptions(kv_rank=16, rope_dim=8, v_dim=16))
    assert (mla.rope_dim, mla.v_head, mla.d_head) == (8, 16, 24)


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "configs").glob("*.json")))
def test_every_shipped_hf_config_round_trips_through_flat_and_nested_dicts(name):
    from tinytf.lab.hf import config_from_hf, published_config

    cfg = config_from_hf(published_config(name), ignore=("quantization_config",))
    assert TinyConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert TinyConfig(**json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert TinyConfig.from_dict(json.loads(json.dumps(_flat(cfg)))) == cfg  # the form older files have


def _json_configs():
    """(file, config dict) for every config stored in a JSON file of the repository."""
    out = []
    for path in sorted((ROOT / "checkpoints").glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data.get("config"), dict):
            out.append((path.name, data["config"]))
        for key, c in (data.get("configs") or {}).items():
            out.append((f"{path.name}:{key}", c))
        if isinstance(data.get("settings"), dict) and isinstance(data["settings"].get("base"), dict):
            out.append((f"{path.name}:settings.base", data["settings"]["base"]))
    return out


@pytest.mark.parametrize("where,config", _json_configs(), ids=[w for w, _ in _json_configs()])
def test_every_config_in_the_repository_json_files_loads(where, config):
    cfg = TinyConfig.from_dict(config)
    assert TinyConfig.from_dict(cfg.to_dict()) == cfg
    assert all(getattr(cfg, k) == v for k, v in config.items() if k not in FLAT_KEYS)


def test_json_configs_are_found():
    names = {w.split(":")[0] for w, _ in _json_configs()}
    assert {"text-4l.json", "induction-2l.json", "compare_blocks.json", "qk_norm_logits.json"} <= names


def test_a_flat_dict_with_every_old_key_loads_into_the_groups():
    flat = dict(d_model=64, n_heads=4, n_layers=3, d_ff=96, n_experts=8, experts_per_token=2, n_shared_experts=1,
                d_expert=32, n_dense_layers=1, router="sigmoid_renorm", router_groups=2, router_topk_groups=1,
                router_scale=2.5, sliding_window=4, layer_types=["local", "local", "global"], rope_theta_local=1e4)
    cfg = TinyConfig.from_dict(flat)
    assert cfg.moe == MoEOptions(8, 2, d_expert=32, n_shared_experts=1, n_dense_layers=1, router="sigmoid_renorm",
                                 router_groups=2, router_topk_groups=1, router_scale=2.5)
    assert cfg.sliding_window == SlidingWindow(4, ("local", "local", "global"), 1e4)
    mla = TinyConfig.from_dict(dict(d_model=64, n_heads=4, head_dim=24, mla_kv_rank=16, mla_q_rank=24,
                                    mla_rope_dim=8, mla_v_dim=16))
    assert mla.mla == MLAOptions(kv_rank=16, rope_dim=8, q_rank=24, v_dim=16)
    off = TinyConfig.from_dict(dict(n_experts=0, mla_kv_rank=None, sliding_window=None, layer_types=("global",) * 2))
    assert off == TinyConfig()
    assert nest_flat({"moe": None, "d_model": 8}) == {"moe": None, "d_model": 8}


@pytest.mark.parametrize("flat,match", [
    (dict(experts_per_token=2), "experts_per_token=2 needs n_experts"),
    (dict(n_shared_experts=1), "needs n_experts"),
    (dict(mla_rope_dim=8), "needs mla_kv_rank"),
    (dict(mla_q_rank=8), "needs mla_kv_rank"),
    (dict(layer_types=("local", "global")), "needs sliding_window"),
    (dict(rope_theta_local=1e4), "needs sliding_window"),
    (dict(n_experts=4, experts_per_token=2, moe=dict(n_experts=4, experts_per_token=2)), "both given"),
    (dict(n_experts=4, experts_per_token=9), r"TinyConfig\.moe\.experts_per_token"),
    (dict(d_modle=64), "no field 'd_modle' .did you mean 'd_model'"),
])
def test_flat_dict_errors_are_clear(flat, match):
    with pytest.raises(TinyTFInputError, match=match):
        TinyConfig.from_dict(flat)


def test_old_keywords_and_unknown_keys_say_what_to_write_instead():
    with pytest.raises(TinyTFInputError, match=r"'n_experts' any more: it is moe\.n_experts.*MoEOptions"):
        TinyConfig(n_experts=8, experts_per_token=2)
    with pytest.raises(TinyTFInputError, match=r"mla\.kv_rank.*MLAOptions"):
        TinyConfig().replace(mla_kv_rank=16)
    with pytest.raises(TinyTFInputError, match="no field 'n_head' .did you mean 'n_heads'"):
        TinyConfig(n_head=4)
    with pytest.raises(TinyTFInputError, match="must be a SlidingWindow, a dict of its fields or None, got 4"):
        TinyConfig(sliding_window=4)
    with pytest.raises(TinyTFInputError, match=r"TinyConfig\.moe: MoEOptions needs n_experts, experts_per_token"):
        TinyConfig(moe={"n_experts": 4})
    with pytest.raises(TinyTFInputError, match="has no entry 'kv_rnak'"):
        TinyConfig(mla={"kv_rnak": 4})
    with pytest.raises(TinyTFInputError, match="takes a dict"):
        TinyConfig.from_dict([("d_model", 64)])


def test_checkpoint_loader_reads_flat_and_nested_configs_and_rejects_unknown_keys():
    from tinytf.lab.pretrained import CheckpointError, config_from_info

    flat = dict(d_model=64, n_heads=4, d_ff=96, n_experts=4, experts_per_token=2)
    assert config_from_info({"config": flat}).moe == MoEOptions(4, 2)
    assert config_from_info({"config": TinyConfig.from_dict(flat).to_dict()}) == TinyConfig.from_dict(flat)
    with pytest.raises(CheckpointError, match="does not know: d_modle"):
        config_from_info({"config": dict(d_modle=64)})
    with pytest.raises(CheckpointError, match="invalid config.*experts_per_token"):
        config_from_info({"config": dict(n_experts=4, experts_per_token=7)})


def test_every_group_is_documented_with_its_chapter():
    assert "chapter 11" in TinyConfig.__doc__ and "one-liner" in TinyConfig.__doc__
    for cls in GROUPS.values():
        assert "chapter 11" in cls.__doc__, cls
    for name in ("vocab_size", "n_heads", "norm", "d_ff", "norm_position", "n_layers", "n_encoder_layers"):
        assert f"``{name}``" in TinyConfig.__doc__
