"""tinytf.lab.prefill_decode: the arithmetic of prefill and decode, and their timing."""
import pytest
import torch

import tinytf
from tinytf import TinyConfig, TinyTFInputError
from tinytf.lab.prefill_decode import Spread, step_cost, time_phases, time_steps


def test_step_cost_counts_flops_and_bytes():
    cfg = TinyConfig(n_layers=1, d_model=64, n_heads=4, d_ff=128, vocab_size=100)
    params = tinytf.count_parameters(cfg)
    one = step_cost(cfg, new=1)
    assert one.bytes == params * 4 + 2 * 64 * 4  # weights + the new token's key and value (4 heads x 16)
    assert one.flops == 2 * (params - 100 * 64) + 4 * 4 * 16 * 1  # matrices + one (query, key) pair
    many = step_cost(cfg, new=128)
    assert many.flops > 100 * one.flops and many.bytes < 1.5 * one.bytes
    assert many.intensity > 50 * one.intensity
    later = step_cost(cfg, new=1, past=127)
    assert later.flops - one.flops == 4 * 4 * 16 * 127 and later.bytes - one.bytes == 127 * 2 * 64 * 4
    # decode in float32 moves about 4 bytes per multiply-add: intensity ~ 0.5
    assert 0.4 < step_cost(tinytf.LLAMA3_8B, new=1, past=0).intensity < 0.6
    assert step_cost(tinytf.LLAMA3_8B, new=1, past=0, bytes_per_value=2).intensity == pytest.approx(
        2 * step_cost(tinytf.LLAMA3_8B, new=1, past=0).intensity, rel=1e-6)
    with pytest.raises(TinyTFInputError):
        step_cost(cfg, new=0)


def test_time_phases():
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(TinyConfig(n_layers=1, d_model=32, n_heads=2, d_ff=64)).eval()
    t = time_phases(model, prompt_len=16, decode_steps=3, repeats=2)
    assert t.prefill_seconds > 0 and t.decode_seconds > 0
    assert t.prefill_per_token == t.prefill_seconds / 16 and t.ratio == t.decode_per_token / t.prefill_per_token
    with pytest.raises(TinyTFInputError):
        time_phases(model, prompt_len=0)


def test_time_phases_spreads():
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(TinyConfig(n_layers=1, d_model=32, n_heads=2, d_ff=64)).eval()
    t = time_phases(model, prompt_len=16, decode_steps=3, repeats=3)
    assert len(t.prefill) == 3 and [len(d) for d in t.decode] == [3, 3, 3]
    assert t.prefill_spread().median == pytest.approx(t.prefill_per_token)
    assert t.decode_spread().median == pytest.approx(t.decode_per_token)
    r = t.ratio_spread()
    assert r.q1 <= r.median <= r.q3


def test_spread_and_its_digits():
    s = Spread.of([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (s.median, s.q1, s.q3) == (3.0, 2.0, 4.0)
    assert Spread.of([7.0]) == Spread(7.0, 7.0, 7.0)
    assert str(Spread.of([2.6, 2.7, 2.71, 2.73, 2.8])) == "2.7 (IQR 2.7–2.7)"  # two significant digits at most
    assert str(Spread.of([9.0, 10.0, 10.5, 11.0, 12.0])) == "10 (IQR 10–11)"
    # two significant digits of the median always, zeros kept, however wide the IQR (the reader can recompute)
    assert str(Spread.of([3.9, 4.4, 5.0, 5.1, 5.3])) == "5.0 (IQR 4.4–5.1)"
    assert Spread.of([4.5, 4.6, 4.7]).median_str() == "4.6" and Spread.of([9.96]).median_str() == "10"
    assert str(Spread.of([0.087, 0.088, 0.088, 0.089])) == "0.088 (IQR 0.088–0.088)"
    with pytest.raises(TinyTFInputError):
        Spread.of([])


def test_time_steps_naive_and_cached():
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(TinyConfig(n_layers=1, d_model=32, n_heads=2, d_ff=64, max_seq_len=64)).eval()
    tokens = torch.randint(0, 256, (40,))
    st = time_steps(model, tokens, start=8, repeats=3, every=4)
    assert st.positions == [8, 12, 16, 20, 24, 28, 32, 36]
    for name in ("naive", "cached"):
        assert len(st.seconds[name]) == 3 and all(len(run) == 8 for run in st.seconds[name])
        assert all(x >= 0 for run in st.seconds[name] for x in run)
        assert len(st.per_step(name)) == 8 and len(st.per_step_spread(name)) == 8
    band = st.band("naive", 8, 20)
    assert band.q1 <= band.median <= band.q3
    assert st.ratio(8, 40).median > 0
    with pytest.raises(TinyTFInputError):
        st.band("naive", 100, 200)
    with pytest.raises(TinyTFInputError):
        time_steps(model, tokens, start=0)
    with pytest.raises(TinyTFInputError):
        time_steps(model, torch.randint(0, 256, (80,)), start=8)  # longer than max_seq_len


def test_readings_print_what_the_prose_refers_to():
    from tinytf.lab.prefill_decode import StepTimes, PhaseTiming, two_digits
    assert two_digits(41.7) == "42" and two_digits(0.0123) == "0.012" and two_digits(8.0) == "8"
    assert two_digits(0.1, keep_zeros=True) == "0.10" and two_digits(12.0, keep_zeros=True) == "12" \
        and two_digits(0.613, keep_zeros=True) == "0.61"
    s = Spread.of([1.0, 2.0, 3.0, 4.0, 5.0])
    assert s.median_str() == "3.0" and s.contains(2.0) and not s.contains(4.5)
    # two repeats, two steps per band: the cached line flat at 1 ms, the naive one from 2 to 4 ms
    st = StepTimes([10, 11, 20, 21], {"naive": [[2e-3, 2e-3, 4e-3, 4e-3]] * 2, "cached": [[1e-3] * 4] * 2})
    text = st.reading((10, 12), (20, 22), "token")
    assert ("From the first quarter to the last quarter, median ms per token: cached 1.0 → 1.0 (within the spread: "
            "the two IQRs overlap); naive 2.0 → 4.0 (about +100 %, beyond the spread: the two IQRs do not overlap).") in text
    assert ("The naive line climbs; the cached one stays within the spread of its step times; the ratio naive / cached "
            "grows, from 2.0 to 4.0.") in text
    assert "%" not in text.split(";")[0]  # a change within the spread is not printed as a percentage
    assert "In the last quarter a cached step takes 0.25 of a naive step's time (median over the repeats)." in text
    assert st.fraction(20, 22).median == 0.25
    st.seconds["cached"] = [[1e-3, 1e-3, 0.9e-3, 0.9e-3]] * 2
    text = st.reading((10, 12), (20, 22), "token")
    assert "cached 1.0 → 0.90 (about −10 %, beyond the spread: the two IQRs do not overlap); naive 2.0 → 4.0" in text
    assert ("The naive line climbs; the cached one falls instead (beyond the spread, but by a smaller fraction); "
            "the ratio naive / cached grows") in text
    st.seconds["cached"] = [[1e-3, 1e-3, 1.2e-3, 1.2e-3]] * 2  # +20 % against the naive line's +100 %
    assert ("The naive line climbs; the cached one rises too (beyond the spread, but by a smaller fraction);"
            in st.reading((10, 12), (20, 22), "token"))
    assert "times as much" not in text
    st.seconds["cached"] = [[1e-3, 1e-3, 1.2e-3, 1.2e-3]] * 2  # 1.2 / 4.0 = 0.30: the trailing zero is printed
    assert "In the last quarter a cached step takes 0.30 of a naive step's time" in st.reading((10, 12), (20, 22), "token")
    st.seconds["cached"] = [[1e-3, 1e-3, 3e-3, 3e-3]] * 2
    assert "The naive line changes no more than the cached one" in st.reading((10, 12), (20, 22), "token")
    cfg = TinyConfig(n_layers=1, d_model=32, n_heads=2, d_ff=64)
    t = PhaseTiming(16, 2, 16e-3, 2e-3, prefill=[16e-3] * 3, decode=[[2e-3, 2e-3]] * 3)
    report = t.report("tiny", cfg)
    pre, dec = step_cost(cfg, new=16), step_cost(cfg, new=1, past=16)
    assert "decode / prefill:      2.0 (IQR 2.0–2.0)" in report
    assert "A decode token costs the time of 2.0 prefill tokens" in report
    pre_s, dec_s = (two_digits(f, keep_zeros=True) for f in (pre.flops / 16e-3 / 1e9, dec.flops / 2e-3 / 1e9))
    # the quotient shown is computed from the rates as printed
    assert (f"achieves {dec_s} / {pre_s} ≈ {two_digits(float(dec_s) / float(pre_s), keep_zeros=True)} of prefill's "
            "arithmetic rate.") in report
    assert report.endswith("the decode step took 2.0 ms.")
    with_read = t.report("tiny", cfg, read_rate=1e9)
    mb = f"{dec.bytes / 1e6:.1f}"
    read_ms = two_digits(float(mb) * 1e6 / 1e9 * 1e3, keep_zeros=True)
    assert f"reading its {mb} MB at the measured read rate of 1.0 GB/s {read_ms} ms" in with_read
    arith_ms = two_digits(float(f"{dec.flops / 1e6:.1f}") * 1e6 / (float(pre_s) * 1e9) * 1e3, keep_zeros=True)
    share = two_digits((float(arith_ms) + float(read_ms)) / 2.0, keep_zeros=True)
    assert with_read.endswith(f"the decode step took 2.0 ms, of which the two estimates together make "
                              f"({arith_ms} + {read_ms}) / 2.0 ≈ {share}.")
    fast_step = PhaseTiming(16, 2, 16e-3, 1e-6, prefill=[16e-3] * 3, decode=[[1e-6, 1e-6]] * 3)
    assert "(reading and arithmetic overlap, so the two estimates can add up to slightly more than the step)." in \
        fast_step.report("tiny", cfg, read_rate=1e9)
    # the printed percentage follows the printed (rounded) medians: 2.0 -> 3.4 is +70 %, though 1.96 -> 3.44 is +76 %
    assert st.pooled_ratio(10, 12) == 2.0
    st2 = StepTimes([10, 11, 20, 21], {"naive": [[1.96e-3, 1.96e-3, 3.44e-3, 3.44e-3]] * 2, "cached": [[1e-3] * 4] * 2})
    assert "naive 2.0 → 3.4 (about +70 %" in st2.reading((10, 12), (20, 22), "token")
    # a half rounds away from zero, as a reader rounds it: 2.0 -> 4.5 is +125 %, about +130 %
    from tinytf.lab.prefill_decode import percent
    assert percent(4.5 / 2.0 * 100 - 100) == "about +130 %" and percent(-25.0) == "about −30 %" \
        and percent(124.9) == "about +120 %" and percent(4.9) == "about 0 %"
    from tinytf.lab.prefill_decode import three_digits
    assert three_digits(11.83) == "11.8" and three_digits(120.4) == "120" and three_digits(0.9213) == "0.921" \
        and three_digits(12.0) == "12.0"
    assert two_digits(105) == "100" and two_digits(105, keep_zeros=True) == "100"  # no exponent
    assert two_digits(0.0504, keep_zeros=True) == "0.050"
    assert f"GFLOP/s: prefill {pre_s}, decode {dec_s}" in report  # two digits, as the balance line prints it
    assert "FLOPs in the time it reads one byte" not in with_read  # the balance belongs to the machine, not the model


def test_bare_config_and_call_cost():
    from tinytf.lab.prefill_decode import bare_config, time_call_cost
    cfg = TinyConfig(n_layers=4, d_model=192, n_heads=6, d_ff=512)
    bare = bare_config(cfg)
    assert (bare.n_layers, bare.n_heads, bare.vocab_size, bare.d_model, bare.d_ff) == (4, 6, cfg.vocab_size, 12, 8)
    assert tinytf.count_parameters(bare) < tinytf.count_parameters(cfg) / 50
    s = time_call_cost(TinyConfig(n_layers=1, d_model=32, n_heads=2, d_ff=64), prompt_len=8, decode_steps=2, repeats=2)
    assert 0 < s.q1 <= s.median <= s.q3


def test_time_kernels():
    from tinytf.lab.prefill_decode import time_kernels
    k = time_kernels(d=64, cols=8, repeats=3)
    assert k.matvec.median > 0 and k.matmat.median > 0
    assert k.matvec_gb_per_s() == pytest.approx(4 * 64 * 64 / k.matvec.median / 1e9)
    lines = k.report().splitlines()
    assert len(lines) == 4 and all(len(line) <= 78 for line in lines)
    with pytest.raises(TinyTFInputError):
        time_kernels(d=0)


def test_time_kernels_rates_follow_the_median_times():
    from tinytf.lab.prefill_decode import time_kernels
    k = time_kernels(d=64, cols=8, repeats=3)
    vec_rate, mat_rate = k.gflop_per_s()
    assert vec_rate == pytest.approx(2 * 64 * 64 / k.matvec.median / 1e9)
    assert mat_rate == pytest.approx(2 * 64 * 64 * 8 / k.matmat.median / 1e9)


def test_time_matvecs_counts_every_linear():
    from tinytf.lab.prefill_decode import time_matvecs
    cfg = TinyConfig(n_layers=1, d_model=32, n_heads=2, d_ff=64)
    model = tinytf.TinyTransformer(cfg).eval()
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    n, mb, s = time_matvecs(model, repeats=3)
    assert n == len(linears) > 0
    assert mb == sum(m.weight.numel() * 4 for m in linears) / 1e6
    assert s.q1 <= s.median <= s.q3 and s.median > 0
    with pytest.raises(TinyTFInputError):
        time_matvecs(model, repeats=0)


def test_step_times_summary_prints_each_band_and_the_ratio_per_repeat():
    from tinytf.lab.prefill_decode import StepTimes
    st = StepTimes([10, 11, 20, 21], {"naive": [[2e-3, 2e-3, 4e-3, 4e-3], [2e-3, 2e-3, 6e-3, 6e-3]],
                                      "cached": [[1e-3] * 4] * 2})
    lines = st.summary([(10, 12), (20, 22)], "token").splitlines()
    assert lines[0].startswith("naive   ms per token:  positions 10-11: 2.0")
    assert "positions 20-21: " + str(st.band("naive", 20, 22).scaled(1e3)) in lines[0]
    assert lines[1].startswith("cached  ms per token:  positions 10-11: 1.0")
    # per repeat 4.0 and 6.0: their median 5.0, not the ratio of pooled medians
    assert lines[2] == ("naive / cached, per repeat:   positions 10-11: " + str(st.ratio(10, 12))
                        + ";  positions 20-21: " + str(st.ratio(20, 22)))
    assert st.ratio(20, 22).median == 5.0
    with pytest.raises(TinyTFInputError):
        st.summary([(30, 40)], "token")
