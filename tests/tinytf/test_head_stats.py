"""tinytf.lab.head_stats: head measurements over many inputs, with their spread."""
import math

import pytest
import torch

import tinytf
from tinytf.lab import head_stats as hs
from tinytf.lab import heads as H
from tinytf.lab import tasks as T


def test_spread_mean_std_sem():
    s = hs.spread([1.0, 2.0, 3.0, 4.0])
    assert s.mean == 2.5 and s.n == 4
    assert math.isclose(s.std, math.sqrt(1.25)) and math.isclose(s.sem, math.sqrt(1.25) / math.sqrt(3))
    assert format(s, ".1f") == "2.5 ± 1.1"
    assert hs.spread([5.0]).sem == 0.0
    with pytest.raises(tinytf.TinyTFInputError):
        hs.spread([])


def test_induction_summary_matches_one_sample_at_a_time():
    name = "induction-2l"
    model = tinytf.pretrained(name)
    s = hs.induction_summary(model, name, n_samples=3)
    assert s["total"] == 3 * 9 and 0 <= s["correct"] <= s["total"]
    prev = []
    for seed in (1, 2, 3):  # the same numbers, computed one example at a time as chapter 2 used to
        sample = tinytf.pretrained.sample_input(name, seed=seed)
        with torch.no_grad():
            _, tr = model.run_with_trace(sample.ids)
        cells = [(i, i - 1) for i in range(1, len(sample.ids))]
        prev.append(float(T.cell_mass(tr["blocks.0.attn.weights"], cells)[0]))
    assert math.isclose(s["previous"].mean, sum(prev) / 3, rel_tol=1e-6)
    with pytest.raises(tinytf.TinyTFInputError):
        hs.induction_summary(model, name, n_samples=0)


def test_score_tables_average_the_single_window_scores():
    torch.manual_seed(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=2, d_model=32, n_heads=2))
    windows = [tinytf.encode("The cat sat on the mat."), tinytf.encode("A dog ran in the park.")]
    rows = hs.score_tables(model, windows)
    assert len(rows) == 4 and rows[0]["layer"] == 0 and rows[3]["head"] == 1
    singles = [H.score_table(model, text) for text in ("The cat sat on the mat.", "A dog ran in the park.")]
    for j, r in enumerate(rows):
        for p in H.PATTERNS:
            assert math.isclose(r[p].mean, (singles[0][j][p] + singles[1][j][p]) / 2, rel_tol=1e-6)
    best = hs.best_heads(rows)
    assert all(best[p][p].mean == max(r[p].mean for r in rows) for p in H.PATTERNS)
    assert "*" in hs.format_score_tables(rows)
    with pytest.raises(tinytf.TinyTFInputError):
        hs.score_tables(model, [])


def test_even_spread_scores():
    assert math.isclose(hs.even_spread_scores(2)["previous"], 0.5)
    w = torch.tril(torch.ones(8, 8)) / torch.arange(1, 9)[:, None]
    assert math.isclose(hs.even_spread_scores(8)["first"], float(H.first_token_score(w[None])[0]), rel_tol=1e-6)
    with pytest.raises(tinytf.TinyTFInputError):
        hs.even_spread_scores(1)


def test_even_spread_word_start():
    # "ab cde": counted queries are "e" (position 5, word start 3): an even row of 6 keys puts 1/6 there
    assert math.isclose(hs.even_spread_word_start(["ab cde"]), 1 / 6, rel_tol=1e-6)
    ids = tinytf.encode("ab cde")
    assert math.isclose(hs.even_spread_word_start([ids, "ab cde"]), 1 / 6, rel_tol=1e-6)
    with pytest.raises(tinytf.TinyTFInputError):
        hs.even_spread_word_start([])
    with pytest.raises(tinytf.TinyTFInputError):
        hs.even_spread_word_start(["abc def", "a"])


def test_seen_in_training_draws_the_recorded_training_data():
    seen = hs.seen_in_training("induction-2l", n_samples=3)
    info = tinytf.pretrained.info("induction-2l")
    assert seen["sequences"] == info["steps"] * info["batch_size"]
    assert 0 < seen["same_length"] < seen["sequences"] and seen["examples"] == 3 and seen["seen"] == 0
    with pytest.raises(tinytf.TinyTFInputError):
        hs.seen_in_training("text-4l")


def test_best_per_block_names_the_best_head_of_each_block():
    torch.manual_seed(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=2, d_model=32, n_heads=2))
    twin = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=2, d_model=32, n_heads=2))
    texts = ["The cat sat on the mat.", "A dog ran in the park."]
    table = hs.best_per_block(model, texts, twin=twin)
    singles = [H.score_table(model, t) for t in texts]
    assert [e["layer"] for e in table["blocks"]] == [0, 1] and len(table["rows"]) == 4
    for e in table["blocks"]:
        for p in H.PATTERNS:
            means = [(s0[p] + s1[p]) / 2 for s0, s1 in zip(*singles) if s0["layer"] == e["layer"]]
            assert math.isclose(e[p]["mean"], max(means), rel_tol=1e-6)
            assert means.index(max(means)) in e[p]["heads"]
            assert e[p]["twin"] == max(u[p] for u in table["twin_rows"] if u["layer"] == e["layer"])
    text = hs.format_best_per_block(table)
    assert len(text.splitlines()) == 3 and "±" in text
    assert hs.best_per_block(model, texts)["twin_rows"] is None
    with pytest.raises(tinytf.TinyTFInputError):
        hs.best_per_block(model, [])


def test_scores_per_text_takes_byte_id_windows_as_well_as_text():
    torch.manual_seed(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=2, d_model=32, n_heads=2))
    texts = ["The cat sat on the mat.", "A dog ran in the park!!"]
    windows = torch.tensor([list(t.encode()) for t in texts])  # [2, 23], as tinytf.textdata.eval_windows gives
    from_text, from_ids = hs.scores_per_text(model, texts), hs.scores_per_text(model, windows)
    assert from_text.keys() == from_ids.keys()
    for key, scores in from_text.items():
        for p in H.PATTERNS:
            assert torch.allclose(scores[p], from_ids[key][p])


def test_anti_diagonal_summary_matches_one_example_at_a_time():
    name = "reversal-2l"
    model = tinytf.pretrained(name)
    s = hs.anti_diagonal_summary(model, name, n_samples=10)
    assert s["n"] == 10 and s["lengths"] == [4, 5, 6, 7, 8, 9, 10, 11, 12, 4]  # cycles through the range 4..12
    per_head = []
    for seed, length in zip(range(1, 11), s["lengths"]):  # the same numbers, one example at a time
        sample = tinytf.pretrained.sample_input(name, seed=seed, length=length)
        with torch.no_grad():
            _, tr = model.run_with_trace(sample.src, sample.tgt)
        per_head.append(T.cell_mass(tr["decoder.blocks.1.cross_attn.weights"], T.anti_diagonal_cells(length)))
    per_head = torch.stack(per_head).double()  # [10, H]
    for h in range(per_head.shape[1]):
        assert math.isclose(s["heads"][1][h].mean, float(per_head[:, h].mean()), rel_tol=1e-6)
    assert math.isclose(s["mean"][1].mean, float(per_head.mean()), rel_tol=1e-6)
    share = 1 / (torch.tensor(s["lengths"], dtype=torch.float64) + 1)
    assert math.isclose(s["uniform_multiple"][1].mean, float((per_head.mean(-1) / share).mean()), rel_tol=1e-6)
    lo, hi = s["mean_range"][1]
    assert lo <= s["mean"][1].mean <= hi
    text = hs.format_anti_diagonal({"trained": s})
    assert text.splitlines()[0].split()[:3] == ["model", "block", "head"] and "x uniform share" in text
    second = text.splitlines()[text.splitlines().index("") + 1]
    assert second.split()[:2] == ["model", "block"] and "layer" not in text
    with pytest.raises(tinytf.TinyTFInputError):
        hs.anti_diagonal_summary(model, name, n_samples=1)
    with pytest.raises(tinytf.TinyTFInputError):
        hs.anti_diagonal_summary(model, "induction-2l", n_samples=4)


def test_anti_diagonal_summary_of_an_untrained_model_is_near_uniform():
    s = hs.anti_diagonal_summary(tinytf.pretrained.untrained("reversal-2l"), n_samples=18)
    assert all(abs(m.mean - 1) < 0.05 for m in s["uniform_multiple"])


def test_stratified_sem_counts_only_the_spread_within_each_group():
    # two groups of three: the groups' means differ a lot, the values within a group barely
    values = [1.0, 1.1, 0.9, 5.0, 5.1, 4.9]
    groups = [4, 4, 4, 8, 8, 8]
    by_hand = math.sqrt(sum((0.5 ** 2) * 0.01 / 3 for _ in range(2)))  # W = 1/2, s^2 = 0.01 within each group
    assert math.isclose(hs.stratified_sem(values, groups), by_hand, rel_tol=1e-9)
    assert hs.stratified_sem(values, groups) < 0.1 * hs.spread(values).sem  # the plain one includes the groups
    assert hs.stratified_sem([1.0, 2.0, 3.0], [4, 4, 5]) == hs.spread([1.0, 2.0, 3.0]).sem  # a group of one
    with pytest.raises(tinytf.TinyTFInputError):
        hs.stratified_sem([1.0, 2.0], [4])
    s = hs.anti_diagonal_summary(tinytf.pretrained.untrained("reversal-2l"), n_samples=18)  # 2 per length
    assert len(s["heads_se"][0]) == len(s["heads"][0]) and len(s["mean_se"]) == len(s["mean"])


def test_ablation_table_counts_and_bad_input():
    name = "induction-2l"
    model = tinytf.pretrained(name)
    examples = [tinytf.pretrained.sample_input(name, seed=s, length=10) for s in (1, 2, 3)]

    def zero(z):
        return torch.zeros_like(z)

    table = hs.ablation_table(model, examples, {"as trained": {}, "block 0 zeroed": {"blocks.0.attn.z": zero}})
    lines = table.splitlines()
    assert len(lines) == 2 + 2 + 1 and lines[2].startswith("as trained") and lines[3].startswith("block 0 zeroed")
    s = hs.induction_summary(model, name, n_samples=3)  # the same model, examples and counting
    assert f"{s['correct']:>4} of {s['total']}" in lines[2]
    assert f"{s['induction'].mean:14.2f}" in lines[2]
    assert lines[-1] == f"a random pick among the first copy's 10 letters: about {27 / 10:.0f} of 27 right"
    for bad in ({}, [("as trained", {})]):
        with pytest.raises(ValueError):
            hs.ablation_table(model, examples, bad)
    with pytest.raises(ValueError):
        hs.ablation_table(model, [], {"as trained": {}})
    mixed = examples[:1] + [tinytf.pretrained.sample_input(name, seed=4, length=8)]
    with pytest.raises(ValueError, match="same length"):
        hs.ablation_table(model, mixed, {"as trained": {}})
