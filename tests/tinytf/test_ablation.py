"""tinytf.lab.ablation: zero- and mean-ablation replace exactly the named sublayer outputs (the residual path
stays), measure per-window bits like textdata.bits_per_byte, and reject bad input with TinyTFInputError."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import tinytf
from tinytf import textdata
from tinytf.errors import TinyTFInputError
from tinytf.lab import ablation as A

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model():
    tinytf.seed_everything(0)
    m = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=2, d_model=32, n_heads=2, d_ff=64)).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return m


@pytest.fixture(scope="module")
def windows():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 256, (6, 17), generator=g)
    return ids[:, :-1], ids[:, 1:]


def test_sites(model):
    assert A.sites(model, "ffn") == ["blocks.0.ffn.out", "blocks.1.ffn.out"]
    assert A.sites(model, "attn", blocks=[1]) == ["blocks.1.attn.out"]


def test_zero_ablation_removes_the_sublayer_but_keeps_the_residual(model, windows):
    ids = windows[0][:2]
    _, trace = model.run_with_trace(ids, patches=A.ZeroAblation(A.sites(model, "ffn", [0])).patches())
    assert torch.equal(trace["blocks.0.ffn.out"], torch.zeros_like(trace["blocks.0.ffn.out"]))
    assert torch.equal(trace["blocks.0.resid_post"], trace["blocks.0.resid_mid"])  # H' = U + 0
    _, intact = model.run_with_trace(ids)
    assert torch.equal(trace["blocks.0.resid_mid"], intact["blocks.0.resid_mid"])  # attention before it untouched


def test_mean_ablation_writes_the_mean_at_every_position(model, windows):
    inputs, _ = windows
    means = A.site_means(model, inputs, A.sites(model, "attn"))
    _, intact = model.run_with_trace(inputs)
    assert torch.allclose(means["blocks.1.attn.out"], intact["blocks.1.attn.out"].mean((0, 1)), atol=1e-6)
    _, trace = model.run_with_trace(inputs[:1], patches=A.MeanAblation(means).patches())
    out = trace["blocks.1.attn.out"][0]
    assert torch.equal(out, means["blocks.1.attn.out"].expand_as(out))
    assert torch.allclose(trace["blocks.1.resid_mid"], trace["blocks.1.resid_pre"] + out)


def test_centred_ablation_removes_only_the_constant_part(model, windows):
    inputs, _ = windows
    site = "blocks.0.ffn.out"
    means = A.site_means(model, inputs, [site])
    _, intact = model.run_with_trace(inputs[:1])
    _, trace = model.run_with_trace(inputs[:1], patches=A.CentredAblation(means).patches())
    out = trace[site][0]
    # block 0's FFN reads the same input as in the intact run: only its output moves, by the mean
    assert torch.allclose(out + means[site], intact[site][0], atol=1e-5)
    assert not torch.allclose(out, intact[site][0], atol=1e-3)
    # over the windows the means came from, the centred output averages to zero
    _, full = model.run_with_trace(inputs, patches=A.CentredAblation(means).patches())
    assert full[site].mean((0, 1)).abs().max() < 1e-4
    with pytest.raises(TinyTFInputError, match="CentredAblation"):
        A.CentredAblation({site: torch.zeros(7)}).run(model, inputs[0][:3])


def test_intact_window_bits_match_bits_per_byte():
    torch.set_num_threads(1)
    model = tinytf.pretrained("text-4l")
    data = torch.tensor(list(b"Return the number of items in the list, or None if it is empty. " * 12), dtype=torch.uint8)
    inputs, targets = textdata.eval_windows(data, 4, 64)
    bits = A.window_bits(model, inputs, targets)
    assert bits.shape == (4,)
    assert abs(bits.mean().item() - textdata.bits_per_byte(model, data, n_windows=4, seq_len=64)) < 1e-4
    worse = A.window_bits(model, inputs, targets, A.ZeroAblation(A.sites(model, "ffn")))
    assert (worse > bits).all()


def test_conditions_and_summary(model, windows):
    inputs, targets = windows
    means = A.site_means(model, inputs, A.sites(model, "attn") + A.sites(model, "ffn"))
    conds = A.conditions(model, means)
    assert list(conds)[:5] == ["intact", "attn zero", "attn mean", "ffn zero", "ffn mean"]
    assert "block 1 ffn mean" in conds and len(conds) == 1 + 4 + 2 * 4 + 2 * 2
    assert conds["block 1 whole zero"].sites == ["blocks.1.attn.out", "blocks.1.ffn.out"]
    assert "attn mean" not in A.conditions(model)
    bits = {k: A.window_bits(model, inputs, targets, v) for k, v in list(conds.items())[:3]}
    s = A.summarise(bits, 2)
    assert s["intact"]["mean"] == pytest.approx(sum(s["intact"]["groups"]) / 2)


@pytest.mark.parametrize("call", [
    lambda m: A.sites(m, "mlp"),
    lambda m: A.sites(m, "ffn", blocks=[2]),
    lambda m: A.sites(m, "ffn", blocks=[]),
    lambda m: A.sites(torch.nn.Linear(2, 2), "ffn"),
    lambda m: A.ZeroAblation([]),
    lambda m: A.ZeroAblation(["blocks.0.ffn.post"]),
    lambda m: A.ZeroAblation(["blocks.5.ffn.out"]).run(m, torch.tensor([1, 2, 3])),
    lambda m: A.MeanAblation({}),
    lambda m: A.MeanAblation({"blocks.0.ffn.out": torch.zeros(3, 32)}),
    lambda m: A.MeanAblation({"blocks.0.ffn.out": torch.zeros(7)}).run(m, torch.tensor([1, 2, 3])),
    lambda m: A.window_bits(m, torch.tensor([1, 2, 3]), torch.tensor([2, 3, 4])),
    lambda m: A.window_bits(m, torch.ones(2, 4, dtype=torch.long), torch.ones(2, 5, dtype=torch.long)),
    lambda m: A.site_means(m, torch.rand(2, 4), ["blocks.0.ffn.out"]),
    lambda m: A.summarise({"x": torch.zeros(5)}, 2),
    lambda m: A.window_scores(m, torch.ones(2, 4, dtype=torch.long), torch.ones(2, 4, dtype=torch.long),
                              reference=torch.zeros(3, 4, 256)),
])
def test_bad_input_raises_a_clear_error(model, call):
    with pytest.raises(TinyTFInputError):
        call(model)


def test_shipped_results_file():
    res = A.load_results()
    assert res == json.loads((ROOT / "tinytf" / "checkpoints" / "ablation-text-4l.json").read_text())
    assert len(res["bits"]) == 1 + 4 + 4 * 4 + 4 * 2 and all(len(v) == 256 for v in res["bits"].values())
    assert list(res["kl"]) == list(res["bits"]) and all(len(v) == 256 for v in res["kl"].values())
    assert all(k == 0 for k in res["kl"]["intact"]) and all(min(v) > 0 for k, v in res["kl"].items() if k != "intact")
    assert len(res["groups"]) == 4 and set(res["means"]) == {f"blocks.{i}.{s}.out" for i in range(4)
                                                               for s in ("attn", "ffn")}
    intact = sum(res["bits"]["intact"]) / 256
    info = tinytf.pretrained.info("text-4l")
    assert abs(intact - info["metrics"]["val_bpb"]) < 0.02  # the same windows bits_per_byte scores


def test_whole_block_zeroed_is_the_identity(model, windows):
    inputs, _ = windows
    names = ["blocks.1.resid_pre", "blocks.1.resid_post"]
    _, trace = model.run_with_trace(inputs, names=names, patches=A.ZeroAblation(A.block_sites(model, 1)).patches())
    assert torch.equal(trace["blocks.1.resid_pre"], trace["blocks.1.resid_post"])


def test_window_kl_is_zero_intact_and_matches_a_direct_computation(model, windows):
    inputs, targets = windows
    assert torch.equal(A.window_kl(model, inputs), torch.zeros(len(inputs), dtype=torch.float64))
    abl = A.ZeroAblation(A.sites(model, "attn"))
    with torch.no_grad():
        p = F.log_softmax(model(inputs).double(), -1)
        q = F.log_softmax(abl.run(model, inputs).double(), -1)
    direct = F.kl_div(q, p, log_target=True, reduction="none").sum(-1).mean(-1) / math.log(2)
    kl = A.window_kl(model, inputs, abl)
    assert torch.allclose(kl, direct) and (kl > 0).all()
    scores = A.window_scores(model, inputs, targets, abl, A.intact_logprobs(model, inputs, batch_size=4))
    assert torch.allclose(scores["kl"], kl) and torch.allclose(scores["bits"], A.window_bits(model, inputs, targets, abl))


def test_load_results_names_a_missing_file(tmp_path):
    with pytest.raises(TinyTFInputError, match="measure_ablation"):
        A.load_results(tmp_path / "missing.json")


def test_logprob_change_ignores_a_common_shift():
    g = torch.Generator().manual_seed(0)
    old = torch.randn(3, 5, 256, generator=g)
    shifted = old + torch.randn(3, 5, 1, generator=g) * 10  # the same softmax
    assert A.logprob_change(old, shifted).shape == (3, 5)
    assert A.logprob_change(old, shifted).max() < 1e-5
    assert (shifted - old).abs().amax(-1).min() > 0  # what the largest raw logit change would have counted
    new = old.clone()
    new[..., 7] += 2.0  # one logit up by 2: its log-probability rises by 2 - fall, every other one falls by fall
    fall = torch.log1p(torch.softmax(old.double(), -1)[..., 7] * (math.e ** 2 - 1))  # log of the new normaliser
    assert torch.allclose(A.logprob_change(old, new), torch.maximum(2.0 - fall, fall), atol=1e-6)
    top_two = old.topk(2, dim=-1).values
    gap = F.log_softmax(old, -1).topk(2, dim=-1).values
    assert torch.allclose(top_two[..., 0] - top_two[..., 1], gap[..., 0] - gap[..., 1], atol=1e-5)
    with pytest.raises(TinyTFInputError):
        A.logprob_change(old, old[..., :-1])


def test_induction_score_reads_the_key_after_the_earlier_occurrence():
    from tinytf import heads

    T, P = 8, 4
    w = torch.zeros(1, 2, T, T)
    w[0, :, torch.arange(T), torch.arange(T)] = 1.0  # both heads: attend to self
    for q in range(P, T):  # head 1: the induction pattern
        w[0, 1, q] = 0.0
        w[0, 1, q, q - P + 1] = 1.0
    assert heads.induction_score(w, P).tolist() == [0.0, 1.0]
    with pytest.raises(TinyTFInputError):
        heads.induction_score(w, T)


def test_lens_agreement_ends_at_the_model_itself(model, windows):
    from tinytf import lens

    inputs, targets = windows
    r = lens.lens_agreement(model, inputs[:2], targets[:2])
    assert len(r["agree"]) == len(r["bits"]) == 3 and r["agree"][-1] == 1.0
    bits = A.window_bits(model, inputs[:2], targets[:2]).mean().item()
    assert r["bits"][-1] == pytest.approx(bits, abs=1e-4)
    with pytest.raises(TinyTFInputError):
        lens.lens_agreement(model, inputs[0], targets[0])


def test_resample_ablation_writes_the_other_windows_outputs(model, windows):
    inputs, targets = windows
    inputs, targets = inputs[:3], targets[:3]
    site = A.sites(model, "attn")[:1]
    sources = A.resample_sources(model, inputs, site)
    _, trace = model.run_with_trace(inputs, names=site)
    assert torch.equal(sources[site[0]][1], trace[site[0]][0])  # window 1 gets window 0's output
    same = A.ResampleAblation(A.resample_sources(model, inputs, site, shift=0))
    assert torch.allclose(A.window_bits(model, inputs, targets, same, batch_size=3),
                          A.window_bits(model, inputs, targets), atol=1e-5)  # its own output: nothing changes
    with pytest.raises(TinyTFInputError):
        A.window_bits(model, inputs, targets, A.ResampleAblation(sources), batch_size=2)


def test_format_table_and_next_byte_bits():
    import math

    import torch.nn.functional as F

    from tinytf.lab.ablation import format_ablation_table, next_byte_bits

    summary = {"intact": {"mean": 2.0, "groups": [1.9, 2.0, 2.0, 2.1]},
               "ffn zero": {"mean": 5.0, "groups": [4.5, 5.0, 5.0, 5.5]}}
    kl = {"ffn zero": {"mean": 3.0, "groups": [2.5, 3.0, 3.0, 3.5]}}
    lines = format_ablation_table(summary, kl, ["intact", "ffn zero"], legend=True).split("\n")
    assert lines[0] == "" and lines[1].startswith("removed")
    assert lines[2].split() == ["intact", "2.00", "1.90", "2.00", "2.00", "2.10", "0.20"]  # no KL row: no cost
    assert lines[3].split()[-4:] == ["+3.00", "3.00", "[2.50,", "3.50]"]
    assert lines[4].startswith("range:") and lines[5].startswith("KL:")
    with pytest.raises(tinytf.TinyTFInputError, match="format_ablation_table"):
        format_ablation_table(summary, kl, ["attn zero"])

    torch.manual_seed(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=1, d_model=32, n_heads=2)).eval()
    x = torch.randint(0, 256, (2, 9))
    bits = next_byte_bits(model, x)
    assert bits.shape == (2, 8)
    with torch.no_grad():
        ref = F.cross_entropy(model(x)[0, 3], x[0, 4]) / math.log(2)  # byte 4 from bytes 0..3
    assert torch.allclose(bits[0, 3], ref)
    with pytest.raises(tinytf.TinyTFInputError, match="next_byte_bits"):
        next_byte_bits(model, torch.zeros(5, dtype=torch.long))


def test_format_cost_table():
    from tinytf.lab.ablation import format_cost_table

    summary = {"intact": {"mean": 2.0, "groups": [1.9, 2.1]}, "ffn zero": {"mean": 5.25},
               "bigram baseline": {"mean": 3.5}}
    lines = format_cost_table(summary, ["intact", "ffn zero", "bigram baseline"]).split("\n")
    assert lines[0] == "" and lines[1].split() == ["variant", "bits", "per", "byte", "change"]
    assert lines[2].split() == ["intact", "2.00"]  # the reference: no change printed
    assert lines[3].split() == ["ffn", "zero", "5.25", "+3.25"]
    assert lines[4].split() == ["bigram", "baseline", "3.50", "+1.50"]
    assert all(len(line) <= 80 for line in lines)
    assert format_cost_table(summary, ["ffn zero"], reference="bigram baseline").split("\n")[2].split()[-1] == "+1.75"
    # the change is the difference of the printed values (2.03, 5.55: +3.52), not of the unrounded ones (+3.51)
    rounded = {"intact": {"mean": 2.034}, "attn zero": {"mean": 5.546}}
    assert format_cost_table(rounded, ["intact", "attn zero"]).split("\n")[3].split() == ["attn", "zero", "5.55", "+3.52"]
    with pytest.raises(ValueError, match="format_cost_table"):
        format_cost_table(summary, ["attn zero"])
    with pytest.raises(ValueError, match="format_cost_table"):
        format_cost_table(summary, ["ffn zero"], reference="unigram baseline")


@torch.no_grad()
def test_ffn_patched_bits_patches_every_blocks_activation(model, windows):
    """Chapter 4's switching-off test: a patch on SiLU(gate) in every block (or one block, per_block=True)."""
    inputs, targets = windows
    direct = F.cross_entropy(model(inputs).transpose(1, 2), targets).item() / math.log(2)
    assert A.ffn_patched_bits(model, inputs, targets, lambda a: a) == pytest.approx(direct, abs=1e-12)
    # SiLU(gate) = 0 in every block: each FFN writes 0 (no bias), as zeroing every ffn.out does
    no_ffn = A.window_bits(model, inputs, targets, A.ZeroAblation(A.sites(model, "ffn"))).mean().item()
    assert A.ffn_patched_bits(model, inputs, targets, torch.zeros_like) == pytest.approx(no_ffn, abs=1e-6)
    assert A.ffn_patched_bits(model, inputs, targets, torch.zeros_like, site="post") == pytest.approx(no_ffn, abs=1e-6)
    # per_block: the patch gets the block's index; zeroing block 1 only is zeroing blocks.1.ffn.out
    only1 = A.window_bits(model, inputs, targets, A.ZeroAblation(["blocks.1.ffn.out"])).mean().item()
    seen = []

    def zero_block_1(a, b):
        seen.append(b)
        return a * (b != 1)

    assert A.ffn_patched_bits(model, inputs, targets, zero_block_1, per_block=True) == pytest.approx(only1, abs=1e-6)
    assert seen == [0, 1] and abs(only1 - direct) > 1e-3 and abs(no_ffn - only1) > 1e-3
    # a mask shaped like the traced tensor: all windows run in one pass
    _, trace = model.run_with_trace(inputs)
    mask = (trace["blocks.0.ffn.act"] <= 1).float()
    assert A.ffn_patched_bits(model, inputs, targets, lambda a: a * mask) > 0
    with pytest.raises(TinyTFInputError, match="site"):
        A.ffn_patched_bits(model, inputs, targets, torch.zeros_like, site="blocks.0.ffn.act")
    with pytest.raises(TinyTFInputError, match="patch"):
        A.ffn_patched_bits(model, inputs, targets, None)
    with pytest.raises(KeyError, match="ffn.wiegths"):
        A.ffn_patched_bits(model, inputs, targets, torch.zeros_like, site="wiegths")
