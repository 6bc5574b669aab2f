"""The block reviewer (tinytf.review): which gaps it finds, for tinytf configs and published models."""
import math

import pytest

import tinytf
from tinytf.review import PUBLISHED, RATIO_RANGE, Gap, block_fields, format_review, review, review_table

ASPECTS = ["norm placement", "norm type", "positions", "key/value heads", "FFN gating", "FFN expansion ratio",
           "biases"]


def aspects(block):
    return [g.aspect for g in review(block)]


UNGATED = [a for a in ASPECTS if a != "FFN expansion ratio"]  # an ungated MLP's ratio is not reviewed


def test_2017_config_has_every_gap_in_data_flow_order():
    assert aspects(tinytf.config_2017()) == UNGATED


def test_modern_tiny_config_has_no_gap():
    cfg = tinytf.config_2026(n_kv_heads=2, d_ff=344)  # GQA and r = 344 / 128 = 2.69
    assert review(cfg) == []
    assert "no differences" in format_review(review(cfg), "tiny")


def test_default_tinyconfig_gaps_are_gqa_and_ratio():
    # seed 000's TinyTransformer: SwiGLU with d_ff = 4 d (ratio 4) and plain multi-head attention
    assert aspects(tinytf.TinyConfig()) == ["key/value heads", "FFN expansion ratio"]


@pytest.mark.parametrize("name, expected", [
    ("Transformer-base (2017)", UNGATED),
    ("BERT-base", UNGATED),
    ("GPT-2 small", ["norm type", "positions", "key/value heads", "FFN gating", "biases"]),
    ("T5-base", ["positions", "key/value heads", "FFN gating"]),
    ("Llama 3 8B", []),
])
def test_published_models(name, expected):
    assert aspects(name) == expected
    assert aspects(PUBLISHED[name]) == expected


def test_each_single_swap_removes_exactly_its_gap():
    base = tinytf.config_2026(n_kv_heads=2, d_ff=344)
    swaps = {"norm placement": dict(norm_position="post"), "norm type": dict(norm="layer"),
             "positions": dict(pos="learned"), "key/value heads": dict(n_kv_heads=None),
             "FFN gating": dict(ffn="gelu", d_ff=512), "biases": dict(bias=True)}
    for aspect, change in swaps.items():
        found = aspects(base.replace(**change))
        assert found == [aspect], (aspect, found)  # an ungated MLP at r = 4 is one difference, its gating


def test_ratio_boundaries():
    lo, hi = RATIO_RANGE
    fields = dict(PUBLISHED["Llama 3 8B"])
    for d_ff, gap in ((math.ceil(4096 * lo), False), (int(4096 * hi), False), (int(4096 * lo) - 8, True),
                      (int(4096 * hi) + 8, True), (4 * 4096, True)):
        assert ("FFN expansion ratio" in aspects(dict(fields, d_ff=d_ff))) is gap, d_ff


def test_ratio_range_admits_the_released_llama_style_sizes():
    # Llama 1 7B's 11008 / 4096 = 2.69 and DeepSeek-V3's dense 18432 / 7168 = 2.57 pass; 2.45 is a difference
    assert RATIO_RANGE == (2.5, 3.6)
    fields = dict(PUBLISHED["Llama 3 8B"])
    assert "FFN expansion ratio" not in aspects(dict(fields, d_ff=11008))
    assert "FFN expansion ratio" not in aspects(dict(fields, d_model=7168, d_ff=18432))
    assert "FFN expansion ratio" in aspects(dict(fields, d_ff=int(4096 * 2.45)))


def test_gqa_gap_counts_kv_heads_not_query_heads():
    fields = dict(PUBLISHED["Llama 3 8B"])
    assert "key/value heads" in aspects(dict(fields, n_kv_heads=32))
    assert "key/value heads" in aspects(dict(fields, n_kv_heads=None))  # None = n_heads
    assert "key/value heads" not in aspects(dict(fields, n_kv_heads=1))  # multi-query attention


def test_qkv_bias_alone_is_not_a_gap():
    assert "biases" not in aspects(tinytf.config_2026(n_kv_heads=2, d_ff=344, qkv_bias=True))


def test_every_gap_is_complete_and_points_to_a_chapter():
    for name in PUBLISHED:
        for g in review(name):
            assert isinstance(g, Gap)
            assert g.found and g.expected and g.why and "\n" not in g.why
            assert g.chapter.startswith("chapter ") and 1 <= int(g.chapter.split()[1]) <= 11


def test_format_review_lists_each_gap():
    gaps = review("GPT-2 small")
    text = format_review(gaps, "GPT-2 small")
    assert text.splitlines()[0] == "Block review: GPT-2 small"
    assert f"{len(gaps)} differences from the Llama-3-style recipe" in text
    for i, g in enumerate(gaps, 1):
        assert f"{i}. {g.aspect}: {g.found}" in text and g.why in text and g.chapter in text


def test_review_table_marks_gaps():
    table = review_table({"llama": "Llama 3 8B", "bert": "BERT-base"})
    llama, bert, legend = table.splitlines()[2:]
    assert "diff" not in llama and llama.split()[-1] == "0"
    assert bert.count("diff") == 6 and "n/a" in bert and bert.split()[-1] == "6"
    assert max(len(line) for line in table.splitlines()) <= 78  # fits the page's output column


def test_block_fields_of_tinyconfig_resolves_kv_heads():
    assert block_fields(tinytf.TinyConfig())["n_kv_heads"] == 4
    assert block_fields(tinytf.TinyConfig(n_kv_heads=1))["n_kv_heads"] == 1


@pytest.mark.parametrize("bad, message", [
    ("GPT-5", "unknown preset"),
    (42, "got int"),
    ({"norm": "rms"}, "missing"),
    (dict(PUBLISHED["Llama 3 8B"], norm="batch"), "norm='batch'"),
    (dict(PUBLISHED["Llama 3 8B"], pos="rotary"), "pos='rotary'"),
    (dict(PUBLISHED["Llama 3 8B"], d_model=0), "d_model must be a positive integer"),
    (dict(PUBLISHED["Llama 3 8B"], n_kv_heads=5), "n_kv_heads"),
])
def test_bad_input_gets_a_clear_error(bad, message):
    with pytest.raises(tinytf.TinyTFInputError, match=message):
        review(bad)


def test_ratio_gap_is_worded_as_a_sizing_choice():
    """r = 4 or more is a sizing choice of released models (Gemma 2 9B: 4), not a defect: the reason says so."""
    (gap,) = [g for g in review(tinytf.TinyConfig()) if g.aspect == "FFN expansion ratio"]
    assert gap.why.startswith("a sizing choice, not a fault") and "Llama 3 uses 3.5" in gap.why


def test_ratio_is_reviewed_only_for_a_gated_ffn():
    """An ungated MLP's r = 4 is right for its two matrices: its one difference is the gating, counted once."""
    fields = dict(PUBLISHED["Llama 3 8B"])
    assert aspects(dict(fields, ffn="gelu", d_ff=4 * 4096)) == ["FFN gating"]
    assert aspects(dict(fields, ffn="swiglu", d_ff=4 * 4096)) == ["FFN expansion ratio"]
