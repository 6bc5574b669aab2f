"""text-4l's ReLU twin: the preset that trains it, the activity measure, and the stored measurements."""
import copy
import dataclasses

import pytest
import torch

import tinytf
from tinytf.lab import relu_twin as R
from tinytf.lab import train as TR


def test_the_twin_preset_swaps_only_the_ffn():
    small, twin = TR.TEXT_PRESETS["small"], TR.TEXT_PRESETS["small-relu"]
    assert (twin.config.ffn, twin.config.d_ff, small.config.ffn, small.config.d_ff) == ("relu", 768, "swiglu", 512)
    assert dataclasses.replace(twin.config, ffn="swiglu", d_ff=512) == small.config
    assert dataclasses.replace(twin, checkpoint=small.checkpoint, description=small.description, config=small.config,
                               snapshot_fractions=small.snapshot_fractions) == small  # steps, lr, seed, ... the same
    n = [sum(p.numel() for p in TR.build_model("decoder", p.config).parameters()) for p in (small, twin)]
    assert n[0] == n[1]  # 2 * 192 * 768 = 3 * 192 * 512 per block
    assert twin.checkpoint != small.checkpoint  # never overwrites text-4l


def test_active_counts_match_a_direct_count():
    x = torch.randint(0, 256, (3, 16))
    for ffn, site in (("relu", "pre"), ("swiglu", "gate")):
        tinytf.seed_everything(0)
        model = tinytf.TinyTransformer(tinytf.TinyConfig(vocab_size=256, d_model=32, n_heads=2, n_layers=2, d_ff=48,
                                                         ffn=ffn))
        active, nonzero = R.active_counts(model, x, batch_size=2)
        _, t = model.run_with_trace(x)
        for b in range(2):
            assert torch.equal(active[b], (t[f"blocks.{b}.ffn.{site}"] > 0).sum((0, 1)))
            assert torch.equal(nonzero[b], (t[f"blocks.{b}.ffn.post"] != 0).sum((0, 1)))
        summary = R.block_summary(active, nonzero, x.numel())
        assert [s["units"] for s in summary] == [48, 48]
        if ffn == "relu":  # for ReLU, active and non-zero are the same units (pre-activations are never exactly 0)
            assert [s["dead"] for s in summary] == [s["silent"] for s in summary]
    with pytest.raises(tinytf.TinyTFInputError, match="measures 'relu' and 'swiglu'"):
        R.active_site(tinytf.TinyTransformer(tinytf.TinyConfig(ffn="gelu", n_layers=1)))


def test_block_summary_counts():
    active = torch.tensor([[0, 1, 50, 100]])
    summary = R.block_summary(active, active, 200)  # shares 0, 0.005, 0.25, 0.5
    assert summary == [{"units": 4, "dead": 1, "rare": 2, "median_share": 0.1275, "silent": 1}]


def synthetic_results():
    """A well-formed results dict (made-up numbers) for the consistency checks."""
    def model(ffn, d_ff, bpb):
        return {"ffn": ffn, "d_ff": d_ff, "active": "x > 0", "val_bpb": bpb, "n_positions": 100,
                "blocks": [{"units": d_ff, "dead": 1, "rare": 2, "median_share": 0.3, "silent": 1}] * 4}
    return {"settings": {"command": "python -m tinytf train --task text --preset small-relu", "seed": 0,
                         "steps": 1800, "corpus_sha256": "0" * 64},
            "models": {"text-4l": model("swiglu", 512, 2.0), "relu-twin": model("relu", 768, 2.1),
                       "relu-twin@step0": model("relu", 768, 8.0)}}


def test_check_rejects_inconsistent_files():
    R.check(synthetic_results())
    table = R.format_units(synthetic_results()).splitlines()
    assert "ReLU, untrained" in table[0] and len(table) == 2 + 4 + 1  # two header lines, 4 blocks, units line
    assert R.format_bpb(synthetic_results()).splitlines()[1].startswith("ReLU twin (ReLU MLP, d_ff 768)  ")
    two = R.format_units(synthetic_results(), models=("relu-twin@step0", "relu-twin")).splitlines()
    assert "ReLU, trained" in two[0] and "SwiGLU" not in two[0] and len(two) == 2 + 4 + 1
    assert len(two[2].split()) == 1 + 2 * 3  # block, then silent, <1%, median per group
    with pytest.raises(tinytf.TinyTFInputError, match="unknown models"):
        R.format_units(synthetic_results(), models=("gelu",))
    for change, match in ((lambda d: d["models"]["relu-twin"]["blocks"][0].update(dead=10 ** 6), "dead <= rare"),
                          (lambda d: d["models"]["relu-twin"]["blocks"][1].update(median_share=1.5), "median_share"),
                          (lambda d: d["models"]["text-4l"]["blocks"][2].update(silent=-1), "silent"),
                          (lambda d: d["models"]["text-4l"].update(d_ff=600), "units"),
                          (lambda d: d["models"].pop("relu-twin@step0"), "models"),
                          (lambda d: d["settings"].pop("corpus_sha256"), "corpus_sha256")):
        bad = copy.deepcopy(synthetic_results())
        change(bad)
        with pytest.raises(tinytf.TinyTFInputError, match=match):
            R.check(bad)
    with pytest.raises(tinytf.TinyTFInputError, match="not found"):
        R.load_results("/nonexistent/relu-twin.json")


def with_seed_1(data):
    """``data`` with a second pair (seed 1) recorded as scripts/relu_twin.py --seed 1 stores it."""
    data = copy.deepcopy(data)
    data["models"]["text-4l@seed1"] = dict(data["models"]["text-4l"], val_bpb=1.9)
    data["models"]["relu-twin@seed1"] = dict(data["models"]["relu-twin"], val_bpb=2.2)
    data["settings"]["seed_runs"] = {"1": {"command": "python -m tinytf train --task text --preset small-relu --seed 1"}}
    return data


def test_pairs_follow_the_seeds():
    assert R.pairs(synthetic_results()) == [(0, 2.0, 2.1, pytest.approx(-0.1))]
    two = with_seed_1(synthetic_results())
    R.check(two)
    assert R.extra_seeds(two) == [1]
    assert [(s, swi, rel) for s, swi, rel, _ in R.pairs(two)] == [(0, 2.0, 2.1), (1, 1.9, 2.2)]
    table = R.format_pairs(two).splitlines()
    assert table[2].split() == ["0", "2.000", "2.100", "-0.100"]
    assert table[3].split() == ["1", "1.900", "2.200", "-0.300"]
    assert table[4].split()[:2] == ["mean", "-0.200"] and "2 pairs" in table[4]
    for change, match in ((lambda d: d["models"].pop("text-4l@seed1"), "'text-4l@seed1' missing"),
                          (lambda d: d["settings"].pop("seed_runs"), "seed_runs"),
                          (lambda d: d["models"].update({"gelu-twin": d["models"]["relu-twin"]}), "unknown models"),
                          (lambda d: d["models"]["relu-twin@seed1"].update(ffn="swiglu"), "expected 'relu'")):
        bad = copy.deepcopy(two)
        change(bad)
        with pytest.raises(tinytf.TinyTFInputError, match=match):
            R.check(bad)


@pytest.mark.skipif(not R.RESULTS_PATH.exists(), reason="not measured yet: python scripts/relu_twin.py writes it")
def test_stored_results_are_consistent():
    data = R.load_results()
    s = data["settings"]
    assert "--preset small-relu" in s["command"] and s["seed"] == 0 and s["steps"] == 1800
    assert s["corpus_sha256"] == tinytf.lab.pretrained.info("text-4l")["corpus"]["sha256"]
    models = data["models"]
    assert models["text-4l"]["d_ff"] == 512 and models["relu-twin"]["d_ff"] == 768
    for name, m in models.items():
        assert m["n_positions"] == R.N_WINDOWS * R.SEQ_LEN
        assert len(m["blocks"]) == 4
        for blk in m["blocks"]:
            assert 0 <= blk["dead"] <= blk["rare"] <= blk["units"] == m["d_ff"]
            assert 0 <= blk["median_share"] <= 1
            if m["ffn"] == "relu":
                assert blk["silent"] == blk["dead"]
    # text-4l's stored bits per byte are those of its sidecar, measured the same way
    assert models["text-4l"]["val_bpb"] == pytest.approx(tinytf.lab.pretrained.info("text-4l")["metrics"]["val_bpb"],
                                                         abs=1e-4)
    assert models["relu-twin@step0"]["val_bpb"] > 7.5 > 3 > models["relu-twin"]["val_bpb"]  # untrained: ~8 bits
    assert "ReLU twin" in R.format_bpb(data) and "silent" in R.format_units(data)
