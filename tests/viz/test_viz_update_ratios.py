"""Chapter 6's trained-update figure (tinytf.viz.gradients.update_ratio_figure): it draws the ratios
``update_sizes`` measures, and on a phone, where the figure core stacks its two panels, the lower panel
keeps its y tick labels (a shared y axis hides them; review r77)."""
from __future__ import annotations

import json
import subprocess

import pytest

import tinytf
from tinytf.errors import TinyTFInputError
from tinytf.lab.residual_updates import update_sizes
from tinytf.viz.gradients import update_ratio_figure

LOOKS = {"model": ("#1f77b4", "circle", "solid"), "twin": ("grey", "square", "solid")}


def _sizes() -> dict:
    ids = tinytf.encode("residual updates")
    out = {}
    for seed, name in enumerate(LOOKS):
        tinytf.seed_everything(seed)
        cfg = tinytf.TinyConfig(d_model=32, n_heads=2, d_ff=64, n_layers=3)
        out[name] = update_sizes(tinytf.TinyTransformer(cfg).eval(), ids)
    return out


def test_the_figure_draws_each_ratio_per_block_in_two_panels():
    sizes = _sizes()
    fig = update_ratio_figure(sizes, LOOKS, title="t")
    assert len(fig.data) == 4  # two runs in each of the two panels
    for trace in fig.data:
        key = "attn_ratio" if trace.xaxis == "x" else "ffn_ratio"
        assert list(trace.x) == [0, 1, 2]
        assert list(trace.y) == pytest.approx([r[key] for r in sizes[trace.name]])
    assert [t.showlegend for t in fig.data] == [True, True, False, False]  # one legend entry per run


def test_both_panels_share_one_log_scale_and_keep_their_tick_labels():
    fig = update_ratio_figure(_sizes(), LOOKS)
    assert fig.layout.yaxis.type == fig.layout.yaxis2.type == "log"
    assert fig.layout.yaxis2.matches == "y"  # one range for both panels
    assert fig.layout.yaxis.showticklabels and fig.layout.yaxis2.showticklabels


def test_stacked_on_a_phone_the_lower_panel_keeps_its_tick_labels():
    """tinytf/viz/figure_core.js's adapt (in node) at 375 px stacks the panels; at 1280 px it does not."""
    from conftest import ROOT, require

    require("node")
    from tinytf.viz.render import figure_dict

    script = (
        "const fs = require('fs'), vm = require('vm'); globalThis.window = globalThis;"
        "const job = JSON.parse(fs.readFileSync(0, 'utf8'));"
        "vm.runInThisContext(fs.readFileSync(job.core, 'utf8') + ';globalThis.C = tinytfCore;');"
        "const th = {dark: false, text: '#222', muted: '#456', grid: '#eee', line: '#999', background: '#fff'};"
        "process.stdout.write(JSON.stringify(job.widths.map((w) => {"
        "  const L = globalThis.C.adapt(job.spec, w, th).layout;"
        "  return {y: L.yaxis.domain, y2: L.yaxis2.domain, ticks2: L.yaxis2.showticklabels}; })));"
    )
    job = {"core": str(ROOT / "tinytf" / "viz" / "figure_core.js"),
           "spec": figure_dict(update_ratio_figure(_sizes(), LOOKS)), "widths": [375, 1280]}
    out = subprocess.run(["node", "-e", script], input=json.dumps(job), capture_output=True, text=True,
                         check=True)
    phone, wide = json.loads(out.stdout)
    assert phone["y2"][1] <= phone["y"][0]  # stacked: the FFN panel below the attention panel
    assert wide["y2"] == wide["y"]  # side by side
    assert phone["ticks2"] is not False and wide["ticks2"] is not False


def test_a_run_without_a_look_is_refused():
    with pytest.raises(TinyTFInputError, match="no look"):
        update_ratio_figure(_sizes(), {"model": LOOKS["model"]})
