"""tinytf.decoder_only_reversal and scripts/decoder_only_blocks.py: chapter 9's comparison repeated decoder-only."""
import math

import pytest
import torch
from torch import nn

import tinytf
from tinytf import block_comparison as bc
from tinytf.lab import decoder_only_reversal as dor
from tinytf.lab import tasks as T
from tinytf.models import ScaledEmbedding


def test_the_sequence_is_source_then_decoder_input_and_the_targets_are_the_outputs():
    src, tgt_in, tgt_out = T.reversal_batch(2, 3, torch.Generator().manual_seed(0))
    ids, targets, start = dor.as_sequence((src, tgt_in, tgt_out))
    assert ids.shape == (2, 8) and start == 4 and torch.equal(targets, tgt_out)
    assert torch.equal(ids[:, :4], src) and torch.equal(ids[:, 4:], tgt_in)
    # position start + j holds the output token before target j: <bos> first, then the reversed letters
    assert (ids[:, start] == T.BOS).all() and torch.equal(ids[:, start + 1:], targets[:, :-1])
    assert (ids[:, start - 1] == T.EOS).all()  # the source ends in <eos>, as in the encoder-decoder
    with pytest.raises(tinytf.TinyTFInputError, match="three"):
        dor.as_sequence((src, tgt_in[:, :2], tgt_out))


def test_an_output_logit_does_not_see_its_own_target():
    """Causal: changing the last target token (never an input) or a later input changes no earlier logit."""
    cfg = bc.block_configs()["Llama-3-style"]
    model = dor.build_model(cfg, seed=0).eval()
    batch = T.reversal_batch(1, 4, torch.Generator().manual_seed(1))
    logits, _ = dor.output_logits(model, batch)
    src, tgt_in, tgt_out = batch
    changed = tgt_in.clone()
    changed[0, -1] = (changed[0, -1] + 1 - 97) % 26 + 97  # another letter at the last input position
    logits2, _ = dor.output_logits(model, (src, changed, tgt_out))
    assert torch.allclose(logits[:, :-1], logits2[:, :-1]) and not torch.allclose(logits[:, -1], logits2[:, -1])


def test_the_models_follow_the_study():
    configs = bc.block_configs()
    old = dor.build_model(configs["2017"], seed=0)
    new = dor.build_model(configs["Llama-3-style"], seed=0)
    assert isinstance(old, tinytf.TinyTransformer) and len(old.blocks) == configs["2017"].n_layers == 4
    assert isinstance(old.embed, ScaledEmbedding) and not isinstance(new.embed, ScaledEmbedding)
    assert isinstance(old.final_norm, nn.Identity) and not isinstance(new.final_norm, nn.Identity)
    assert isinstance(dor.build_model(configs["Llama-3-style + post-norm"], 0).final_norm, nn.Identity)
    assert all(not hasattr(b, "cross_attn") or b.cross_attn is None for b in new.blocks)
    # the paper's init: zero biases, embedding rows with standard deviation d^-1/2
    assert all(not m.bias.detach().any() for m in old.modules() if isinstance(m, nn.Linear) and m.bias is not None)
    assert abs(float(old.embed.weight.detach().std()) - 32 ** -0.5) < 0.02
    a, b = dor.build_model(configs["2017"], seed=3), dor.build_model(configs["2017"], seed=3)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    with pytest.raises(tinytf.TinyTFInputError, match="TinyConfig"):
        dor.build_model({"norm": "rms"}, seed=0)


def test_a_short_run_learns_and_is_evaluated_on_the_studys_sequences():
    cfg = bc.block_configs()["Llama-3-style"]
    r = dor.train_one(cfg, seed=0, lr=0.008, warmup=5, steps=30, eval_samples=12)
    assert len(r["losses"]) == 30 and not r["diverged"] and r["losses"][-1] < r["losses"][0]
    assert set(r["metrics"]) == {"token_accuracy", "exact_match", "loss"} and math.isfinite(r["metrics"]["loss"])
    assert r["metrics"] != r["val_metrics"]  # two different sets of sequences
    # the same data: rerunning gives the same losses
    assert dor.train_one(cfg, seed=0, lr=0.008, warmup=5, steps=30, eval_samples=0)["losses"] == r["losses"]
    for bad in (0, 2.5, True):
        with pytest.raises(tinytf.TinyTFInputError, match="warmup"):
            dor.train_one(cfg, seed=0, lr=0.008, warmup=bad, steps=2)
    with pytest.raises(tinytf.TinyTFInputError, match="lr"):
        dor.train_one(cfg, seed=0, lr=-1.0, warmup=2, steps=2)
    with pytest.raises(tinytf.TinyTFInputError, match="max_seq_len"):
        dor.train_one(cfg.replace(max_seq_len=16), seed=0, lr=0.008, warmup=2, steps=2)


def test_run_writes_the_study_layout_that_block_comparison_reads():
    configs = {name: c for name, c in bc.block_configs().items() if name in ("2017", "Llama-3-style")}
    r = dor.run(configs, {"2017": (2, 0.004), "Llama-3-style": [(2, 0.004), (2, 0.008)]}, seeds=[0, 1],
                steps=3, eval_samples=6, progress=False)
    assert r["cells"] == {"2017": [[2, 0.004]], "Llama-3-style": [[2, 0.004], [2, 0.008]]}
    assert r["settings"]["lrs"] == [0.004, 0.008] and r["settings"]["warmups"] == [2]
    assert [len(runs) for runs in r["runs"].values()] == [2, 4]
    assert bc.cell_stats(r, "2017", 0.004, warmup=2)["n"] == 2
    d = bc.paired_differences(r, "2017", "Llama-3-style", choice={"2017": (2, 0.004), "Llama-3-style": (2, 0.008)})
    assert [seed for seed, _ in d] == [0, 1]
    with pytest.raises(tinytf.TinyTFInputError, match="no \\(warm-up, lr\\) cell"):
        dor.run(configs, {"2017": (2, 0.004)}, steps=1, progress=False)
    with pytest.raises(tinytf.TinyTFInputError, match="must be"):
        dor.run(configs, {"2017": (2, 0.004), "Llama-3-style": [(0.004, 2)]}, steps=1, progress=False)
    with pytest.raises(tinytf.TinyTFInputError, match="seed"):
        dor.run(configs, {"2017": (2, 0.004), "Llama-3-style": (2, 0.004)}, seeds=[], progress=False)


def test_the_shipped_runs():
    if not dor.RESULTS_PATH.exists():
        pytest.skip("no shipped decoder-only runs")
    r = dor.load_results()
    study = bc.configs_of(bc.load_results())
    assert all(study[name] == c for name, c in bc.configs_of(r).items())  # the study's configs
    assert r["settings"]["seeds"] == [0, 1, 2] and r["settings"]["steps"] == 400
    assert all(len(runs) == 3 * len(r["cells"][name]) for name, runs in r["runs"].items())
    assert bc.is_finite(r)
    with pytest.raises(tinytf.TinyTFInputError, match="does not exist"):
        dor.load_results(dor.RESULTS_PATH.with_name("no_such_file.json"))


def test_the_shipped_grid_is_the_studys_full_grid():
    """The shipped decoder-only runs: every variant at the study's 2 warm-ups x 3 peak rates x seeds 0-2 (90 runs),
    with the runs first shipped (each variant at its encoder-decoder best cell) among them."""
    r = dor.load_results()
    grid = sorted([w, lr] for w in bc.DEFAULTS["warmups"] for lr in bc.DEFAULTS["lrs"])
    assert list(r["runs"]) == ["2017", "2017 + pre-norm", "Llama-3-style + post-norm", "Llama-3-style + MHA",
                               "Llama-3-style"]
    assert all(sorted(cells) == grid for cells in r["cells"].values())
    assert sum(len(runs) for runs in r["runs"].values()) == 90
    for name, runs in r["runs"].items():
        for w, lr in grid:
            assert sorted(x["seed"] for x in bc.runs_at(r, name, lr, w)) == [0, 1, 2], (name, w, lr)
    assert dor.best_cells(r) == bc.best_settings(r)  # the same choice as the study's reader makes


def test_the_shipped_confirmation_runs_each_variant_at_its_own_best_cell_on_fresh_seeds():
    """compare_blocks_decoder_only_confirm.json: each variant trained at one cell, the one best_cells chose on the
    shipped grid (seeds 0-2), on ten fresh seeds 3-12, with the grid's configs and recipe; finite losses."""
    grid, confirm = dor.load_results(), dor.load_confirmation()
    assert bc.cells_of(confirm) == dor.best_cells(grid)
    assert confirm["settings"]["seeds"] == list(range(3, 13)) and confirm["settings"]["steps"] == 400
    assert bc.configs_of(confirm) == bc.configs_of(grid)
    assert {k: v for k, v in confirm["settings"].items() if k not in ("lrs", "warmups", "seeds")} == \
        {k: v for k, v in grid["settings"].items() if k not in ("lrs", "warmups", "seeds")}
    for name, runs in confirm["runs"].items():
        assert sorted(r["seed"] for r in runs) == list(range(3, 13)), name
        assert all(math.isfinite(r["metrics"]["loss"]) and math.isfinite(r["val_metrics"]["loss"]) for r in runs)
    assert bc.is_finite(confirm)
    st = bc.paired_stats(confirm, "2017", "2017 + pre-norm", bc.cells_of(confirm))
    assert st.n == 10 and st.seeds == tuple(range(3, 13))
    with pytest.raises(tinytf.TinyTFInputError, match="not a confirmation"):
        dor.load_confirmation(dor.RESULTS_PATH)  # the grid: six cells per variant
