"""The figure comparison of tests/nbval_figures.py: tolerant where another CPU rounds differently, and
still failing for every real change (a value off by 1 %, a trace removed, a frame missing, a title changed).

The unit tests use real committed outputs of the chapters; the last test runs nbval itself on a small
notebook, so the plugin is proven to be wired into `pytest --nbval`."""
from __future__ import annotations

import copy
import subprocess
import sys

import nbformat
import numpy as np
import pytest

import nbval_figures as nf
from conftest import ROOT

PLOTLY = nf.PLOTLY_MIME


def figure_outputs(chapter: str, need=lambda fig: True) -> list:
    """The first committed figure output of a chapter (as a one-output list) whose plotly JSON passes ``need``."""
    nb = nbformat.read(ROOT / "chapters" / chapter, as_version=4)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if PLOTLY in out.get("data", {}) and need(out["data"][PLOTLY]):
                return [copy.deepcopy(out)]
    raise AssertionError(f"{chapter}: no figure output found")


def problems(ref: list, new: list) -> tuple[bool, list]:
    """(skeletons equal, number problems): what nbval + the plugin decide for one cell."""
    ref_sk, new_sk, issues = nf.compare_figure_outputs(ref, new)
    return ref_sk == new_sk, issues


def map_floats(obj, f):
    """obj with every float (and every typed-array value) replaced by f(value)."""
    if isinstance(obj, dict):
        if "bdata" in obj and "dtype" in obj:
            a = nf._decode_typed_array(obj)
            b = np.array([f(float(v)) for v in a], dtype=a.dtype)
            import base64
            return dict(obj, bdata=base64.b64encode(b.astype(a.dtype.newbyteorder("<")).tobytes()).decode())
        return {k: map_floats(v, f) for k, v in obj.items()}
    if isinstance(obj, list):
        return [map_floats(v, f) for v in obj]
    return f(obj) if isinstance(obj, float) else obj


def perturb(out, f):
    new = copy.deepcopy(out)
    new["data"][PLOTLY] = map_floats(new["data"][PLOTLY], f)
    return new


def heatmap_with_typed_array(fig) -> bool:
    return any(isinstance(t.get("z"), dict) and "bdata" in t["z"] for t in fig.get("data", []))


# --------------------------------------------------------------------------- what must pass
def test_the_committed_output_equals_itself():
    ref = figure_outputs("02_causal_self_attention.ipynb", heatmap_with_typed_array)
    assert problems(ref, copy.deepcopy(ref)) == (True, [])


def test_last_bit_noise_passes():
    """What another CPU does: every number moved by a relative 3e-7 (float32 rounding) passes."""
    ref = figure_outputs("02_causal_self_attention.ipynb", heatmap_with_typed_array)
    noisy = perturb(ref[0], lambda v: v * (1 + 3e-7))
    assert problems(ref, [noisy]) == (True, [])


def test_a_rounding_flip_in_the_fourth_digit_passes():
    """Values stored with 4 significant digits may flip by one unit in the last digit."""
    assert nf.close(-0.5121, -0.5122, scale=0.0)
    assert nf.close(1.000, 1.001, scale=0.0)
    assert nf.close(1e-9, -2e-9, scale=1.0)  # zero up to noise in an array whose scale is 1


# --------------------------------------------------------------------------- what must fail
def test_one_value_changed_by_one_percent_fails():
    ref = figure_outputs("02_causal_self_attention.ipynb", heatmap_with_typed_array)
    fig = ref[0]["data"][PLOTLY]
    trace = next(t for t in fig["data"] if isinstance(t.get("z"), dict))
    values = nf._decode_typed_array(trace["z"])
    target = float(values[int(np.nanargmax(np.abs(values)))])  # a value that is not zero up to noise
    seen = []

    def bump(v):
        if v == target and not seen:
            seen.append(v)
            return v * 1.01
        return v

    new = copy.deepcopy(ref[0])
    new["data"][PLOTLY] = map_floats(new["data"][PLOTLY], bump)
    same_skeleton, issues = problems(ref, [new])
    assert same_skeleton and len(seen) == 1
    assert issues and "1 of" in issues[0] and PLOTLY in issues[0]


def test_a_plain_float_changed_by_one_percent_fails():
    ref = figure_outputs("04_feed_forward.ipynb")
    floats = []
    map_floats(ref[0]["data"][PLOTLY], lambda v: floats.append(v) or v)
    target = max(floats, key=abs)
    new = perturb(ref[0], lambda v: v * 1.01 if v == target else v)
    assert problems(ref, [new])[1]


def test_a_removed_trace_fails():
    ref = figure_outputs("02_causal_self_attention.ipynb", lambda f: len(f["data"]) > 1)
    new = copy.deepcopy(ref[0])
    new["data"][PLOTLY]["data"].pop()
    assert problems(ref, [new])[0] is False


def test_a_missing_frame_fails():
    ref = figure_outputs("06_decoder_block.ipynb", lambda f: len(f.get("frames", [])) > 1)
    new = copy.deepcopy(ref[0])
    new["data"][PLOTLY]["frames"].pop()
    assert problems(ref, [new])[0] is False


def test_a_changed_title_fails():
    ref = figure_outputs("01_tokens_embeddings_positions.ipynb")
    new = copy.deepcopy(ref[0])
    title = new["data"][PLOTLY]["layout"]["title"]
    title["text"] = title["text"] + " (changed)"
    assert problems(ref, [new])[0] is False


def test_outputs_without_a_figure_are_left_to_nbval_exactly():
    out = {"output_type": "stream", "name": "stdout", "text": "attention parameters: 65,536\n"}
    assert nf.split_output(out) == (out, {})


# --------------------------------------------------------------------------- wired into nbval
NOTEBOOK = '''import plotly.graph_objects as go
import tinytf.viz
fig = go.Figure(go.Heatmap(z=[[0.25 * i + 0.01 * j for j in range(20)] for i in range(4)]),
                layout=dict(title="self-test"))
tinytf.viz.show(fig)'''


@pytest.fixture(scope="module")
def executed_notebook():
    from nbclient import NotebookClient

    folder = ROOT / "_build" / "nbval-selftest"  # inside the repository, so conftest.py registers the plugin
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(NOTEBOOK)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    return folder, nb


def run_nbval(folder, nb, name: str) -> subprocess.CompletedProcess:
    path = folder / name
    nbformat.write(nb, path)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval",
                           "--nbval-current-env", str(path.relative_to(ROOT))],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_nbval_passes_noise_and_fails_a_one_percent_change(executed_notebook):
    folder, nb = executed_notebook
    out = nb.cells[0].outputs[0]

    noisy = copy.deepcopy(nb)
    noisy.cells[0].outputs[0] = nbformat.from_dict(perturb(out, lambda v: v * (1 + 2e-7)))
    result = run_nbval(folder, noisy, "noisy.ipynb")
    assert result.returncode == 0, result.stdout[-2000:]

    z = out["data"][PLOTLY]["data"][0]["z"]
    floats = []
    map_floats(out["data"][PLOTLY], lambda v: floats.append(v) or v)
    target = max(max(row) for row in z)  # one value: the largest cell of the heatmap
    assert floats.count(target) == 1
    changed = copy.deepcopy(nb)
    changed.cells[0].outputs[0] = nbformat.from_dict(perturb(out, lambda v: v * 1.01 if v == target else v))
    result = run_nbval(folder, changed, "changed.ipynb")
    assert result.returncode == 1 and "Numbers differ beyond the tolerance" in result.stdout, \
        result.stdout[-2000:]


# --------------------------------------------------------------------------- measured numbers in printed text
def measured(ref: str, new: str, tags=("measured",)) -> tuple[bool, list]:
    """(skeletons equal, number problems) for one stream output of a cell with these tags."""
    rtol = nf.measured_rtol(list(tags))
    r = [{"output_type": "stream", "name": "stdout", "text": ref}]
    n = [{"output_type": "stream", "name": "stdout", "text": new}]
    ref_sk, new_sk, issues = nf.compare_measured(r, n, rtol)
    return ref_sk == new_sk, issues


def test_a_measured_number_may_move_by_one_unit_of_its_last_digit():
    assert measured("grad 548   ratio 0.0193\n", "grad 549   ratio 0.0194\n") == (True, [])
    assert measured("bits per byte 2.03\n", "bits per byte 2.02\n") == (True, [])
    assert measured("~1e+07\n", "~9e+06\n") == (True, [])
    assert measured("   9.99 |\n", "  10.00 |\n") == (True, [])  # a column that gains a digit


def test_a_measured_number_moved_by_more_fails_and_a_stated_rtol_widens_it():
    same, issues = measured("grad 548\n", "grad 551\n")
    assert same and issues and "committed 548, computed 551" in issues[0]
    assert measured("loss 1.35\n", "loss 1.37\n", ("measured", "measured-rtol=0.02")) == (True, [])
    assert measured("loss 1.35\n", "loss 1.45\n", ("measured", "measured-rtol=0.02"))[1]


def test_what_names_something_stays_exact_in_a_measured_cell():
    for ref, new in [("block 1 head 1, score 0.53\n", "block 2 head 1, score 0.53\n"),
                     ("'o' (position 28) weight 0.86\n", "'o' (position 29) weight 0.86\n"),
                     ("48 layers: 0.0182\n", "49 layers: 0.0182\n"),
                     ("shape [1, 3, 128], 0.5\n", "shape [1, 3, 129], 0.5\n"),
                     ("blocks.0.attn 0.5\n", "blocks.1.attn 0.5\n"),
                     ("converged: True 0.5\n", "converged: False 0.5\n")]:
        assert not measured(ref, new)[0], (ref, new)


def test_untagged_cells_compare_printed_numbers_exactly():
    assert nf.measured_rtol([]) is None and nf.measured_rtol(["remove-input"]) is None
    assert nf.measured_rtol(["measured"]) == nf.MEASURED_RTOL
