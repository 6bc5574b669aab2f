"""frontier_review_table(max_width=...): the same content as the one-line rows, wrapped at commas within the width."""
import pytest

from tinytf.errors import TinyTFInputError
from tinytf.review import FRONTIER, frontier_review_table


def _items(table: str) -> list:
    """Every comma-separated item of a table's rows, in order, continuation lines included."""
    out = []
    for line in table.splitlines()[2:]:
        out += [x.strip() for x in line[len("block") + 16:].replace("  ", ",").split(",") if x.strip()]
    return out


def test_wrapped_rows_fit_and_keep_every_item():
    wide = frontier_review_table(FRONTIER)
    narrow = frontier_review_table(FRONTIER, max_width=80)
    assert max(len(line) for line in wide.splitlines()) > 80  # the case the wrapping is for
    assert all(len(line) <= 80 for line in narrow.splitlines())
    assert narrow.splitlines()[0].split() == ["block", "has", "does", "not", "use"]
    assert narrow.replace("\n", " ").count("DeepSeek-V3") == 1
    for name in FRONTIER:  # each block starts exactly one line, and its items all appear
        assert sum(line.startswith(name + " ") for line in narrow.splitlines()) == 1
    flat = " ".join(narrow.split())
    for piece in ("MLA (latent 512 + RoPE 64),", "MoE 8 of 256 + 1 shared", "window 512 on 22/26 layers,"):
        assert piece in flat


def test_too_narrow_is_refused_by_name():
    with pytest.raises(TinyTFInputError, match="max_width=40"):
        frontier_review_table(FRONTIER, max_width=40)
