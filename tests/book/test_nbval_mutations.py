"""Mutation tests of the output comparison: nbval run on copies of committed chapters, each with one output changed.

They prove both halves of the rule in tests/nbval_figures.py:

* a measured number (a cell tagged ``measured``) whose last printed digit moves by one passes, as it must on
  another CPU, and the same number moved by three units fails;
* a counted thing moved by one unit fails: the parameter table (590,464 -> 590,465), the causality check (a
  position's change 0 -> 1) and a token id (121 -> 122 changed to 121 -> 123). A tolerance that accepted
  everything would pass the first copy and fail none of the others.

Each copy is its chapter truncated after the changed cell (the cells before it run, so the changed cell sees the
state it needs). All copies go through one nbval run, like `make test` runs the chapters.
"""
from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import nbformat
import pytest

import nbval_figures as nf
from conftest import ROOT

FOLDER = ROOT / "_build" / "nbval-mutations" / "chapters"  # one level below a folder, as chapters/ is
CH7 = "07_tiny_transformer.ipynb"


def chapter(name: str):
    return nbformat.read(ROOT / "chapters" / name, as_version=4)


def stream_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def set_stream_text(cell, old: str, new: str):
    for o in cell.outputs:
        if o.get("output_type") == "stream" and old in o.text:
            o.text = o.text.replace(old, new, 1)
            return
    raise AssertionError(f"{old!r} not found in the cell's output")


def truncated(nb, index: int):
    copy = nbformat.from_dict(nb)
    copy.cells = copy.cells[: index + 1]
    return copy


def find_cell(nb, pattern: str) -> int:
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code" and re.search(pattern, stream_text(c)):
            return i
    raise AssertionError(f"no committed output matches {pattern!r}")


def first_measured_cell():
    """(chapter, cell index, the printed number to change): the first cell tagged `measured`, in chapter order,
    whose printed text holds a measured number with decimals."""
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        nb = chapter(path.name)
        for i, c in enumerate(nb.cells):
            if c.cell_type == "code" and nf.measured_rtol(c.metadata.get("tags")) is not None:
                text = stream_text(c)
                for p in nf.split_text(text)[1]:
                    # a plain decimal that occurs once in the output, so that the change lands on that number
                    if "." in p.text and "e" not in p.text.lower() and text.count(p.text) == 1:
                        return path.name, i, p.text
    pytest.fail("no committed chapter has a cell tagged `measured` that prints a number with decimals")


def moved(number: str, units: int) -> str:
    """`number` with its last digit moved by `units` (toward zero's other side only if it must)."""
    head, last = number[:-1], int(number[-1])
    step = units if last + units <= 9 else -units
    return head + str(last + step)


def mutations():
    """name -> (notebook copy, 'pass' or 'fail')."""
    out = {}
    name, i, number = first_measured_cell()
    nb = chapter(name)
    for units, verdict in ((1, "pass"), (3, "fail")):
        copy = truncated(nb, i)
        set_stream_text(copy.cells[i], number, moved(number, units))
        out[f"measured_{units}_unit"] = (copy, verdict)

    ch7 = chapter(CH7)
    i = find_cell(ch7, r"total\s+590,464")
    copy = truncated(ch7, i)
    set_stream_text(copy.cells[i], "590,464", "590,465")
    out["parameter_table"] = (copy, "fail")

    i = find_cell(ch7, r"changed token at position \d+: 121 -> 122")
    copy = truncated(ch7, i)
    text = stream_text(copy.cells[i])
    line = re.search(r"^( +5 +)0( +unchanged)$", text, re.M)
    assert line, "the causality report has no line for position 5"
    set_stream_text(copy.cells[i], line.group(0), line.group(1) + "1" + line.group(2))
    out["causality_check"] = (copy, "fail")

    copy = truncated(ch7, i)
    set_stream_text(copy.cells[i], "121 -> 122", "121 -> 123")
    out["token_id"] = (copy, "fail")
    return out


@pytest.fixture(scope="module")
def verdicts():
    FOLDER.mkdir(parents=True, exist_ok=True)
    for old in FOLDER.glob("*.ipynb"):
        old.unlink()
    cases = mutations()
    for name, (nb, _) in cases.items():
        nbformat.write(nb, FOLDER / f"{name}.ipynb")
    report = FOLDER / "junit.xml"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--nbval",
         "--nbval-current-env", "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", f"--junitxml={report}",
         str(FOLDER.relative_to(ROOT))],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    cells: dict[str, list[tuple[str, bool]]] = {}  # copy -> [(cell, failed)] in order
    for case in ET.parse(report).getroot().iter("testcase"):
        copy = case.get("classname", "").rsplit(".", 2)[-2]  # ..._build.nbval-mutations.chapters.<name>.ipynb
        failed = case.find("failure") is not None or case.find("error") is not None
        cells.setdefault(copy, []).append((case.get("name"), failed))
    got = {}
    for name in cases:
        ran = cells.get(name, [])
        failing = [cell for cell, failed in ran if failed]
        # a copy fails as intended only at its last cell, the one changed; any other failure is a real problem
        got[name] = ("not run" if not ran else "pass" if not failing
                     else "fail" if failing == [ran[-1][0]] else f"failed at {failing}")
    expected = {name: verdict for name, (_, verdict) in cases.items()}
    return got, expected, result.stdout[-4000:]


@pytest.mark.parametrize("name", ["measured_1_unit", "measured_3_unit", "parameter_table", "causality_check",
                                  "token_id"])
def test_mutation_verdict(verdicts, name):
    got, expected, log = verdicts
    assert got[name] == expected[name], (
        f"{name}: nbval should {expected[name]} but did {got[name]}\n{log}")
