"""The live panel in a real JupyterLab (Chromium, driven like a reader): a control change redraws the
figure in place (same plot div, new numbers), the block stepper stays on the stage the reader chose,
plotly.js comes from the kernel (no other host), and nothing is logged as an error.

Starts ``.venv/bin/jupyter lab`` on a free port with a random token and a temporary notebook
(scripts/lab_session.py); skipped with the reason when JupyterLab cannot start. Speed is measured
by bench/panel_redraw.py, not here.
"""
from __future__ import annotations

import pytest

import lab_session as lab  # scripts/lab_session.py (tests/conftest.py puts scripts/ on sys.path)
from conftest import require, unavailable  # noqa: E402

STAGE = 4  # 0-based: "5 scores"


@pytest.fixture(scope="module")
def jupyterlab():
    require("jupyterlab", "chromium", "playwright")
    try:
        server = lab.LabServer()
    except (RuntimeError, OSError) as err:
        unavailable(f"JupyterLab cannot start here: {err}")
    yield server
    server.stop()


def stage_name(page) -> str:
    return page.evaluate(f"""() => {{
      const s = document.querySelector('{lab.FIGURE}').layout.sliders[0];
      return s.steps[s.active].args[0][0];
    }}""")


def test_control_changes_redraw_in_place_on_the_readers_stage(browser, jupyterlab):
    page, console_errors, remote_requests = lab.open_panel(browser, jupyterlab)
    try:
        first = lab.state(page)
        assert first["title"].startswith("<b>1/") and first["active"] == 0
        # plotly.js was not in the page: the kernel sent the installed plotly package's bundle
        assert page.evaluate("() => document.documentElement.dataset.tinytfPlotlyLoadMs") is not None
        page.evaluate(f"() => {{ document.querySelector('{lab.FIGURE}').__tinytfMark = 'the first div'; }}")

        lab.set_stage(page, STAGE)  # waits until the slider and the title show it
        assert stage_name(page) == "scores"
        before = lab.state(page)
        assert before["title"].startswith(f"<b>{STAGE + 1}/") and before["current"].endswith(": 5 scores")

        seed = lab.control(page, "seed").locator("input")
        changes = [
            ("seed", "patch", lambda: (seed.fill("3"), seed.press("Enter"))),
            ("norm", "patch", lambda: lab.control(page, "norm").get_by_role("button", name="LayerNorm").click()),
            ("FFN", None, lambda: lab.control(page, "FFN").locator("select").select_option(label="ReLU")),
            ("weights", None, lambda: lab.control(page, "weights").locator("select").select_option(index=1)),
        ]
        for label, kind, change in changes:
            n = lab.draws(page)
            change()
            lab.wait_redraw(page, n)
            after = lab.state(page)
            assert after["mark"] == "the first div", f"{label}: the plot div was replaced"
            assert after["rev"] > before["rev"], label
            assert after["z"] != before["z"], f"{label}: the figure shows the same numbers"
            assert after["active"] == STAGE and stage_name(page) == "scores", f"{label}: the stepper left stage 5"
            assert after["title"].startswith(f"<b>{STAGE + 1}/"), (label, after["title"][:60])
            assert after["current"].endswith(": 5 scores"), (label, after["current"])  # what the slider shows
            if kind:
                assert page.evaluate(f"() => document.querySelector('{lab.FIGURE}').dataset.tinytfUpdate") == kind
            before = after

        # another view, and back: still the same div, and the stepper comes back on the reader's stage
        view = lab.control(page, "view").locator("select")
        n = lab.draws(page)
        view.select_option(label="attention map")
        lab.wait_redraw(page, n)
        assert lab.state(page)["active"] is None and lab.state(page)["mark"] == "the first div"
        n = lab.draws(page)
        view.select_option(label="block stepper (all stages)")
        lab.wait_redraw(page, n)
        assert lab.state(page)["active"] == STAGE and stage_name(page) == "scores"

        # bad input: a message, and the figure stays as it was
        n, text = lab.draws(page), lab.control(page, "tokens").locator("input")
        text.fill("")
        text.press("Enter")
        page.locator(".tinytf-panel-message").wait_for()
        assert "empty" in page.locator(".tinytf-panel-message").inner_text()
        assert lab.draws(page) == n

        assert console_errors == []
        assert remote_requests == []
    finally:
        page.context.close()
