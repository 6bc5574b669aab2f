"""tinytf.lens: the logit lens reads the trace's residual streams through the model's own final norm and head."""
import pytest
import torch

import tinytf
from tinytf import lens


@pytest.mark.parametrize("model", [
    tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=3)),
    tinytf.TinyTransformer(tinytf.TinyConfig(n_layers=2, norm="layer", norm_position="post", ffn="relu",
                                             pos="sinusoidal")),
], ids=["pre-rms", "post-layer"])
def test_last_depth_is_the_models_own_log_probs(model):
    ids = tinytf.encode("hello lens")
    lp = lens.logit_lens(model, ids)
    assert lp.shape == (model.config.n_layers + 1, len(ids), model.config.vocab_size)
    with torch.no_grad():
        logits = model(ids)
    assert torch.allclose(lp[-1], torch.log_softmax(logits, -1), atol=1e-6)
    assert torch.allclose(lp.exp().sum(-1), torch.ones(lp.shape[:2]), atol=1e-5)


def test_each_depth_reads_its_residual_stream():
    model = tinytf.pretrained("text-4l")
    ids = tinytf.encode("The cat sat.")
    lp = lens.logit_lens(model, ids)
    _, trace = model.run_with_trace(ids)
    with torch.no_grad():
        for d, name in enumerate(["blocks.0.resid_pre"] + [f"blocks.{i}.resid_post" for i in range(4)]):
            expected = torch.log_softmax(model.lm_head(model.final_norm(trace[name][0])), -1)
            assert torch.equal(lp[d], expected)
        assert torch.allclose(lp[-1], torch.log_softmax(model(ids), -1), atol=1e-6)


def test_lens_table():
    ids = torch.tensor([1, 2, 3])
    lp = torch.log_softmax(torch.tensor([[[0.0, 0, 5, 0], [0, 0, 0, 1], [0, 0, 0, 0]]]), -1)  # depth 1, T 3, V 4
    t = lens.lens_table(lp, ids)
    assert t["top"] == [[2, 3, 0]]
    assert t["rank_true"].tolist() == [[0, 0]]
    assert t["p_true"][0, 0].item() == pytest.approx(torch.softmax(torch.tensor([0.0, 0, 5, 0]), 0)[2].item())


def test_not_a_decoder():
    with pytest.raises(tinytf.TinyTFInputError):
        lens.logit_lens(torch.nn.Linear(2, 2), torch.tensor([1]))
