"""format_anti_diagonal's tables are printed in chapter 8: every row must fit 80 characters (phones)."""
import tinytf
from tinytf.lab import head_stats as hs


def test_anti_diagonal_tables_fit_80_characters():
    s = hs.anti_diagonal_summary(tinytf.pretrained("reversal-2l"), "reversal-2l", n_samples=9)  # one per length
    u = hs.anti_diagonal_summary(tinytf.pretrained.untrained("reversal-2l"), "reversal-2l", n_samples=9)
    text = hs.format_anti_diagonal({"trained": s, "untrained": u})
    rows = text.splitlines()
    assert len(rows) == 1 + 4 + 1 + 1 + 4  # header, 2 models x 2 blocks, blank, header, 2 x 2
    assert max(len(r) for r in rows) <= 80, max(rows, key=len)
    assert "x uniform share" in rows[6] and "5%-95%" in rows[6]
