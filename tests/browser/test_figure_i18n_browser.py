"""The Chinese edition's figures and panel in Chromium (issue #22, steps 3 and 7).

A small Chinese page, made here the way the Chinese build makes its pages (scripts/book_offline.py): the figure
core's and the panel's words as ``window.tinytfStrings`` (``ui_strings_js``), two committed figures rendered with
the figure catalogue (``book_html(..., translate)``: chapter 6's animated block stepper and chapter 2's attention
map) and chapter 6's static panel translated (``Catalogue.panel_html``), over the built English book's
``_static`` (plotly.js, the core, the panel script, the models). Building the whole Chinese book takes more than a
minute; the page uses the same functions.

* the figures show Chinese captions, controls (播放, 上一步/下一步, the step readout) and "描述此图" with a Chinese
  description, and no console error;
* Chinese text typed into the panel runs the model and the panel says what it became: "'你好' 是 2 个字符，UTF-8
  编码为 6 个字节"; with the model trained on English text it says so.
Screenshots (for a person): _build/screenshots/zh-figures-1280.png and -375.png.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import book_browser
import book_offline
import figure_strings
from conftest import SCREENSHOTS, require

ROOT = Path(__file__).resolve().parents[2]
PANEL = ".tinytf-static-panel"
CJK = re.compile(r"[\u4e00-\u9fff]")


PAGE = """<!DOCTYPE html>
<html lang="zh-CN"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>图（中文）</title>
<link rel="stylesheet" href="_static/tinytf-book.css">
<script>{strings}</script>
<script src="_static/tinytf-core.js"></script>
<script src="_static/tinytf-bind.js"></script>
<script src="_static/tinytf-panel.js"></script>
<script src="_static/plotly.min.js"></script>
</head><body><main style="max-width:1200px;margin:0 auto;padding:0 8px">
<h1>中文版的图</h1>
{figures}
</main></body></html>
"""


@pytest.fixture(scope="module")
def zh_page(book_html, browser, tmp_path_factory):
    require("onnxruntime-web")
    fs, offline = figure_strings, book_offline
    from tinytf.viz.render import book_html as render

    cat = fs.Catalogue.load()
    parts, seen = [], {}
    for name, pick in (("06_decoder_block.ipynb", lambda s: len(s.get("frames", [])) == 15),
                       ("02_causal_self_attention.ipynb", lambda s: "causal self-attention" in json.dumps(
                           s["layout"].get("title", "")))):
        spec = next(s for _, s in fs.notebook_figures([ROOT / "chapters" / name]) if pick(s))
        parts.append(render(spec, seen, cat.figure))
    nb = json.loads((ROOT / "chapters" / "06_decoder_block.ipynb").read_text(encoding="utf-8"))
    panel = next("".join(o["data"]["text/html"]) for c in nb["cells"] for o in c.get("outputs", [])
                 if "tinytf-static-panel" in "".join(o.get("data", {}).get("text/html", [])))
    parts.append(cat.panel_html(panel))
    assert not cat.missing, cat.missing
    site = tmp_path_factory.mktemp("zh-site")
    static = site / "_static"  # the English book's, but the panel's figure templates in Chinese
    static.mkdir()
    for item in (book_html / "_static").iterdir():
        if item.name != "models":
            (static / item.name).symlink_to(item, target_is_directory=item.is_dir())
    shutil.copytree(book_html / "_static" / "models", static / "models")
    # the stepper of layer 0, the view the test draws (the build translates every file; test_figure_i18n.py checks
    # that the catalogue covers them all)
    assert offline.translate_template_files(static / "models", cat, "zh_CN", "*/stepper-L0.json.gz") == 3
    (site / "index.html").write_text(PAGE.format(strings=offline.ui_strings_js(cat), figures="\n".join(parts)),
                                     encoding="utf-8")
    server = book_browser.BookServer(site)
    try:
        yield server.url("index.html")
    finally:
        server.stop()


FIGURES = """() => [...document.querySelectorAll('.tinytf-figwrap')].map(w => ({
  caption: w.querySelector('.tinytf-figtitle').textContent,
  summary: w.querySelector('summary').textContent,
  desc: w.querySelector('.tinytf-figdesc p').textContent,
  play: (w.querySelector('.tinytf-anim-play') || {}).textContent || null,
  prev: w.querySelector('.tinytf-anim-prev') && w.querySelector('.tinytf-anim-prev').getAttribute('aria-label'),
  label: (w.querySelector('.tinytf-anim-label') || {}).textContent || null,
  readout: (w.querySelector('.tinytf-anim-value') || {}).textContent || null,
  svg: !!w.querySelector('svg.main-svg')}))"""


def test_chinese_figures_and_panel(zh_page, browser):
    page, errors, remote, _ = book_browser.open_page(browser, zh_page)
    try:
        page.wait_for_function(f"({FIGURES})().filter(f => f.svg && f.desc).length === 2", timeout=20_000)
        step, attention = page.evaluate(FIGURES)[:2]
        assert step["caption"].startswith("1/15 · 块输入 H"), step
        assert step["play"] == "▶ 播放" and step["prev"] == "上一步" and step["label"] == "步骤", step
        assert step["readout"].startswith("第 1/15 步："), step
        assert step["summary"] == "描述此图" and step["desc"].startswith("共 15 步的动画"), step
        assert attention["caption"].startswith("块 0 的因果自注意力"), attention
        assert CJK.search(attention["desc"]) and "行 ×" in attention["desc"], attention
        page.locator(".tinytf-anim-next").first.click()
        page.wait_for_function("() => document.querySelector('.tinytf-anim-value').textContent.startsWith('第 2/15 步')")
        assert page.locator(".tinytf-figtitle").first.text_content().startswith("2/15 · Norm1")
        # the panel: Chinese labels, Chinese input, the byte count
        assert page.locator(f"{PANEL} label").all_text_contents()[:3] == ["token", "模型", "视图"]
        box = page.locator(f"{PANEL} input[type=text]")
        box.fill("你好")
        box.press("Enter")
        status = page.locator(f"{PANEL} .tinytf-panel-status")
        page.wait_for_function(f"() => document.querySelector('{PANEL} .tinytf-panel-status').textContent"
                               ".includes('已更新')", timeout=30_000)
        text = status.text_content()
        assert "'你好' 是 2 个字符，UTF-8 编码为 6 个字节" in text, text
        assert "英文" not in text  # the untrained model was not trained on anything
        # the panel's figure (filled in the browser from its template) speaks Chinese too
        caption = page.locator(f"{PANEL} .tinytf-figtitle").text_content()
        assert caption.startswith("1/15 · 块输入 H"), caption
        assert page.locator(f"{PANEL} .tinytf-anim-value").text_content().startswith("第 1/15 步："), caption
        page.locator(f"{PANEL} select[id$='-model']").select_option("text-4l")
        page.wait_for_function(f"() => document.querySelector('{PANEL} .tinytf-panel-status').textContent"
                               ".includes('英文文本上训练')", timeout=30_000)
        assert page.locator(f"{PANEL} .tinytf-panel-message").is_hidden()
        box.fill("")
        box.press("Enter")
        page.wait_for_function(f"() => document.querySelector('{PANEL} .tinytf-panel-message').textContent"
                               ".includes('文本为空')", timeout=10_000)
        message = page.locator(f"{PANEL} .tinytf-panel-message").text_content()
        assert message == "⚠ encode：文本为空；请至少输入一个字符。下图仍显示上一次有效的输入。", message
        for width in (1280, 375):
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(400)
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"zh-figures-{width}.png"), full_page=True)
        assert not errors, errors
        assert not remote, remote
    finally:
        page.context.close()
