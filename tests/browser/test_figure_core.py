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


# --------------------------------------------------------------------------- one core, two paths
# The same figure spec through the book's path (tinytfCore.draw, its HTML controls, then update() as the
# static panel redraws on the reader's step) and through the live widget's path (FigureView's ES module,
# as tinytf.viz.figure_view builds it, with a stand-in for anywidget's model: the figure arrives as a
# "full" message, the reader moves the range of the core's controls, the next message redraws on that
# step). Compared on each step: the traces drawn (every value that says what is shown), the title, the
# annotations' text, the steps of the controls, the one shown and what the range announces. Both show the
# core's HTML controls (in the widget's element) and neither plotly's slider nor its buttons. Also: the
# core's merge equals Plotly.animate's own.

from tinytf.viz.figure_view import widget_esm  # noqa: E402

TRACE_KEYS = ["type", "visible", "name", "x", "y", "z", "text", "customdata", "zmin", "zmax", "opacity",
              "xaxis", "yaxis", "showscale", "hovertemplate"]

PAGE_JS = """
window.__norm = (v) => JSON.parse(JSON.stringify(v, (k, x) => ArrayBuffer.isView(x) ? Array.from(x) : x));
window.__plain = (s) => String(s == null ? '' : s).replace(/<br\\s*\\/?>/gi, ' ').replace(/<[^>]+>/g, '')
    .replace(/\\s+/g, ' ').trim();
window.__traces = (gd, keys) => gd.data.map((t) => {
  const out = {};
  for (const k of keys) if (t[k] !== undefined) out[k] = window.__norm(tinytfCore.values(t[k]) || t[k]);
  return out;
});
window.__shapes = (L) => (L.shapes || []).map((s) => [s.type, s.xref, s.yref, s.x0, s.x1, s.y0, s.y1]);
window.__texts = (L) => (L.annotations || []).map((a) => window.__plain(a.text)).filter(Boolean).sort();
"""

BOOK = """async ([fig, k, keys]) => {
  const el = document.getElementById('book');
  if (!el._tinytf) await tinytfCore.draw(el, fig);
  const rec = el._tinytf, range = rec.wrap.querySelector('input.tinytf-anim-range');
  range.value = String(k); range.dispatchEvent(new Event('input'));
  await new Promise((r) => setTimeout(r, 50));
  const animated = window.__traces(el, keys);  // what Plotly.animate drew
  await tinytfCore.update(el, fig);               // drawn again on this step: the core merges the frame
  return {animated, traces: window.__traces(el, keys), title: window.__plain(rec.frameTitle(rec.index)),
          caption: window.__plain([...rec.caption.children].map((c) => c.textContent).join(' ')), texts: window.__texts(el.layout),
          shapes: window.__shapes(el.layout),
          steps: rec.steps.map((s) => s.label), index: Number(range.value), max: Number(range.max),
          readout: rec.controls.out.textContent, valuetext: range.getAttribute('aria-valuetext'),
          controls: rec.wrap.querySelectorAll('.tinytf-anim-controls').length,
          plotly: el.querySelectorAll('.slider-rail-rect, .updatemenu-button').length};
}"""

WIDGET = """async ([esm, fig, k, keys]) => {
  if (!window.__widget) {
    const url = URL.createObjectURL(new Blob([esm], {type: 'text/javascript'}));
    const mod = await import(url);
    const handlers = [];
    const model = {get: (name) => ({height: 450})[name], on: (e, h) => handlers.push(h),
                   off: () => {}, send: (msg) => { if (msg.type === 'need_full') window.__deliver({type: 'full', rev: 1, fig, config: {}}); }};
    window.__deliver = (msg) => setTimeout(() => handlers.forEach((h) => h(msg, [])), 0);
    const el = document.getElementById('widget');
    mod.default.render({model, el});
    window.__widget = {rev: 1};
  }
  const gd = () => document.querySelector('#widget .tinytf-figure-view');
  const drawn = (n) => new Promise((resolve) => {
    const t = setInterval(() => { if (Number((gd() || {dataset: {}}).dataset.tinytfDraws || 0) >= n) { clearInterval(t); resolve(); } }, 20);
  });
  await drawn(1);
  const div = gd(), n = Number(div.dataset.tinytfDraws), rec = div._tinytf;
  // the reader moves the range of the core's controls to step k: the frame is animated
  const range = rec.wrap.querySelector('input.tinytf-anim-range');
  range.value = String(k); range.dispatchEvent(new Event('input'));
  await new Promise((r) => setTimeout(r, 50));
  // the next message from Python (here: nothing changed) redraws the figure on the reader's step
  const rev = window.__widget.rev;
  window.__widget.rev += 1;
  window.__deliver({type: 'patch', base: rev, rev: rev + 1, ops: []});
  await drawn(n + 1);
  return {traces: window.__traces(div, keys), title: window.__plain(rec.frameTitle(rec.index)),
          caption: window.__plain([...rec.caption.children].map((c) => c.textContent).join(' ')),
          texts: window.__texts(div.layout), shapes: window.__shapes(div.layout), steps: rec.steps.map((x) => x.label),
          index: Number(range.value), at: rec.index, draws: Number(div.dataset.tinytfDraws) - n,
          readout: rec.controls.out.textContent, valuetext: range.getAttribute('aria-valuetext'),
          inWidget: rec.wrap.parentNode === document.getElementById('widget'),
          controls: rec.wrap.querySelectorAll('.tinytf-anim-controls').length,
          plotly: document.getElementById('widget').querySelectorAll('.slider-rail-rect, .updatemenu-button').length};
}"""


def _specs():
    import tinytf
    from tinytf import viz
    from tinytf.viz.render import figure_dict

    from tinytf.viz.cache import cache_growth
    from tinytf.viz.frontier import sliding_window_figure

    tinytf.seed_everything(0)
    cfg = tinytf.TinyConfig(d_model=32, n_heads=2, d_ff=64, n_layers=2)
    model = tinytf.TinyTransformer(cfg).eval()
    return {"stepper": figure_dict(viz.block_stepper(model, "cat")),  # 15 frames, every trace, titles
            "cache": figure_dict(cache_growth(model, tinytf.encode("ab"), max_new_tokens=3)),  # frames on traces [0, 1]
            "window": figure_dict(sliding_window_figure(  # frames with shapes (an array of objects) and titles
                tinytf.TinyConfig(d_model=32, n_heads=2, d_ff=64, n_layers=2, sliding_window=tinytf.SlidingWindow(3)), T=6))}


def _load_core(page, body: str) -> None:
    """A bare page with ``body``, Plotly, the book's figure core and this file's helpers (PAGE_JS)."""
    from pathlib import Path

    import plotly

    page.set_content("<!doctype html><html lang='en'><head><title>core</title></head><body style='width:900px'>"
                     f"{body}</body></html>")
    page.add_script_tag(path=str(Path(plotly.__file__).parent / "package_data" / "plotly.min.js"))
    page.add_script_tag(content=(Path(__file__).resolve().parents[2] / "tinytf/viz/figure_core.js")
                        .read_text(encoding="utf-8"))
    page.add_script_tag(content=PAGE_JS)


@pytest.mark.parametrize("which", ["stepper", "cache", "window"])
def test_book_and_widget_draw_the_same_figure(browser, which):
    spec = _specs()[which]
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        _load_core(page, "<div id='book'></div><div id='widget'></div>")
        assert page.evaluate("() => window.tinytfFigures === window.tinytfCore")  # the book's name for it
        esm = widget_esm()
        n = len(spec["frames"])
        for k in [n - 1, 0, n // 2]:
            book = page.evaluate(BOOK, [spec, k, TRACE_KEYS])
            widget = page.evaluate(WIDGET, [esm, spec, k, TRACE_KEYS])
            assert book["traces"] == book["animated"], f"step {k}: the core's merge differs from Plotly.animate's"
            assert book["traces"] == widget["traces"], f"step {k}: the traces differ"
            assert book["title"] == book["caption"] == widget["title"], k
            assert book["texts"] == widget["texts"], k
            assert book["shapes"] == widget["shapes"], k
            assert book["steps"] == widget["steps"] and len(book["steps"]) == n
            assert book["index"] == widget["index"] == k and book["max"] == n - 1
            assert book["readout"] == book["valuetext"] == f"{k + 1} of {n}: {book['steps'][k]}"
            # the widget shows the core's controls, kept on the reader's step across the update
            assert widget["readout"] == widget["valuetext"] == book["readout"], k
            assert widget["title"] == widget["caption"], k
            assert widget["at"] == k, k
            assert widget["draws"] == 1 and widget["inWidget"], k
            assert book["controls"] == widget["controls"] == 1, k
            assert book["plotly"] == widget["plotly"] == 0, f"step {k}: plotly's own slider or buttons are drawn"
        assert not errors, errors
    finally:
        context.close()


TO_SCALE = """() => {
  const gd = [...document.querySelectorAll('.plotly-graph-div.tinytf-drawn')]
      .find(d => d.layout && d.layout.meta && d.layout.meta.tinytf && d.layout.meta.tinytf.toScale && d._fullLayout);
  if (!gd) return null;
  const w = k => { const a = gd._fullLayout[k]; return a._length; };  // drawn width in px
  return {input: w('xaxis'), hidden: w('xaxis2'), output: w('xaxis6')};
}"""


@pytest.mark.parametrize("width", [375, 1280])
def test_ffn_figure_stays_drawn_to_scale(browser, book_html, width):
    """The FFN figure says "drawn to scale": the [3, 128] input and output are a quarter as wide as the
    [3, 512] hidden tensors at phone and desktop width (the figure core once stretched every panel to the
    full width when one was narrower than it stacks at, which hid the 4x expansion the figure is for)."""
    from conftest import open_page

    page, console_errors, _ = open_page(browser, CHAPTER_6, viewport=(width, 900))
    try:
        page.wait_for_function(f"({TO_SCALE})() !== null", timeout=30_000)
        got = page.evaluate(TO_SCALE)
        assert abs(got["input"] / got["hidden"] - 0.25) < 0.02, got
        assert abs(got["output"] / got["hidden"] - 0.25) < 0.02, got
        assert not console_errors, console_errors
    finally:
        page.context.close()


# --------------------------------------------------------------------------- long legend names at phone width
# A legend entry is one line of SVG text: Plotly wraps a horizontal legend between its entries, never inside
# one, so a name wider than the phone's figure left it (chapter 9's "Llama-3-style + post-norm, W 100, lr 0.008"
# did). The core breaks long names at spaces on narrow figures; the audit of the book's pages (text inside the
# figure, no overlap, every subplot at least 120 px wide) must hold for a figure drawn from such a spec.

LONG_NAMES = ["Llama-3-style + post-norm, warm-up 100 steps, lr 0.008, seeds 0 to 2",
              "2017 block + pre-norm, warm-up 16 steps, peak learning rate 0.004",
              "short"]


def _legend_spec(legend: dict) -> dict:
    return {"data": [{"type": "scatter", "mode": "lines", "name": n, "x": [0, 1, 2], "y": [i, i + 1, i + 3]}
                     for i, n in enumerate(LONG_NAMES)],
            "layout": {"title": {"text": "loss"}, "height": 420, "legend": legend,
                       "margin": {"l": 60, "r": 20, "t": 80, "b": 60}}}


@pytest.mark.parametrize("legend", [{"orientation": "h", "y": -0.2}, {}], ids=["below", "right"])
def test_long_legend_names_stay_inside_a_phone_width_figure(browser, legend):
    from pathlib import Path

    import plotly

    import book_browser

    context = browser.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.set_content("<!doctype html><html lang='en'><head><title>core</title></head>"
                         "<body style='margin:0;width:343px;padding:16px'>"
                         "<div id='fig' class='plotly-graph-div tinytf-figure'></div></body></html>")
        page.add_script_tag(path=str(Path(plotly.__file__).parent / "package_data" / "plotly.min.js"))
        page.add_script_tag(content=(Path(__file__).resolve().parents[2] / "tinytf/viz/figure_core.js")
                            .read_text(encoding="utf-8"))
        page.evaluate("async (fig) => { await tinytfCore.draw(document.getElementById('fig'), fig); }",
                      _legend_spec(legend))
        page.wait_for_function("() => !!document.querySelector('#fig svg.main-svg .legend')")
        assert page.evaluate("() => document.querySelectorAll('.plotly-graph-div svg.main-svg').length") >= 1
        problems = book_browser.audit(page)
        assert not problems, problems
        # the names are still all there, in order, only broken into lines
        shown = page.evaluate("() => [...document.querySelectorAll('#fig .legend .traces')]"
                              ".map(t => [...t.querySelectorAll('text tspan.line')].map(s => s.textContent).join(' ')"
                              " || t.querySelector('text').textContent)")
        assert [" ".join(s.split()) for s in shown] == LONG_NAMES, shown
        assert not errors, errors
    finally:
        context.close()


# --------------------------------------------------------------------------- a wide panel beside a narrow one
# Chapter 12's ablation figure once had a narrow panel (x 0–0.28) beside a wide one (x 0.36–1). At a laptop's
# article width the core put them on two lines but kept the wide panel at x = 0.36: it hung diagonally below the
# narrow one, with half the figure empty. On its own line a wide panel starts at the left edge.

def _side_by_side_spec() -> dict:
    return {"data": [{"type": "bar", "x": ["all"], "y": [5.5], "xaxis": "x", "yaxis": "y", "name": "a"},
                     {"type": "bar", "x": ["b0", "b1", "b2", "b3"], "y": [3, 3.1, 2.4, 2.5], "xaxis": "x2",
                      "yaxis": "y2", "name": "b"}],
            "layout": {"height": 420, "showlegend": False, "margin": {"l": 60, "r": 20, "t": 60, "b": 60},
                       "xaxis": {"domain": [0, 0.28]}, "yaxis": {"domain": [0, 1]},
                       "xaxis2": {"domain": [0.36, 1], "anchor": "y2"}, "yaxis2": {"domain": [0, 1], "anchor": "x2"}}}


@pytest.mark.parametrize("width", [700, 375])
def test_a_wide_panel_on_a_line_of_its_own_starts_at_the_left(browser, width):
    import book_browser

    context, page, _ = _draw_alone(browser, _side_by_side_spec(), width)
    try:
        page.wait_for_function("() => !!document.querySelector('#fig svg.main-svg')")
        got = page.evaluate("""() => { const L = document.getElementById('fig')._fullLayout;
            return {x: [L.xaxis._offset, L.xaxis._length], x2: [L.xaxis2._offset, L.xaxis2._length],
                    y: [L.yaxis._offset, L.yaxis._length], y2: [L.yaxis2._offset, L.yaxis2._length]}; }""")
        stacked = got["y2"][0] >= got["y"][0] + got["y"][1] - 1 or got["y"][0] >= got["y2"][0] + got["y2"][1] - 1
        if stacked:  # on lines of their own, both start at the left edge
            assert abs(got["x2"][0] - got["x"][0]) <= 2, got
        else:  # side by side: the wide panel right of the narrow one
            assert got["x2"][0] >= got["x"][0] + got["x"][1], got
        assert stacked or width >= 600, got
        assert not book_browser.audit(page)
    finally:
        context.close()


DESCRIBED = """async ([fig, k]) => {
  const el = document.getElementById('book');
  if (!el._tinytf) await tinytfCore.draw(el, fig);
  const rec = el._tinytf, range = rec.wrap.querySelector('input.tinytf-anim-range');
  range.value = String(k); range.dispatchEvent(new Event('input'));
  await new Promise((r) => setTimeout(r, 200));
  const parts = el.data.map((t) => tinytfCore.describeTrace(t)).filter(Boolean);
  return {desc: rec.desc.textContent, parts, title: window.__plain(rec.frameTitle(rec.index))};
}"""


def test_description_follows_the_frame_shown(browser):
    """The text alternative of an animation ("Describe this figure") lists the numbers of the frame on
    screen, not of the one before it: it is written again once Plotly has drawn the new frame."""
    import tinytf
    from tinytf.viz.animations import swap_animation
    from tinytf.viz.render import figure_dict

    cfg = tinytf.config_2017()
    spec = figure_dict(swap_animation([("2017", cfg), ("pre-norm", cfg.replace(norm_position="pre")),
                                       ("RMSNorm", cfg.replace(norm_position="pre", norm="rms"))]))
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        _load_core(page, "<div id='book'></div>")
        seen = set()
        for k in [1, 2, 0, 2]:
            got = page.evaluate(DESCRIBED, [spec, k])
            assert f"Swap {k}:" in got["title"]
            assert got["parts"], k
            for part in got["parts"]:
                assert part in got["desc"], f"step {k}: {part!r} is drawn but not described: {got['desc']!r}"
            seen.add(got["desc"])
        assert len(seen) == 3  # the three frames differ (norms and the gap count), so must their descriptions
    finally:
        context.close()


# --------------------------------------------------------------------------- swap animation: labels beside the panel
# Chapter 9's swap animation puts its two panels side by side on a laptop. Frame 0 draws one row of the second
# panel ("2017 block"); the core sized the gap before that panel by it, and the later rows' longer labels
# ("ReLU 4x -> SwiGLU 8/3") ran about 55 px into the first panel's plot area (r80, 1280 px). Every frame: each
# label of the second panel ends right of the first panel's plot area (or the panels stand on lines of their own).

SWAP_LABELS = """async (k) => {
  const el = document.getElementById('book'), rec = el._tinytf;
  const range = rec.wrap.querySelector('input.tinytf-anim-range');
  range.value = String(k); range.dispatchEvent(new Event('input'));
  await new Promise((r) => setTimeout(r, 400));
  const L = el._fullLayout, box = el.getBoundingClientRect();
  const labels = [...el.querySelectorAll('.y2tick text')].map((t) => [t.textContent.trim(),
      t.getBoundingClientRect().left - box.left]);
  return {plotEnd: L.xaxis._offset + L.xaxis._length, plotTop: L.yaxis._offset, plotBottom: L.yaxis._offset + L.yaxis._length,
          top2: L.yaxis2._offset, bottom2: L.yaxis2._offset + L.yaxis2._length, labels};
}"""


@pytest.mark.parametrize("width", [720, 375])
def test_swap_animation_labels_stay_clear_of_the_first_panel(browser, width):
    import tinytf
    from tinytf.viz.animations import swap_animation
    from tinytf.viz.render import figure_dict

    c = tinytf.config_2017().replace(norm_position="pre")
    path = [("2017 block", tinytf.config_2017()), ("post-norm -> pre-norm", c),
            ("LayerNorm -> RMSNorm", c := c.replace(norm="rms")),
            ("ReLU 4x -> SwiGLU 8/3", c := c.replace(ffn="swiglu", d_ff=c.d_ff * 2 // 3)),
            ("sinusoidal -> RoPE", c := c.replace(pos="rope")),
            ("multi-head -> GQA", c := c.replace(n_kv_heads=1)), ("drop the biases", c.replace(bias=False))]
    spec = figure_dict(swap_animation(path))
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        _load_core(page, f"<div id='book' style='width:{min(width, 700) - 20}px'></div>")
        page.evaluate("async (fig) => { await tinytfCore.draw(document.getElementById('book'), fig); }", spec)
        for k in range(len(path)):
            got = page.evaluate(SWAP_LABELS, k)
            assert len(got["labels"]) == len(path), got
            beside = got["top2"] < got["plotBottom"] and got["bottom2"] > got["plotTop"]
            if beside:
                for text, left in got["labels"]:
                    assert left >= got["plotEnd"] + 2, f"frame {k}, {width} px: {text!r} starts at {left:.0f} px, " \
                                                       f"inside the first panel (ends at {got['plotEnd']:.0f} px)"
    finally:
        context.close()


# --------------------------------------------------------------------------- upright tick labels at phone width
# Crowded x tick labels stand upright; at 375 px chapter 10's cache animation (16 columns in about 200 px) drew
# them upright at the figure's 13 px font, each label about 15 px wide in a 12.5 px column: "0: #2" touched
# "1: p". The core now shrinks upright labels that do not fit one per column (down to 8 px) and, when even that
# is too crowded, shows every k-th label, on every frame alike (each frame carries its own tick labels). Checked
# on every frame, stepped through with the figure's own controls, with the bounding-box test of the book's audit
# (scripts/book_browser.py: two texts overlap when their boxes share more than 1.5 px both ways).

X_TICKS = """() => {
  const gd = document.getElementById('fig');
  const boxes = [...gd.querySelectorAll('.xtick text')].map((t) => ({s: (t.textContent || '').trim(),
      r: t.getBoundingClientRect()})).filter((b) => b.s && b.r.width && b.r.height);
  const overlaps = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i].r, b = boxes[j].r;
    const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    if (w > 1.5 && h > 1.5) overlaps.push(`"${boxes[i].s}" overlaps "${boxes[j].s}" (${w.toFixed(1)} x ${h.toFixed(1)} px)`);
  }
  const top = [...gd.querySelectorAll('.xaxislayer-above')][0];
  const shown = top ? [...top.querySelectorAll('.xtick text')].map((t) => t.textContent.trim()) : [];
  const L = gd._fullLayout.xaxis;
  return {overlaps, shown, size: L.tickfont.size, angle: L.tickangle, column: L._length / (L.range[1] - L.range[0]),
          label: Math.max(...[...top.querySelectorAll('.xtick text')].map((t) => t.getBoundingClientRect().width))};
}"""

STEP_TO = """async (k) => {
  const el = document.getElementById('fig'), rec = el._tinytf;
  const range = rec.wrap.querySelector('input.tinytf-anim-range');
  range.value = String(k); range.dispatchEvent(new Event('input'));
  await new Promise((r) => setTimeout(r, 250));
  return {index: rec.index, max: Number(range.max)};
}"""


def _draw_alone(browser, spec, width: int):
    """``spec`` drawn by the figure core alone on a page ``width`` px wide: (context, page, page errors)."""
    from pathlib import Path

    import plotly

    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_content("<!doctype html><html lang='en'><head><title>core</title></head>"
                     f"<body style='margin:0;width:{width - 32}px;padding:16px'>"
                     "<div id='fig' class='plotly-graph-div tinytf-figure'></div></body></html>")
    page.add_script_tag(path=str(Path(plotly.__file__).parent / "package_data" / "plotly.min.js"))
    page.add_script_tag(content=(Path(__file__).resolve().parents[2] / "tinytf/viz/figure_core.js")
                        .read_text(encoding="utf-8"))
    page.evaluate("async (fig) => { await tinytfCore.draw(document.getElementById('fig'), fig); }", spec)
    return context, page, errors


@pytest.mark.parametrize("prompt", ["python" + "pyt", "abcdefghijklmnopqrstuvwxyz" + "abcdefghijkl"],
                         ids=["16 columns", "45 columns"])
def test_upright_tick_labels_never_touch_on_any_frame(browser, prompt):
    """16 columns: the font shrinks (13 px labels touched); 45 columns: 8 px labels still do not fit one per
    column, so every k-th is shown, and on each frame the labels shown are that frame's."""
    import tinytf
    from tinytf.viz.cache import cache_growth
    from tinytf.viz.render import figure_dict

    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig(d_model=32, n_heads=2, d_ff=64, n_layers=2)).eval()
    ids = [2] + tinytf.encode(prompt).tolist()  # <bos> first ("0: #2"), as in chapter 10
    spec = figure_dict(cache_growth(model, ids, max_new_tokens=6))
    labels = [[t.strip() for t in fr["layout"]["xaxis"]["ticktext"]] for fr in spec["frames"]]
    context, page, errors = _draw_alone(browser, spec, 375)
    try:
        page.wait_for_function("() => !!document.querySelector('#fig svg.main-svg .xtick')")
        for k in range(len(labels)):
            at = page.evaluate(STEP_TO, k)
            assert at == {"index": k, "max": len(labels) - 1}, at
            got = page.evaluate(X_TICKS)
            assert not got["overlaps"], f"frame {k + 1} (size {got['size']} px): {got['overlaps'][:3]}"
            assert got["angle"] == -90, got
            assert got["shown"] and set(got["shown"]) <= set(labels[k]), (k, got["shown"], labels[k])
            if len(got["shown"]) < len(labels[k]):  # thinned: every k-th column, named as on this frame
                step = labels[k].index(got["shown"][1]) - labels[k].index(got["shown"][0])
                assert got["shown"] == labels[k][::step], (k, got["shown"])
        assert not errors, errors
    finally:
        context.close()


# --------------------------------------------------------------------------- a frame that changes colour axis
# Plotly.animate drew chapter 6's attention weights (the softmax step moves the score heatmaps to a second
# colour axis) one row below their labels: "0: c" over an empty band, the last row over the key labels.
ROW_OF_FIRST_LABEL = """() => {
  const gd = document.getElementById('fig');
  const img = [...gd.querySelectorAll('.heatmaplayer image')].find((i) => i.getBoundingClientRect().height > 0);
  const label = [...gd.querySelectorAll('.ytick text')].find((t) => t.textContent.trim().startsWith('0:'));
  const r = img.getBoundingClientRect(), l = label.getBoundingClientRect();
  return {row: ((l.top + l.bottom) / 2 - r.top) / (r.height / 3), title: gd._fullLayout.title.text || ''};
}"""


def test_a_frame_that_changes_colour_axis_keeps_rows_on_their_labels(browser):
    """Every step of the block stepper: the label "0: c" sits on the first of the three rows drawn (row
    coordinate between 0 and 1, in rows from the heatmap's top), the softmax step included."""
    import tinytf
    from tinytf.viz.render import figure_dict
    from tinytf.viz.stepper import block_stepper

    tinytf.seed_everything(0)
    model = tinytf.TinyTransformer(tinytf.TinyConfig(d_model=32, n_heads=2, d_ff=64, n_layers=1)).eval()
    spec = figure_dict(block_stepper(model, "cat"))
    names = [fr["name"] for fr in spec["frames"]]
    context, page, errors = _draw_alone(browser, spec, 1032)
    try:
        page.wait_for_function("() => !!document.querySelector('#fig .heatmaplayer image')")
        assert "softmax" in names, names
        for k in range(len(names)):
            page.evaluate(STEP_TO, k)
            page.wait_for_timeout(300)
            got = page.evaluate(ROW_OF_FIRST_LABEL)
            assert 0 < got["row"] < 1, (names[k], got)
        assert not errors, errors
    finally:
        context.close()
