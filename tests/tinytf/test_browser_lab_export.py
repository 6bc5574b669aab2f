"""tinytf.lab.browser_lab: the head mask, the lab's graph (PyTorch and ONNX), the page's sampler in Python; the page's
state (the model's shape, help lines) and every "try this" hint's claim, checked on the model."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import require_module

import tinytf
from tinytf.errors import TinyTFInputError
from tinytf.lab import browser_lab as lab
from tinytf.lab import textdata
from tinytf.lab.lens import logit_lens

TEXT = list("The model reads bytes, one at a time.".encode("utf-8"))


@pytest.fixture(scope="module")
def model():
    return tinytf.pretrained("text-4l")


def test_full_mask_is_the_model(model):
    out = lab.run_lab(model, TEXT)
    logits = model(torch.tensor([TEXT]))[0]
    assert torch.allclose(out["logits"], logits[-1], atol=1e-5)
    lens = logit_lens(model, torch.tensor(TEXT))  # [L + 1, T, V] log-probs; lab's lens: after each block
    assert torch.allclose(torch.log_softmax(out["lens"], -1), lens[1:], atol=1e-5)
    assert torch.allclose(out["lens"][-1], logits, atol=1e-5)
    _, trace = model.run_with_trace(torch.tensor([TEXT]))
    for layer in range(4):
        assert torch.allclose(out["attn"][layer], trace[f"blocks.{layer}.attn.weights"][0], atol=1e-6)


@pytest.mark.parametrize("layer,head", [(0, 0), (2, 5), (3, 1)])
def test_head_mask_removes_the_head_before_w_o(model, layer, head):
    """Mask 0 for (layer, head) = the model with that head's columns of W_o set to zero."""
    mask = lab.full_mask(model)
    mask[layer, head] = 0
    ablated = copy.deepcopy(model)
    D = model.config.d_head
    with torch.no_grad():
        ablated.blocks[layer].attn.o_proj.weight[:, head * D:(head + 1) * D] = 0
    got = lab.run_lab(model, TEXT, mask)["logits"]
    want = ablated(torch.tensor([TEXT]))[0, -1]
    assert torch.allclose(got, want, atol=1e-5)
    assert (got - lab.run_lab(model, TEXT)["logits"]).abs().max() > 1e-3  # the head mattered
    half = mask.clone()
    half[layer, head] = 0.5  # a value between scales the head's output
    with torch.no_grad():
        ablated.blocks[layer].attn.o_proj.weight[:, head * D:(head + 1) * D] = \
            0.5 * model.blocks[layer].attn.o_proj.weight[:, head * D:(head + 1) * D]
    assert torch.allclose(lab.run_lab(model, TEXT, half)["logits"], ablated(torch.tensor([TEXT]))[0, -1], atol=1e-5)


def test_cached_step_equals_a_full_run(model):
    mask = lab.full_mask(model)
    mask[1, 3] = 0
    first = lab.run_lab(model, TEXT[:-1], mask)
    step = lab.run_lab(model, TEXT[-1:], mask, first["present_k"], first["present_v"])
    full = lab.run_lab(model, TEXT, mask)
    assert torch.allclose(step["logits"], full["logits"], atol=1e-5)
    assert torch.allclose(step["attn"][:, :, 0], full["attn"][:, :, -1], atol=1e-6)
    assert torch.allclose(step["lens"][:, 0], full["lens"][:, -1], atol=1e-5)
    assert step["present_k"].shape[2] == len(TEXT)


def test_bad_input_is_named(model):
    with pytest.raises(TinyTFInputError, match=r"shape \[4, 6\]"):
        lab.run_lab(model, TEXT, torch.ones(4, 5))
    with pytest.raises(TinyTFInputError, match="finite"):
        lab.run_lab(model, TEXT, torch.full((4, 6), float("nan")))
    with pytest.raises(TinyTFInputError, match="max_seq_len 128"):
        lab.run_lab(model, [65] * 129)


def test_onnx_graph_equals_pytorch(model, tmp_path):
    ort = require_module("onnxruntime")
    path = tmp_path / "lab.onnx"
    lab.export_lab_onnx(model, path)
    again = tmp_path / "again.onnx"
    lab.export_lab_onnx(model, again)
    assert path.read_bytes() == again.read_bytes()  # deterministic
    assert path.stat().st_size < 4.2e6  # float16 storage
    sess = ort.InferenceSession(str(path))
    assert [i.name for i in sess.get_inputs()] == list(lab.INPUTS)
    assert [o.name for o in sess.get_outputs()] == list(lab.OUTPUTS)
    mask = lab.full_mask(model)
    mask[0, 2] = mask[3, 4] = 0
    ids = list("日本語 and emoji 🙂 bytes".encode("utf-8"))
    past_k = past_v = lab.empty_past(model)
    for chunk in (ids[:7], ids[7:8], ids[8:20], ids[20:21]):  # S = 0 first, then with a cache
        want = lab.run_lab(model, chunk, mask, past_k, past_v)
        got = sess.run(None, {"ids": np.array([chunk], dtype=np.int64), "head_mask": mask.numpy(),
                              "past_k": past_k.numpy(), "past_v": past_v.numpy()})
        for name, g in zip(lab.OUTPUTS, got):
            w = want[name].numpy()
            assert g.shape == w.shape, name
            assert np.abs(g - w).max() <= 3e-5 * max(1.0, np.abs(w).max()), name
        past_k, past_v = want["present_k"], want["present_v"]
    got = sess.run(["logits"], {"ids": np.array([[65] * 128], dtype=np.int64), "head_mask": mask.numpy(),
                                "past_k": lab.empty_past(model).numpy(), "past_v": lab.empty_past(model).numpy()})
    assert np.abs(got[0] - lab.run_lab(model, [65] * 128, mask)["logits"].numpy()).max() < 1e-4


def test_mulberry32_reference_values():
    # mulberry32 as JavaScript computes it (Math.imul, >>>): seed 1 and seed 42, first three draws
    draw = lab.mulberry32(1)
    assert [draw() for _ in range(3)] == [0.6270739405881613, 0.002735721180215478, 0.5274470399599522]
    draw = lab.mulberry32(42)
    assert all(0 <= draw() < 1 for _ in range(1000))


def test_probs_are_chapter_11s():
    logits = torch.randn(256, generator=torch.Generator().manual_seed(0)) * 3
    for t, k, p in [(1.0, None, None), (0.7, 20, None), (1.3, None, 0.9), (0.5, 5, 0.5), (0, None, None)]:
        want = tinytf.generation.next_token_probs(logits[None].double(), t, k, p)[0]
        got = lab.next_byte_probs(logits, t, k, p)
        assert torch.allclose(got, want, atol=1e-12)
    assert lab.pick(torch.tensor([0.0, 0.25, 0.75]), 0.2) == 1
    assert lab.pick(torch.tensor([0.0, 0.25, 0.75]), 0.25) == 2
    assert lab.pick(torch.tensor([0.25, 0.75, 0.0]), 0.9999999999) == 1


def test_sample_text_is_seeded_and_greedy_is_generate(model):
    a = lab.sample_text(model, "The ", 30, seed=7, temperature=0.9, top_k=40, top_p=0.95)
    assert a == lab.sample_text(model, "The ", 30, seed=7, temperature=0.9, top_k=40, top_p=0.95)
    assert a != lab.sample_text(model, "The ", 30, seed=8, temperature=0.9, top_k=40, top_p=0.95)
    prompt = list(b"Return the value of the ")
    n = 128 - len(prompt) + 12  # past the whole context: the refill rule of tinytf.generate
    greedy = lab.sample_text(model, prompt, n, temperature=0)
    ref = tinytf.generate(model, torch.tensor(prompt), n).tokens[len(prompt):].tolist()
    assert greedy == ref


# ------------------------------------------------------------------ the page's state: shape, help, hints
def test_the_page_knows_the_models_shape_before_it_loads(model):
    """The controls show before the model loads, built from the page's state: it must be text-4l's shape."""
    cfg = lab.lab_config(model)
    assert lab.SHAPE == {"n_layers": cfg["n_layers"], "n_heads": cfg["n_heads"]}
    state = lab.page_state()
    assert [k for k, _ in state["models"]] == list(lab.SNAPSHOTS)
    assert set(state["help"]) >= {"temperature", "top_k", "top_p", "heads", "lens", "attention", "model"}
    for key, h in state["help"].items():
        assert h["text"] and all(str(n) in state["chapters"] for n in h["chapters"]), key
    root = Path(__file__).resolve().parents[2]
    for page in lab.CHAPTERS.values():  # the links lead to the chapters' pages
        assert (root / page).with_suffix(".ipynb").is_file(), page


def _words(ids) -> list:
    return re.findall(r"[a-z]+", bytes(ids).decode("utf-8", "replace").lower())[:-1]  # the last word may be cut


@pytest.fixture(scope="module")
def english():
    """The words of text-4l's training text (the stdlib's docstrings)."""
    text = bytes(textdata.stdlib_corpus().train.tolist()).decode("utf-8", "replace").lower()
    return set(re.findall(r"[a-z]+", text))


def test_each_views_hints():
    assert [h["key"] for h in lab.hints("all")] == ["lens", "block0", "step90", "greedy"]  # 3-4 on the landing page
    assert [h["key"] for h in lab.hints("sampling")] == ["greedy", "hot"]
    assert [h["key"] for h in lab.hints("parts")] == ["lens", "step0"]
    for h in lab.HINTS:
        assert set(h["set"]) <= {"prompt", "temperature", "top_k", "top_p", "seed", "model", "off", "generate"}, h["key"]
        assert h["set"].get("model", "text-4l") in lab.SNAPSHOTS


def test_hint_lens_which_block_first_guesses_o(model):
    """'the quick brown f': the last block guesses "o", and an earlier block does not yet: the question has an
    answer the lens shows (block 2)."""
    hint = next(h for h in lab.HINTS if h["key"] == "lens")
    out = lab.run_lab(model, list(hint["set"]["prompt"].encode()))
    guesses = [chr(b) for b in out["lens"][:, -1].argmax(-1).tolist()]
    assert guesses[-1] == "o" and guesses[0] != "o"
    assert guesses.index("o") == 2


def test_hint_block0_words_fall_apart(model, english):
    hint = next(h for h in lab.HINTS if h["key"] == "block0")
    mask = lab.full_mask(model)
    for layer, head in hint["set"]["off"]:
        mask[layer, head] = 0
    assert mask[0].sum() == 0 and mask[1:].sum() == 18  # all six heads of block 0, and only those
    intact = _words(lab.sample_text(model, hint["set"]["prompt"], 64, temperature=0))
    ablated = _words(lab.sample_text(model, hint["set"]["prompt"], 64, temperature=0, head_mask=mask))
    assert all(w in english for w in intact)
    assert any(w not in english for w in ablated), ablated


def test_hint_step90_has_learnt_one_word():
    hint = next(h for h in lab.HINTS if h["key"] == "step90")
    snap = tinytf.pretrained(hint["set"]["model"])
    text = bytes(lab.sample_text(snap, hint["set"]["prompt"], 64, temperature=0)).decode()
    assert set(text.split()) == {"the"}, text


def test_hint_step0_no_byte_stands_out(model):
    """Under the page's default sampler, the untrained snapshot's ten most likely bytes are nearly equal; the
    trained model's are not."""
    hint = next(h for h in lab.HINTS if h["key"] == "step0")
    d = lab.DEFAULTS
    tops = []
    for m in (tinytf.pretrained(hint["set"]["model"]), model):
        probs = lab.next_byte_probs(lab.run_lab(m, list(d["prompt"].encode()))["logits"], d["temperature"],
                                    d["top_k"], d["top_p"])
        tops.append(probs.sort(descending=True).values[:10])
    assert tops[0][0] < 2 * tops[0][9] and tops[0][0] < 0.1
    assert tops[1][0] > 3 * tops[1][9]


def test_hint_greedy_and_hot(model, english):
    """Each claim of the greedy hint, under the settings its click leaves (the sampler's defaults, seed 1): at
    temperature 0 every seed writes the same text, the most likely byte at each step; at 1.5 seeds 1 and 2 write
    different texts (and so do other seeds), and a seed writes its text again. A reader who changed top-k and
    top-p meanwhile (the "hot" hint empties them) sees the same."""
    hint = next(h for h in lab.HINTS if h["key"] == "greedy")
    greedy, text = hint["set"], hint["text"]
    assert greedy["temperature"] == 0 and greedy["seed"] == 1 and greedy["generate"]
    assert "set the seed to 2" in text and "temperature 1.5: seeds 1 and 2" in text
    prompt = greedy["prompt"]
    for top_k, top_p in ((greedy["top_k"], greedy["top_p"]), (None, None)):
        first = lab.sample_text(model, prompt, 64, seed=1, temperature=0, top_k=top_k, top_p=top_p)
        for seed in (2, 3, 4294967295):  # every seed: the same text
            assert lab.sample_text(model, prompt, 64, seed=seed, temperature=0, top_k=top_k, top_p=top_p) == first
        ids, most_likely = list(prompt.encode()), []  # each step takes the most likely byte (tinytf.generate)
        for _ in range(64):
            most_likely.append(int(lab.run_lab(model, ids + most_likely)["logits"].argmax()))
        assert first == most_likely
        hot = {s: lab.sample_text(model, prompt, 64, seed=s, temperature=1.5, top_k=top_k, top_p=top_p)
               for s in (1, 2, 3, 4, 5)}
        assert hot[1] != hot[2] and len({bytes(t) for t in hot.values()}) == 5  # different seeds, different texts
        assert all(t != first for t in hot.values())
        assert lab.sample_text(model, prompt, 64, seed=1, temperature=1.5, top_k=top_k, top_p=top_p) == hot[1]
    hot = next(h for h in lab.HINTS if h["key"] == "hot")["set"]
    for seed in range(1, 6):  # made-up words at 1.5, none at the default 0.8 (with its top-k and top-p)
        words = _words(lab.sample_text(model, hot["prompt"], 64, seed=seed, temperature=hot["temperature"]))
        assert any(w not in english for w in words), (seed, words)
        words = _words(lab.sample_text(model, hot["prompt"], 64, seed=seed, temperature=0.8, top_k=40, top_p=0.95))
        assert all(w in english for w in words), (seed, words)


def test_with_every_head_off_the_guess_depends_on_the_last_byte_alone(model):
    """The heads' help line: with every head off, each byte sees only itself (the FFNs still run on it), so two
    prompts that end in the same byte get the same next-byte distribution; with the heads on they do not."""
    off = torch.zeros(4, 6)
    a, b = list(b"the quick brown f"), list(b"if")
    assert torch.allclose(lab.run_lab(model, a, head_mask=off)["logits"],
                          lab.run_lab(model, b, head_mask=off)["logits"], atol=1e-5)
    assert not torch.allclose(lab.run_lab(model, a)["logits"], lab.run_lab(model, b)["logits"], atol=1e-2)
    assert "With every head off, each byte sees only itself" in lab.HELP["heads"][0]


def test_top_p_help_says_at_least_p():
    """The top-p help line matches the sampler: the smallest set of most likely bytes whose mass reaches p
    (at least p, as next_token_probs keeps it), so a peaked distribution can keep one byte of mass above p."""
    assert "add up to at least p" in lab.HELP["top_p"][0]
    probs = lab.next_byte_probs(torch.log(torch.tensor([0.7, 0.2, 0.1])), top_p=0.8)
    assert (probs > 0).sum() == 2 and probs[:2].sum() == pytest.approx(1.0)
