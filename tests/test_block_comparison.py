"""tinytf.block_comparison and scripts/compare_blocks.py: the 2017-vs-2026 training comparison of chapter 9."""
import json

import pytest
import torch

import tinytf
from tinytf import block_comparison as bc


def test_configs_differ_only_in_the_block():
    configs = bc.block_configs()
    assert list(configs) == ["2017", "2017 + pre-norm", "2017 + RoPE", "2026"]
    old, new = configs["2017"], configs["2026"]
    assert set(old.diff(new)) == {"norm", "norm_position", "ffn", "d_ff", "pos", "bias", "n_kv_heads"}
    assert configs["2017 + pre-norm"].diff(old) == {"norm_position": ("pre", "post")}
    assert configs["2017 + RoPE"].diff(old) == {"pos": ("rope", "sinusoidal")}
    assert (old.n_layers, old.encoder_layers, new.n_layers, new.encoder_layers) == (4, 4, 4, 4)
    # SwiGLU at 8/3 d keeps the FFN at about the 2017 block's 8 d^2
    assert abs(3 * new.d_model * new.d_ff - 2 * old.d_model * old.d_ff) <= 3 * new.d_model


def test_short_run_is_reproducible_and_complete():
    configs = bc.block_configs(ablations=False)
    a = bc.run_comparison(configs, seeds=[0, 1], steps=3, eval_samples=6, progress=False)
    b = bc.run_comparison(configs, seeds=[0, 1], steps=3, eval_samples=6, progress=False)
    def numbers(res):  # everything but the wall time
        return {k: [{f: v for f, v in r.items() if f != "seconds"} for r in runs] for k, runs in res["runs"].items()}

    assert numbers(a) == numbers(b)
    assert [r["seed"] for r in a["runs"]["2026"]] == [0, 1]
    assert a["runs"]["2017"][0]["losses"] != a["runs"]["2017"][1]["losses"]  # seeds differ
    assert all(len(r["losses"]) == 3 for runs in a["runs"].values() for r in runs)
    assert bc.is_finite(a)
    json.dumps(a)  # JSON-able
    assert {k: tinytf.TinyConfig(**v) for k, v in a["configs"].items()} == configs


def test_two_processes_give_the_same_numbers_as_one():
    configs = bc.block_configs(ablations=False)
    one = bc.run_comparison(configs, seeds=[0], steps=2, eval_samples=6, progress=False)
    two = bc.run_comparison(configs, seeds=[0], steps=2, eval_samples=6, progress=False, jobs=2)
    for name in configs:
        assert [r["losses"] for r in one["runs"][name]] == [r["losses"] for r in two["runs"][name]]


def fake_results():
    runs = {"2017": [{"seed": s, "parameters": 10, "losses": [3.0, 2.0 + s, 1.0], "final_loss": 1.0 + s,
                      "metrics": {"loss": 2.0 + s, "token_accuracy": 0.1, "exact_match": 0.0}} for s in (0, 1, 2)],
            "2026": [{"seed": s, "parameters": 8, "losses": [3.0, 1.0, 0.5 + s], "final_loss": 0.5 + s,
                      "metrics": {"loss": 1.0 + s / 2, "token_accuracy": 0.9, "exact_match": 0.5}} for s in (0, 1, 2)]}
    return {"settings": {}, "configs": {}, "runs": runs}


def test_summary_statistics():
    s = bc.summarise(fake_results())
    assert s["2017"]["eval_loss"] == {"mean": 3.0, "std": 1.0, "min": 2.0, "max": 4.0, "n": 3}
    assert s["2026"]["parameters"] == 8
    assert bc.paired_differences(fake_results()) == [(0, 1.0), (1, 1.5), (2, 2.0)]
    table = bc.summary_table(fake_results())
    assert "2017" in table and "3.000  1.000  2.000 .. 4.000" in table


def test_curve_band_and_smoothing():
    assert bc.smooth([1, 3, 5, 7], window=2) == [1, 2, 4, 6]
    band = bc.curve_band(fake_results()["runs"]["2017"], window=1)
    assert band["mean"] == [3.0, 3.0, 1.0] and band["min"] == [3.0, 2.0, 1.0] and band["max"] == [3.0, 4.0, 1.0]


def test_shipped_results_load_and_match_the_defaults():
    r = bc.load_results()
    d = bc.DEFAULTS
    assert r["settings"]["steps"] == d["steps"] and r["settings"]["seeds"] == list(d["seeds"])
    assert len(r["settings"]["seeds"]) >= 3
    assert bc.configs_of(r) == bc.block_configs()
    for runs in r["runs"].values():
        assert [x["seed"] for x in runs] == list(d["seeds"]) and all(len(x["losses"]) == d["steps"] for x in runs)
    assert bc.is_finite(r)


def test_bad_results_file(tmp_path):
    with pytest.raises(tinytf.TinyTFInputError, match="does not exist"):
        bc.load_results(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(tinytf.TinyTFInputError, match="not valid JSON"):
        bc.load_results(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(tinytf.TinyTFInputError, match="no 'settings'"):
        bc.load_results(tmp_path / "other.json")
    with pytest.raises(tinytf.TinyTFInputError, match="seed"):
        bc.run_comparison(seeds=[], progress=False)
