"""LatentAttention.w_uk / w_uv: the per-head up-projections are views of kv_up.weight in the forward pass's
layout, rebuild the traced keys and values from the latent, and absorbing W_UK into the query reproduces the
position-free part of the attention scores."""
import pytest
import torch

import tinytf

CONFIGS = {
    "full-rank q": dict(mla=tinytf.MLAOptions(kv_rank=10, rope_dim=8, v_dim=16), head_dim=28),
    "low-rank q, v = head": dict(mla=tinytf.MLAOptions(kv_rank=12, q_rank=20, rope_dim=4), head_dim=20),
}


def _model(name):
    torch.manual_seed(0)
    cfg = tinytf.TinyConfig(d_model=64, n_heads=4, n_layers=2, d_ff=128, **CONFIGS[name])
    return tinytf.TinyTransformer(cfg).eval()


@pytest.mark.parametrize("name", list(CONFIGS))
def test_shapes_and_views_of_kv_up(name):
    attn = _model(name).blocks[0].attn
    H, nope, dv, r = attn.n_heads, attn.d_nope, attn.d_v, attn.kv_rank
    w_uk, w_uv = attn.w_uk(), attn.w_uv()
    assert w_uk.shape == (H, nope, r) and w_uv.shape == (H, dv, r)
    storage = attn.kv_up.weight.untyped_storage().data_ptr()
    assert w_uk.untyped_storage().data_ptr() == storage == w_uv.untyped_storage().data_ptr()  # views, no copy
    rows = attn.kv_up.weight.detach().view(H, nope + dv, r)
    assert torch.equal(w_uk.detach(), rows[:, :nope]) and torch.equal(w_uv.detach(), rows[:, nope:])
    with torch.no_grad():  # an edit of the weight shows through the view
        attn.kv_up.weight[nope + dv] += 1.0  # the first row of head 1
    assert torch.equal(attn.w_uk()[1, 0].detach(), attn.kv_up.weight[nope + dv].detach())


@pytest.mark.parametrize("name", list(CONFIGS))
def test_rebuild_keys_values_and_absorb(name):
    model = _model(name)
    attn = model.blocks[0].attn
    names = ["blocks.0.attn.latent", "blocks.0.attn.q", "blocks.0.attn.k", "blocks.0.attn.v"]
    with torch.no_grad():
        _, trace = model.run_with_trace(tinytf.encode("latent"), names=names)
        c = trace["blocks.0.attn.latent"][0]  # [S, r_kv]
        w_uk, w_uv = attn.w_uk(), attn.w_uv()  # [H, D-R, r_kv], [H, Dv, r_kv]
        keys = torch.einsum("hdr,sr->hsd", w_uk, c)  # [H, S, D-R]
        values = torch.einsum("hdr,sr->hsd", w_uv, c)  # [H, S, Dv]
        q = trace["blocks.0.attn.q"][0, :, :, :attn.d_nope]  # [H, T, D-R]: the position-free part of each query
        naive = q @ trace["blocks.0.attn.k"][0].transpose(-1, -2)  # [H, T, S]
        absorbed = (q @ w_uk) @ c.T  # W_UKᵀ q per query, compared with the latents
    assert torch.allclose(keys, trace["blocks.0.attn.k"][0], atol=1e-6)
    assert torch.allclose(values, trace["blocks.0.attn.v"][0], atol=1e-6)
    assert naive.abs().max() > 1e-3 and torch.allclose(naive, absorbed, atol=1e-5)
