"""Every bad input raises TinyTFInputError (a ValueError) whose message says what was given and
what was expected -- never a traceback from deep inside torch, never a silent wrong answer."""
import re

import pytest
import torch

import tinytf
from tinytf import TinyConfig, TinyTFInputError, generate, generate_seq2seq


@pytest.fixture(scope="module")
def model():
    tinytf.seed_everything(0)
    return tinytf.TinyTransformer(TinyConfig(n_layers=1)).eval()


@pytest.fixture(scope="module")
def encdec():
    tinytf.seed_everything(0)
    return tinytf.EncoderDecoder(tinytf.config_2017(n_layers=1, max_seq_len=16)).eval()


def raises(*parts):
    """pytest.raises(TinyTFInputError) whose message contains every part (given and expected)."""
    return pytest.raises(TinyTFInputError, match="(?s)" + "".join(f"(?=.*{re.escape(p)})" for p in parts))


def test_error_type_is_a_value_error():
    assert issubclass(TinyTFInputError, ValueError)


@pytest.mark.parametrize("ids,given", [
    (torch.tensor([1, 256, 3]), "256"),
    (torch.tensor([[1, 2], [3, 1000]]), "1000"),
    (torch.tensor([5, -1]), "-1"),
    ([-7, 3], "-7"),
])
def test_ids_outside_vocab(model, ids, given):
    with raises(f"token id {given}", "[0, 256)"):
        model(ids)


@pytest.mark.parametrize("ids,given", [
    (torch.tensor([1.0, 2.0]), "torch.float32"),
    ([1.5, 2.0], "torch.float32"),
    (torch.tensor([1, 2], dtype=torch.float64), "torch.float64"),
    (torch.tensor([True, False]), "torch.bool"),
])
def test_non_integer_ids(model, ids, given):
    with raises(f"got dtype {given}", "expected integer token ids"):
        model(ids)


@pytest.mark.parametrize("ids", [torch.zeros(1, 2, 3, dtype=torch.long), torch.tensor(5)])
def test_wrong_number_of_dimensions(model, ids):
    with raises(f"got shape {list(ids.shape)} ({ids.dim()}-D)", "expected [T] or [B, T]"):
        model(ids)


@pytest.mark.parametrize("ids", [torch.zeros(0, dtype=torch.long), torch.zeros(2, 0, dtype=torch.long),
                                 torch.zeros(0, 4, dtype=torch.long), []])
def test_empty_input(model, ids):
    shape = list(torch.as_tensor(ids).shape)
    with raises(f"got no tokens (shape {shape})", "expected at least one token"):
        model(ids)


@pytest.mark.parametrize("ids,given", [("hello", "str"), ([[1, 2], [3]], "list"), (None, "None")])
def test_not_token_ids_at_all(model, ids, given):
    with raises(given, "token ids"):
        model(ids)


def test_integer_dtypes_are_accepted(model):
    ids = torch.tensor([1, 2, 3])
    for dtype in (torch.int32, torch.int16, torch.uint8):
        assert torch.equal(model(ids.to(dtype)), model(ids))


@pytest.mark.parametrize("pos", ["sinusoidal", "learned"])
def test_too_long_for_position_table(pos):
    m = tinytf.TinyTransformer(TinyConfig(pos=pos, max_seq_len=8, n_layers=1))
    assert m(torch.zeros(8, dtype=torch.long)).shape == (8, 256)  # exactly max_seq_len is fine
    name = {"sinusoidal": "SinusoidalPositions", "learned": "LearnedPositions"}[pos]
    with raises("positions 0 to 8", "(0 to 7)", name, "max_seq_len=8"):
        m(torch.zeros(9, dtype=torch.long))


@pytest.mark.parametrize("pos", ["sinusoidal", "learned"])
def test_too_long_during_cached_forward(pos):
    m = tinytf.TinyTransformer(TinyConfig(pos=pos, max_seq_len=8, n_layers=1)).eval()
    cache = m.new_cache()
    m(torch.zeros(6, dtype=torch.long), cache=cache)
    m(torch.zeros(2, dtype=torch.long), cache=cache)  # positions 6, 7: still inside
    with raises("positions 0 to 8", "(0 to 7)", "max_seq_len=8"):
        m(torch.zeros(1, dtype=torch.long), cache=cache)  # position 8 does not exist


@pytest.mark.parametrize("use_cache", [True, False])
def test_generation_past_max_seq_len_is_refused_up_front(use_cache):
    m = tinytf.TinyTransformer(TinyConfig(pos="learned", max_seq_len=8, n_layers=1))
    assert generate(m, torch.arange(5), 4, use_cache=use_cache).tokens.shape == (9,)  # 5 + 3 fed = 8 positions
    with raises("a prompt of 5 tokens + 5 new tokens needs 9 positions", "max_seq_len=8"):
        generate(m, torch.arange(5), 5, use_cache=use_cache)
    with raises("prompt: got no tokens"):
        generate(m, torch.arange(0), 2, use_cache=use_cache)


def test_rope_model_has_no_table_to_run_out_of():
    m = tinytf.TinyTransformer(TinyConfig(max_seq_len=4, n_layers=1))
    assert generate(m, torch.arange(3), 6).tokens.shape == (9,)


@pytest.mark.parametrize("kw,parts", [
    (dict(max_new_tokens=-1), ["max_new_tokens: got -1", "integer >= 0"]),
    (dict(max_new_tokens=2.5), ["max_new_tokens: got 2.5", "integer >= 0"]),
    (dict(max_new_tokens=3, temperature=-1.0), ["temperature must be >= 0, got -1.0"]),
    (dict(max_new_tokens=3, temperature=1.0, top_k=0), ["top_k must be in [1, 256], got 0"]),
    (dict(max_new_tokens=3, temperature=1.0, top_k=300), ["top_k must be in [1, 256], got 300"]),
])
def test_bad_generation_arguments(model, kw, parts):
    with raises(*parts):
        generate(model, torch.arange(3), **kw)


def test_generate_prompt_checked(model):
    with raises("prompt: token id 999", "[0, 256)"):
        generate(model, torch.tensor([1, 999]), 2)


def test_encoder_decoder_needs_source_and_target(encdec):
    src, tgt = torch.arange(6), torch.arange(5)
    assert encdec(src, tgt).shape == (5, 256)
    with raises("needs a source and a target", "model(src, tgt)"):
        encdec(src)
    with raises("got no source", "pass src"):
        encdec(None, tgt)


@pytest.mark.parametrize("src,tgt,parts", [
    (torch.tensor([1, 300]), torch.arange(3), ["src: token id 300", "[0, 256)"]),
    (torch.arange(3), torch.tensor([1.0]), ["tgt: got dtype torch.float32"]),
    (torch.arange(3), torch.zeros(1, 1, 2, dtype=torch.long), ["tgt: got shape [1, 1, 2]"]),
    (torch.zeros(2, 3, dtype=torch.long), torch.zeros(3, 4, dtype=torch.long), ["src has batch size 2", "tgt has 3"]),
    (torch.zeros(17, dtype=torch.long), torch.arange(3), ["positions 0 to 16", "max_seq_len=16"]),
    (torch.arange(3), torch.zeros(17, dtype=torch.long), ["positions 0 to 16", "max_seq_len=16"]),
])
def test_encoder_decoder_bad_inputs(encdec, src, tgt, parts):
    with raises(*parts):
        encdec(src, tgt)


def test_seq2seq_generation_arguments(encdec):
    src = torch.arange(4)
    assert generate_seq2seq(encdec, src, bos=1, max_new_tokens=16).shape == (17,)  # 16 positions fed
    with raises("generate_seq2seq: bos + 17 new tokens needs 17 positions", "max_seq_len=16"):
        generate_seq2seq(encdec, src, bos=1, max_new_tokens=17)
    with raises("bos: got 256", "[0, 256)"):
        generate_seq2seq(encdec, src, bos=256, max_new_tokens=2)
    with raises("src: got no tokens"):
        generate_seq2seq(encdec, torch.arange(0), bos=1, max_new_tokens=2)
    assert generate_seq2seq(encdec, src, bos=torch.tensor(1), max_new_tokens=2).shape == (3,)


def test_encode_errors():
    with raises("the text is empty"):
        tinytf.encode("")
    with raises("expected a string, got int"):
        tinytf.encode(42)
    with raises("'é'", "128 byte tokens"):
        tinytf.encode("café", vocab_size=128)
    assert tinytf.encode("cat").tolist() == [99, 97, 116]
    assert tinytf.decode(tinytf.encode("café")) == "café"


def test_ids_checked_against_the_models_own_vocab():
    small = tinytf.TinyTransformer(TinyConfig(vocab_size=50, n_layers=1))
    with raises("token id 50", "[0, 50)"):
        small(torch.tensor([49, 50]))


def test_decode_errors():
    with raises("decode: got 300", "[0, 256)"):
        tinytf.decode([104, 300])
    with raises("decode: got -1"):
        tinytf.decode(torch.tensor([-1]))
    assert tinytf.decode(torch.tensor([[104, 105]])) == "hi"


@pytest.mark.parametrize("position", [12, 100, -13])
def test_causality_position_outside_the_sequence(model, position):
    ids = torch.arange(12)
    with raises(f"position {position} is outside a sequence of 12 tokens", "-12..11"):
        tinytf.causality_check(model, ids, position=position)
    assert tinytf.causality_check(model, ids, position=-12).position == 0
