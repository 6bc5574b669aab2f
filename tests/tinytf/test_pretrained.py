"""The shipped checkpoints (tinytf/checkpoints): they load by name, do their task on fresh data drawn
with a seed never used in training or in the shipped metrics, show the attention pattern they are
shipped for, and bad files fail with a message naming the file and the mismatch. No retraining."""
import json
import shutil

import pytest
import torch

import tinytf
import tinytf.pretrained as P
from tinytf import tasks as T
from tinytf import train as TR

TEST_SEED = 2718  # not a training seed (0), not the shipped-metrics seed (train.EVAL_SEED)
NAMES = ("induction-2l", "reversal-2l")


@pytest.fixture(scope="module")
def models():
    return {name: P.load(name) for name in NAMES}


def test_listing_and_sidecars():
    listed = P.available()
    assert set(NAMES) <= set(listed)
    assert all(isinstance(d, str) and d for d in listed.values())
    assert P.names("decoder") == ["induction-2l"] and P.names("seq2seq") == ["reversal-2l"]
    for name in NAMES:
        st = P.CHECKPOINT_DIR / f"{name}.safetensors"
        assert st.stat().st_size <= 5 * 1024 * 1024
        data = P.info(name)
        for key in ("config", "kind", "command", "seed", "steps", "metrics", "torch_version", "tolerance",
                    "description"):
            assert key in data, (name, key)
        assert data["command"].startswith("python -m tinytf train --task ")
        assert data["file_bytes"] == st.stat().st_size


def test_callable_module_and_types(models):
    assert isinstance(models["induction-2l"], tinytf.TinyTransformer)
    assert isinstance(models["reversal-2l"], tinytf.EncoderDecoder)
    again = tinytf.pretrained("induction-2l")  # the module itself is callable
    assert all(torch.equal(a, b) for a, b in zip(again.state_dict().values(),
                                                 models["induction-2l"].state_dict().values()))
    assert not again.training


def test_loading_does_not_touch_the_global_rng():
    torch.manual_seed(5)
    expected = torch.rand(2)
    torch.manual_seed(5)
    P.load("reversal-2l")
    assert torch.equal(torch.rand(2), expected)


# ---------------------------------------------------------------------------------------------- behaviour


def test_induction_accuracy_and_head_on_fresh_sequences(models):
    model = models["induction-2l"]
    m = TR.evaluate(model, "induction", n_samples=390, seed=TEST_SEED)
    assert m["accuracy"] >= 0.9, m
    assert m["induction_score"] >= 0.5, m
    assert m["induction_head"] == P.info("induction-2l")["metrics"]["induction_head"]
    # a freshly initialised twin fails both: the checks above can fail
    r = TR.evaluate(P.untrained("induction-2l"), "induction", n_samples=130, seed=TEST_SEED)
    assert r["accuracy"] < 0.2 and r["induction_score"] < 0.3, r


def test_induction_head_by_hand(models):
    """The same measurement written out: for every second-half query i, weight on key i - L + 1."""
    model = models["induction-2l"]
    g = torch.Generator().manual_seed(TEST_SEED + 1)
    layer, head = map(int, P.info("induction-2l")["metrics"]["induction_head"].split("."))
    for length in (5, 9, 14):
        ids, targets, mask = T.induction_batch(32, length, g, distinct=True)
        logits, trace = model.run_with_trace(ids)
        w = trace[f"blocks.{layer}.attn.weights"][:, head]  # [B, T, T]
        q = torch.arange(length + 1, 2 * length)
        on_cell = w[:, q, q - length + 1]  # [B, L-1]
        assert on_cell.mean() >= 0.5, (length, float(on_cell.mean()))
        assert (logits.argmax(-1)[:, q] == targets[:, q]).float().mean() >= 0.9
        # its partner in layer 0 is a previous-token head (uniform attention would give ~1/i per key)
        prev = trace["blocks.0.attn.weights"][:, 0]
        qs = torch.arange(2, 2 * length)
        assert prev[:, qs, qs - 1].mean() >= 0.35
        assert (prev[:, qs].argmax(-1) == qs - 1).float().mean() >= 0.7


def test_reversal_accuracy_and_anti_diagonal(models):
    model = models["reversal-2l"]
    m = TR.evaluate(model, "reversal", n_samples=270, seed=TEST_SEED)
    assert m["exact_match"] >= 0.9 and m["token_accuracy"] >= 0.97, m
    assert m["anti_diagonal_score"] >= 0.5, m
    r = TR.evaluate(P.untrained("reversal-2l"), "reversal", n_samples=90, seed=TEST_SEED)
    assert r["exact_match"] < 0.05 and r["anti_diagonal_score"] < 0.3, r


def test_reversal_by_greedy_generation(models):
    model = models["reversal-2l"]
    for seed in range(3):
        s = P.sample_input("reversal-2l", seed=TEST_SEED + seed, length=6 + seed)
        out = tinytf.generate_seq2seq(model, s.src, bos=T.BOS, max_new_tokens=len(s.target))
        assert torch.equal(out[1:], s.target), (T.text(s.src), T.text(out))


def test_shipped_metrics_are_reproduced_by_evaluate(models):
    """The numbers in the JSON are what evaluate() gives with the JSON's eval seed (same code, same data)."""
    for name, task in (("induction-2l", "induction"), ("reversal-2l", "reversal")):
        data = P.info(name)
        m = TR.evaluate(models[name], task, n_samples=data["eval"]["n_samples"], seed=data["eval"]["seed"])
        for key, value in data["metrics"].items():
            if isinstance(value, float):
                assert m[key] == pytest.approx(value, abs=1e-3), (name, key)
            else:
                assert m[key] == value


# ---------------------------------------------------------------------------------------------- samples


def test_sample_input():
    s = P.sample_input("induction-2l", seed=1)
    assert s.kind == "decoder" and s.length == 10 and s.ids.shape == (21,)
    assert s.ids[0] == T.BOS and torch.equal(s.ids[1:11], s.ids[11:])
    assert len(s.labels) == 21 and s.labels[0] == "<bos>"
    assert s.cells[0] == (11, 2) and s.cells[-1] == (20, 11)
    assert s.attention.startswith("blocks.") and s.attention.endswith(".attn.weights")
    assert torch.equal(P.sample_input("induction-2l", seed=1).ids, s.ids)
    assert not torch.equal(P.sample_input("induction-2l", seed=2).ids, s.ids)
    own = P.sample_input("induction-2l", text="python")
    assert T.text(own.ids) == "<bos>pythonpython"
    r = P.sample_input("reversal-2l", text="stressed")
    assert T.text(r.src) == "stressed<eos>" and T.text(r.target) == "desserts<eos>"
    assert T.text(r.tgt) == "<bos>desserts" and r.key_labels[-1] == "<eos>"
    assert r.cells == T.anti_diagonal_cells(8)


@pytest.mark.parametrize("kwargs, match", [
    (dict(text=""), "empty"),
    (dict(text="Hello"), "alphabet"),
    (dict(length=40), "lengths"),
])
def test_sample_input_rejects_bad_input(kwargs, match):
    with pytest.raises(tinytf.TinyTFInputError, match=match):
        P.sample_input("induction-2l", **kwargs)


def test_unknown_name():
    with pytest.raises(P.CheckpointError, match="no shipped checkpoint named 'gpt-5'.*induction-2l"):
        P.load("gpt-5")


# ---------------------------------------------------------------------------------------------- bad files


@pytest.fixture
def copy_of(tmp_path):
    def make(name):
        for suffix in (".safetensors", ".json"):
            shutil.copy(P.CHECKPOINT_DIR / f"{name}{suffix}", tmp_path / f"{name}{suffix}")
        return tmp_path / name
    return make


def test_a_good_copy_loads(copy_of):
    model = P.load_checkpoint(copy_of("induction-2l"))
    assert model.checkpoint_info["name"] == "induction-2l"


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupted_weights_name_the_file(copy_of, damage):
    base = copy_of("induction-2l")
    st = base.with_suffix(".safetensors")
    raw = st.read_bytes()
    st.write_bytes({"truncate": raw[: len(raw) // 2], "garbage": b"\x00not a safetensors file" * 10,
                    "empty": b""}[damage])
    with pytest.raises(P.CheckpointError, match="not a valid safetensors file") as err:
        P.load_checkpoint(base)
    assert str(st) in str(err.value)


def test_config_that_does_not_match_the_weights(copy_of):
    base = copy_of("induction-2l")
    js = base.with_suffix(".json")
    data = json.loads(js.read_text())
    data["config"]["d_ff"] = data["config"]["d_ff"] * 2
    js.write_text(json.dumps(data))
    with pytest.raises(P.CheckpointError) as err:
        P.load_checkpoint(base)
    msg = str(err.value)
    assert str(base.with_suffix(".safetensors")) in msg and "induction-2l.json" in msg
    assert "shape mismatches" in msg and "blocks.0.ffn" in msg and "file [" in msg

    data["config"]["d_ff"] //= 2
    data["config"]["n_layers"] = 3
    js.write_text(json.dumps(data))
    with pytest.raises(P.CheckpointError, match=r"missing keys \(\d+\): blocks\.2\."):
        P.load_checkpoint(base)

    data["config"]["n_layers"] = 1
    js.write_text(json.dumps(data))
    with pytest.raises(P.CheckpointError, match=r"unexpected keys \(\d+\): blocks\.1\."):
        P.load_checkpoint(base)


@pytest.mark.parametrize("edit, match", [
    (lambda d: d["config"].update(colour="blue"), "TinyConfig does not know: colour"),
    (lambda d: d["config"].update(d_model=-1), "invalid config"),
    (lambda d: d.update(kind="vision"), "kind"),
    (lambda d: d.pop("format"), "not a tinytf checkpoint"),
])
def test_bad_sidecar_json(copy_of, edit, match):
    base = copy_of("reversal-2l")
    js = base.with_suffix(".json")
    data = json.loads(js.read_text())
    edit(data)
    js.write_text(json.dumps(data))
    with pytest.raises(P.CheckpointError, match=match) as err:
        P.load_checkpoint(base)
    assert str(js) in str(err.value)


def test_broken_json_and_missing_files(copy_of):
    base = copy_of("reversal-2l")
    base.with_suffix(".json").write_text("{not json")
    with pytest.raises(P.CheckpointError, match="not a readable JSON file"):
        P.load_checkpoint(base)
    base.with_suffix(".json").unlink()
    with pytest.raises(P.CheckpointError, match="sidecar file not found"):
        P.load_checkpoint(base)


def test_loading_never_unpickles(no_unpickling):
    for name in NAMES:
        P.load(name)
        raw = (P.CHECKPOINT_DIR / f"{name}.safetensors").read_bytes()
        header_len = int.from_bytes(raw[:8], "little")  # safetensors: u64 header size, then a JSON header
        header = json.loads(raw[8:8 + header_len])
        assert header["__metadata__"]["format"] == P.FORMAT


def test_save_and_load_round_trip(tmp_path):
    cfg = tinytf.TinyConfig(vocab_size=T.VOCAB_SIZE, d_model=16, n_heads=2, d_ff=32, n_layers=1,
                            tie_embeddings=True)
    model = TR.build_model("decoder", cfg, seed=3)
    st, js = P.save_checkpoint(model, tmp_path / "tiny", {"description": "round trip"})
    back = P.load_checkpoint(st)
    ids = torch.tensor([T.BOS, 97, 98, 99])
    assert torch.equal(back(ids), model.eval()(ids))
    assert back.lm_head.weight is back.embed.weight  # tying restored, stored once
    assert json.loads(js.read_text())["config"]["tie_embeddings"] is True
