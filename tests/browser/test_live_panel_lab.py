"""The live panel in a real JupyterLab (Chromium, driven like a reader): the widget draws through the figure
core (its HTML caption and animation controls, not plotly's slider and buttons), a control change
redraws the figure in place (same plot div, new numbers), the block stepper stays on the stage the
reader chose (also across another view and back), plotly.js comes from the kernel (no other host),
a dark JupyterLab draws a dark figure, and nothing is logged as an error.

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
    return lab.state(page)["stage"]


def core_controls(st: dict, label: str = "") -> None:
    """The figure core's HTML controls are shown, none of plotly's (its slider rail, its Play button)."""
    assert st["controls"] == 1, f"{label}: the core's animation controls are missing"
    assert st["plotly_controls"] == 0, f"{label}: plotly's own slider or buttons are drawn"


def test_control_changes_redraw_in_place_on_the_readers_stage(browser, jupyterlab):
    page, console_errors, remote_requests = lab.open_panel(browser, jupyterlab)
    try:
        first = lab.state(page)
        assert first["title"].startswith("<b>1/") and first["active"] == 0
        assert first["caption"].startswith("1/"), first["caption"][:60]  # the title is the core's HTML caption
        core_controls(first, "first draw")
        assert first["current"].startswith("1 of "), first["current"]  # what the range announces
        # plotly.js was not in the page: the kernel sent the installed plotly package's bundle
        assert page.evaluate("() => document.documentElement.dataset.tinytfPlotlyLoadMs") is not None
        page.evaluate(f"() => {{ document.querySelector('{lab.FIGURE}').__tinytfMark = 'the first div'; }}")

        lab.set_stage(page, STAGE)  # waits until the slider and the title show it
        assert stage_name(page) == "scores"
        before = lab.state(page)
        assert before["title"].startswith(f"<b>{STAGE + 1}/") and before["current"].endswith(": 5 scores")
        assert before["draws"] == first["draws"]  # the core's controls animate; nothing asked Python

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
            assert after["current"].endswith(": 5 scores"), (label, after["current"])  # what the range announces
            assert after["caption"].startswith(f"{STAGE + 1}/"), (label, after["caption"][:60])
            core_controls(after, label)
            if kind:
                assert page.evaluate(f"() => document.querySelector('{lab.FIGURE}').dataset.tinytfUpdate") == kind
            before = after

        # another view, and back: still the same div, and the stepper comes back on the reader's stage
        view = lab.control(page, "view").locator("select")
        n = lab.draws(page)
        view.select_option(label="attention map")
        lab.wait_redraw(page, n)
        other = lab.state(page)
        assert other["active"] is None and other["mark"] == "the first div"
        assert other["controls"] == 0 and other["plotly_controls"] == 0  # no frames: no controls
        n = lab.draws(page)
        view.select_option(label="block stepper (all stages)")
        lab.wait_redraw(page, n)
        back = lab.state(page)
        assert back["active"] == STAGE and back["stage"] == "scores" and back["current"].endswith(": 5 scores")
        core_controls(back, "back to the stepper")

        # bad input: a message, and the figure stays as it was
        n, text = lab.draws(page), lab.control(page, "tokens").locator("input")
        text.fill("")
        text.press("Enter")
        page.locator(".tinytf-panel-message").wait_for()
        assert "empty" in page.locator(".tinytf-panel-message").inner_text()
        assert lab.draws(page) == n

        # JupyterLab's dark theme: the core redraws the figure with dark text, still on the reader's stage
        light_text = page.evaluate(FONT_COLOUR)
        n = lab.draws(page)
        page.evaluate("() => { document.body.dataset.jpThemeLight = 'false'; }")
        page.wait_for_function(f"(c) => ({FONT_COLOUR})() !== c", arg=light_text)
        assert page.evaluate(FONT_COLOUR) == "#ced6dd"  # the core's dark text colour
        assert lab.state(page)["active"] == STAGE and lab.draws(page) == n  # redrawn by the core, not Python

        assert console_errors == []
        assert remote_requests == []
    finally:
        page.context.close()


# the text colour the figure core gave the drawn figure (its theme)
FONT_COLOUR = f"() => document.querySelector('{lab.FIGURE}')._fullLayout.font.color"
