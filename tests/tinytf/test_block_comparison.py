"""tinytf.block_comparison and scripts/compare_blocks.py: the 2017-vs-Llama-3-style training comparison of chapter 9."""
import itertools
import json
import math

import pytest
import torch
from torch import nn

import tinytf
from tinytf import block_comparison as bc
from tinytf.blocks import PostNorm, PreNorm
from tinytf.errors import TinyTFInputError
from tinytf.models import ScaledEmbedding
from tinytf.norms import LayerNorm


# ---------------------------------------------------------------------------------------------- the variants


def test_the_seven_variants_and_what_separates_them():
    configs = bc.block_configs()
    assert tuple(configs) == bc.VARIANTS == ("2017", "2017 + pre-norm", "Llama-3-style + post-norm", "Llama-3-style + sinusoidal",
                                             "Llama-3-style + scaled emb.", "Llama-3-style + MHA", "Llama-3-style")
    old, new = configs["2017"], configs["Llama-3-style"]
    assert set(old.diff(new)) == {"norm", "norm_position", "ffn", "d_ff", "pos", "bias", "n_kv_heads",
                                  "scale_embeddings"}
    assert configs["2017 + pre-norm"].diff(old) == {"norm_position": ("pre", "post")}
    assert configs["Llama-3-style + post-norm"].diff(new) == {"norm_position": ("post", "pre")}
    # the paper's input layer: sinusoids added to sqrt(d)-scaled embeddings
    assert configs["Llama-3-style + sinusoidal"].diff(new) == {"pos": ("sinusoidal", "rope"), "scale_embeddings": (True, False)}
    assert configs["Llama-3-style + scaled emb."].diff(new) == {"scale_embeddings": (True, False)}
    # GQA is its own swap: 'Llama-3-style + MHA' has one K/V head per query head, like the 2017 block
    assert configs["Llama-3-style + MHA"].diff(new) == {"n_kv_heads": (None, 2)}
    assert (old.n_layers, old.encoder_layers, new.n_layers, new.encoder_layers) == (4, 4, 4, 4)
    # SwiGLU at 8/3 d keeps the FFN at about the 2017 block's 8 d^2
    assert abs(3 * new.d_model * new.d_ff - 2 * old.d_model * old.d_ff) <= 3 * new.d_model
    assert list(bc.block_configs(ablations=False)) == ["2017", "Llama-3-style"]


def test_parameters_per_variant():
    """Llama-3-style + MHA is within 3% of the 2017 model; GQA takes 12 attention modules x 2 x d x d/2 away."""
    n = {name: sum(p.numel() for p in bc.build_model(c, 0).parameters()) for name, c in bc.block_configs().items()}
    assert abs(n["Llama-3-style + MHA"] / n["2017"] - 1) < 0.03
    d = 32
    assert n["Llama-3-style + MHA"] - n["Llama-3-style"] == (4 + 4 + 4) * 2 * d * (d // 2)  # 4 encoder + 8 decoder attentions
    # post-norm has no final norms: Llama-3-style + post-norm has two RMSNorm gains fewer than Llama-3-style
    assert n["Llama-3-style"] - n["Llama-3-style + post-norm"] == 2 * d


def test_the_2017_config_is_the_papers_block():
    old = bc.block_configs()["2017"]
    assert (old.norm_position, old.norm, old.ffn, old.d_ff, old.pos, old.bias, old.scale_embeddings) == (
        "post", "layer", "relu", 4 * old.d_model, "sinusoidal", True, True)
    assert old.n_kv_heads in (None, old.n_heads)


def test_the_faithful_2017_model_scales_its_embeddings_and_adds_sinusoids():
    cfg = bc.block_configs()["2017"]
    model = bc.build_model(cfg, seed=0).eval()
    src, tgt = torch.tensor([[70, 71, 72, 1]]), torch.tensor([[2, 72, 71, 70]])
    _, tr = model.run_with_trace(src, tgt)
    scale = math.sqrt(cfg.d_model)
    for part, ids in (("encoder", src), ("decoder", tgt)):
        embed = getattr(model, part).embed
        assert isinstance(embed, ScaledEmbedding)
        assert torch.allclose(tr[f"{part}.tok_embed"], embed.weight[ids] * scale)
        table = tinytf.sinusoidal_table(ids.shape[1], cfg.d_model)
        assert torch.allclose(tr[f"{part}.embed"], tr[f"{part}.tok_embed"] + table)
        # at initialisation token and position vectors have comparable lengths (chapter 1: without the scaling
        # and with a 0.02 init the position vector is ~36x longer)
        ratio = table.norm(dim=-1).mean() / tr[f"{part}.tok_embed"].norm(dim=-1).mean()
        assert 0.4 < ratio < 1.5
    # post-norm LayerNorm everywhere: the stream leaving each sublayer is a normalised sum, and no final norm
    # follows the stacks (the paper has none; the last sublayer's norm is the stack's output)
    assert isinstance(model.encoder.final_norm, nn.Identity) and isinstance(model.decoder.final_norm, nn.Identity)
    with torch.no_grad():
        out = model.decoder(tgt, model.encode(src))
    assert torch.equal(out, tr["decoder.blocks.3.resid_post"])  # the decoder's output is its last block's
    blocks = list(model.encoder.blocks) + list(model.decoder.blocks)
    assert all(isinstance(b.connect, PostNorm) and isinstance(b.norm1, LayerNorm) for b in blocks)
    x = tr["encoder.blocks.0.resid_pre"]
    expected = model.encoder.blocks[0].norm1(x + tr["encoder.blocks.0.attn.out"])
    assert torch.allclose(tr["encoder.blocks.0.resid_mid"], expected, atol=1e-6)


def test_the_llama3_style_model_does_not_scale_and_uses_pre_norm():
    cfg = bc.block_configs()["Llama-3-style"]
    model = bc.build_model(cfg, seed=0).eval()
    src, tgt = torch.tensor([[70, 71, 1]]), torch.tensor([[2, 71, 70]])
    _, tr = model.run_with_trace(src, tgt)
    assert type(model.encoder.embed) is nn.Embedding
    assert torch.equal(tr["encoder.tok_embed"], model.encoder.embed.weight[src])
    assert all(isinstance(b.connect, PreNorm) for b in model.decoder.blocks)
    assert not isinstance(model.decoder.final_norm, nn.Identity)  # a pre-norm stack needs its final norm
    sin = bc.build_model(bc.block_configs()["Llama-3-style + sinusoidal"], seed=0)
    assert isinstance(sin.decoder.embed, ScaledEmbedding)


def test_build_model_does_not_scale_twice():
    """If EncoderDecoder ever honours scale_embeddings itself, build_model must not scale again."""
    cfg = bc.block_configs()["2017"]
    model = bc.build_model(cfg, seed=0)
    embed = model.encoder.embed
    bc._scale_embeddings(model)
    assert model.encoder.embed is embed


def test_paper_init():
    cfg = bc.block_configs()["2017"]
    model = bc.build_model(cfg, seed=0)
    for name, m in model.named_modules():
        if isinstance(m, nn.Linear):
            fan_out, fan_in = m.weight.shape
            bound = math.sqrt(6 / (fan_in + fan_out))  # Xavier/Glorot uniform
            assert m.weight.abs().max() <= bound, name
            assert abs(m.weight.std().item() - bound / math.sqrt(3)) < 0.25 * bound / math.sqrt(3), name
            assert m.bias is None or torch.equal(m.bias, torch.zeros_like(m.bias)), name
    for embed in (model.encoder.embed, model.decoder.embed):
        assert abs(embed.weight.std().item() - cfg.d_model ** -0.5) < 0.1 * cfg.d_model ** -0.5
    # seeded: the same seed gives the same weights, another seed others; the caller's RNG is untouched
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    again = bc.build_model(cfg, seed=0)
    assert torch.equal(torch.rand(1), before)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))
    other = bc.build_model(cfg, seed=1)
    assert not torch.equal(other.encoder.embed.weight, model.encoder.embed.weight)


def test_schedule_is_the_papers_inverse_square_root():
    assert bc.warmup_steps(400) == 16 and bc.warmup_steps(100_000) == 4_000 and bc.warmup_steps(3) == 1
    peak, w = 1e-2, 16
    rates = [bc.lr_at(s, peak, w) for s in range(400)]
    assert rates[w - 1] == pytest.approx(peak) and max(rates) == pytest.approx(peak)
    assert rates[0] == pytest.approx(peak / w) and rates[7] == pytest.approx(peak * 8 / w)  # linear warm-up
    assert rates[4 * w - 1] == pytest.approx(peak / 2)  # n = 4W: sqrt(W / n) = 1/2
    # the paper's own formula, d^-0.5 * min(n^-0.5, n W^-1.5), has the same shape
    d = 512
    for n in (1, 100, 4000, 10_000):
        paper = d ** -0.5 * min(n ** -0.5, n * 4000 ** -1.5)
        assert bc.lr_at(n - 1, d ** -0.5 * 4000 ** -0.5, 4000) == pytest.approx(paper)


def test_training_uses_the_papers_adam(monkeypatch):
    seen = {}
    real = torch.optim.Adam

    def spy(params, **kwargs):
        seen.update(kwargs)
        return real(params, **kwargs)

    monkeypatch.setattr(torch.optim, "Adam", spy)
    r = bc.train_one(bc.block_configs()["2017"], seed=0, lr=1e-3, steps=2, eval_samples=6)
    assert seen["betas"] == (0.9, 0.98) and seen["eps"] == 1e-9 and seen.get("weight_decay", 0) == 0
    assert r["lr"] == 1e-3 and len(r["losses"]) == 2 and not r["diverged"] and r["warmup"] == 1
    assert bc.train_one(bc.block_configs()["2017"], seed=0, lr=1e-3, steps=2, eval_samples=0, warmup=7)["warmup"] == 7
    with pytest.raises(tinytf.TinyTFInputError, match="warmup"):
        bc.train_one(bc.block_configs()["2017"], seed=0, lr=1e-3, steps=2, warmup=0)
    assert set(r["metrics"]) >= {"loss", "token_accuracy", "exact_match"} and r["val_metrics"] != r["metrics"]


def test_a_diverging_run_is_stopped_and_marked(monkeypatch):
    from tinytf import train as TR

    real, calls = TR.seq2seq_loss, []

    def loss_fn(model, batch):
        loss, logits = real(model, batch)
        calls.append(1)
        return (loss * float("nan") if len(calls) == 3 else loss), logits

    monkeypatch.setattr(TR, "seq2seq_loss", loss_fn)
    r = bc.train_one(bc.block_configs()["Llama-3-style"], seed=0, lr=1e-3, steps=5, eval_samples=6)
    assert r["diverged"] and len(r["losses"]) == 2 and r["metrics"] is None and r["final_loss"] is None
    json.dumps(r, allow_nan=False)


# ---------------------------------------------------------------------------------------------- the sweep


def test_short_sweep_is_reproducible_and_complete():
    configs = bc.block_configs(ablations=False)
    a = bc.run_comparison(configs, seeds=[0, 1], lrs=[1e-3, 4e-3], warmups=[1, 2], steps=3, eval_samples=6,
                          progress=False)
    b = bc.run_comparison(configs, seeds=[0, 1], lrs=[1e-3, 4e-3], warmups=[1, 2], steps=3, eval_samples=6,
                          progress=False)

    def numbers(res):  # everything but the wall and processor times
        return {k: [{f: v for f, v in r.items() if "seconds" not in f} for r in runs] for k, runs in res["runs"].items()}

    assert numbers(a) == numbers(b)
    for name in configs:
        assert [(r["warmup"], r["lr"], r["seed"]) for r in a["runs"][name]] == list(
            itertools.product([1, 2], [1e-3, 4e-3], [0, 1]))
    assert a["runs"]["2017"][0]["losses"] != a["runs"]["2017"][1]["losses"]  # seeds differ
    assert all(len(r["losses"]) == 3 for runs in a["runs"].values() for r in runs)
    assert bc.is_finite(a)
    json.dumps(a, allow_nan=False)  # JSON-able
    assert {k: tinytf.TinyConfig(**v) for k, v in a["configs"].items()} == configs
    assert a["settings"]["lrs"] == [1e-3, 4e-3] and a["settings"]["warmups"] == [1, 2]
    assert set(bc.best_lrs(a)) == set(configs) and set(bc.best_settings(a, warmup=2)) == set(configs)
    # the warm-up matters: at step 0 the rate is peak / W
    w1 = bc.runs_at(a, "2017", 4e-3, warmup=1)[0]["losses"]
    w2 = bc.runs_at(a, "2017", 4e-3, warmup=2)[0]["losses"]
    assert w1[0] == w2[0] and w1[1:] != w2[1:]
    # runs already done are not trained again
    done = {("2017", 1, 1e-3, 0): dict(bc.runs_at(a, "2017", 1e-3, warmup=1)[0], losses=[9.0])}
    seen = []
    c = bc.run_comparison(configs, seeds=[0], lrs=[1e-3], warmups=[1], steps=3, eval_samples=6, progress=False,
                          done=done, on_run=lambda name, run: seen.append(name))
    assert seen == ["Llama-3-style"] and c["runs"]["2017"][0]["losses"] == [9.0]


def test_two_processes_give_the_same_numbers_as_one():
    configs = bc.block_configs(ablations=False)
    one = bc.run_comparison(configs, seeds=[0], lrs=2e-3, steps=2, eval_samples=6, progress=False)
    two = bc.run_comparison(configs, seeds=[0], lrs=2e-3, steps=2, eval_samples=6, progress=False, jobs=2)
    for name in configs:
        assert [r["losses"] for r in one["runs"][name]] == [r["losses"] for r in two["runs"][name]]


def test_the_script_runs(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "compare_blocks.py"
    spec = importlib.util.spec_from_file_location("compare_blocks_script", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "r.json"
    assert script.main(["--steps", "2", "--seeds", "0", "1", "--lrs", "1e-3", "2e-3", "--warmups", "1",
                        "--no-ablations", "--no-progress", "--out", str(out)]) == 0
    r = bc.load_results(out)
    assert r["command"].endswith("--out " + str(out)) and len(r["runs"]["2017"]) == 4
    assert not (tmp_path / "r.json.partial.jsonl").exists()  # removed once the results file is written
    # --resume: runs recorded by an interrupted invocation are taken from <out>.partial.jsonl
    partial = tmp_path / "r.json.partial.jsonl"
    kept = dict(r["runs"]["2017"][0], losses=[7.0, 7.0])
    partial.write_text(json.dumps({"name": "2017", "steps": 2, "run": kept}) + "\n")
    assert script.main(["--steps", "2", "--seeds", "0", "1", "--lrs", "1e-3", "2e-3", "--warmups", "1",
                        "--no-ablations", "--no-progress", "--resume", "--out", str(out)]) == 0
    resumed = bc.load_results(out)
    assert resumed["runs"]["2017"][0]["losses"] == [7.0, 7.0] and "--resume" not in resumed["command"]
    assert resumed["runs"]["2017"][1:] == [dict(x, seconds=y["seconds"], cpu_seconds=y["cpu_seconds"])
                                          for x, y in zip(r["runs"]["2017"][1:], resumed["runs"]["2017"][1:])]
    assert script.main(["--steps", "2", "--seeds", "0", "1", "--lrs", "1e-3", "2e-3", "--warmups", "1",
                        "--no-ablations", "--no-progress", "--out", str(out)]) == 0
    assert "best rate" in capsys.readouterr().out
    # --merge adds a variant's runs (here: replaces Llama-3-style's with the same numbers) and keeps the order
    assert script.main(["--steps", "2", "--seeds", "0", "1", "--lrs", "1e-3", "2e-3", "--warmups", "1",
                        "--no-ablations", "--variants", "Llama-3-style", "--merge", "--no-progress", "--out",
                        str(out)]) == 0
    merged = bc.load_results(out)
    assert list(merged["runs"]) == ["2017", "Llama-3-style"] and "--variants Llama-3-style --merge" in merged["command"]
    assert [x["losses"] for x in merged["runs"]["Llama-3-style"]] == [x["losses"] for x in r["runs"]["Llama-3-style"]]


# ---------------------------------------------------------------------------------------------- the shipped results


def test_shipped_results_hold_every_variant_warmup_rate_and_seed():
    r = bc.load_results()
    d = bc.DEFAULTS
    s = r["settings"]
    assert s["steps"] == d["steps"] and s["seeds"] == list(d["seeds"]) and s["lrs"] == list(d["lrs"])
    assert s["warmups"] == list(d["warmups"]) and s["optimizer"] == bc.RECIPE["optimizer"]
    assert len(s["seeds"]) >= 3 and len(s["lrs"]) >= 3 and len(s["warmups"]) >= 2
    names = list(r["runs"])
    assert names == [n for n in bc.VARIANTS if n in names]  # in the order of VARIANTS
    assert {"2017", "2017 + pre-norm", "Llama-3-style + post-norm", "Llama-3-style + MHA", "Llama-3-style"} <= set(names)  # chapter 9's blocks
    configs = bc.block_configs()
    assert bc.configs_of(r) == {n: configs[n] for n in names}
    every = sorted(itertools.product(s["warmups"], s["lrs"], s["seeds"]))
    for name, runs in r["runs"].items():
        assert sorted((x["warmup"], x["lr"], x["seed"]) for x in runs) == every, name
        for x in runs:
            assert x["diverged"] or (len(x["losses"]) == d["steps"] and x["metrics"] is not None)
            assert all(math.isfinite(v) for v in x["losses"])
            assert x["parameters"] == sum(p.numel() for p in bc.build_model(configs[name], 0).parameters())
    best = bc.best_settings(r)
    assert set(best) == set(names)
    for name, runs in bc.best_runs(r).items():  # the chosen cell never has a diverged seed
        assert len(runs) == len(s["seeds"]) and not any(x["diverged"] for x in runs)


def test_shipped_best_cells_are_the_lowest_mean_validation_loss():
    r = bc.load_results()
    for warmup in (None, *r["settings"]["warmups"]):
        for name, cell in bc.best_settings(r, warmup).items():
            means = {}
            for w in (r["settings"]["warmups"] if warmup is None else [warmup]):
                for rate in r["settings"]["lrs"]:
                    runs = [x for x in r["runs"][name] if x["lr"] == rate and x["warmup"] == w]
                    if not any(x["diverged"] for x in runs):
                        means[w, rate] = sum(x["val_metrics"]["loss"] for x in runs) / len(runs)
            assert cell == min(means, key=means.get), (name, warmup)


# ---------------------------------------------------------------------------------------------- reading results


def run(seed, lr, val, test, exact=0.0, diverged=False, warmup=16):
    if diverged:
        return {"seed": seed, "lr": lr, "warmup": warmup, "parameters": 10, "losses": [3.0], "final_loss": None, "diverged": True,
                "metrics": None, "val_metrics": None}
    return {"seed": seed, "lr": lr, "warmup": warmup, "parameters": 10, "losses": [3.0, 2.0 + seed, test], "final_loss": test,
            "diverged": False, "val_metrics": {"loss": val, "token_accuracy": 0.5, "exact_match": exact},
            "metrics": {"loss": test, "token_accuracy": 0.5, "exact_match": exact}}


def fake_results():
    """A: validation prefers lr 0.01 although the evaluation loss is lower at 0.001 (the choice must use
    validation); lr 0.1 diverges in one seed. B: best at 0.1; 0.01 and 0.001 tie on validation."""
    runs = {"A": [run(s, 0.001, 2.0 + s, 1.0 + s) for s in (0, 1, 2)]
            + [run(s, 0.01, 1.5 + s, 1.5 + s, exact=0.5) for s in (0, 1, 2)]
            + [run(0, 0.1, 0.1, 0.1), run(1, 0.1, 0.1, 0.1, diverged=True), run(2, 0.1, 0.1, 0.1)],
            "B": [run(s, 0.001, 3.0, 3.0) for s in (0, 1, 2)] + [run(s, 0.01, 3.0, 2.5) for s in (0, 1, 2)]
            + [run(s, 0.1, 1.0 + s / 2, 1.0 + s / 2) for s in (0, 1, 2)]}
    return {"settings": {"lrs": [0.001, 0.01, 0.1], "warmups": [16], "seeds": [0, 1, 2]}, "configs": {},
            "runs": runs}


def test_the_warmup_is_a_factor():
    """A second warm-up: A is best at W = 100 (lr 0.1), B stays best at W = 16; tables show both."""
    r = fake_results()
    r["settings"]["warmups"] = [16, 100]
    for name, runs in r["runs"].items():
        good = 0.05 if name == "A" else 5.0
        runs += [run(x["seed"], x["lr"], good + x["seed"] if x["lr"] == 0.1 else 4.0, good + x["seed"], warmup=100)
                 for x in list(runs)]
    assert bc.best_settings(r) == {"A": (100, 0.1), "B": (16, 0.1)}
    assert bc.best_settings(r, warmup=16) == {"A": (16, 0.01), "B": (16, 0.1)}
    assert bc.best_lrs(r, warmup=100) == {"A": 0.1, "B": 0.001}  # B: a tie at 4.0, the smaller rate
    assert bc.summarise(r)["A"]["warmup"] == 100 and bc.summarise(r, warmup=16)["A"]["lr"] == 0.01
    table = bc.warmup_table(r)
    assert table.splitlines()[2].count("†") == 1 and "<" not in table and "W = 100" in table.splitlines()[0]
    assert any(line.startswith("† each variant's best cell overall") for line in table.splitlines())
    assert "W = 16" in bc.grid_table(r, warmup=16).splitlines()[0]
    with pytest.raises(tinytf.TinyTFInputError, match="several warm-ups"):
        bc.grid_table(r)
    with pytest.raises(tinytf.TinyTFInputError, match="warm-up 50"):
        bc.runs_at(r, "A", 0.1, warmup=50)
    # per seed, each variant at its own best cell: A (W 100) - B (W 16)
    assert bc.paired_differences(r, "A", "B") == [(0, pytest.approx(0.05 - 1.0)), (1, pytest.approx(1.05 - 1.5)),
                                                  (2, pytest.approx(2.05 - 2.0))]
    assert bc.paired_differences(r, "A", "B", choice=(100, 0.1)) == [(s, pytest.approx(0.05 - 5.0)) for s in (0, 1, 2)]


def test_warmup_table_marks_a_best_rate_at_an_edge_of_the_grid():
    """'*' after a best rate at the first or last rate of the grid, with a footnote; none for an interior one."""
    r = fake_results()  # A: best 0.01 (interior), B: best 0.1 (last rate)
    rows = {line.split()[0]: line for line in bc.warmup_table(r).splitlines()[2:4]}
    assert "0.1*" in rows["B"] and "0.01 " in rows["A"] and "*" not in rows["A"]
    assert bc.warmup_table(r).splitlines()[-1].startswith("* best at the edge of the grid searched")
    r["runs"]["A"] = [x for x in r["runs"]["A"] if x["lr"] != 0.01]  # A: best now the first rate of its grid
    r["runs"]["B"] = [x for x in r["runs"]["B"] if x["lr"] != 0.01]
    r["settings"]["lrs"] = [0.001, 0.1]
    assert "0.001*" in bc.warmup_table(r).splitlines()[2]
    r = fake_results()
    r["runs"]["B"] = [run(s, lr, 1.0 if lr == 0.01 else 3.0, 1.0) for s in (0, 1, 2) for lr in (0.001, 0.01, 0.1)]
    table = bc.warmup_table(r)  # both best at 0.01, inside the grid: no '*', no '*' footnote (the '†' one only)
    assert "*" not in table and len(table.splitlines()) == 5 and table.splitlines()[-1].startswith("†")


def test_best_lr_selection():
    r = fake_results()
    assert bc.best_lrs(r) == {"A": 0.01, "B": 0.1}
    r["runs"]["B"] = [x for x in r["runs"]["B"] if x["lr"] != 0.1]
    r["settings"]["lrs"] = [0.001, 0.01, 0.1]
    with pytest.raises(tinytf.TinyTFInputError, match="no runs at lr 0.1"):
        bc.best_lrs(r)
    r["settings"]["lrs"] = [0.001, 0.01]
    assert bc.best_lrs(r)["B"] == 0.001  # a tie goes to the smaller rate
    r["runs"]["A"] = [run(s, lr, 1.0, 1.0, diverged=True) for s in (0, 1, 2) for lr in (0.001, 0.01)]
    with pytest.raises(tinytf.TinyTFInputError, match="diverged at every learning rate"):
        bc.best_lrs(r)


def test_cells_summaries_and_tables():
    r = fake_results()
    st = bc.cell_stats(r, "A", 0.1)
    assert st["diverged"] == 1 and st["n"] == 2 and st["mean"] == 0.1
    s = bc.summarise(r)
    assert s["A"]["lr"] == 0.01 and not s["A"]["at_edge"] and s["B"]["at_edge"]
    assert s["A"]["eval_loss"] == {"mean": 2.5, "std": 1.0, "min": 1.5, "max": 3.5, "n": 3, "diverged": 0}
    assert s["A"]["exact_match"]["mean"] == 0.5 and s["B"]["parameters"] == 10
    assert bc.summarise(r, 0.001)["A"]["eval_loss"]["mean"] == 2.0  # one rate for all
    assert bc.summarise(r, {"A": (16, 0.1), "B": (16, 0.01)})["A"]["eval_loss"]["diverged"] == 1
    table = bc.summary_table(r)
    assert "2.50 ± 1.00" in table and "0.1*" in table and "50 (50-50)" in table
    labelled = bc.summary_table(r, labels={"A": "A (the first)"}).splitlines()  # a printed name for A only
    assert labelled[2].startswith("A (the first) ") and labelled[3].startswith("B ")
    assert [line.split()[-6:] for line in labelled[2:]] == [line.split()[-6:] for line in table.splitlines()[2:]]
    # with the chapter's longest name (25 characters) every line fits 80 characters (phones)
    wide = bc.summary_table(r, labels={"A": "Llama-3-style + post-norm"})
    assert max(map(len, wide.splitlines())) <= 80 and "Llama-3-style + post-norm" in wide
    grid = bc.grid_table(r)
    assert "2.50 ± 1.00 <" in grid and "0.10 ± 0.00!" in grid
    assert bc.paired_differences(r, "A", "B") == [(0, 0.5), (1, 1.0), (2, 1.5)]
    # seed 1 of A diverged at 0.1
    assert bc.paired_differences(r, "A", "B", choice=0.1) == [(0, pytest.approx(-0.9)), (2, pytest.approx(-1.9))]
    assert bc.ranking_by_seed(r) == {0: ["B", "A"], 1: ["B", "A"], 2: ["B", "A"]}
    assert bc.beats_in_every_seed(r) == [("B", "A")]
    pairs = bc.pair_table(r, [("A", "B")])
    assert "A vs B" in pairs and pairs.count("+0.50 +1.00 +1.50  (3/3)") == 2 and "W = 16" in pairs
    # one block per grouping, one under the other: each row a pair, no line wider than 80 characters
    assert [line for line in pairs.splitlines() if not line.startswith("  ")][1:] == [
        f"W = {w}:" for w in bc.warmups_of(r)] + ["each at its best cell:"]
    assert max(map(len, pairs.splitlines())) <= 80
    assert [x["lr"] for x in bc.best_runs(r)["A"]] == [0.01] * 3
    assert bc.pair_label("2017", "Llama-3-style + MHA") == "2017 vs (Llama-3-style + MHA)"
    signs = bc.sign_table(r, questions=[("(1) A then B", "A", "B"), ("(2) B then A", "B", "A")]).splitlines()
    assert "W = 16" in signs[0] and signs[0].endswith("best  same sign")
    assert signs[1].startswith("(1) A vs B") and signs[1].split()[-2:] == ["3/3", "yes"]  # A higher in every seed
    assert signs[2].startswith("(2) B vs A") and signs[2].split()[-2:] == ["0/3", "yes"]
    split = bc.sign_table(r, groupings=[("one rate", dict(choice=0.1))], questions=[("(1)", "A", "B")])
    assert split.splitlines()[1].split()[-2:] == ["0/2", "yes"]  # seed 1 diverged: two pairs left, A lower in both
    assert bc._signed(-0.001, 2) == " 0.00" and bc._signed(-0.23, 2) == "-0.23"


def test_load_study_is_the_grid_extended_at_its_edges():
    """load_study() is what chapter 9 built by hand: the shipped grid extended by the three files at one more rate."""
    study = bc.load_results()
    later = [bc.load_results(bc.RESULTS_PATH.with_name(f"compare_blocks_{part}.json"))
             for part in ("2017_lr0.002", "prenorm_lr0.002", "2026_lr0.032")]
    assert bc.load_study() == bc.extend(study, *later)
    assert bc.load_study(bc.RESULTS_PATH.parent) == bc.load_study()
    r = bc.load_study()
    assert bc.lrs_for(r, "2017") == [0.002, 0.004, 0.008, 0.016]
    assert bc.lrs_for(r, "Llama-3-style") == [0.004, 0.008, 0.016, 0.032]
    assert bc.lrs_for(r, "Llama-3-style + post-norm") == list(bc.DEFAULTS["lrs"]) == study["settings"]["lrs"]


def test_curve_band_and_smoothing():
    assert bc.smooth([1, 3, 5, 7], window=2) == [1, 2, 4, 6]
    band = bc.curve_band([run(s, 0.01, 1.0, 1.0) for s in (0, 1, 2)], window=1)
    assert band["mean"] == [3.0, 3.0, 1.0] and band["min"] == [3.0, 2.0, 1.0] and band["max"] == [3.0, 4.0, 1.0]


def test_bad_input_and_results_files(tmp_path):
    with pytest.raises(tinytf.TinyTFInputError, match="does not exist"):
        bc.load_results(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(tinytf.TinyTFInputError, match="not valid JSON"):
        bc.load_results(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(tinytf.TinyTFInputError, match="no 'settings'"):
        bc.load_results(tmp_path / "other.json")
    (tmp_path / "old.json").write_text(json.dumps({"settings": {"lr": 0.003}, "configs": {}, "runs": {}}))
    with pytest.raises(tinytf.TinyTFInputError, match="learning-rate grid"):
        bc.load_results(tmp_path / "old.json")
    (tmp_path / "old2.json").write_text(json.dumps({"settings": {"lrs": [0.003]}, "configs": {}, "runs": {}}))
    with pytest.raises(tinytf.TinyTFInputError, match="warm-up factor"):
        bc.load_results(tmp_path / "old2.json")
    with pytest.raises(tinytf.TinyTFInputError, match="warm-up"):
        bc.run_comparison(warmups=[0], progress=False)
    with pytest.raises(tinytf.TinyTFInputError, match="seed"):
        bc.run_comparison(seeds=[], progress=False)
    with pytest.raises(tinytf.TinyTFInputError, match="learning rate"):
        bc.run_comparison(lrs=[], progress=False)
    with pytest.raises(tinytf.TinyTFInputError, match="no variant"):
        bc.runs_at(fake_results(), "C", 0.1)


def test_shipped_2017_extension_at_a_lower_rate_matches_the_study():
    """compare_blocks_2017_lr0.002.json (chapter 9): the 2017 block at 0.002, below the study's grid, with the
    study's settings otherwise, every warm-up and seed."""
    r = bc.load_results()
    e = bc.load_results(bc.RESULTS_PATH.with_name("compare_blocks_2017_lr0.002.json"))
    assert e["task"] == r["task"] and list(e["runs"]) == ["2017"] and bc.configs_of(e)["2017"] == bc.configs_of(r)["2017"]
    assert e["settings"]["lrs"] == [0.002] and max(e["settings"]["lrs"]) < min(r["settings"]["lrs"])
    assert all(e["settings"][k] == v for k, v in r["settings"].items() if k != "lrs")
    every = sorted(itertools.product(r["settings"]["warmups"], [0.002], r["settings"]["seeds"]))
    assert sorted((x["warmup"], x["lr"], x["seed"]) for x in e["runs"]["2017"]) == every
    assert not any(x["diverged"] for x in e["runs"]["2017"])


def test_shipped_2017_longer_warmup_matches_the_study():
    """compare_blocks_2017_w200.json (chapter 9's notes): the 2017 block at W = 200, beyond the study's two
    warm-ups, at its best rate 0.004, seeds 0-2, with the study's settings otherwise."""
    r = bc.load_results()
    e = bc.load_results(bc.RESULTS_PATH.with_name("compare_blocks_2017_w200.json"))
    assert e["task"] == r["task"] and list(e["runs"]) == ["2017"] and bc.configs_of(e)["2017"] == bc.configs_of(r)["2017"]
    assert e["settings"]["warmups"] == [200] and e["settings"]["lrs"] == [0.004]
    assert all(e["settings"][k] == v for k, v in r["settings"].items() if k not in ("lrs", "warmups"))
    assert sorted((x["warmup"], x["lr"], x["seed"]) for x in e["runs"]["2017"]) == [(200, 0.004, s) for s in r["settings"]["seeds"]]
    assert not any(x["diverged"] for x in e["runs"]["2017"])


def test_extend_gives_each_variant_its_own_rates():
    """extend: more rates for one variant; its cells, best rate and edge use its own rates, the others' stay."""
    r = fake_results()  # B: best at 0.1, the last rate
    extra = {"task": r.get("task"), "settings": dict(r["settings"], lrs=[1.0]), "configs": {},
             "runs": {"B": [run(s, 1.0, 4.0, 4.0) for s in (0, 1, 2)]}}
    r["task"] = extra["task"]
    r["configs"] = {"A": {}, "B": {}}
    extra["configs"] = {"B": {}}
    w = bc.extend(r, extra)
    assert bc.lrs_of(w) == [0.001, 0.01, 0.1, 1.0] and bc.lrs_for(w, "A") == [0.001, 0.01, 0.1]
    assert bc.best_lrs(w) == {"A": 0.01, "B": 0.1} and not bc.summarise(w)["B"]["at_edge"]
    assert "*" not in bc.warmup_table(w) and "*" in bc.warmup_table(r)
    grid = bc.grid_table(w).splitlines()
    assert len(grid[2]) < len(grid[3]) and grid[3].endswith("4.00 ± 0.00") and "blank" in grid[-1]  # A: blank at 1.0
    with pytest.raises(tinytf.TinyTFInputError, match="already has runs"):
        bc.extend(w, extra)


def test_shipped_extensions_at_the_edges_match_the_study():
    """The later runs beyond the study's grid (chapter 9): each variant whose best rate lay at an edge, one rate
    further out, with the study's settings otherwise, every warm-up and seed."""
    r = bc.load_results()
    files = {"compare_blocks_2017_lr0.002.json": (["2017"], 0.002),
             "compare_blocks_prenorm_lr0.002.json": (["2017 + pre-norm"], 0.002),
             "compare_blocks_2026_lr0.032.json": (["Llama-3-style + MHA", "Llama-3-style"], 0.032)}
    extras = []
    for file, (names, lr) in files.items():
        e = bc.load_results(bc.RESULTS_PATH.with_name(file))
        assert list(e["runs"]) == names and e["settings"]["lrs"] == [lr]
        every = sorted(itertools.product(r["settings"]["warmups"], [lr], r["settings"]["seeds"]))
        for name in names:
            assert sorted((x["warmup"], x["lr"], x["seed"]) for x in e["runs"][name]) == every
        extras.append(e)
    w = bc.extend(r, *extras)
    assert bc.lrs_of(w) == [0.002, 0.004, 0.008, 0.016, 0.032]
    for warmup in (None, *r["settings"]["warmups"]):  # the later rates change no best cell
        assert bc.best_settings(w, warmup) == bc.best_settings(r, warmup)


def test_t_quantile_matches_known_values():
    import math
    assert bc.t_quantile(0.975, 2) == pytest.approx(0.95 * math.sqrt(2 / (1 - 0.95 ** 2)), abs=1e-6)  # closed form, df 2
    assert bc.t_quantile(0.975, 1) == pytest.approx(math.tan(math.pi * (0.975 - 0.5)), abs=1e-5)  # Cauchy
    assert bc.t_quantile(0.975, 9) == pytest.approx(2.2622, abs=1e-4)
    assert bc.t_quantile(0.5, 5) == pytest.approx(0.0, abs=1e-9)
    for bad in ((0.3, 2), (1.0, 2), (0.975, 0), (0.975, 2.5)):
        with pytest.raises(TinyTFInputError):
            bc.t_quantile(*bad)


def test_combine_joins_variants_trained_at_their_own_cells():
    study = bc.load_results()
    a = dict(study, runs={"2017": study["runs"]["2017"]}, configs={"2017": study["configs"]["2017"]},
             settings=dict(study["settings"], warmups=[100], lrs=[0.004]))
    b = dict(study, runs={"2017 + pre-norm": study["runs"]["2017 + pre-norm"]},
             configs={"2017 + pre-norm": study["configs"]["2017 + pre-norm"]},
             settings=dict(study["settings"], warmups=[16], lrs=[0.008]))
    both = bc.combine(a, b)
    assert both["settings"]["warmups"] == [16, 100] and both["settings"]["lrs"] == [0.004, 0.008]
    cells = {"2017": (100, 0.004), "2017 + pre-norm": (16, 0.008)}
    assert bc.paired_differences(both, "2017", "2017 + pre-norm", choice=cells) == \
        bc.paired_differences(study, "2017", "2017 + pre-norm", choice=cells)
    with pytest.raises(TinyTFInputError, match="two files"):
        bc.combine(a, a)
    with pytest.raises(TinyTFInputError, match="differ"):
        bc.combine(a, dict(b, settings=dict(b["settings"], seeds=[7])))


def test_interval_table_is_the_paired_t_interval():
    import statistics
    study = bc.load_results()
    cells = {"2017": (100, 0.004), "2017 + pre-norm": (16, 0.008)}
    d = [x for _, x in bc.paired_differences(study, "2017", "2017 + pre-norm", choice=cells)]
    mean, se = statistics.fmean(d), statistics.stdev(d) / math.sqrt(len(d))
    half = 0.95 * math.sqrt(2 / (1 - 0.95 ** 2)) * se  # df 2, closed form
    row = bc.interval_table(study, [("2017", "2017 + pre-norm")], cells).splitlines()[2]
    assert f"{mean:+.2f} ± {se:.2f}" in row and f"{mean - half:+.2f} to {mean + half:+.2f}" in row
    assert row.endswith(f"{sum(x > 0 for x in d)}/{len(d)}")
    with pytest.raises(TinyTFInputError):
        bc.interval_table(study, [("2017", "no such block")], cells)
    named = bc.interval_table(study, [("(1) norm position", "2017", "2017 + pre-norm")], cells).splitlines()
    assert named[0].startswith("question") and named[2] == "(1) norm position  " + row  # a name column, else equal
    with pytest.raises(TinyTFInputError, match=r"\(name, a, b\)"):
        bc.interval_table(study, [("2017",)], cells)


def test_confirmation_runs_use_the_cells_the_study_chose_and_fresh_seeds():
    confirm = bc.load_confirmation()
    study = bc.extend(bc.load_results(), *(bc.load_results(bc.RESULTS_PATH.with_name(f"compare_blocks_{p}.json"))
                                           for p in ("2017_lr0.002", "prenorm_lr0.002", "2026_lr0.032")))
    emb = bc.extend(bc.load_results(bc.RESULTS_PATH.with_name("compare_blocks_embeddings.json")))
    chosen = bc.best_settings(study) | bc.best_settings(emb)
    assert all(bc.cells_of(confirm)[name] == chosen[name] for name in confirm["runs"])
    assert not set(confirm["settings"]["seeds"]) & set(study["settings"]["seeds"])  # seeds the study never saw
    assert len(confirm["settings"]["seeds"]) == 10
    for name in confirm["runs"]:  # the same configs as in the study
        assert bc.configs_of(confirm)[name] == (bc.configs_of(study) | bc.configs_of(emb))[name]


def test_paired_stats_is_the_hand_computed_paired_t_interval():
    """Three seeds, a - b = +0.5, +1.5, -0.5: mean 0.5, sd 1, SE 1/sqrt(3); t with 2 degrees of freedom in closed
    form (P(|T| < t) = t / sqrt(2 + t^2)); b lower in 2 seeds. A fourth seed diverged for A and is left out."""
    runs = {"A": [run(s, 0.01, 1.0, x) for s, x in ((0, 2.0), (1, 3.5), (2, 1.0))] + [run(3, 0.01, 1.0, 1.0, diverged=True)],
            "B": [run(s, 0.01, 1.0, x) for s, x in ((3, 1.0), (2, 1.5), (1, 2.0), (0, 1.5))]}  # B's runs out of order
    r = {"settings": {"lrs": [0.01], "warmups": [16], "seeds": [0, 1, 2, 3]}, "configs": {}, "runs": runs}
    cells = {"A": (16, 0.01), "B": (16, 0.01)}  # a dict of cells, as in the chapter
    st = bc.paired_stats(r, "A", "B", cells)
    assert isinstance(st, bc.Paired) and (st.a, st.b) == ("A", "B")
    assert st.seeds == (0, 1, 2) and st.diffs == pytest.approx((0.5, 1.5, -0.5)) and st.n == 3 and st.df == 2
    assert st.mean == pytest.approx(0.5) and st.se == pytest.approx(1 / math.sqrt(3))
    t = 0.95 * math.sqrt(2 / (1 - 0.95 ** 2))  # 4.303
    assert st.t == pytest.approx(t, abs=1e-5) and st.level == 0.95 and st.n_intervals == 1
    assert (st.lo, st.hi) == pytest.approx((0.5 - t / math.sqrt(3), 0.5 + t / math.sqrt(3)), abs=1e-5)
    assert st.half == pytest.approx(t / math.sqrt(3), abs=1e-5) and st.b_lower == 2 and not st.excludes_zero
    kept = dict(r, runs={"A": runs["A"][:3], "B": runs["B"]})  # without the diverged run, "best" picks the same cells
    assert bc.paired_stats(kept, "A", "B", "best") == bc.paired_stats(kept, "A", "B", "best", warmup=16) == st
    two = bc.paired_stats(r, "A", "B", cells, n_intervals=2)  # Bonferroni: each interval at 97.5%
    assert two.t == pytest.approx(0.975 * math.sqrt(2 / (1 - 0.975 ** 2)), abs=1e-5) and two.diffs == st.diffs
    assert bc.paired_stats(r, "A", "B", cells, level=0.5).t == pytest.approx(0.5 * math.sqrt(2 / 0.75), abs=1e-5)
    with pytest.raises(TinyTFInputError, match="n_intervals"):
        bc.paired_stats(r, "A", "B", cells, n_intervals=0)
    one = {"settings": r["settings"], "configs": {}, "runs": {"A": runs["A"][:1], "B": runs["B"]}}
    with pytest.raises(TinyTFInputError, match="1 paired seeds"):
        bc.paired_stats(one, "A", "B", "best")


def test_interval_table_of_the_confirmation_is_unchanged():
    """interval_table (now built on paired_stats) prints the recorded confirmation, and its rows are paired_stats
    of CONFIRM_PAIRS, each pair oriented older (a) vs newer (b): row (4) and its split are negative."""
    confirm = bc.load_confirmation()
    cells = bc.cells_of(confirm)
    pairs = [(a, b) for _, a, b in bc.CONFIRM_PAIRS]
    assert [label[:4].rstrip() for label, _, _ in bc.CONFIRM_PAIRS] == ["(1)", "(1b)", "(2)", "(3)", "(4)", "(4a)",
                                                                      "(4b)"]
    assert all(bc.paired_stats(confirm, a, b, cells).seeds == tuple(range(3, 13)) for a, b in pairs)
    assert bc.interval_table(confirm, pairs, cells) == "\n".join([
        "a vs b                                               a - b, mean ± SE       95% interval   b lower",
        "--------------------------------------------------------------------------------------------------",
        "2017 vs (2017 + pre-norm)                                +0.39 ± 0.09     +0.19 to +0.59      9/10",
        "(Llama-3-style + post-norm) vs Llama-3-style             -0.11 ± 0.12     -0.39 to +0.17      3/10",
        "2017 vs Llama-3-style                                    -0.03 ± 0.10     -0.25 to +0.19      5/10",
        "(Llama-3-style + MHA) vs Llama-3-style                    0.00 ± 0.10     -0.23 to +0.23      5/10",
        "(2017 + pre-norm) vs Llama-3-style                       -0.42 ± 0.10     -0.65 to -0.19      1/10",
        "(Llama-3-style + scaled emb.) vs Llama-3-style           -0.43 ± 0.10     -0.67 to -0.20      2/10",
        "(2017 + pre-norm) vs (Llama-3-style + scaled emb.)       +0.02 ± 0.05     -0.10 to +0.13      6/10",
        "seeds 3..12 (10); t with 9 degrees of freedom: 2.26"])
    bonf = [bc.paired_stats(confirm, a, b, cells, n_intervals=len(pairs)) for a, b in pairs]
    assert f"{bonf[0].t:.2f}" == "3.46"  # Bonferroni for the seven pairs
    assert [p.excludes_zero for p in bonf] == [True, False, False, False, True, True, False]
    # the pairs the confirmation had before the second norm pair was added print as they did
    old = [p for p in pairs if "Llama-3-style + post-norm" not in p]
    assert [bc.paired_stats(confirm, a, b, cells, n_intervals=6).excludes_zero for a, b in old] == [
        True, False, False, True, True, False]


def test_chapter_pairs_are_oriented_older_vs_newer():
    """In QUESTIONS and CONFIRM_PAIRS, b is the newer choice: wherever a's and b's configs differ, b has the
    Llama-3-style block's value, so a positive a - b always means that the newer choice is lower."""
    configs = bc.block_configs()
    newest = configs["Llama-3-style"]
    for _, a, b in bc.QUESTIONS + bc.CONFIRM_PAIRS:
        differ = configs[a].diff(configs[b])
        assert differ, (a, b)
        assert all(getattr(configs[b], field) == getattr(newest, field) for field in differ), (a, b)
    assert [(a, b) for _, a, b in bc.QUESTIONS][3] == ("2017 + pre-norm", "Llama-3-style")


def test_chapter_rows_use_the_lessons_names():
    """Chapter 9's lesson, its forest figure and the lab notes name each question alike: row (4) is "five swaps,
    unscaled" everywhere (the lesson's roadmap), and QUESTIONS and CONFIRM_PAIRS agree on every shared label."""
    labels = {label.split(" ", 1)[0]: label for label, _, _ in bc.QUESTIONS}
    assert labels["(4)"] == "(4) five swaps, unscaled"
    assert [label for label, _, _ in bc.QUESTIONS] == [bc.CONFIRM_PAIRS[i][0] for i in (0, 2, 3, 4)]


def test_planned_retest_uses_the_confirmation_settings_on_new_seeds():
    """Chapter 9's planned retest (compare_blocks_planned.json) trains each block of PLANNED_PAIR exactly as the
    confirmation runs did: the same task, recipe and evaluation, the same configs and the same chosen cells; only
    the seeds are new (13-22, seen neither by the study nor by the confirmation). Its settings, not its numbers."""
    planned, confirm, study = bc.load_planned(), bc.load_confirmation(), bc.load_results()
    _, a, b = bc.PLANNED_PAIR
    assert set(planned["runs"]) == {a, b} and planned["task"] == confirm["task"]
    free = ("lrs", "warmups", "seeds")
    assert {k: v for k, v in planned["settings"].items() if k not in free} == {
        k: v for k, v in confirm["settings"].items() if k not in free}
    assert {n: bc.cells_of(planned)[n] for n in (a, b)} == {n: bc.cells_of(confirm)[n] for n in (a, b)}
    assert all(bc.configs_of(planned)[n] == bc.configs_of(confirm)[n] for n in (a, b))
    assert planned["settings"]["seeds"] == list(range(13, 23))
    assert not set(planned["settings"]["seeds"]) & (set(confirm["settings"]["seeds"]) | set(study["settings"]["seeds"]))
    assert all(sorted(r["seed"] for r in planned["runs"][n]) == list(range(13, 23)) for n in (a, b))
    assert "plan" in planned and all(f"--seeds {' '.join(map(str, range(13, 23)))}" in part
                                     for part in planned["command"].split(" && "))
    # the plan, fixed before the runs, names the pair the label stands for: question (2) with the embeddings scaled
    assert "2017 vs Llama-3-style + scaled emb. (question (2) with the embedding scale matched)" in planned["plan"]
    assert bc.PLANNED_PAIR[0].startswith("(2s) ")


def test_lengths_at_init_show_the_embedding_scale():
    """Chapter 9's mechanism for the embedding scale: at initialisation an unscaled token vector is shorter than
    each update block 0 adds; scaled by sqrt(d_model) it is longer than both, and the updates keep their size."""
    (e0, a0, f0), (e1, a1, f1) = bc.lengths_at_init(n=16).values()
    assert e0 < min(a0, f0) and e1 > max(a1, f1)
    assert abs(e1 / e0 / math.sqrt(bc.DEFAULTS["d_model"]) - 1) < 0.1
    assert abs(a1 / a0 - 1) < 0.1 and abs(f1 / f0 - 1) < 0.1
