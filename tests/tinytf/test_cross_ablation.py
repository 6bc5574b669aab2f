"""tinytf.lab.cross_ablation: cutting each decoder block's cross-attention in the reversal model."""
import pytest
import torch

import tinytf
from tinytf.lab import cross_ablation as CA
from tinytf.lab import tasks as T

N = 18  # two strings per length 4..12: quick, and every length is present


@pytest.fixture(scope="module")
def result():
    return CA.cross_attention_ablation(tinytf.pretrained("reversal-2l"), "reversal-2l", n_samples=N)


def test_intact_exact_count_is_greedy_decoding(result):
    # a string is "exact" under teacher forcing iff greedy decoding writes it exactly
    model = tinytf.pretrained("reversal-2l")
    exact = 0
    for s, length in enumerate(result["lengths"]):
        x = tinytf.pretrained.sample_input("reversal-2l", seed=1 + s, length=length)
        out = tinytf.generate_seq2seq(model, x.src, bos=T.BOS, max_new_tokens=length + 1)
        exact += int(torch.equal(out[1:], x.target))
    assert result["zero"]["intact"]["exact"] == result["mean"]["intact"]["exact"] == exact


def test_conditions_and_damage(result):
    assert result["conditions"] == ["intact", "block 0", "block 1", "all blocks"] and result["n"] == N
    for mode in CA.MODES:
        r = result[mode]
        assert r["intact"]["exact"] >= N - 1 and r["intact"]["accuracy"].mean > 0.99
        # the trained model needs its source: with no cross-attention it cannot reverse a single string
        assert r["all blocks"]["exact"] == 0 and r["all blocks"]["accuracy"].mean < 0.2
        assert r["block 1"]["accuracy"].mean < r["block 0"]["accuracy"].mean < r["intact"]["accuracy"].mean


def test_all_blocks_zeroed_is_source_independent():
    # with every cross-attention zeroed the decoder cannot see the source: an untrained model is then the
    # same for two different sources, so its accuracy equals that of any other source of the same length
    model = tinytf.pretrained.untrained("reversal-2l")
    src = torch.tensor([[97, 98, 99, 100, T.EOS]])
    other = torch.tensor([[120, 121, 122, 119, T.EOS]])
    tgt = torch.tensor([[T.BOS, 100, 99, 98, 97]])
    cut = {f"decoder.blocks.{i}.cross_attn.out": torch.zeros_like for i in range(2)}
    with torch.no_grad():
        assert torch.equal(model.run_with_patches(src, tgt, patches=cut), model.run_with_patches(other, tgt, patches=cut))


def test_format_fits_80_columns(result):
    text = CA.format_cross_ablation(result)
    assert all(len(line) <= 80 for line in text.splitlines()) and len(text.splitlines()) == 5
    assert f"0/{N}" in text.splitlines()[-1]
    assert CA._pct(0.084) == "8.4" and CA._pct(0.514) == "51" and CA._pct(1.0) == "100"
    # a share below 1 never reads as 100%, nor one above 0 as 0%
    assert CA._pct(0.9961) == "99.6" and CA._pct(0.99996) == "99.996" and CA._pct(0.0004) == "0.04"


def test_bad_input():
    with pytest.raises(tinytf.TinyTFInputError, match="EncoderDecoder"):
        CA.cross_attention_ablation(tinytf.pretrained("induction-2l"), "reversal-2l")
    with pytest.raises(tinytf.TinyTFInputError, match="not a reversal"):
        CA.cross_attention_ablation(tinytf.pretrained("reversal-2l"), "induction-2l", n_samples=4)
    with pytest.raises(tinytf.TinyTFInputError, match="n_samples"):
        CA.cross_attention_ablation(tinytf.pretrained("reversal-2l"), n_samples=1)
    with pytest.raises(tinytf.TinyTFInputError, match="cross_attention_ablation"):
        CA.format_cross_ablation({"n": 3})


def test_cut_accuracy_by_target_splits_the_pooled_count():
    model = tinytf.pretrained("reversal-2l")
    split = CA.cut_accuracy_by_target(model, n_samples=N)
    lengths = [4 + s % 9 for s in range(N)]
    assert split["eos"][1] == N and split["letters"][1] == sum(lengths)  # one <eos> per string, L letters
    # the same counts, string by string, the long way: the <eos> target is the last position of each string
    cut = {f"decoder.blocks.{i}.cross_attn.out": torch.zeros_like for i in range(2)}
    eos = letters = as_eos = 0
    with torch.no_grad():
        for s, length in enumerate(lengths):
            x = tinytf.pretrained.sample_input("reversal-2l", seed=1 + s, length=length)
            top = model.run_with_patches(x.src[None], x.tgt[None], patches=cut)[0].argmax(-1)
            ok = top == x.target
            eos += int(ok[-1])
            letters += int(ok[:-1].sum())
            as_eos += int((top[:-1] == T.EOS).sum())  # a letter target given <eos>
    assert split == {"eos": (eos, N), "letters": (letters, sum(lengths)), "letters_as_eos": as_eos}
    assert 0 <= as_eos <= sum(lengths) - letters
    # block 0 alone is the milder cut: more letters stay right
    assert CA.cut_accuracy_by_target(model, n_samples=N, blocks=[0])["letters"][0] > letters

def test_cut_accuracy_by_target_bad_input():
    model = tinytf.pretrained("reversal-2l")
    with pytest.raises(ValueError, match="blocks"):
        CA.cut_accuracy_by_target(model, n_samples=2, blocks=[2])
    with pytest.raises(ValueError, match="blocks"):
        CA.cut_accuracy_by_target(model, n_samples=2, blocks=[])
    with pytest.raises(ValueError, match="n_samples"):
        CA.cut_accuracy_by_target(model, n_samples=0)
    with pytest.raises(ValueError, match="not a reversal"):
        CA.cut_accuracy_by_target(model, "induction-2l", n_samples=2)
    with pytest.raises(ValueError, match="EncoderDecoder"):
        CA.cut_accuracy_by_target(tinytf.pretrained("induction-2l"))


def test_format_one_mode_with_a_baseline(result):
    base = CA.position_guess_accuracy(result["lengths"], 4)
    text = CA.format_cross_ablation(result, modes=("zero",), baseline=base)
    lines = text.splitlines()
    assert lines[0].split() == ["cross-attention", "cut", "strings", "exact", "tokens", "right"]
    assert len(lines) == 6 and lines[-1].startswith("position-only guess") and lines[-1].endswith("14%")
    assert all(len(line) <= 80 for line in lines) and "mean" not in lines[0]
    # the default keeps both replacements and no baseline row
    assert CA.format_cross_ablation(result).splitlines()[1:] != lines[1:5]
    with pytest.raises(tinytf.TinyTFInputError, match="modes"):
        CA.format_cross_ablation(result, modes=("ones",))


def test_position_guess_accuracy():
    # one string of length 4: 5 targets; its <eos> right, and 4 letters right 1 time in 26 each
    assert CA.position_guess_accuracy([4], 4) == pytest.approx((1 + 4 / 26) / 5)
    # the chapter's 180 strings, 20 at each length 4..12
    lengths = [4 + s % 9 for s in range(180)]
    assert round(CA.position_guess_accuracy(lengths, 4), 3) == 0.141
    # checked against a simulation of the guess on random strings
    g = torch.Generator().manual_seed(0)
    hits = []
    for n in lengths:
        letters = torch.randint(26, (n,), generator=g)
        guess = torch.randint(26, (4,), generator=g)
        hits.append((1 + int((letters[:4] == guess).sum())) / (n + 1))
    assert abs(sum(hits) / len(hits) - CA.position_guess_accuracy(lengths, 4)) < 0.01
    with pytest.raises(tinytf.TinyTFInputError, match="lengths"):
        CA.position_guess_accuracy([3], 4)
    with pytest.raises(tinytf.TinyTFInputError, match="n_letters"):
        CA.position_guess_accuracy([4], 4, n_letters=0)
