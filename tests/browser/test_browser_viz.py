"""The block stepper in headless Chromium, with no kernel: moving the slider to each stage
redraws the figure, Play runs through every frame, hovering names the panel, and nothing is
logged to the console.

Two pages are tested:
* a page written here with a freshly drawn stepper (current tinytf.viz code), plotly.js taken
  from the installed plotly package: it needs no book build, and plotly's own slider and
  Play / Pause drive it (as in classic Jupyter);
* chapter 6 of the built book (fixtures ``browser`` / ``open_page`` from conftest.py), i.e.
  what a reader gets, with the outputs committed in the notebook: there the book's HTML controls
  (the figure core, ``tinytf/viz/figure_core.js``, served as ``_static/tinytf-core.js``) drive it.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import tinytf
from tinytf import viz

CHAPTER_6 = "chapters/06_decoder_block.html"

# finds the stepper (the plotly div with animation frames) and tags it for locators
FIND_STEPPER = """() => {
  const gd = [...document.querySelectorAll('.plotly-graph-div')]
      .find(d => d._transitionData && d._transitionData._frames && d._transitionData._frames.length > 0
                 && d.layout.sliders && d.layout.sliders.length);
  if (!gd) return null;
  gd.setAttribute('data-test-stepper', '1');
  return gd._transitionData._frames.map(f => f.name);
}"""
TITLE = "() => document.querySelector('[data-test-stepper] .gtitle').textContent"
# the stage's animation has ended and the slider group is bound to the layout's current slider options
SETTLED = """() => { const gd = document.querySelector('[data-test-stepper]');
  return window.__animated && gd.querySelector('g.slider-group').__data__ === gd._fullLayout.sliders[0]; }"""


def _chromium():
    from conftest import CHROMIUM, require

    require("chromium")
    return CHROMIUM


def step_through(gd, goto, names, shots_dir: Path | None = None, check=None):
    """goto(i) for every stage, starting from the last one (so that stage 0 is a change too): each stage must
    change the drawing; its screenshot is kept in shots_dir; check(i), if given, looks at the stage further."""
    goto(len(names) - 1)
    previous = gd.screenshot()
    for i, name in enumerate(names):
        goto(i)
        shot = gd.screenshot()
        if shots_dir is not None:
            (shots_dir / f"stepper_{i:02d}_{name}.png").write_bytes(shot)
        assert shot != previous, f"moving the slider to stage {i} ({name}) did not change the drawing"
        if check is not None:
            check(i)
        previous = shot


PLAY_MS = 400  # a frame's time when a test plays an animation


def drive_stepper(page, console_errors, shots_dir: Path | None = None):
    """Slider to every stage, then Play from the first stage; returns the frame names."""
    page.wait_for_function("() => document.querySelector('.plotly-graph-div svg.main-svg')", timeout=30_000)
    names = page.evaluate(FIND_STEPPER)
    assert names, "no animated plotly figure (block stepper) on the page"
    n = len(names)
    gd = page.locator("[data-test-stepper]")
    gd.scroll_into_view_if_needed()
    ticks = gd.locator(".slider-tick-rect")
    assert ticks.count() == n, f"{ticks.count()} slider ticks for {n} frames"
    rail = gd.locator(".slider-rail-rect").bounding_box()

    def goto(i):
        # A press held until the stage is drawn, as a hand does. plotly marks its slider `_dragging` on mousedown
        # and clears it on mouseup, on the options object its slider group is bound to; a frame change builds new
        # options (copying `_dragging`) twice before it rebinds the group, and a mouseup that lands in between
        # clears the old object, so the slider stays "dragging" and ignores Play from then on (seen in 2 to 10
        # of 90 instant clicks in headless Chromium). Releasing after the frame is drawn cannot land there.
        box = ticks.nth(i).bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, rail["y"] + rail["height"] / 2)
        page.evaluate("() => { const gd = document.querySelector('[data-test-stepper]'); window.__animated = false;"
                      " gd.once('plotly_animated', () => { window.__animated = true; }); }")
        moves = page.evaluate(f"() => document.querySelector('[data-test-stepper]').layout.sliders[0].active !== {i}")
        page.mouse.down()
        page.wait_for_function(f"() => document.querySelector('[data-test-stepper]').layout.sliders[0].active === {i}")
        page.wait_for_function(f"() => ({TITLE})().startsWith('{i + 1}/{n}')")
        if moves:
            page.wait_for_function(SETTLED)
        page.mouse.up()
        page.wait_for_function("() => !document.querySelector('[data-test-stepper] g.slider-group').__data__._dragging")
        page.wait_for_timeout(150)

    def draws_heatmaps(i):
        drawn = page.evaluate("""() => { const gd = document.querySelector('[data-test-stepper]');
            return gd._fullData.filter(t => t.visible === true && t.type === 'heatmap').length; }""")
        assert drawn > 0, f"stage {names[i]} draws no heatmap"

    step_through(gd, goto, names, shots_dir, check=draws_heatmaps)

    # Play from the first stage: every later frame is shown, in order, ending on the last one
    goto(0)
    page.evaluate("""() => { window.__frames = [];
        document.querySelector('[data-test-stepper]').on('plotly_animatingframe', e => window.__frames.push(e.name)); }""")
    gd.locator(".updatemenu-button", has_text="Play").click()
    frame_ms = PLAY_MS
    page.wait_for_function(f"() => window.__frames.includes('{names[-1]}')", timeout=n * frame_ms + 20_000)
    played = page.evaluate("() => window.__frames")
    assert [f for f in played if f != names[0]] == names[1:], played
    page.wait_for_function(f"() => ({TITLE})().startsWith('{n}/{n}')")
    # plotly moves its slider to the shown frame through a relayout of its own, which can land after the
    # frame is drawn (a CI run once read the slider at 0 right after the last frame): wait for it, up to 10 s
    active = "() => document.querySelector('[data-test-stepper]').layout.sliders[0].active"
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError  # (playwright: browser tests only)
    try:
        page.wait_for_function(f"() => ({active})() === {n - 1}", timeout=10_000)
    except PlaywrightTimeoutError:
        pass  # the assert below says what went wrong
    assert page.evaluate(active) == n - 1, "the slider does not follow Play to the last frame"
    assert not console_errors, console_errors
    return names


# --------------------------------------------------------------------------- standalone page
@pytest.fixture(scope="module")
def standalone_browser(browser):
    """The session's Chromium (conftest.py): Playwright allows one sync instance per process."""
    return browser


def test_stepper_on_a_standalone_page(standalone_browser, tmp_path):
    import plotly

    shutil.copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", tmp_path / "plotly.min.js")
    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig(d_model=32, n_heads=2, d_ff=128))
    fig = viz.block_stepper(model, "cat")
    # Play's pace is the figure's (1.5 s a frame); the order of the frames is what is checked, so faster here
    play = fig.layout.updatemenus[0].buttons[0]
    play.args = [play.args[0], {**play.args[1], "frame": {"duration": PLAY_MS, "redraw": True}}]
    encdec = tinytf.EncoderDecoder(tinytf.TinyConfig(d_model=32, n_heads=2, d_ff=128))
    others = [viz.attention_map(model, "hello"), viz.residual_view(model, "cat", sublayer="ffn"),
              viz.ffn_expansion(model, "cat"), viz.attention_map(encdec, ("hello", "hi!"), kind="cross")]
    body = "".join(viz.figure_html(f) for f in [fig] + others)
    # plotly.js after the figure (the figure's script must wait for it); 700 px wide like the
    # book's content column, where a slider overlapping the buttons would swallow clicks
    (tmp_path / "page.html").write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>stepper</title></head>"
        f"<body style='width:700px'>{body}<script src='plotly.min.js'></script></body></html>",
        encoding="utf-8")
    page = standalone_browser.new_page(viewport={"width": 1100, "height": 900})
    page.set_default_timeout(30_000)
    errors, remote = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: remote.append(r.url) if not r.url.startswith("file:") else None)
    try:
        page.goto((tmp_path / "page.html").as_uri())
        page.wait_for_function("() => [...document.querySelectorAll('.plotly-graph-div')]"
                               ".every(d => d.querySelector('svg.main-svg'))")
        assert page.locator(".plotly-graph-div").count() == 5
        names = drive_stepper(page, errors)
        assert names == [f.name for f in fig.frames]
        # hover over a heatmap cell: the label names the panel (hovertemplate uses fullData.name)
        page.evaluate(TITLE)
        gd = page.locator("[data-test-stepper]")
        cell = gd.locator(".heatmaplayer image").first.bounding_box()
        page.mouse.move(cell["x"] + cell["width"] / 2, cell["y"] + cell["height"] / 2)
        page.wait_for_selector(".hoverlayer .hovertext", timeout=5_000)
        hover = page.locator(".hoverlayer .hovertext").first.text_content()
        assert "token" in hover and "value" in hover and "%{" not in hover, hover
        assert not remote, remote
        assert not errors, errors
    finally:
        page.close()


# --------------------------------------------------------------------------- the built book
def drive_book_stepper(page, console_errors, shots_dir: Path | None = None):
    """The book replaces plotly's slider and buttons by HTML controls (the figure core, _static/tinytf-core.js):
    the step slider to every stage redraws the figure and the caption; Play runs every frame."""
    page.wait_for_function("() => document.querySelector('.plotly-graph-div svg.main-svg')", timeout=30_000)
    names = page.evaluate(FIND_STEPPER.replace("&& d.layout.sliders && d.layout.sliders.length", ""))
    assert names, "no animated plotly figure (block stepper) on the page"
    n = len(names)
    gd = page.locator("[data-test-stepper]")
    wrap = page.locator(".tinytf-figwrap", has=gd)
    assert gd.locator(".slider-container").count() == 0, "plotly's own slider is still drawn"
    slider = wrap.locator("input.tinytf-anim-range")
    caption = wrap.locator(".tinytf-figtitle")
    assert slider.get_attribute("max") == str(n - 1)

    def goto(i):
        slider.evaluate("(el, i) => { el.value = String(i); el.dispatchEvent(new Event('input')); }", i)
        page.wait_for_function("([el, i, n]) => el.textContent.startsWith(`${i + 1}/${n}`)",
                               arg=[caption.element_handle(), i, n])
        page.wait_for_timeout(150)

    step_through(gd, goto, names, shots_dir)
    goto(0)
    # each step drawn (by Plotly.animate, or afresh when a step changes colour axis): the step the core shows
    page.evaluate("""() => { window.__frames = []; const gd = document.querySelector('[data-test-stepper]');
        gd.on('plotly_afterplot', () => { const r = gd._tinytf, name = r.steps[r.index].name;
            if (window.__frames[window.__frames.length - 1] !== name) window.__frames.push(name); }); }""")
    # Play's pace is the figure's (1.5 s a frame); the order of the frames is what is checked, so faster here
    page.evaluate(f"() => {{ document.querySelector('[data-test-stepper]')._tinytf.duration = {PLAY_MS}; }}")
    wrap.locator("button.tinytf-anim-play").click()
    page.wait_for_function(f"() => window.__frames.includes('{names[-1]}')", timeout=n * PLAY_MS + 20_000)
    played = page.evaluate("() => window.__frames")
    assert [f for f in played if f != names[0]] == names[1:], played
    page.wait_for_function("([el, n]) => el.textContent.startsWith(`${n}/${n}`)", arg=[caption.element_handle(), n])
    assert slider.input_value() == str(n - 1)
    assert not console_errors, console_errors
    return names


def test_stepper_in_chapter_6(browser, book_html):
    from conftest import SCREENSHOTS, open_page

    if not (book_html / CHAPTER_6).is_file():
        pytest.fail(f"{CHAPTER_6} is not in the built book")
    page, console_errors, remote_requests = open_page(browser, CHAPTER_6)
    try:
        shots = SCREENSHOTS / "stepper"
        shots.mkdir(parents=True, exist_ok=True)
        drive_book_stepper(page, console_errors, shots_dir=shots)
        assert not remote_requests, remote_requests
    finally:
        page.context.close()
