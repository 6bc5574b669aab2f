"""tinytf.exercises: every checker passes the reference solution and catches typical wrong answers,
with a report that names what differs; checking leaves the caller's random state alone."""
from __future__ import annotations

import math

import pytest
import torch

import tinytf
from tinytf import exercises as E


@pytest.mark.parametrize("name", list(E.EXERCISES))
def test_reference_solution_passes(name):
    result = E.check(name, E.REFERENCE[name])
    assert result.passed, result.report()
    assert result.report().startswith(f"{name}: passed: ")
    if name != "parameter_count":
        assert "max error < 1e-05" in result.report()  # a bound, never float32 digits


@pytest.mark.parametrize("name", list(E.EXERCISES))
def test_stub_is_not_attempted(name):
    def stub(*args):
        raise NotImplementedError

    result = E.check(name, stub)
    assert result.status == "not attempted" and not result
    assert "NotImplementedError" in result.report()


@pytest.mark.parametrize("name", list(E.EXERCISES))
def test_exception_is_reported_not_raised(name):
    def broken(*args):
        raise ValueError("oops")

    result = E.check(name, broken)
    assert result.status == "failed" and "ValueError: oops" in result.report()


def test_wrong_shape_is_named():
    result = E.check("rope", lambda x: x[..., :16])
    assert not result and "shape [1, 4, 7, 16], expected [1, 4, 7, 32]" in result.report()


def test_identity_rope_fails_everywhere_but_position_0():
    report = E.check("rope", lambda x: x).report()
    assert "failed" in report
    assert "positions that differ: [1, 2, 3, 4, 5, 6]; positions that match: [0]" in report


def test_adjacent_pair_rope_fails():
    def adjacent(x):  # RoFormer's layout, applied to tinytf's half-split queries: a different rotation
        D, T = x.shape[-1], x.shape[-2]
        ang = torch.arange(T)[:, None] * 10000.0 ** (-torch.arange(0, D, 2) / D)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out = torch.stack((x1 * ang.cos() - x2 * ang.sin(), x1 * ang.sin() + x2 * ang.cos()), -1)
        return out.flatten(-2)

    assert not E.check("rope", adjacent)


def test_attention_without_mask_fails_at_all_but_last_position():
    def no_mask(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1) @ v

    report = E.check("causal_attention", no_mask).report()
    assert "failed" in report and "positions that match: [8]" in report


def test_attention_without_scaling_fails():
    def unscaled(q, k, v):
        T = q.shape[-2]
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        return torch.softmax((q @ k.transpose(-2, -1)).masked_fill(~mask, float("-inf")), -1) @ v

    result = E.check("causal_attention", unscaled)
    assert not result and "position 0 " not in result.details[-1]  # position 0 reads only itself: equal


def test_layernorm_is_not_rmsnorm():
    assert not E.check("rmsnorm", lambda x, w, eps: (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True) * w)
    assert not E.check("rmsnorm", lambda x, w, eps: x / x.pow(2).mean(-1, keepdim=True).add(eps).sqrt())  # no gamma


def test_swiglu_mistakes():
    silu = torch.nn.functional.silu
    assert not E.check("swiglu", lambda x, g, u, d: (silu(x @ u.T) * (x @ g.T)) @ d.T)  # gate and up swapped
    assert not E.check("swiglu", lambda x, g, u, d: (torch.relu(x @ g.T) * (x @ u.T)) @ d.T)
    assert not E.check("swiglu", lambda x, g, u, d: (silu(x @ g) * (x @ u)) @ d)  # shapes do not even fit


def test_block_wiring_mistakes():
    assert not E.check("pre_norm_block", E.REFERENCE["post_norm_block"])
    assert not E.check("post_norm_block", E.REFERENCE["pre_norm_block"])

    def no_second_residual(x, block):
        u = x + block.attn(block.norm1(x))
        return block.ffn(block.norm2(u))

    assert not E.check("pre_norm_block", no_second_residual)


def test_sandwich_block_needs_both_norms_of_each_sublayer():
    assert E.check("sandwich_block", E.REFERENCE["sandwich_block"])

    def no_output_norm(x, block):  # pre-norm wiring with the sandwich's input norms only
        u = x + block.attn(block.norm1.pre(x))
        return u + block.ffn(block.norm2.pre(u))

    def pre_and_post_swapped(x, block):
        u = x + block.norm1.pre(block.attn(block.norm1.post(x)))
        return u + block.norm2.pre(block.ffn(block.norm2.post(u)))

    assert not E.check("sandwich_block", no_output_norm)
    assert not E.check("sandwich_block", pre_and_post_swapped)
    assert not E.check("sandwich_block", E.REFERENCE["pre_norm_block"])  # a sandwich block's norm1 is a pair


def test_parameter_count_names_the_configs_that_differ():
    def no_gqa_no_tying(c):
        return 2 * c.vocab_size * c.d_model + c.n_layers * (4 * c.d_model ** 2 + 3 * c.d_model * c.d_ff + 2 * c.d_model) + c.d_model

    result = E.check("parameter_count", no_gqa_no_tying)
    report = result.report()
    assert not result and "3 of 5 counts differ" in report
    assert "TinyConfig(n_kv_heads=2): yours 590,464, tinytf 557,696" in report
    assert "right for: TinyConfig(), TinyConfig(n_layers=4, d_model=64, d_ff=256)" in report
    assert not E.check("parameter_count", lambda c: "many")
    assert E.check("parameter_count", lambda c: float(E.REFERENCE["parameter_count"](c)))  # 8.0e9 as a float is fine


def test_cross_attention_with_a_mask_fails():
    def masked(x, memory, attn):
        B, T, _ = x.shape
        H, D = attn.n_heads, attn.d_head
        heads = lambda t: t.view(B, t.shape[1], H, D).transpose(1, 2)
        q, k, v = heads(attn.q_proj(x)), heads(attn.k_proj(memory)), heads(attn.v_proj(memory))
        s = q @ k.transpose(-2, -1) / math.sqrt(D)
        s = s.masked_fill(~torch.ones(T, k.shape[2], dtype=torch.bool).tril(), float("-inf"))
        return attn.o_proj((torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, H * D))

    assert not E.check("cross_attention", masked)


def test_cross_attention_that_reshapes_the_memory_with_the_target_length_fails():
    def target_length_for_keys(x, memory, attn):  # bug: K and V split into heads with T positions, not S
        B, T, _ = x.shape
        H, D = attn.n_heads, attn.d_head
        heads = lambda t: t.view(B, T, H, D).transpose(1, 2)
        q, k, v = heads(attn.q_proj(x)), heads(attn.k_proj(memory)), heads(attn.v_proj(memory))
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(D), -1)
        return attn.o_proj((w @ v).transpose(1, 2).reshape(B, T, H * D))

    result = E.check("cross_attention", target_length_for_keys)
    assert not result and "your function raised" in result.report()
    passed = E.check("cross_attention", E.REFERENCE["cross_attention"]).report()
    assert "passed: queries [1, 5, 128] read memory [1, 6, 128]; output shape [1, 5, 128]" in passed


def test_gqa_with_the_wrong_grouping_names_the_heads():
    def tiled(q, k, v):  # repeat instead of repeat_interleave: query head 1 gets K/V head 1, not 0
        return E.REFERENCE["causal_attention"](q, k.repeat(1, 2, 1, 1), v.repeat(1, 2, 1, 1))

    report = E.check("grouped_query_attention", tiled).report()
    assert "heads that differ: [1, 2]; heads that match: [0, 3]" in report


def test_kv_cache_step_that_forgets_the_past_fails():
    def only_new(q, k_past, v_past, k_new, v_new):
        return v_new.expand_as(q)

    assert not E.check("kv_cache_step", only_new)


def test_nan_and_wrong_type_are_reported():
    assert "NaN" in E.check("rmsnorm", lambda x, w, e: x * float("nan")).report()
    assert "returned NoneType" in E.check("rmsnorm", lambda x, w, e: None).report()
    assert "expected a function" in E.check("rmsnorm", 3).report()


def test_check_does_not_touch_the_callers_random_state():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    E.check("rope", E.REFERENCE["rope"])
    assert torch.equal(torch.rand(3), expected)


def test_unknown_exercise_and_describe():
    with pytest.raises(KeyError, match="no exercise 'nope'"):
        E.check("nope", lambda: None)
    for name in E.EXERCISES:
        assert E.describe(name).startswith(E.EXERCISES[name].signature)


def test_every_chapter_has_an_exercise_and_each_exercise_sits_in_its_chapter():
    assert sorted({e.chapter for e in E.EXERCISES.values()}) == list(range(1, 13))
    assert tinytf.exercises is E
    from conftest import ROOT

    for name, exercise in E.EXERCISES.items():
        (path,) = [p for p in (ROOT / "chapters").glob(f"{exercise.chapter:02d}_*.ipynb")
                   if not p.stem.endswith("_notes")]  # the chapter, not its lab notes
        assert f'check(\\"{name}\\"' in path.read_text(encoding="utf-8"), (
            f"exercise {name!r} says chapter {exercise.chapter}, but {path.name} does not check it")


def test_sampler_mistakes_name_the_setting():
    no_top_k = E.check("sampler", lambda logits, t, k, p: torch.softmax(logits / t, -1))
    assert not no_top_k and "temperature 1.0, top_k 5, top_p None" in no_top_k.report()
    inverted = E.check("sampler", lambda logits, t, k, p: torch.softmax(logits * t, -1))
    assert not inverted and "temperature 0.7" in inverted.report()
    only_top_k = E.check("sampler", lambda logits, t, k, p: tinytf.next_token_probs(logits, t, k))
    assert not only_top_k and "temperature 2.0, top_k None, top_p 0.9" in only_top_k.report()

    def top_p_before_temperature(logits, t, k, p):  # the nucleus of the untempered distribution: wrong
        kept = tinytf.top_p_filter(logits, p) if p is not None else logits
        return tinytf.next_token_probs(torch.where(torch.isfinite(kept), logits, -torch.inf), t, k)
    order = E.check("sampler", top_p_before_temperature)
    assert not order and "temperature 2.0, top_k None, top_p 0.9" in order.report()
    assert E.check("sampler", lambda logits, t, k, p: tinytf.next_token_probs(logits, t, k, p))


def test_moe_router_mistakes():
    def no_renorm(logits, k):  # Qwen3-MoE's router without norm_topk_prob: weights do not sum to 1
        weights, ids = torch.topk(torch.softmax(logits, -1), k, -1)
        return ids, weights

    def lowest(logits, k):
        weights, ids = torch.topk(torch.softmax(logits, -1), k, -1, largest=False)
        return ids, weights / weights.sum(-1, keepdim=True)

    def softmax_of_top_k(logits, k):  # Mixtral's own formula, softmax(TopK(logits)): the same weights
        top, ids = torch.topk(logits, k, -1)
        return ids.flip(-1), torch.softmax(top, -1).flip(-1)  # any order of the k experts is fine

    assert not E.check("moe_router", no_renorm)
    assert not E.check("moe_router", lowest)
    assert E.check("moe_router", softmax_of_top_k)
    assert "shapes" in E.check("moe_router", lambda logits, k: E.REFERENCE["moe_router"](logits, k + 1)).report()
    assert "expected a pair" in E.check("moe_router", lambda logits, k: logits).report()
    same_twice = E.check("moe_router", lambda logits, k: (torch.zeros(*logits.shape[:-1], k, dtype=torch.long),
                                                         torch.full((*logits.shape[:-1], k), 0.5)))
    assert not same_twice and "different experts" in same_twice.report()


def test_mean_ablated_block_wrong_answers():
    def zeroed(x, block, ffn_mean):  # zero-ablation instead of mean-ablation
        return x + block.attn(block.norm1(x))

    def no_residual(x, block, ffn_mean):  # the mean replaces the whole stream, not the FFN's output
        return ffn_mean.expand_as(x).clone()

    def ffn_kept(x, block, ffn_mean):  # the mean added on top of the real FFN output
        u = x + block.attn(block.norm1(x))
        return u + block.ffn(block.norm2(u)) + ffn_mean

    for wrong in (zeroed, no_residual, ffn_kept):
        result = E.check("mean_ablated_block", wrong)
        assert not result and "shape [1, 13, 128] is right" in result.report(), result.report()
    assert "shape [128], expected [1, 13, 128]" in E.check("mean_ablated_block", lambda x, b, m: m).report()


def test_logit_lens_wrong_answers():
    def streams(model, ids, after="resid_post"):
        _, trace = model.run_with_trace(ids)
        return [trace["blocks.0.resid_pre"]] + [trace[f"blocks.{i}.{after}"] for i in range(len(model.blocks))]

    def no_final_norm(model, ids, position):  # the LM head on the raw stream: every depth differs
        return torch.log_softmax(model.lm_head(torch.stack([s[0, position] for s in streams(model, ids)])), -1)

    def after_attention(model, ids, position):  # resid_mid instead of resid_post: only the embeddings match
        x = torch.stack([s[0, position] for s in streams(model, ids, "resid_mid")])
        return torch.log_softmax(model.lm_head(model.final_norm(x)), -1)

    def off_by_one(model, ids, position):
        return E.REFERENCE["logit_lens"](model, ids, position - 1)

    def log_of_softmax(model, ids, position):  # log(softmax) instead of log_softmax: the same probabilities
        x = torch.stack([s[0, position] for s in streams(model, ids)])
        return torch.softmax(model.lm_head(model.final_norm(x)), -1).log()

    assert "depths that differ: [0, 1, 2, 3, 4]" in E.check("logit_lens", no_final_norm).report()
    assert "depths that differ: [1, 2, 3, 4]; depths that match: [0]" in E.check("logit_lens", after_attention).report()
    wrong = E.check("logit_lens", off_by_one)
    assert not wrong and "at position 4 of 'Return the number of items.'" in wrong.report()
    assert E.check("logit_lens", log_of_softmax)
    no_embedding = E.check("logit_lens", lambda m, ids, p: E.REFERENCE["logit_lens"](m, ids, p)[1:])
    assert not no_embedding and "shape [4, 256], expected [5, 256]" in no_embedding.report()


def test_sink_softmax_mistakes():
    def plain(scores, sinks):  # no sink at all: every row sums to 1
        return torch.softmax(scores, -1)

    def sink_kept(scores, sinks):  # the sink's own column left in: one key too many
        column = sinks[:, None, None].expand(*scores.shape[:-1], 1)
        return torch.softmax(torch.cat((scores, column), -1), -1)

    def renormalised(scores, sinks):  # dividing by the row's sum undoes the sink
        w = E.REFERENCE["sink_softmax"](scores, sinks)
        return w / w.sum(-1, keepdim=True)

    def head_0_sink(scores, sinks):  # one sink for every head
        return E.REFERENCE["sink_softmax"](scores, sinks[:1].expand_as(sinks))

    def exp_directly(scores, sinks):  # the formula as written: right (the scores are small)
        e = scores.exp()
        return e / (sinks[:, None, None].exp() + e.sum(-1, keepdim=True))

    assert "heads that differ: [0, 1, 2, 3]" in E.check("sink_softmax", plain).report()
    assert "shape [1, 4, 17, 18], expected [1, 4, 17, 17]" in E.check("sink_softmax", sink_kept).report()
    assert not E.check("sink_softmax", renormalised)
    assert "heads that differ: [1, 2, 3]; heads that match: [0]" in E.check("sink_softmax", head_0_sink).report()
    assert E.check("sink_softmax", exp_directly)
    assert E.check("sink_softmax", lambda s, k: tinytf.lab.recent_blocks.sink_softmax(s, k))
