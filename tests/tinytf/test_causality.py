"""Causality: changing token t moves no logits before t, for every t; a broken mask is caught."""
import pytest
import torch

import tinytf
from tinytf import TinyConfig, broken_mask, causality_check, causality_sweep, sweep_report


CONFIGS = {
    "default": TinyConfig(),
    "2017": tinytf.config_2017(),
    "gqa-learned": TinyConfig(n_kv_heads=2, pos="learned"),
    "no-residual": TinyConfig(residual=False, norm="layer", pos="none"),
}
IDS = torch.tensor([72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100])  # "Hello, world"


def model_for(cfg):
    tinytf.seed_everything(0)
    return tinytf.TinyTransformer(cfg).eval()


@pytest.mark.parametrize("name", list(CONFIGS))
def test_sweep_every_position_is_causal(name):
    results = causality_sweep(model_for(CONFIGS[name]), IDS)
    assert [r.position for r in results] == list(range(len(IDS)))
    for r in results:
        assert r.ok, r.report()
        assert all(c == 0.0 for c in r.max_change[: r.position])
        assert r.max_change[r.position] > 0  # the changed position itself does move
        assert all(c > 0 for c in r.max_change[r.position:])  # and every later one reads it
    assert sweep_report(results).endswith("causal ✅ for every position")


def test_broken_mask_is_caught_at_every_position_but_the_first():
    """The off-by-one mask lets position t-1 peek at t in every layer; through 2 layers the leak
    reaches t-2 (t-2 reads t-1, which read t) and no further."""
    model = model_for(TinyConfig(n_layers=2))
    with broken_mask(model):
        results = causality_sweep(model, IDS)
    assert results[0].ok  # position 0 has nothing before it
    for r in results[1:]:
        assert not r.ok
        moved = [t for t, c in enumerate(r.max_change[: r.position]) if c != 0.0]
        assert moved == list(range(max(0, r.position - 2), r.position))
    report = sweep_report(results)
    assert report.endswith("NOT causal ✗")
    assert f"2 of {len(IDS) - 1}  [{len(IDS) - 3}, {len(IDS) - 2}]" in report
    assert "MOVED (sees the future!)" in results[-1].report()
    assert results[-1].report().endswith("NOT causal ✗: an earlier position saw a later token")
    assert causality_check(model, IDS).ok  # the real mask is back after the with-block


def test_broken_mask_leak_grows_with_depth():
    model = model_for(TinyConfig(n_layers=1, n_heads=2, d_model=32))
    with broken_mask(model):
        r = causality_check(model, IDS)
    assert [t for t, c in enumerate(r.max_change[: r.position]) if c != 0.0] == [r.position - 1]


def test_broken_mask_is_restored_even_after_an_error():
    model = model_for(TinyConfig())
    with pytest.raises(RuntimeError, match="boom"):
        with broken_mask(model):
            raise RuntimeError("boom")
    assert all(m.mask_fn is tinytf.causal_mask for m in model.modules() if isinstance(m, tinytf.Attention))
    assert causality_check(model, IDS).ok


def test_custom_broken_mask_no_mask_at_all():
    model = model_for(tinytf.config_2017())

    def no_mask(T, S, offset=0, device=None):
        return torch.ones(T, S, dtype=torch.bool, device=device)

    with broken_mask(model, no_mask):
        r = causality_check(model, IDS, position=-1)
    assert not r.ok
    assert all(c > 0 for c in r.max_change)  # bidirectional: every position sees the last token


def test_check_defaults_and_report():
    model = model_for(TinyConfig())
    r = causality_check(model, IDS)
    assert (r.position, r.old_token, r.new_token) == (len(IDS) - 1, 100, 101)
    text = r.report()
    assert text.startswith("changed token at position 11: 100 -> 101")
    assert text.count("unchanged") == 11 and text.endswith("causal ✅: no earlier position saw the change")
    r5 = causality_check(model, IDS, position=5, new_token=0)
    assert (r5.position, r5.old_token, r5.new_token) == (5, 44, 0)
    assert causality_check(model, IDS[None]).ok  # [B, T] input


def test_encoder_decoder_decoder_is_causal_and_reads_all_of_the_source():
    tinytf.seed_everything(0)
    model = tinytf.EncoderDecoder(tinytf.config_2017()).eval()
    src, tgt = IDS[:6], IDS[6:11]
    base = model(src, tgt)
    for t in range(5):
        changed = tgt.clone()
        changed[t] = (changed[t] + 1) % 256
        moved = (model(src, changed) - base).abs().amax(-1)
        assert (moved[:t] == 0).all() and (moved[t:] > 0).all()
    src2 = src.clone()
    src2[-1] += 1
    assert ((model(src2, tgt) - base).abs().amax(-1) > 0).all()  # the last source token reaches every target position


def test_sweep_report_side_by_side_matches_each_sweep():
    model = model_for(TinyConfig(n_layers=2))
    real = causality_sweep(model, IDS)
    with broken_mask(model):
        broken = causality_sweep(model, IDS)
    lines = sweep_report(real, broken).splitlines()
    assert lines[:2] == [" changed  earlier positions that moved", "position  real mask   broken mask"]
    assert lines[2] == "       0  0 of 0      0 of 0"
    n = len(IDS) - 1
    assert lines[-2] == f"{n:>8}  0 of {n:<7}2 of {n}  [{n - 2}, {n - 1}]"
    assert lines[-1] == "real mask: causal ✅ for every position | broken mask: NOT causal ✗"
    assert len(lines) == len(IDS) + 3
    with pytest.raises(tinytf.TinyTFInputError):
        sweep_report(real, broken[1:])
