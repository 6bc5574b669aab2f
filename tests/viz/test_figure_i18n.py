"""The figure catalogue of the Chinese edition (issue #22, steps 3 and 7): scripts/figure_strings.py and its use by
the book's render plugin (scripts/book_offline.py).

* the catalogue is complete: every reader-visible string of every committed figure, of the figure core, the panel
  script and the static panel has a translation with the same placeholders, and nothing in it is stale; a new
  figure title nobody translated is reported (a mutation on a copy of a chapter);
* cutting a text into messages loses nothing: with a catalogue that translates each message into itself, every
  string of every committed figure comes back unchanged;
* a Chinese render of a committed figure has Chinese title, axis titles and step labels, and the same div id;
  the English render is byte for byte what it was before the catalogue existed;
* the static panel's messages, view names and note come out Chinese; the page's UI words cover every tr() call;
* the lab (_static/tinytf-lab.js) writes no English literal into the page, every word of it and of its data
  (names, rules, messages, note) has a translation, and the toggles' <summary> titles come out Chinese.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import book_offline  # scripts/ (tests/conftest.py puts it on sys.path)
import figure_strings as fs

ROOT = Path(__file__).resolve().parents[2]
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def catalogue():
    return fs.Catalogue.load()


def _figure(notebook: str, pick):
    for path, spec in fs.notebook_figures([ROOT / "chapters" / notebook]):
        if pick(spec):
            return spec
    raise AssertionError(f"no such figure in {notebook}")


def _title(spec) -> str:
    t = spec["layout"].get("title", {})
    return t.get("text", "") if isinstance(t, dict) else str(t)


def _spec_of(html_text: str) -> dict:
    return json.loads(re.search(r"var fig = (\{.*\});\n", html_text).group(1).replace("<\\/", "</"))


# --------------------------------------------------------------------------- complete, and --check says so
def test_catalogue_is_complete_and_nothing_is_stale():
    found = fs.extract()
    problems = fs.problems(found, fs.read_catalogue(fs.catalogue_path()))
    assert not problems, "\n".join(problems[:20]) + "\n(python scripts/figure_strings.py --update, then translate)"
    assert 300 < len(found) < 800, len(found)  # numbers are placeholders: the catalogue stays small


def test_a_new_untranslated_title_is_reported(tmp_path):
    """Mutation on a copy: a figure title the catalogue does not have makes --check fail and name it."""
    src = ROOT / "chapters" / "02_causal_self_attention.ipynb"
    nb = json.loads(src.read_text(encoding="utf-8"))
    done = False
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            spec = out.get("data", {}).get(fs.PLOTLY_JSON)
            if spec and not done:
                spec["layout"]["title"] = {"text": "<b>A brand-new figure title</b><br>nobody translated yet"}
                done = True
    assert done
    copy = tmp_path / src.name
    copy.write_text(json.dumps(nb), encoding="utf-8")
    others = [p for p in sorted((ROOT / "chapters").glob("*.ipynb")) if p.name != src.name]
    problems = fs.problems(fs.extract(others + [copy]), fs.read_catalogue(fs.catalogue_path()))
    assert "untranslated: 'A brand-new figure title'" in problems, problems
    assert "untranslated: 'nobody translated yet'" in problems, problems
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "figure_strings.py"), "--check", "--notebooks",
                          *map(str, others + [copy])], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 1 and "A brand-new figure title" in run.stdout, run.stdout + run.stderr
    # the untouched chapters pass
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "figure_strings.py"), "--check"],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_stale_or_misplaced_translation_is_reported():
    found = {"RoPE at position {0}: each pair turned by its own angle × {1}": ["x"]}
    entries = {"RoPE at position {0}: each pair turned by its own angle × {1}": {"msgstr": "位置 {0} 处的 RoPE",
                                                                                   "fuzzy": False},
               "gone": {"msgstr": "没了", "fuzzy": False}}
    assert fs.problems(found, entries) == [
        "placeholders differ: 'RoPE at position {0}: each pair turned by its own angle × {1}' -> '位置 {0} 处的 RoPE'",
        "stale: 'gone'"]


# --------------------------------------------------------------------------- messages and placeholders
def test_numbers_and_tokens_become_placeholders():
    assert fs.factor("RoPE at position 7: each pair turned by its own angle × 7") == (
        "RoPE at position {0}: each pair turned by its own angle × {1}", ["7", "7"])
    assert fs.factor("2017 + pre-norm (W 16, lr 0.008), seed 2") == ("2017 + pre-norm (W {0}, lr {1}), seed {2}",
                                                                      ["16", "0.008", "2"])
    assert fs.factor("token 0 'c' goes to expert 5 (weight 0.532)") == (
        "token {0} {1} goes to expert {2} (weight {3})", ["0", "'c'", "5", "0.532"])
    assert fs.factor("query position 5 (5: f): layer 0") == ("query position {0} ({1}): layer {2}", ["5", "5: f", "0"])
    assert fs.factor("dimension %{x}: GPT-2, Norm1, text-4l, 198,272") == (
        "dimension %{x}: GPT-2, Norm1, text-4l, {0}", ["198,272"])
    assert fs.fill("第 {0} 步：{1}", ["3", "x"]) == "第 3 步：x"
    assert fs.fill("{n} of {size}", {"n": 2, "size": "3 × 3"}) == "2 of 3 × 3"


def test_cutting_into_messages_loses_nothing():
    """A catalogue that translates every message into itself gives back every committed figure unchanged."""
    identity = fs.Catalogue({m: m for m in fs.extract()})
    n = 0
    for _, spec in fs.notebook_figures():
        assert identity.figure(spec) == spec
        n += 1
    assert n > 40 and not identity.missing


# --------------------------------------------------------------------------- rendering
def _attention_figure():
    return _figure("02_causal_self_attention.ipynb", lambda s: "causal self-attention" in _title(s))


def test_english_render_is_unchanged():
    """book_html without a catalogue is what it was before the catalogue existed (the old body, inlined here),
    and the render plugin of an English build passes the panel's HTML to myst-nb untouched."""
    from tinytf.viz import render

    spec = _attention_figure()
    stored = dict(spec, config=dict(render.PLOTLY_CONFIG))
    before = {k: v for k, v in stored.items() if k != "config"}
    old = render._html_for(before, render._dumps(before), render.numbered_id(before, {}), cdn=False)
    assert render.book_html(stored, {}) == old
    assert render.book_html(stored, {}, None) == old
    offline = book_offline
    assert offline._catalogue is None  # never loaded outside a non-English build


def test_chinese_render_of_a_committed_figure(catalogue):
    from tinytf.viz import render

    spec = _attention_figure()
    en = render.book_html(spec, {})
    zh = render.book_html(spec, {}, catalogue.figure)
    assert re.search(r'id="(tinytf-[0-9a-f]+)"', en).group(1) == re.search(r'id="(tinytf-[0-9a-f]+)"', zh).group(1)
    got = _spec_of(zh)
    title = _title(got)
    assert title.startswith("<b>块 0 的因果自注意力：每个查询读取哪个键</b><br>"), title
    axes = [v["title"]["text"] for k, v in got["layout"].items() if k.startswith(("xaxis", "yaxis")) and
            isinstance(v, dict) and isinstance(v.get("title"), dict) and v["title"].get("text")]
    assert axes and all(CJK.search(a) for a in axes), axes
    names = [t.get("name") for t in got["data"] if t.get("name")]
    assert any(CJK.search(n) for n in names), names
    assert got["data"][0].get("z") == spec["data"][0].get("z")  # the numbers are untouched
    assert _spec_of(en) == {k: v for k, v in spec.items() if k != "config"}


def test_chinese_steps_and_frame_titles(catalogue):
    spec = _figure("06_decoder_block.ipynb", lambda s: len(s.get("frames", [])) == 15)
    got = catalogue.figure(spec)
    labels = [s["label"] for s in got["layout"]["sliders"][0]["steps"]]
    assert "7 softmax" in labels and "6 因果掩码" in labels, labels
    assert [f["name"] for f in got["frames"]] == [f["name"] for f in spec["frames"]]  # frame keys stay
    assert [s["args"] for s in got["layout"]["sliders"][0]["steps"]] == \
        [s["args"] for s in spec["layout"]["sliders"][0]["steps"]]
    assert all(CJK.search(_title(f)) for f in got["frames"])
    assert not catalogue.missing


def test_the_narrow_screen_drawing_is_translated_too(catalogue):
    # ch2's head comparison (now in its lab notes) carries a second drawing for phones
    # (layout.meta.tinytf.narrow.figure): its axis titles and hover text are the wide drawing's words and must not
    # stay English on a Chinese phone
    spec = _figure("02_causal_self_attention_notes.ipynb",
                   lambda s: "narrow" in ((s["layout"].get("meta") or {}).get("tinytf") or {})
                   and s["layout"]["meta"]["tinytf"]["narrow"]["figure"].get("data"))
    narrow_en = spec["layout"]["meta"]["tinytf"]["narrow"]["figure"]
    narrow_zh = catalogue.figure(spec)["layout"]["meta"]["tinytf"]["narrow"]["figure"]
    texts_en, texts_zh = fs.figure_texts(narrow_en), fs.figure_texts(narrow_zh)
    worded = [(e, z) for e, z in zip(texts_en, texts_zh) if fs.is_message(fs.factor(e)[0])]
    assert worded and all(CJK.search(z) for e, z in worded), worded
    assert narrow_zh["data"][0]["z"] == narrow_en["data"][0]["z"]  # the numbers are untouched
    assert not catalogue.missing


def test_static_panel_in_chinese(catalogue):
    from tinytf.viz import static_panel

    nb = json.loads((ROOT / "chapters" / "06_decoder_block.ipynb").read_text(encoding="utf-8"))
    html_text = next("".join(o["data"]["text/html"]) for c in nb["cells"] for o in c.get("outputs", [])
                     if "tinytf-static-panel" in "".join(o.get("data", {}).get("text/html", [])))
    zh = catalogue.panel_html(html_text)
    import html as _html

    state = json.loads(_html.unescape(re.search(r'data-panel="([^"]*)"', zh).group(1)))
    assert state["messages"]["empty"] == "encode：文本为空；请至少输入一个字符"
    assert "{n}" in state["messages"]["too_many"] and CJK.search(state["messages"]["too_many"])
    assert all(CJK.search(v) for v in state["views"].values()), state["views"]
    assert static_panel.NOTE not in zh and "实时面板" in zh
    assert list(state["views"]) == list(json.loads(_html.unescape(
        re.search(r'data-panel="([^"]*)"', html_text).group(1)))["views"])  # keys stay


def test_page_words_cover_every_tr_call(catalogue):
    ui = catalogue.ui()
    assert set(ui) == set(fs.js_messages())
    assert ui["Describe this figure"] == "描述此图" and ui["▶ Play"] == "▶ 播放"
    assert "{n} 个字节" in ui["{text} is {chars} characters and {n} bytes in UTF-8: the model reads one token per "
                            "byte (a Chinese character is 3 bytes)."]
    script = book_offline.ui_strings_js(catalogue)
    assert script.startswith("window.tinytfStrings = {") and "</" not in script


def test_lab_words_are_all_in_the_catalogue(catalogue):
    """Every reader-visible string of the lab goes through tr() (so the catalogue has it): no English literal is
    written into the page directly, and a lab string missing from the catalogue is reported by --check."""
    src = (ROOT / "_static" / "tinytf-lab.js").read_text(encoding="utf-8")
    direct = re.findall(r'(?:textContent = |"aria-label": |el\("\w+", \{[^{}]*\}, |field\([^,]+, [^,]+, )"([^"]*[A-Za-z]{2}[^"]*)"',
                        src)
    assert direct == [], direct
    js = fs.js_messages()
    for word in ("Generate", "Stop", "Rank", "Prompt (the text the model continues)", "Try it", "Load the model (3.9 MB)", "␣ (space)",
                 "text-4l, fully trained"):
        assert js.get(word) in ("_static/tinytf-lab.js", "tinytf/lab/browser_lab.py"), word
        assert CJK.search(catalogue.messages[word]), word
    entries = fs.read_catalogue(fs.catalogue_path())
    found = fs.extract()
    del entries["Generate"]
    assert "untranslated: 'Generate'" in fs.problems(found, entries)


def test_lab_html_in_chinese(catalogue):
    import html as _html

    from tinytf.lab import browser_lab

    for view in ("all", "sampling", "parts"):
        en = browser_lab.lab_html(view)
        zh = catalogue.raw_html(en)
        state = json.loads(_html.unescape(re.search(r'data-lab="([^"]*)"', zh).group(1)))
        before = browser_lab.page_state(view)
        for key in ("names", "rules", "messages"):
            assert sorted(state[key]) == sorted(before[key])  # keys stay
            for k, v in state[key].items():
                assert CJK.search(v) or v in ("Top-k", "Top-p"), (key, k, v)
                assert sorted(re.findall(r"\{\w+\}", v)) == sorted(re.findall(r"\{\w+\}", before[key][k])), (k, v)
        assert state["messages"]["refill"].startswith(" ")  # appended to the "generated" message
        for key, h in state["help"].items():  # the help lines and the hints, in Chinese; what a hint sets, not
            assert CJK.search(h["text"]) and h["chapters"] == before["help"][key]["chapters"], key
        assert [h["key"] for h in state["hints"]] == [h["key"] for h in before["hints"]]
        for h, b in zip(state["hints"], before["hints"]):
            assert CJK.search(h["text"]) and h["set"] == b["set"], h["key"]
        assert state["defaults"] == before["defaults"] and state["limits"] == before["limits"]
        assert browser_lab.NOTE not in zh and "浏览器中的模型" in zh
    assert fs.Catalogue({}).raw_html(browser_lab.lab_html()) == browser_lab.lab_html()  # nothing to translate


def test_toggle_titles_in_chinese(catalogue):
    titles = fs.summary_messages()
    assert {"Solution", "Answers", "What the output says"} <= set(titles)
    for t in titles:
        assert CJK.search(catalogue.messages.get(t, "")), f"no translation of the toggle title {t!r}"
    html_text = ("<details><summary>Solution</summary>\n\n<details class=\"x\">\n<summary>Answers</summary>"
                 "<summary>What the output says</summary>")
    zh = catalogue.raw_html(html_text)
    assert zh == ("<details><summary>参考答案</summary>\n\n<details class=\"x\">\n<summary>答案</summary>"
                  "<summary>输出说明了什么</summary>")
    assert catalogue.raw_html("<p>Solution</p>") == "<p>Solution</p>"


def test_lab_attention_templates_in_chinese(catalogue):
    data = json.loads(fs.LAB_JSON.read_text(encoding="utf-8"))
    zh = catalogue.lab_file(data)
    assert sorted(zh["attention"]) == sorted(data["attention"]) and zh["models"] == data["models"]
    for key, tpl in zh["attention"].items():
        title = _title(tpl["figure"])
        assert CJK.search(title) and "头" in title, (key, title)
        assert tpl["bindings"] == data["attention"][key]["bindings"]
    assert "已关闭" in _title(zh["attention"]["1-2-off"]["figure"])
    assert sorted(zh["lens"]) == sorted(data["lens"])
    for key, tpl in zh["lens"].items():  # the lens: its title, and the rows its bindings label ("really next")
        assert "logit 透镜" in _title(tpl["figure"]), key
        assert "真正的下一个" in json.dumps(tpl["bindings"], ensure_ascii=False), key
        assert tpl["figure"]["layout"]["yaxis"]["categoryarray"][-1] == "真正的下一个"
    assert not catalogue.missing, sorted(catalogue.missing)[:5]


def test_the_no_plotly_note_is_in_the_chinese_string_table(catalogue):
    """The note a figure shows when plotly.js never arrives comes from the page's string table: the Chinese build's
    window.tinytfStrings holds its translation, and the figure's script looks it up there (English without it)."""
    from tinytf.viz import render

    js = book_offline.ui_strings_js(catalogue)
    prefix = "window.tinytfStrings = "
    assert js.startswith(prefix) and js.endswith(";")
    table = json.loads(js[len(prefix):-1].replace("<\\/", "</"))
    zh = table[render.NO_PLOTLY_NOTE]
    assert CJK.search(zh) and "<code>tinytf.viz.init_notebook()</code>" in zh, zh
    html = render.book_html(_attention_figure(), {})
    assert "window.tinytfStrings" in html and "plotly.js is not loaded" in html
    assert "</code>" not in html.split("<script", 1)[1]  # "</" escaped inside the script
