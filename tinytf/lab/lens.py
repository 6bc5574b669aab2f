"""The logit lens: read the residual stream after every block through the model's own final norm and
LM head, as if the model stopped there.

    lp = tinytf.lens.logit_lens(model, ids)   # [n_layers + 1, T, V] log-probabilities
    lp[0]        # from the embeddings (the stream entering block 0)
    lp[d]        # after block d-1 (trace "blocks.{d-1}.resid_post")
    lp[-1]       # after the last block: exactly the model's own next-token log-probabilities

Only the trace's residual streams are read, and ``model.final_norm`` / ``model.lm_head`` applied to them;
nothing of the model is re-derived here.
"""
from __future__ import annotations

import torch

from ..errors import TinyTFInputError


@torch.no_grad()
def logit_lens(model, ids, batch: int = 0) -> torch.Tensor:
    """[n_layers + 1, T, V] log-probabilities of the next token read at every depth of a decoder-only
    model: depth 0 from the stream entering block 0, depth d from the stream leaving block d - 1.
    ``ids``: [T] or [B, T] token ids (``batch`` picks the example of a batch)."""
    if not hasattr(model, "final_norm") or not hasattr(model, "lm_head") or not hasattr(model, "blocks"):
        raise TinyTFInputError(f"logit_lens: expected a decoder-only TinyTransformer, got {type(model).__name__}")
    model.eval()
    _, trace = model.run_with_trace(ids)
    streams = [trace["blocks.0.resid_pre"]] + [trace[f"blocks.{i}.resid_post"] for i in range(len(model.blocks))]
    out = []
    for x in streams:
        logits = model.lm_head(model.final_norm(x[batch]))  # [T, V]
        out.append(torch.log_softmax(logits.float(), dim=-1))
    return torch.stack(out)


def lens_table(log_probs: torch.Tensor, ids, decode=None) -> dict:
    """Summaries of a logit lens on ``ids`` ([T]): {'top': [depth][t] the most likely next byte id,
    'p_true': [depth, T-1] the probability of the true next byte ids[t+1], 'rank_true': [depth, T-1] its rank
    (0 = top)}."""
    ids = torch.as_tensor(ids).flatten()
    lp = log_probs[:, : len(ids) - 1]
    true = ids[1:]
    p_true = lp.gather(-1, true.expand(lp.shape[0], -1)[..., None])[..., 0].exp()
    rank = (lp > lp.gather(-1, true.expand(lp.shape[0], -1)[..., None])).sum(-1)
    return {"top": log_probs.argmax(-1).tolist(), "p_true": p_true, "rank_true": rank}


@torch.no_grad()
def lens_agreement(model, inputs, targets) -> dict:
    """The logit lens over many windows (``inputs``, ``targets``: [n, T] ids, e.g. from
    ``textdata.eval_windows``), one ``logit_lens`` per window. Per depth (0 = embeddings, d = after block d-1):
    {'agree': [depth] fraction of positions whose lens top guess equals the model's final top guess,
    'bits': [depth] mean cross-entropy of the lens's distribution on the true next ids, in bits}."""
    inputs, targets = torch.as_tensor(inputs), torch.as_tensor(targets)
    if inputs.dim() != 2 or inputs.shape != targets.shape or inputs.numel() == 0:
        raise TinyTFInputError(f"lens_agreement: expected inputs and targets [n, T] of the same shape, got "
                               f"{list(inputs.shape)} and {list(targets.shape)}")
    agree, bits = 0.0, 0.0
    for ids, tgt in zip(inputs, targets):
        lp = logit_lens(model, ids).double()  # [depth, T, V]
        agree = agree + (lp.argmax(-1) == lp[-1].argmax(-1)).double().mean(-1)
        bits = bits - lp.gather(-1, tgt.expand(lp.shape[0], -1)[..., None])[..., 0].mean(-1) / torch.log(
            torch.tensor(2.0, dtype=torch.float64))
    return {"agree": (agree / len(inputs)).tolist(), "bits": (bits / len(inputs)).tolist()}
