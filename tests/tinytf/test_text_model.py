"""The byte-level text model (tinytf/checkpoints/text-4l*) trained on the docstrings of Python's standard
library, and the corpus, baselines and training loop behind it (tinytf.textdata, tinytf.train.train_text).

The corpus is read from the running interpreter, never from the repository. The tests that recompute
numbers on it compare its sha256 with the one the checkpoint recorded and are skipped, with the reason,
when this machine's stdlib differs (another Python version); with the recorded Python version they run."""
import json
import random
import re

import pytest
import torch

import tinytf
import tinytf.pretrained as P
from tinytf import textdata
from tinytf import train as TR

NAME = "text-4l"
TARGET_BPB = 2.5  # the goal stated in issue #12: held-out bits per byte at most this


@pytest.fixture(scope="module")
def info():
    return P.info(NAME)


@pytest.fixture(scope="module")
def corpus():
    return textdata.stdlib_corpus()


@pytest.fixture(scope="module")
def model():
    return P.load(NAME)


@pytest.fixture(scope="module")
def same_corpus(info, corpus):
    """Skip (with the reason) when this interpreter's stdlib does not give the recorded corpus."""
    rec = info["corpus"]
    if corpus.sha256 != rec["sha256"]:
        pytest.skip(f"this stdlib's docstring corpus (Python {corpus.record()['python_version']}, sha256 "
                    f"{corpus.sha256[:12]}) differs from the one {NAME} was trained and measured on (Python "
                    f"{rec['python_version']}, sha256 {rec['sha256'][:12]}); its numbers cannot be reproduced here")
    return corpus


def eval_kwargs(info):
    return dict(n_windows=info["eval"]["n_windows"], seq_len=info["eval"]["seq_len"])


# ---------------------------------------------------------------------------------------------- files, sidecar


def test_listed_as_a_text_model_with_its_snapshots(info):
    assert P.names("text") == [NAME]
    assert NAME in P.available() and NAME not in P.names("decoder")
    assert not any("@" in n for n in P.names())  # snapshots are not listed as models
    snaps = P.snapshots(NAME)
    assert 4 <= len(snaps) <= 6
    steps = list(snaps)
    assert steps[0] == 0 and steps[-1] == info["steps"] and snaps[steps[-1]] == NAME
    assert steps == sorted(steps)
    for step, name in snaps.items():
        if step != info["steps"]:
            assert name == f"{NAME}@step{step}"
            assert P.info(name)["snapshot_of"] == NAME and P.info(name)["step"] == step


def test_sidecar_records_the_corpus_and_the_run(info):
    rec = info["corpus"]
    for key in ("source", "python_version", "n_files", "n_files_train", "n_files_val", "bytes", "bytes_train",
                "bytes_val", "sha256", "split_rule", "skipped", "normalisation"):
        assert key in rec and rec[key] not in (None, ""), key
    assert "stdlib" in rec["source"] and "docstrings" in rec["source"]
    assert re.fullmatch(r"3\.\d+\.\d+", rec["python_version"])
    assert re.fullmatch(r"[0-9a-f]{64}", rec["sha256"])
    assert rec["n_files_train"] + rec["n_files_val"] == rec["n_files"] > 100
    assert rec["bytes_train"] + rec["bytes_val"] == rec["bytes"] > 500_000
    assert "by file" in rec["split_rule"] and "% 10 == 0" in rec["split_rule"]
    assert info["command"].startswith("python -m tinytf train --task text")
    for key in ("seed", "steps", "lr", "batch_size", "seq_len", "optimizer", "train_seconds", "torch_version",
                "parameters", "metrics", "baselines", "tolerance", "continuations", "storage_dtype"):
        assert key in info, key
    # the budget was 30 minutes on this project's 2-core machine; wall time depends on what else runs on
    # it (train_seconds, with machine_load_average_5min), the process's CPU time much less
    if "train_cpu_seconds" in info:  # recorded by runs since this field was added
        assert info["train_cpu_seconds"] <= 30 * 60
    # the loss curve, for train/validation plots without retraining
    curve = info["curve"]
    assert curve["steps"][0] == 0 and curve["steps"][-1] == info["steps"] and len(curve["steps"]) >= 10
    assert len(curve["train_bpb"]) == len(curve["val_bpb"]) == len(curve["steps"])
    assert curve["val_bpb"][0] > 7.5 and curve["val_bpb"][-1] < curve["val_bpb"][0] - 4
    assert curve["train_bpb"][-1] <= TARGET_BPB
    assert len(curve["batch_loss_bpb"]) >= 10


def test_sizes_and_storage(info):
    files = [p for p in P.CHECKPOINT_DIR.iterdir() if p.name.startswith(NAME)]
    total = sum(p.stat().st_size for p in files)
    assert total <= 25 * 1024 * 1024, total
    for name in P.snapshots(NAME).values():
        st = P.CHECKPOINT_DIR / f"{name}.safetensors"
        assert P.info(name)["file_bytes"] == st.stat().st_size
        header = json.loads(st.read_bytes()[8:8 + int.from_bytes(st.read_bytes()[:8], "little")])
        assert {v["dtype"] for k, v in header.items() if k != "__metadata__"} == {"F16"}


def test_loads_without_pickle_as_float32(no_unpickling):
    for step, name in P.snapshots(NAME).items():
        m = tinytf.pretrained(NAME, step=step)
        assert isinstance(m, tinytf.TinyTransformer) and not m.training
        assert {p.dtype for p in m.parameters()} == {torch.float32}
        assert m.config.vocab_size == 256 and m.checkpoint_info["name"] == name
    assert P.load(f"{NAME}@step0").checkpoint_info["step"] == 0


def test_bad_snapshot_requests():
    with pytest.raises(P.CheckpointError, match="has snapshots at steps"):
        P.load(NAME, step=12345)
    with pytest.raises(P.CheckpointError, match="has snapshots at steps"):
        P.load(NAME, step="0")
    with pytest.raises(P.CheckpointError, match="is itself a snapshot"):
        P.snapshots(f"{NAME}@step0")
    with pytest.raises(tinytf.TinyTFInputError, match="kind"):
        P.names("vision")
    with pytest.raises(P.CheckpointError, match="is a text model"):
        P.sample_input(NAME)
    assert P.untrained(NAME).config == P.load(NAME).config


# ---------------------------------------------------------------------------------------------- quality


def test_reproduces_the_recorded_bits_per_byte(info, model, same_corpus):
    kw = eval_kwargs(info)
    val = textdata.bits_per_byte(model, same_corpus.val, **kw)
    assert val == pytest.approx(info["metrics"]["val_bpb"], abs=1e-3)
    base = textdata.baselines(same_corpus.train, same_corpus.val, **kw)
    assert base["unigram"] == pytest.approx(info["baselines"]["unigram"], abs=1e-4)
    assert base["bigram"] == pytest.approx(info["baselines"]["bigram"], abs=1e-4)
    print(f"\n{NAME} held-out bits/byte {val:.3f}; bigram {base['bigram']:.3f}, "
          f"unigram {base['unigram']:.3f}")


def test_beats_the_baselines_and_the_target(info):
    m, base = info["metrics"], info["baselines"]
    assert m["val_bpb"] <= TARGET_BPB
    assert m["val_bpb"] <= base["bigram"] - 1.0  # clearly, not by a hair
    assert base["bigram"] < base["unigram"] < 8.0
    assert m["val_bpb_all_windows"] <= TARGET_BPB + 0.1  # the whole validation split agrees


def test_the_current_python_reads_the_recorded_corpus(info, corpus):
    """With the Python version that trained the model, the corpus must be the very same bytes."""
    import platform

    if platform.python_version() != info["corpus"]["python_version"]:
        pytest.skip(f"Python {platform.python_version()} here, {info['corpus']['python_version']} recorded")
    rec = corpus.record()
    for key in ("sha256", "n_files", "bytes", "bytes_train", "bytes_val", "n_files_val"):
        assert rec[key] == info["corpus"][key], key


def test_bits_per_byte_falls_along_the_snapshots(info, same_corpus):
    recorded, measured = [], []
    for step, name in P.snapshots(NAME).items():
        data = P.info(name)
        recorded.append(data["metrics"]["val_bpb"])
        measured.append(textdata.bits_per_byte(P.load(name), same_corpus.val, n_windows=48,
                                               seq_len=info["eval"]["seq_len"]))
    assert all(a > b for a, b in zip(recorded, recorded[1:])), recorded
    assert all(a > b for a, b in zip(measured, measured[1:])), measured
    assert recorded[0] > 7.5  # untrained: close to uniform over 256 bytes (8 bits)


def words_of(text):
    """Whitespace-separated words that are alphabetic once leading/trailing punctuation is stripped."""
    out = []
    for token in text.split():
        token = token.strip(".,;:!?()[]{}'\"`*-")
        if token.isalpha() and token.isascii():
            out.append(token.lower())
    return out


def real_word_fraction(text, vocab):
    words = words_of(text)
    return sum(w in vocab for w in words) / max(1, len(words)), words


PROMPTS = ("This module provides ", "If the file does not exist, ")


@pytest.mark.parametrize("sampling", [dict(), dict(temperature=0.8, top_p=0.95, seed=0),
                                      dict(temperature=1.0, top_k=20, seed=1)], ids=["greedy", "top-p", "top-k"])
def test_continuations_are_mostly_real_words(model, corpus, sampling):
    vocab = corpus.words("train")
    for prompt in PROMPTS:
        out = tinytf.generate(model, tinytf.encode(prompt), 160, **sampling)
        text = tinytf.decode(out.tokens[len(prompt.encode()):])
        frac, words = real_word_fraction(text, vocab)
        assert len(words) >= 12, (prompt, text)
        assert frac >= 0.6, (prompt, frac, text)
        # the check can fail: the same words with their letters shuffled mostly are not words
        rng = random.Random(0)
        shuffled = " ".join("".join(rng.sample(w, len(w))) for w in words if len(w) > 3)
        assert real_word_fraction(shuffled, vocab)[0] < 0.6, shuffled


def test_the_untrained_snapshot_writes_no_words(corpus):
    out = tinytf.generate(P.load(NAME, step=0), tinytf.encode(PROMPTS[0]), 160, temperature=1.0, seed=0)
    frac, words = real_word_fraction(tinytf.decode(out.tokens[len(PROMPTS[0]):]), corpus.words("train"))
    assert len(words) < 12 or frac < 0.6


def test_recorded_continuations_are_what_the_model_writes(info, model):
    c = info["continuations"]
    prompt = tinytf.encode(c["prompt"])
    greedy = tinytf.generate(model, prompt, c["n_bytes"])
    assert tinytf.decode(greedy.tokens[len(prompt):]) == c["greedy"]
    sampled = tinytf.generate(model, prompt, c["n_bytes"], **c["sampling"])
    assert tinytf.decode(sampled.tokens[len(prompt):]) == c["sampled"]


# ---------------------------------------------------------------------------------------------- corpus, baselines


def test_corpus_is_split_by_file_and_skips_tests(corpus):
    listed = textdata.corpus_files()
    assert listed == sorted(listed)
    assert not any(re.search(r"(^|/)(tests?|idle_test|site-packages)/|(^|/)test_[^/]*$", f) for f in listed)
    val_rule = {f for i, f in enumerate(listed) if i % textdata.SPLIT_EVERY == 0}
    assert {f for f, s in zip(corpus.files, corpus.split) if s == "val"} == val_rule & set(corpus.files)
    assert not set(f for f, s in zip(corpus.files, corpus.split) if s == "train") & val_rule
    assert len(corpus.train) > 5 * len(corpus.val) > 0
    assert corpus.train.dtype == torch.uint8
    text = bytes(corpus.val[:2000].tolist()).decode("utf-8", errors="replace")
    assert "\n\n\n" not in text and " \n" not in text  # whitespace normalised
    assert len(words_of(text)) > 100


def test_docstring_extraction():
    src = '"""Module doc."""\n\nclass A:\n    """Class doc.\n\n\n\n    More.   \n    """\n    def f(self):\n' \
          '        """\tTabbed."""\n\n\nasync def g():\n    """G doc."""\n\ndef h():\n    """\u00e9\u00e9\u00e9 non-ascii"""\n'
    assert textdata.file_docstrings(src) == ["Module doc.", "Class doc.\n\nMore.", "Tabbed.", "G doc."]
    assert textdata.file_docstrings("def broken(:\n") == []


def test_baselines_on_toy_text():
    train = torch.tensor(list(b"abababababababab" * 500), dtype=torch.uint8)
    text = torch.tensor(list(b"abababab"), dtype=torch.uint8)
    uni = textdata.unigram_bits_per_byte(train, text)
    bi = textdata.bigram_bits_per_byte(train, text)
    assert 0.9 < uni < 1.6  # ~1 bit: a and b equally likely (smoothing adds a little)
    assert bi < 0.3 < uni  # the previous byte decides the next
    assert textdata.unigram_bits_per_byte(train, text, alpha=1e9) == pytest.approx(8.0, abs=1e-3)
    assert textdata.bigram_probs(train).sum(1).allclose(torch.ones(256, dtype=torch.float64))
    windows = (torch.tensor([[97, 98]]), torch.tensor([[98, 97]]))
    assert textdata.bigram_bits_per_byte(train, windows) == pytest.approx(
        textdata.bigram_bits_per_byte(train, torch.tensor([97, 98, 97])))
    with pytest.raises(tinytf.TinyTFInputError):
        textdata.unigram_bits_per_byte(train, torch.tensor([1.5, 2.0]))


def test_eval_windows_are_fixed_and_spread():
    data = torch.arange(1000) % 256
    x, y = textdata.eval_windows(data, 4, 16)
    assert x.shape == y.shape == (4, 16)
    assert x[:, 0].tolist() == [s % 256 for s in (0, 249, 498, 747)]  # evenly spaced starts over the whole text
    assert torch.equal(y[:, :-1], x[:, 1:])
    assert textdata.eval_windows(data, 1000, 16)[0].shape == (62, 16)  # fewer when the text is short
    with pytest.raises(tinytf.TinyTFInputError, match="shorter than one window"):
        textdata.eval_windows(data[:10], 4, 16)


# ---------------------------------------------------------------------------------------------- training loop


def small_corpus(corpus):
    return textdata.Corpus(root="toy", files=corpus.files[:40], split=corpus.split[:40], texts=corpus.texts[:40])


def test_train_text_is_seeded_and_learns(corpus):
    toy = small_corpus(corpus)
    assert len(toy.val) > 2000
    cfg = tinytf.TinyConfig(d_model=32, n_heads=2, d_ff=64, n_layers=1)
    runs = []
    for _ in range(2):
        model = TR.build_model("decoder", cfg, seed=0)
        seen = []
        h = TR.train_text(model, toy, steps=30, lr=1e-2, batch_size=8, seq_len=32, seed=0, progress=False,
                          eval_every=10, eval_windows=8, snapshot_steps=(0, 15),
                          on_snapshot=lambda step, m, hist: seen.append(step))
        runs.append((h, model))
        assert seen == [0, 15]
    (a, ma), (b, mb) = runs
    assert a.losses == b.losses  # bit-for-bit repeatable
    assert all(torch.equal(p, q) for p, q in zip(ma.state_dict().values(), mb.state_dict().values()))
    assert [s for s, _ in a.evals] == [0, 10, 20, 30]
    assert a.evals[-1][1]["train_bpb"] < a.evals[0][1]["train_bpb"] - 2
    with pytest.raises(tinytf.TinyTFInputError, match="vocab_size >= 256"):
        TR.train_text(tinytf.TinyTransformer(tinytf.TinyConfig(vocab_size=128, n_layers=1)), toy, steps=1,
                      progress=False)


# ---------------------------------------------------------------------------------------------- declared context


def test_declares_the_length_it_was_trained_on(info):
    """max_seq_len is the training window, in every sidecar and in the preset that re-creates them."""
    assert info["config"]["max_seq_len"] == info["seq_len"] == info["task"]["seq_len"] == 128
    assert TR.TEXT_PRESETS["small"].config.max_seq_len == TR.TEXT_PRESETS["small"].seq_len == 128
    assert TR.TEXT_PRESETS["small"].config == tinytf.TinyConfig(**info["config"])
    for name in P.snapshots(NAME).values():
        data = P.info(name)
        assert data["config"]["max_seq_len"] == 128 and "RoPE has no parameters" in data["context"], name
    assert tinytf.generation.context_window(P.load(NAME)) == 128


def test_last_quarter_of_a_full_window_is_not_worse_than_the_first(info, model, same_corpus):
    """Within the declared context the model is right up to its end: bits per byte over the last quarter of a
    full 128-byte window of held-out text is not worse than over the first quarter (where it has little
    context); past the window it would be far worse (chapter 10)."""
    from tinytf.lab.context_length import bits_by_position

    n = info["config"]["max_seq_len"]
    bits = bits_by_position(model, same_corpus.val, n_windows=64, seq_len=n)
    first, last = float(bits[:n // 4].mean()), float(bits[-(n // 4):].mean())
    assert last <= first, (first, last)
    assert float(bits.mean()) <= TARGET_BPB


@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_kneser_ney_baseline_is_a_distribution(order):
    """For a fixed context the probabilities over all 256 next bytes sum to 1, at every order."""
    train = torch.tensor(list(b"the cat sat on the mat; the dog sat on the log. " * 40), dtype=torch.uint8)
    prefix = list(b"the c")  # 4 predicted bytes before the last one
    kn = textdata.kneser_ney_bits_per_byte
    before = 2 ** (-len(prefix[1:]) * kn(train, torch.tensor(prefix), order))  # p of bytes 1..4 of the prefix
    total = sum(2 ** (-len(prefix) * kn(train, torch.tensor(prefix + [b]), order)) for b in range(256))
    assert total == pytest.approx(before, rel=1e-9)


def test_kneser_ney_baseline_uses_context():
    train = torch.tensor(list(b"abcabcabcabcabcabc" * 300), dtype=torch.uint8)
    text = torch.tensor(list(b"abcabcab"), dtype=torch.uint8)
    kn = textdata.kneser_ney_bits_per_byte
    assert kn(train, text, 3) < 0.1 < 1.0 < kn(train, text, 1)  # the context decides; alone, ~log2(3) bits
    windows = (torch.tensor([[97, 98, 99]]), torch.tensor([[98, 99, 97]]))
    assert kn(train, windows, 4) == pytest.approx(kn(train, torch.tensor([97, 98, 99, 97]), 4))
    two = (torch.tensor([[97, 98, 99], [98, 99, 97]]), torch.tensor([[98, 99, 97], [99, 97, 98]]))
    per = kn(train, two, 3, per_window=True)  # one mean per window; equal lengths: their mean is the whole mean
    assert len(per) == 2 and sum(per) / 2 == pytest.approx(kn(train, two, 3))
    with pytest.raises(tinytf.TinyTFInputError):
        kn(train, text, 8)


def test_bits_per_byte_per_window_averages_to_the_whole(model, corpus):
    per = textdata.bits_per_byte(model, corpus.val, n_windows=8, per_window=True)
    assert len(per) == 8 and min(per) > 0
    assert sum(per) / 8 == pytest.approx(textdata.bits_per_byte(model, corpus.val, n_windows=8), rel=1e-5)
