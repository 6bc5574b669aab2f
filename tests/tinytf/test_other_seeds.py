"""The recorded other-seed runs (scripts/other_seeds.py, tinytf.lab.other_seeds): their seed-0 rows are the
shipped checkpoints, measured as the chapters measure them, and the tables and loader behave."""
import json

import pytest
import torch

import tinytf
from tinytf.errors import TinyTFInputError
from tinytf.lab import ablation, head_stats, other_seeds, pretrained

RUNS = other_seeds.load_results()


def test_text_seed0_is_the_shipped_model():
    row = RUNS["text-4l"]["0"]
    assert row["val_bpb"] == pytest.approx(pretrained.info("text-4l")["metrics"]["val_bpb"], abs=0.02)
    summary = ablation.summarise(ablation.load_results()["bits"], 4)  # chapter 12's recorded ablations
    for label in other_seeds.ABLATIONS:
        assert row[label] == pytest.approx(summary[label]["mean"], abs=0.02), label


def test_reversal_seed0_matches_a_live_measurement():
    torch.set_num_threads(1)
    row = RUNS["reversal-2l"]["0"]
    live = head_stats.anti_diagonal_summary(tinytf.pretrained("reversal-2l"), "reversal-2l", n_samples=row["n_samples"])
    assert [s.mean for s in live["uniform_multiple"]] == pytest.approx(row["uniform_multiple"], abs=1e-3)
    info = pretrained.info("reversal-2l")["metrics"]
    assert (row["token_accuracy"], row["exact_match"]) == (info["token_accuracy"], info["exact_match"])


def test_every_run_is_recorded_with_its_seed():
    assert len(RUNS["text-4l"]) >= 2 and len(RUNS["reversal-2l"]) >= 3
    for rows in (RUNS["text-4l"], RUNS["reversal-2l"]):
        assert "0" in rows and all(int(s) >= 0 for s in rows)
    for row in RUNS["text-4l"].values():
        assert {"val_bpb", *other_seeds.ABLATIONS} <= set(row) <= {"val_bpb", *other_seeds.ABLATIONS, "window_bits"}
        assert all(row[label] > row["val_bpb"] for label in other_seeds.ABLATIONS)  # every ablation costs bits


def test_window_bits_give_the_means_and_the_margins():
    modules = RUNS["settings"]["window_modules"]
    assert len(modules) == other_seeds.WINDOWS[0] and 2 < len(set(modules)) < len(modules)
    recorded = ablation.load_results()["bits"]  # chapter 12's per-window bits of seed 0
    assert "window_bits" in RUNS["text-4l"]["0"]
    for seed, row in RUNS["text-4l"].items():
        if "window_bits" not in row:  # recorded before per-window bits were kept: the margin has no SE
            assert other_seeds.margin(RUNS, seed, "mean") == (row["ffn mean"] - row["attn mean"], None)
            continue
        bits = row["window_bits"]
        assert set(bits) == {"intact", *other_seeds.ABLATIONS} and all(len(v) == len(modules) for v in bits.values())
        for label in other_seeds.ABLATIONS:
            assert sum(bits[label]) / len(modules) == pytest.approx(row[label], abs=1e-4)
            if seed == "0":
                assert bits[label] == pytest.approx(recorded[label], abs=1e-4)
        for how in ("zero", "mean"):
            mean, se = other_seeds.margin(RUNS, seed, how)
            assert mean == pytest.approx(row[f"ffn {how}"] - row[f"attn {how}"], abs=1e-4) and 0 < se < abs(mean) + 1


def test_margin_is_paired_and_clustered():
    fake = {"settings": {"window_modules": ["a", "a", "b", "b"]},
            "text-4l": {"0": {"window_bits": {"ffn mean": [3.0, 3.0, 2.0, 2.0], "attn mean": [2.0, 2.0, 2.0, 2.0]}}}}
    mean, se = other_seeds.margin(fake, "0", "mean")  # per window 1, 1, 0, 0: module sums of deviations +1, -1
    assert mean == pytest.approx(0.5) and se == pytest.approx((2 / 1 * 2) ** 0.5 / 4)
    with pytest.raises(TinyTFInputError, match="zero"):
        other_seeds.margin(fake, "0", "half")
    assert other_seeds.margin({"text-4l": {"1": {"ffn zero": 3.0, "attn zero": 2.5}}}, "1", "zero") == (0.5, None)


def test_margin_either_way_round():
    """first="attn" is the same paired difference the other way round: the mean negated, the same standard error."""
    for seed in RUNS["text-4l"]:
        for how in ("zero", "mean"):
            (m, se), (m_attn, se_attn) = (other_seeds.margin(RUNS, seed, how, first=f) for f in ("ffn", "attn"))
            assert m_attn == pytest.approx(-m, abs=1e-12) and (se_attn is None) == (se is None)
            assert se is None or se_attn == pytest.approx(se, abs=1e-12)
    with pytest.raises(TinyTFInputError, match="first"):
        other_seeds.margin(RUNS, "0", "mean", first="mlp")


def test_tables_have_one_row_per_seed():
    text = other_seeds.format_text_table(RUNS).splitlines()
    assert len(text) == 2 + len(RUNS["text-4l"]) and text[2].endswith("(shipped)")
    rev = other_seeds.format_reversal_table(RUNS).splitlines()
    assert len(rev) == 2 + len(RUNS["reversal-2l"]) and "block 1: x uniform" in rev[0]


def test_missing_or_foreign_file_is_a_clear_error(tmp_path):
    with pytest.raises(TinyTFInputError, match="other_seeds.py"):
        other_seeds.load_results(tmp_path / "none.json")
    (tmp_path / "other.json").write_text(json.dumps({"bits": {}}))
    with pytest.raises(TinyTFInputError, match="other-seeds"):
        other_seeds.load_results(tmp_path / "other.json")


def test_shipped_seed1_text_model_is_the_recorded_run():
    torch.set_num_threads(1)
    lm1 = other_seeds.load_text_model(1)
    assert lm1.checkpoint_info["seed"] == 1
    assert lm1.config == tinytf.pretrained("text-4l").config
    bpb = tinytf.textdata.bits_per_byte(lm1, tinytf.textdata.stdlib_corpus().val)
    assert bpb == pytest.approx(RUNS["text-4l"]["1"]["val_bpb"], abs=1e-4)
    assert "text-4l-seed1" not in pretrained.names()  # a second run, not a listed model
    with pytest.raises(TinyTFInputError, match="not shipped"):
        other_seeds.load_text_model(7)
