import pytest
import torch

import tinytf
from tinytf.lab.residual_updates import format_update_sizes, update_sizes


def _model(**kw):
    tinytf.seed_everything(0)
    return tinytf.TinyTransformer(tinytf.TinyConfig(d_model=32, n_heads=2, d_ff=64, n_layers=2, **kw)).eval()


def test_update_sizes_read_the_stream_and_the_two_updates():
    model = _model()
    ids = tinytf.encode("residual")
    rows = update_sizes(model, ids)
    assert [r["block"] for r in rows] == [0, 1]
    _, tr = model.run_with_trace(ids)
    for r in rows:
        b = f"blocks.{r['block']}."
        assert r["stream"] == pytest.approx(tr[b + "resid_pre"].norm(dim=-1).mean().item())
        assert r["attn"] == pytest.approx(tr[b + "attn.out"].norm(dim=-1).mean().item())
        assert r["mid"] == pytest.approx(tr[b + "resid_mid"].norm(dim=-1).mean().item())
        assert r["ffn"] == pytest.approx(tr[b + "ffn.out"].norm(dim=-1).mean().item())
        assert r["attn_ratio"] == pytest.approx(r["attn"] / r["stream"])
        assert r["ffn_ratio"] == pytest.approx(r["ffn"] / r["mid"])
        H_change = tr[b + "resid_post"] - tr[b + "resid_pre"]  # the whole block's update H' - H
        assert r["block_update"] == pytest.approx(H_change.norm(dim=-1).mean().item())
        assert r["block_ratio"] == pytest.approx(r["block_update"] / r["stream"])
        # the updates are exactly what the block adds
        assert torch.equal(tr[b + "resid_mid"], tr[b + "resid_pre"] + tr[b + "attn.out"])
    assert rows[1]["stream"] == pytest.approx(_model().run_with_trace(ids)[1]["blocks.0.resid_post"].norm(dim=-1).mean().item())


def test_table_has_one_line_per_block():
    rows = update_sizes(_model(), tinytf.encode("abc"))
    lines = format_update_sizes(rows, title="t").splitlines()
    assert lines[0] == "t" and "ratio" in lines[1] and len(lines) == 4
    assert f"{rows[0]['attn_ratio']:.2f}" in lines[2]


@pytest.mark.parametrize("kw, message", [({"norm_position": "post"}, "pre-norm"), ({"residual": False}, "residual")])
def test_other_wirings_get_a_clear_message(kw, message):
    with pytest.raises(tinytf.TinyTFInputError, match=message):
        update_sizes(_model(**kw), tinytf.encode("abc"))


def test_medians_are_of_the_per_position_ratios():
    from tinytf.lab.residual_updates import update_ratio_medians

    model = _model()
    ids = tinytf.encode("the medians of ratios")  # 21 positions: an odd count, the median is one of them
    medians = update_ratio_medians(model, ids)
    assert [m["block"] for m in medians] == [0, 1]
    _, tr = model.run_with_trace(ids)
    for m in medians:
        b = f"blocks.{m['block']}."
        stream, mid = tr[b + "resid_pre"][0].norm(dim=-1), tr[b + "resid_mid"][0].norm(dim=-1)  # [T] each
        attn = tr[b + "attn.out"][0].norm(dim=-1) / stream
        ffn = tr[b + "ffn.out"][0].norm(dim=-1) / mid
        block = (tr[b + "resid_post"] - tr[b + "resid_pre"])[0].norm(dim=-1) / stream
        for key, per_position in (("attn_ratio", attn), ("ffn_ratio", ffn), ("block_ratio", block)):
            assert m[key] == pytest.approx(sorted(per_position.tolist())[10], rel=1e-6)  # the 11th of 21
    # not the ratio of the mean lengths: on this input the two differ
    rows = update_sizes(model, ids)
    assert abs(medians[0]["attn_ratio"] - rows[0]["attn_ratio"]) > 1e-3


def test_median_of_an_even_count_is_the_mean_of_the_middle_two():
    from tinytf.lab.residual_updates import update_ratio_medians

    model = _model()
    ids = tinytf.encode("abcd")  # 4 positions
    _, tr = model.run_with_trace(ids)
    r = sorted((tr["blocks.0.attn.out"][0].norm(dim=-1) / tr["blocks.0.resid_pre"][0].norm(dim=-1)).tolist())
    assert update_ratio_medians(model, ids)[0]["attn_ratio"] == pytest.approx((r[1] + r[2]) / 2, rel=1e-6)


@pytest.mark.parametrize("kw, message", [({"norm_position": "post"}, "pre-norm"), ({"residual": False}, "residual")])
def test_medians_refuse_other_wirings(kw, message):
    from tinytf.lab.residual_updates import update_ratio_medians

    with pytest.raises(tinytf.TinyTFInputError, match="update_ratio_medians.*" + message):
        update_ratio_medians(_model(**kw), tinytf.encode("abc"))
