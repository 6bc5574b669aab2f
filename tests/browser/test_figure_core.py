"""The browser's figure core (tinytf/viz/figure_core.js) on the built book.

* Regression (issue 21, bug 2): the animated figure's controls are filled in on the first draw. The
  book's code tested ``frames.length`` (that is ``window.frames``, the page's iframes, not the figure's
  frames), so until the reader moved the slider the readout next to it was empty and the slider had
  no ``aria-valuetext`` (a screen reader announced a bare number).
"""
from __future__ import annotations

import pytest

CHAPTER_6 = "chapters/06_decoder_block.html"

FIRST_DRAW = """() => {
  const gd = [...document.querySelectorAll('.plotly-graph-div.tinytf-drawn')]
      .find(d => d._transitionData && d._transitionData._frames && d._transitionData._frames.length > 0);
  if (!gd || !gd.querySelector('svg.main-svg')) return null;
  const wrap = gd.closest('.tinytf-figwrap');
  const range = wrap.querySelector('input.tinytf-anim-range');
  return {n: gd._transitionData._frames.length, value: range.value,
          valuetext: range.getAttribute('aria-valuetext'),
          readout: wrap.querySelector('output.tinytf-anim-value').textContent,
          play: wrap.querySelector('button.tinytf-anim-play').getAttribute('aria-pressed')};
}"""


def test_stepper_controls_are_filled_on_first_draw(browser, book_html):
    from conftest import open_page

    if not (book_html / CHAPTER_6).is_file():
        pytest.fail(f"{CHAPTER_6} is not in the built book")
    page, console_errors, remote_requests = open_page(browser, CHAPTER_6)
    try:
        page.wait_for_function(f"({FIRST_DRAW})() !== null", timeout=30_000)
        got = page.evaluate(FIRST_DRAW)  # nothing was clicked, pressed or moved
        assert got["value"] == "0"
        assert got["readout"].startswith(f"1 of {got['n']}: "), got
        assert got["valuetext"] == got["readout"], got
        assert got["play"] == "false", got
        assert not console_errors, console_errors
        assert not remote_requests, remote_requests
    finally:
        page.context.close()
