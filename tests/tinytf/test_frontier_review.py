"""The block reviewer and the frontier block: presets built from the shipped published configs, the new
fields understood by review(), and frontier_review's list of the frontier features a block does not use, with
their trade-offs and chapter, worded without a verdict."""
import pytest

import tinytf
from tinytf.review import (FRONTIER, FRONTIER_CHAPTER, FRONTIER_FEATURES, PUBLISHED, FrontierFeature, format_review,
                           frontier_review, frontier_review_table, review, review_table)


def aspects(gaps):
    return [g.aspect for g in gaps]


def test_presets_come_from_the_shipped_configs():
    assert set(FRONTIER) == {"Qwen3 0.6B", "Qwen3 30B-A3B", "Gemma 3 1B", "OLMo 2 7B", "Mixtral 8x7B", "DeepSeek-V3"}
    assert FRONTIER["Qwen3 0.6B"] == tinytf.config_from_hf(tinytf.published_config("Qwen3-0.6B"))
    assert all(isinstance(c, tinytf.TinyConfig) for c in FRONTIER.values())
    assert set(PUBLISHED) == {"Transformer-base (2017)", "BERT-base", "GPT-2 small", "T5-base", "Llama 3 8B"}


@pytest.mark.parametrize("name,expected", [
    ("Qwen3 0.6B", ["MLA or sliding window", "MoE"]),
    ("Qwen3 30B-A3B", ["MLA or sliding window"]),
    ("Gemma 3 1B", ["MoE"]),
    ("OLMo 2 7B", ["MLA or sliding window", "MoE"]),
    ("Mixtral 8x7B", ["QK-norm", "MLA or sliding window"]),
    ("DeepSeek-V3", ["QK-norm"]),
])
def test_frontier_features_not_used(name, expected):
    absent = frontier_review(name)
    assert aspects(absent) == expected
    for f in absent:
        assert isinstance(f, FrontierFeature) and f.aspect in FRONTIER_FEATURES
        assert f.chapter == FRONTIER_CHAPTER == "The frontier block"
        assert f.found and f.feature and f.why and "\n" not in f.why


def test_2026_review_understands_the_new_fields():
    # sandwich / post-sublayer norms keep the stream untouched, Gemma's (1 + w) RMSNorm is an RMSNorm,
    # and MLA shrinks the cache as GQA does: none of these is a 2026 gap
    assert aspects(review("Gemma 3 1B")) == ["FFN expansion ratio"]  # 6912 / 1152 = 6
    assert aspects(review("OLMo 2 7B")) == ["key/value heads"]  # OLMo 2 7B is multi-head
    assert review("DeepSeek-V3") == [] and review("Mixtral 8x7B") == []
    base = aspects(review(tinytf.TinyConfig()))
    assert aspects(review(tinytf.TinyConfig(norm_position="post"))) == ["norm placement"] + base
    for position in ("sandwich", "post_sublayer"):
        assert aspects(review(tinytf.TinyConfig(norm_position=position))) == base


def test_old_gpt2_and_tinyconfig_reviews_are_unchanged():
    # an ungated FFN's ratio is not reviewed (its one difference is the gating)
    assert aspects(review("GPT-2 small")) == ["norm type", "positions", "key/value heads", "FFN gating", "biases"]
    assert aspects(review(tinytf.TinyConfig())) == ["key/value heads", "FFN expansion ratio"]
    assert aspects(frontier_review(tinytf.TinyConfig())) == list(FRONTIER_FEATURES)


def test_reports():
    text = format_review(frontier_review("Mixtral 8x7B"), "Mixtral 8x7B", target="frontier")
    assert text.splitlines()[:2] == ["Block review: Mixtral 8x7B",
                                     "2 features of the chapter's frontier block it does not use (of 3 reviewed)"]
    assert "   see:         The frontier block" in text and "   the feature: " in text and "   trade-off:   " in text
    assert format_review([], "x", target="frontier").endswith("uses all 3 features of the chapter's frontier block")
    assert format_review([], "x").endswith("no differences: this is a Llama-3-style block ✅")
    table = frontier_review_table(FRONTIER)
    assert "MLA (latent 512 + RoPE 64), MoE 8 of 256 + 1 shared" in table
    assert "window 512 on 22/26 layers" in table
    assert len(review_table(FRONTIER).splitlines()) == 2 + len(FRONTIER) + 1  # header, rule, rows, legend


def test_frontier_wording_has_no_verdict():
    """The frontier review describes designs: released models are not graded against it."""
    blocks = dict(FRONTIER, **{"TinyConfig()": tinytf.TinyConfig()})
    texts = [frontier_review_table(blocks)] + [format_review(frontier_review(b), n, target="frontier")
                                               for n, b in blocks.items()]
    for text in texts:
        words = set(text.lower().replace(",", " ").replace(":", " ").split())
        assert not words & {"gap", "gaps", "ok", "✅", "missing", "lacks", "behind"}, text
    table = frontier_review_table({"Llama 3": tinytf.config_from_hf(tinytf.published_config("Llama-3-8B")),
                                   "DeepSeek-V3": FRONTIER["DeepSeek-V3"]})
    head, _, llama, deepseek = table.splitlines()
    assert head.split() == ["block", "has", "does", "not", "use"]
    assert llama.endswith("QK-norm, MLA or sliding window, MoE") and deepseek.endswith("  QK-norm")
    # the trade-off lines are scoped, not universal
    qk = frontier_review("DeepSeek-V3")[0].why
    assert "can saturate" in qk and "report" in qk and "without it" in qk
    # an MLA block has no key head to normalise: its trade-off says so, a plain block's does not
    assert "QK-Clip" in qk and "absorbed" in qk
    assert "QK-Clip" not in frontier_review("Mixtral 8x7B")[0].why
