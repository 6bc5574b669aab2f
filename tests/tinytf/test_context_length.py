"""tinytf.lab.context_length: bits per byte by position, position interpolation, and the recorded measurement
of text-4l past its 128-byte training window that chapter 10 loads."""
import math

import pytest
import torch

import tinytf
from tinytf import TinyConfig, TinyTFInputError, textdata
from tinytf.lab import context_length as C


def small_model(**kw):
    tinytf.seed_everything(0)
    return tinytf.TinyTransformer(TinyConfig(n_layers=1, max_seq_len=16, **kw)).eval()


def test_bits_by_position_averages_to_bits_per_byte():
    model = small_model()
    data = torch.randint(0, 256, (2000,), generator=torch.Generator().manual_seed(0), dtype=torch.long).to(torch.uint8)
    bits = C.bits_by_position(model, data, n_windows=10, seq_len=16, batch_size=3)
    assert bits.shape == (16,) and bits.dtype == torch.float64
    assert float(bits.mean()) == pytest.approx(textdata.bits_per_byte(model, data, 10, 16), abs=1e-5)
    assert C.band_means(bits, ((0, 4), (4, 16), (8, 32))) == pytest.approx(
        {"0-4": float(bits[:4].mean()), "4-16": float(bits[4:].mean())})


def test_linear_interpolation_gives_position_f_t_the_angles_of_t():
    model = small_model()
    pi = C.interpolated(model, 4)
    assert pi.config.max_seq_len == 64 and pi.config.rope_scaling.kind == "linear"
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), pi.state_dict().values()))
    # a sequence whose positions are 4x apart... is the same as the original at positions 0..T-1:
    # compare the rotation directly
    d = model.config.d_model // model.config.n_heads
    q = torch.randn(1, 1, 1, d)
    rot, rot_pi = model.blocks[0].attn.rotary, pi.blocks[0].attn.rotary
    for t in (1, 5, 9):
        assert torch.allclose(rot_pi.rotate(q, offset=4 * t), rot.rotate(q, offset=t), atol=1e-5)
    yarn = C.interpolated(model, 4, "yarn")
    assert yarn.config.rope_scaling.kind == "yarn" and yarn.config.rope_scaling.original_max_seq_len == 16
    with pytest.raises(TinyTFInputError, match="pos='learned'"):
        C.interpolated(small_model(pos="learned"), 2)
    with pytest.raises(TinyTFInputError, match="kind"):
        C.interpolated(model, 2, "ntk")


def test_windowed_sees_no_key_older_than_its_window():
    model = small_model()
    w = C.windowed(model, 4, max_seq_len=64)
    assert w.config.sliding_window.size == 4 and w.config.max_seq_len == 64 and w.config.rope_scaling is None
    assert model.config.sliding_window is None  # the original is untouched
    assert list(w.state_dict()) == list(model.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), w.state_dict().values()))
    assert C.windowed(model, 4).config.max_seq_len == 16
    x = torch.randint(0, 256, (2, 32), generator=torch.Generator().manual_seed(1))
    changed = x.clone()
    changed[:, 5] = (x[:, 5] + 1) % 256  # byte 5 changes
    with torch.no_grad():
        a, b = w(x), w(changed)
    # one layer: position p reads keys p - 3 .. p, so byte 5 reaches positions 5..8 and no later one
    assert torch.equal(a[:, :5], b[:, :5]) and torch.equal(a[:, 9:], b[:, 9:])
    assert all(not torch.equal(a[:, p], b[:, p]) for p in range(5, 9))
    # inside the window the windowed copy is the model itself
    with torch.no_grad():
        assert torch.allclose(w(x[:, :4]), model(x[:, :4]), atol=1e-5)
    # two layers: a byte reaches at most 2 x (size - 1) positions further, through the layer below
    tinytf.seed_everything(0)
    deep = tinytf.TinyTransformer(TinyConfig(n_layers=2, max_seq_len=16)).eval()
    wd = C.windowed(deep, 4, max_seq_len=64)
    with torch.no_grad():
        a, b = wd(x), wd(changed)
    assert torch.equal(a[:, 12:], b[:, 12:]) and not torch.equal(a[:, 11], b[:, 11])
    with pytest.raises(TinyTFInputError, match="sliding_window"):
        C.windowed(w, 2)


def test_attention_entropy_and_yarn_temperature():
    model = small_model()
    data = torch.randint(0, 256, (2000,), generator=torch.Generator().manual_seed(0), dtype=torch.long).to(torch.uint8)
    inputs, targets = textdata.eval_windows(data, 5, 16)
    bands = ((0, 4), (8, 16))
    r = C.attention_entropy(model, inputs, targets, bands, batch_size=2)
    assert r["entropy"].shape == r["bpb"].shape == (5, 2)
    # the bits per byte of a band are those of bits_by_position over the same windows
    bits = C.bits_by_position(model, data, n_windows=5, seq_len=16)
    assert r["bpb"].mean(0).tolist() == pytest.approx([float(bits[:4].mean()), float(bits[8:].mean())], abs=1e-5)
    # scores multiplied by 0: uniform weights over the t + 1 keys a query at position t reads, log2(t + 1) bits
    flat = C.attention_entropy(model, inputs, targets, bands, logit_scale=0.0)["entropy"]
    uniform = [float(torch.log2(torch.arange(a, b, dtype=torch.float64) + 1).mean()) for a, b in bands]
    assert torch.allclose(flat, torch.tensor([uniform] * 5, dtype=torch.float64), atol=1e-5)
    # a sharper softmax (YaRN's factor > 1) lowers the entropy
    assert C.yarn_logit_scale(4) == pytest.approx((0.1 * math.log(4) + 1) ** 2) and C.yarn_logit_scale(1) == 1
    sharp = C.attention_entropy(model, inputs, targets, bands, logit_scale=C.yarn_logit_scale(4))["entropy"]
    assert bool((sharp < r["entropy"]).all())
    # YaRN as configured = its frequencies alone with every attention logit multiplied by the factor
    long_inputs, long_targets = textdata.eval_windows(data, 4, 64)
    yarn, alone = C.interpolated(model, 4, "yarn"), C.interpolated(model, 4, "yarn", temperature=False)
    assert alone.config.rope_scaling.attention_factor == 1.0 and yarn.config.rope_scaling.attention_factor is None
    a = C.attention_entropy(yarn, long_inputs, long_targets, ((0, 16), (48, 64)))
    b = C.attention_entropy(alone, long_inputs, long_targets, ((0, 16), (48, 64)), logit_scale=C.yarn_logit_scale(4))
    assert torch.allclose(a["entropy"], b["entropy"], atol=1e-4) and torch.allclose(a["bpb"], b["bpb"], atol=1e-4)
    with pytest.raises(TinyTFInputError, match="bands"):
        C.attention_entropy(model, inputs, targets, ((0, 32),))


def test_rope_angle_table_wavelengths():
    cfg = TinyConfig(d_model=192, n_heads=6)  # d_head 32: 16 pairs
    rows = C.rope_angle_table(cfg, [0, 128, 512])
    assert len(rows) == 16 and rows[0][1] == pytest.approx(2 * math.pi)
    assert rows[-1][1] == pytest.approx(2 * math.pi * 10000 ** (30 / 32))
    assert rows[-1][2][2] == pytest.approx(4 * rows[-1][2][1])  # angle grows linearly with the position
    assert C.rope_angle_table(cfg, [512], factor=4)[-1][2][0] == pytest.approx(rows[-1][2][1])


@pytest.fixture(scope="module")
def results():
    return C.load_results()


def test_recorded_measurement_supports_the_chapter(results):
    """The claims chapter 10 makes from the recorded measurement (held-out text, 512-byte windows)."""
    info = tinytf.pretrained.info("text-4l")
    assert results["trained_seq_len"] == results["declared_max_seq_len"] == info["config"]["max_seq_len"] == 128
    assert results["seq_len"] == 512 and results["n_windows"] >= 64
    assert results["corpus_sha256"] == info["corpus"]["sha256"]
    curves = {k: torch.tensor(v, dtype=torch.float64) for k, v in results["bpb_by_position"].items()}
    assert set(curves) == set(C.CONDITIONS) == {"1", "linear 2", "linear 4", "yarn 4", "window 128", "window 32",
                                                "window 8", "clamp 128", "clamp 128, pairs 6-15",
                                                "clamp 128, pairs 0-5"}
    assert all(len(c) == 512 for c in curves.values())
    for key, bands in results["bands"].items():
        assert bands == pytest.approx({k: round(v, 4) for k, v in C.band_means(curves[key]).items()}, abs=2e-4)
    shipped, uni = results["bands"]["1"], results["baselines"]["unigram"]
    # good inside the training window, worse than a unigram model far past it
    assert shipped["96-128"] <= shipped["0-32"] < 2.5
    assert shipped["128-192"] > shipped["96-128"] + 0.3
    assert shipped["256-384"] > uni and shipped["384-512"] > uni
    # the mean over positions 0..127 of 512-byte windows is the 128-byte evaluation's number, up to the windows
    assert float(curves["1"][:128].mean()) == pytest.approx(info["metrics"]["val_bpb"], abs=0.1)
    # linear interpolation by 4 without fine-tuning: worse everywhere, even inside the old window
    assert results["bands"]["linear 4"]["0-32"] > shipped["0-32"] + 1
    # YaRN by 4 keeps the fast pairs: far better than the shipped model past 256, worse than it inside 128
    assert results["bands"]["yarn 4"]["384-512"] < shipped["384-512"] - 1
    # the same weights with every layer limited to a sliding window hold their loss past 128: no offset over
    # size - 1 occurs; inside the first 128 positions a window of 128 changes nothing
    win = {n: results["bands"][f"window {n}"] for n in (128, 32, 8)}
    assert win[128]["0-32"] == shipped["0-32"] and win[128]["96-128"] == shipped["96-128"]
    assert all(v < shipped["96-128"] + 0.1 for k, v in win[128].items() if k != "0-32")
    assert win[128]["384-512"] < shipped["384-512"] - 3
    # a window of 8 keys per layer costs about 0.1 bit per byte against 128 beyond the first 32 positions
    assert all(0 < win[8][k] - win[128][k] < 0.15 for k in win[8] if k != "0-32")
    assert all(win[128][k] <= win[32][k] <= win[8][k] for k in win[8])


def test_clamped_offsets_scores_far_pairs_at_the_clamp_and_keeps_every_key():
    model = small_model(n_heads=4, n_kv_heads=2)  # grouped K/V heads too
    x = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        plain, trace = model.run_with_trace(x, names=["blocks.0.attn.*"])
        # a clamp wider than the sequence changes nothing, bit for bit
        assert torch.equal(model.run_with_patches(x, patches=C.clamped_offsets(model, 12)), plain)
        clamped, ctrace = model.run_with_trace(x, names=["blocks.0.attn.scores"], patches=C.clamped_offsets(model, 4))
    # queries 0..3 see only offsets 0..3: unchanged; later queries change
    assert torch.equal(clamped[:, :4], plain[:, :4]) and not torch.allclose(clamped[:, 4:], plain[:, 4:])
    q, k = trace["blocks.0.attn.q"], trace["blocks.0.attn.k"].repeat_interleave(2, dim=1)  # before rotation
    rot, D = model.blocks[0].attn.rotary, q.shape[-1]
    s, s_plain = ctrace["blocks.0.attn.scores"], trace["blocks.0.attn.scores"]
    for m, n in ((9, 2), (11, 0), (5, 1)):  # offsets 7, 11, 4 > 3: scored as offset 3 (q at n + 3, k at n)
        want = (rot.rotate(q[:, :, m:m + 1], offset=n + 3) @ rot.rotate(k[:, :, n:n + 1], offset=n).transpose(-2, -1))
        assert torch.allclose(s[:, :, m, n], want[..., 0, 0] / math.sqrt(D), atol=1e-5)
        assert not torch.allclose(s[:, :, m, n], s_plain[:, :, m, n], atol=1e-3)
    for m, n in ((9, 6), (4, 1), (3, 3)):  # offsets 3, 3, 0: their own scores
        assert torch.equal(s[:, :, m, n], s_plain[:, :, m, n])
    with pytest.raises(TinyTFInputError, match="size must be"):
        C.clamped_offsets(model, 0)
    with pytest.raises(TinyTFInputError, match="plain RoPE"):
        C.clamped_offsets(small_model(pos="learned"), 4)
    with pytest.raises(TinyTFInputError, match="plain RoPE"):
        C.clamped_offsets(C.windowed(model, 4), 4)


def test_clamped_offsets_of_some_pairs_only():
    """pairs=...: the far scores sum the clamped pairs' part at offset size - 1 and the other pairs' part at their
    own offset (pair i = dimensions i and i + D/2); every pair clamped = the full clamp, no pair = no change."""
    model = small_model(n_heads=4, n_kv_heads=2)
    x = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(2))
    D = model.config.d_model // model.config.n_heads
    with torch.no_grad():
        plain, trace = model.run_with_trace(x, names=["blocks.0.attn.*"])
        full = model.run_with_patches(x, patches=C.clamped_offsets(model, 4))
        assert torch.allclose(model.run_with_patches(x, patches=C.clamped_offsets(model, 4, range(D // 2))), full,
                              atol=1e-6)
        assert torch.allclose(model.run_with_patches(x, patches=C.clamped_offsets(model, 4, [])), plain, atol=1e-6)
        slow = range(6, D // 2)
        part, ptrace = model.run_with_trace(x, names=["blocks.0.attn.scores"], patches=C.clamped_offsets(model, 4, slow))
    assert torch.equal(part[:, :4], plain[:, :4]) and not torch.allclose(part[:, 4:], plain[:, 4:])
    q, k = trace["blocks.0.attn.q"], trace["blocks.0.attn.k"].repeat_interleave(2, dim=1)  # before rotation
    rot, s = model.blocks[0].attn.rotary, ptrace["blocks.0.attn.scores"]
    dims = torch.zeros(D, dtype=torch.bool)
    dims[list(slow)] = True
    dims[[i + D // 2 for i in slow]] = True
    for m, n in ((9, 2), (11, 0), (5, 1)):  # offsets 7, 11, 4 > 3
        far_q, own_q = rot.rotate(q[:, :, m:m + 1], offset=n + 3), rot.rotate(q[:, :, m:m + 1], offset=m)
        k_n = rot.rotate(k[:, :, n:n + 1], offset=n)
        want = ((far_q * k_n)[..., dims].sum(-1) + (own_q * k_n)[..., ~dims].sum(-1)) / math.sqrt(D)  # [B, H, 1]
        assert torch.allclose(s[:, :, m, n], want[..., 0], atol=1e-5)
    for m, n in ((9, 6), (4, 1)):  # offsets 3: their own scores
        assert torch.equal(s[:, :, m, n], trace["blocks.0.attn.scores"][:, :, m, n])
    with pytest.raises(TinyTFInputError, match="pairs must lie"):
        C.clamped_offsets(model, 4, [D // 2])


def test_recorded_clamp_of_the_slow_pairs_removes_most_of_the_rise():
    """Chapter 10's test of the slow-pair hypothesis, as recorded: clamping pairs 6-15 only keeps the loss near the
    clamp of every pair, clamping pairs 0-5 only leaves most of the rise; paired over the same windows."""
    r = C.load_results()
    b, w = r["bands"], r["bands_by_window"]
    for key in ("clamp 128, pairs 6-15", "clamp 128, pairs 0-5"):
        assert r["bpb_by_position"][key][:128] == r["bpb_by_position"]["1"][:128]  # within the clamp: no change
    for band in ("192-256", "256-384", "384-512"):
        rise = b["1"][band] - b["clamp 128"][band]  # what clamping every pair removes
        assert rise > 3
        assert b["1"][band] - b["clamp 128, pairs 6-15"][band] > 0.9 * rise  # the slow pairs: most of it
        assert b["1"][band] - b["clamp 128, pairs 0-5"][band] < 0.3 * rise  # the fast pairs: a small part
        for key in ("1", "clamp 128", "clamp 128, pairs 6-15", "clamp 128, pairs 0-5"):
            assert len(w[key][band]) == r["n_windows"]
            assert sum(w[key][band]) / r["n_windows"] == pytest.approx(b[key][band], abs=1e-3)


def test_recorded_clamp_equals_the_shipped_model_within_the_clamp():
    r = C.load_results()
    assert C.CONDITIONS["clamp 128"] == ("clamp", 128) and set(C.CONDITIONS) <= set(r["bpb_by_position"])
    clamp, shipped = r["bpb_by_position"]["clamp 128"], r["bpb_by_position"]["1"]
    assert len(clamp) == 512 and clamp[:128] == shipped[:128]  # within the clamp nothing changes


def test_clustered_mean_se_by_module():
    """clustered_mean_se: one window per group gives the usual standard error up to the g / (g - 1) factor;
    windows that move together within a group give a larger one than the windows taken as independent."""
    v = [1.0, 2.0, 4.0, 7.0]
    mean, se = C.clustered_mean_se(v, ["a", "b", "c", "d"])
    t = torch.tensor(v, dtype=torch.float64)
    assert mean == pytest.approx(3.5)
    assert se == pytest.approx(math.sqrt(4 / 3 * float(((t - t.mean()) ** 2).sum())) / 4)
    _, se_grouped = C.clustered_mean_se([1.0, 1.0, 5.0, 5.0], ["a", "a", "b", "b"])
    naive = torch.tensor([1.0, 1.0, 5.0, 5.0]).std().item() / 2
    assert se_grouped > naive
    with pytest.raises(TinyTFInputError):
        C.clustered_mean_se([1.0, 2.0], ["a", "a"])


def test_recorded_window_modules():
    """The recorded module of every window: one held-out file per window, windows in the order of the split, so a
    module's windows are neighbours."""
    r = C.load_results()
    mods = r["window_modules"]
    assert len(mods) == r["n_windows"] and 10 < len(set(mods)) < r["n_windows"]
    seen = []
    for m in mods:
        if not seen or seen[-1] != m:
            assert m not in seen  # each module's windows are consecutive
            seen.append(m)
