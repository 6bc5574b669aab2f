"""frontier_review_table(layout="split"): "has" and "does not use" on separate labelled lines, so that no
printed line holds items of both lists (the side-by-side layout, wrapped, put DeepSeek-V3's absent QK-norm
on the line of its MLA entry)."""
import pytest

from tinytf.errors import TinyTFInputError
from tinytf.review import FRONTIER, frontier_review, frontier_review_table
from tinytf.lab.review import _frontier_has, block_fields


def _parse(table: str, names) -> dict:
    """{block: {"has": [...], "does not use": [...]}} read from the labelled lines; a line must carry one list."""
    out, block, label = {}, None, None
    for line in table.splitlines()[2:]:
        for name in names:
            if line.startswith(name + " "):
                block, line = name, " " * len(name) + line[len(name):]
                out[block] = {"has": [], "does not use": []}
        text = line.strip()
        for lab in ("does not use", "has"):
            if text.startswith(lab + "  "):
                label, text = lab, text[len(lab):].strip()
                break
        out[block][label] += [x.strip() for x in text.split(",") if x.strip()]
    return out


@pytest.mark.parametrize("max_width", [None, 80])
def test_each_line_holds_one_list(max_width):
    table = frontier_review_table(FRONTIER, max_width=max_width, layout="split")
    if max_width:
        assert all(len(line) <= max_width for line in table.splitlines())
    parsed = _parse(table, FRONTIER)
    for name, block in FRONTIER.items():
        assert parsed[name]["has"] == (_frontier_has(block_fields(block)) or ["-"])
        assert parsed[name]["does not use"] == ([f.aspect for f in frontier_review(block)] or ["-"])
    # the reported misreading: DeepSeek-V3's QK-norm only under its "does not use" label
    assert "QK-norm" not in parsed["DeepSeek-V3"]["has"]


def test_side_by_side_layout_mixes_the_lists_on_a_line():
    """Why the split layout exists: the column layout at 80 characters puts both lists on one line."""
    narrow = frontier_review_table(FRONTIER, max_width=80)
    line = next(x for x in narrow.splitlines() if x.startswith("DeepSeek-V3"))
    assert "MLA" in line and "QK-norm" in line
    with pytest.raises(Exception):  # a line of the old layout carries no "has" / "does not use" label
        assert _parse(narrow, FRONTIER)["DeepSeek-V3"]["does not use"] == ["QK-norm"]


def test_bad_layout_and_width_are_refused():
    with pytest.raises(TinyTFInputError, match="layout='grid'"):
        frontier_review_table(FRONTIER, layout="grid")
    with pytest.raises(TinyTFInputError, match="max_width=40"):
        frontier_review_table(FRONTIER, max_width=40, layout="split")
    with pytest.raises(TinyTFInputError, match="no blocks"):
        frontier_review_table({}, layout="split")
