"""tinytf.tasks (synthetic data) and tinytf.train (the training loop), without the shipped checkpoints."""
import pytest
import torch

import tinytf
from tinytf import tasks as T
from tinytf import train as TR
from tinytf.errors import TinyTFInputError


def gen(seed):
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------------------------------------- induction data


@pytest.mark.parametrize("length", [2, 5, 16])
def test_induction_batch_is_a_repeat_and_the_mask_marks_lookups(length):
    inputs, targets, mask = T.induction_batch(64, length, gen(0))
    assert inputs.shape == targets.shape == mask.shape == (64, 2 * length)
    assert mask.dtype == torch.bool
    assert (inputs[:, 0] == T.BOS).all()
    assert torch.equal(inputs[:, 1:], targets[:, :-1])  # targets are the inputs shifted by one
    first, second = inputs[:, 1:length + 1], torch.cat((inputs[:, length + 1:], targets[:, -1:]), 1)
    assert torch.equal(first, second)  # the second copy repeats the first
    assert set(first.unique().tolist()) <= set(T.LETTERS.encode())
    assert not mask[:, :length + 1].any()  # nothing before the second copy's second token is marked
    b, i = mask.nonzero(as_tuple=True)
    assert len(b) > 0
    # at every marked position the current token occurred once before, and the answer is right after it
    assert torch.equal(inputs[b, i - length], inputs[b, i])
    assert torch.equal(inputs[b, i - length + 1], targets[b, i])
    for bb, ii in zip(b.tolist(), i.tolist()):
        assert (first[bb] == inputs[bb, ii]).sum() == 1
    # and unmarked positions in the second copy are exactly the ambiguous ones
    for bb in range(8):
        for ii in range(length + 1, 2 * length):
            assert bool(mask[bb, ii]) == bool((first[bb] == inputs[bb, ii]).sum() == 1)


def test_induction_batch_is_deterministic_per_seed():
    a = T.induction_batch(8, 10, gen(3))
    b = T.induction_batch(8, 10, gen(3))
    c = T.induction_batch(8, 10, gen(4))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a[0], c[0])


def test_induction_distinct_and_prefix():
    inputs, _, mask = T.induction_batch(32, 26, gen(1), distinct=True)
    first = inputs[:, 1:27]
    assert all(len(set(row.tolist())) == 26 for row in first)
    assert mask[:, 27:].all()  # every lookup is unambiguous
    inputs, targets, mask = T.induction_batch(4, 6, gen(2), prefix=5)
    assert inputs.shape == (4, 5 + 12)
    assert set(inputs[:, 1:6].flatten().tolist()) <= set(T.FILLER.encode())
    assert torch.equal(inputs[:, 6:11], inputs[:, 12:17])  # the repeat starts after the filler


def test_induction_rule_makes_the_first_copy_partly_predictable():
    inputs, targets, mask = T.induction_batch(256, 12, gen(5), rule_prob=1.0)
    rule = dict(zip(T.LETTERS, T.RULE))
    x = [T.text(row[1:13]) for row in inputs]
    assert all(w[t] == rule[w[t - 2]] for w in x for t in range(2, 12))  # rule_prob 1: every letter follows
    assert mask[:, 2:12].all() and not mask[:, :2].any()
    inputs, targets, mask = T.induction_batch(512, 12, gen(5), rule_prob=0.5)
    follows = sum(T.text(r[1:13])[t] == rule[T.text(r[1:13])[t - 2]] for r in inputs for t in range(2, 12))
    assert 0.45 < follows / (512 * 10) < 0.6  # about half the time (plus chance matches)
    assert sorted(T.RULE) == sorted(T.LETTERS)  # RULE is a permutation of the letters
    with pytest.raises(TinyTFInputError):
        T.induction_batch(2, 4, gen(0), alphabet="abcd", rule_prob=0.5)


@pytest.mark.parametrize("kwargs", [dict(batch_size=0, length=4), dict(batch_size=2, length=1),
                                    dict(batch_size=2, length=27, distinct=True),
                                    dict(batch_size=2, length=4, prefix=-1),
                                    dict(batch_size=2, length=4, alphabet=""),
                                    dict(batch_size=2, length=4, alphabet="a\x02")])
def test_induction_batch_rejects_bad_arguments(kwargs):
    with pytest.raises(TinyTFInputError):
        T.induction_batch(generator=gen(0), **kwargs)


# ---------------------------------------------------------------------------------------------- reversal data


def test_reversal_batch_layout():
    src, tgt_in, tgt_out = T.reversal_batch(16, 7, gen(0))
    assert src.shape == tgt_in.shape == tgt_out.shape == (16, 8)
    assert (src[:, -1] == T.EOS).all() and (tgt_in[:, 0] == T.BOS).all() and (tgt_out[:, -1] == T.EOS).all()
    assert torch.equal(tgt_out[:, :-1], src[:, :-1].flip(1))
    assert torch.equal(tgt_in[:, 1:], tgt_out[:, :-1])  # teacher forcing: decoder input = output shifted right
    assert torch.equal(src, T.reversal_batch(16, 7, gen(0))[0])
    with pytest.raises(TinyTFInputError):
        T.reversal_batch(2, 0, gen(0))


def test_cells_and_labels():
    assert T.induction_cells(4) == [(5, 2), (6, 3), (7, 4)]
    assert T.anti_diagonal_cells(3) == [(0, 2), (1, 1), (2, 0)]
    assert T.labels([T.BOS, 97, T.EOS, 200]) == ["<bos>", "a", "<eos>", "#200"]
    assert T.text(torch.tensor([T.BOS, 104, 105])) == "<bos>hi"
    w = torch.zeros(1, 2, 3, 3)
    w[0, 1, 2, 0] = 1.0
    assert T.cell_mass(w, [(2, 0)]).tolist() == [0.0, 1.0]


def test_get_task():
    assert T.get_task("induction").kind == "decoder"
    assert T.get_task("reversal").kind == "seq2seq"
    custom = T.ReversalTask(min_length=2, max_length=3)
    assert T.get_task(custom) is custom
    with pytest.raises(TinyTFInputError, match="unknown task"):
        T.get_task("sorting")
    with pytest.raises(TinyTFInputError):
        T.InductionTask(min_length=5, max_length=4)


# ---------------------------------------------------------------------------------------------- training loop


def small_decoder(seed=0):
    cfg = tinytf.TinyConfig(vocab_size=T.VOCAB_SIZE, d_model=32, n_layers=1, n_heads=2, d_ff=64, max_seq_len=32)
    return TR.build_model("decoder", cfg, seed)


def test_short_training_lowers_the_loss_and_is_deterministic():
    task = T.InductionTask(min_length=4, max_length=8)
    runs = [TR.train_decoder(small_decoder(), task, steps=40, lr=1e-2, batch_size=16, seed=0, progress=False,
                             eval_samples=64) for _ in range(2)]
    a, b = runs
    assert a.losses == b.losses  # same seed, same machine: the same numbers
    assert a.metrics == b.metrics
    assert len(a.losses) == len(a.grad_norms) == len(a.lrs) == 40
    assert sum(a.losses[-5:]) / 5 < sum(a.losses[:5]) / 5 - 0.3  # it learned something (uniform loss ~3.3)
    other = TR.train_decoder(small_decoder(), task, steps=40, lr=1e-2, batch_size=16, seed=1, progress=False,
                             eval_samples=0)
    assert other.losses != a.losses
    assert set(a.metrics) == {"accuracy", "loss", "induction_score", "induction_head"}
    assert 0.0 <= a.metrics["accuracy"] <= 1.0
    assert "step" in a.summary() and "metrics on fresh data" in a.summary()


def test_seq2seq_training_and_rng_isolation():
    cfg = tinytf.TinyConfig(vocab_size=T.VOCAB_SIZE, d_model=32, n_layers=1, n_heads=2, d_ff=64, max_seq_len=16)
    model = TR.build_model("seq2seq", cfg, 0)
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    threads = torch.get_num_threads()
    h = TR.train_seq2seq(model, T.ReversalTask(min_length=3, max_length=5), steps=30, lr=1e-2, batch_size=16,
                         seed=0, progress=False, eval_samples=32)
    assert torch.equal(torch.rand(3), expected)  # training did not consume the caller's random numbers
    assert torch.get_num_threads() == threads  # and restored the thread count
    assert h.losses[-1] < h.losses[0]
    assert {"token_accuracy", "exact_match", "loss", "anti_diagonal_score", "anti_diagonal_head"} == set(h.metrics)


def test_train_rejects_mismatched_models_and_settings():
    dec = small_decoder()
    with pytest.raises(TinyTFInputError, match="EncoderDecoder"):
        TR.train(dec, "reversal", steps=1, progress=False)
    with pytest.raises(TinyTFInputError, match="train_seq2seq"):
        TR.train_decoder(dec, "reversal", steps=1, progress=False)
    tiny_vocab = TR.build_model("decoder", tinytf.TinyConfig(vocab_size=64, d_model=16, n_heads=2, d_ff=32))
    with pytest.raises(TinyTFInputError, match="vocab_size"):
        TR.train(tiny_vocab, "induction", steps=1, progress=False)
    with pytest.raises(TinyTFInputError, match="steps"):
        TR.train(dec, "induction", steps=0, progress=False)
    with pytest.raises(TinyTFInputError, match="lr"):
        TR.train(dec, "induction", steps=1, lr=0, progress=False)


def test_lr_schedule():
    assert TR.lr_at(0, 100, 1.0, 10, "cosine") == pytest.approx(0.1)
    assert TR.lr_at(10, 100, 1.0, 10, "cosine") == pytest.approx(1.0)
    assert TR.lr_at(99, 100, 1.0, 10, "cosine") == pytest.approx(0.1, abs=1e-3)
    assert TR.lr_at(50, 100, 1.0, 0, "constant") == 1.0
