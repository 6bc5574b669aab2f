"""Static checks on the chapter notebooks (no kernel, no build): the shape every chapter
must have so that it runs in Colab/Binder, passes nbval honestly and renders offline."""
from __future__ import annotations

import json
import re

import nbformat
import pytest

from conftest import ROOT, doc_source, toc_docnames

from tinytf.book import SETUP_CELL, SETUP_TAGS

CHAPTERS = [name for name in toc_docnames() if name.startswith("chapters/")]
# numbered chapters are notebooks; the reference pages (glossary, api) are markdown
NOTEBOOKS = [name for name in CHAPTERS if re.match(r"chapters/\d+_", name)]
# each chapter has a companion page of lab notes (the deeper measurements), listed under it in _toc.yml
NOTES = [name for name in NOTEBOOKS if name.endswith("_notes")]
LESSONS = [name for name in NOTEBOOKS if name not in NOTES]

# A reference to another host inside an output: a URL in src/href/url(), an @import, or a
# known CDN host name anywhere. (Plain links in prose are fine: a link is not a load.)
REMOTE_LOAD = re.compile(
    r"""(?:\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//)"""
    r"""|(?:url\(\s*["']?(?:https?:)?//)"""
    r"""|(?:@import\s+(?:url\()?["']?(?:https?:)?//)""",
    re.I,
)
CDN_HOSTS = re.compile(
    r"cdn\.jsdelivr\.net|unpkg\.com|cdnjs\.cloudflare\.com|cdn\.plot\.ly|maxcdn\.bootstrapcdn\.com|"
    r"fonts\.googleapis\.com|fonts\.gstatic\.com|code\.jquery\.com|ajax\.googleapis\.com|"
    r"mathjax\.org|polyfill\.io|stackpath\.bootstrapcdn\.com",
    re.I,
)
TITLE = re.compile(r"^#\s+(\d+)\.\s+\S")
NOTES_TITLE = re.compile(r"^#\s+Chapter (\d+) lab notes\b")
DETAILS = re.compile(r"<details>\s*<summary>.*?</summary>.*?</details>", re.S | re.I)


def load(name: str):
    path = ROOT / f"{name}.ipynb"
    if not path.is_file():
        pytest.skip(f"{path.relative_to(ROOT)} does not exist (test_chapter_in_toc_exists fails for it)")
    return nbformat.read(path, as_version=4)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def output_texts(cell):
    """Every textual payload of a code cell's outputs, with its mime type."""
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            yield "stream", out.text
        elif out.output_type == "error":
            yield "error", "\n".join(out.traceback)
        for mime, value in out.get("data", {}).items():
            if isinstance(value, str):
                yield mime, value
            else:
                yield mime, json.dumps(value)


def test_toc_lists_the_chapters_of_the_brief():
    expected = [f"chapters/{n}" for n in (
        "01_tokens_embeddings_positions", "02_causal_self_attention", "03_normalisation",
        "04_feed_forward", "05_residuals_pre_post_norm", "06_decoder_block", "07_tiny_transformer",
        "08_encoder_decoder", "09_2017_to_2026", "10_generation_kv_cache", "11_frontier_block", "12_misconceptions",
        "glossary", "bibliography", "api")]
    expected = [page for name in expected for page in (name, f"{name}_notes") if re.match(r"chapters/\d+_", name)
                or page == name]
    if build_toc_overridden():
        pytest.skip("TINYTF_BOOK_TOC is set: checking another table of contents")
    assert CHAPTERS == expected


def build_toc_overridden() -> bool:
    import build_book

    return build_book.toc_path() != ROOT / "_toc.yml"


@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_in_toc_exists(name):
    assert doc_source(name) is not None, f"{name} is in _toc.yml but neither {name}.ipynb nor {name}.md exists"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_parses_and_validates(name):
    nb = load(name)
    nbformat.validate(nb)
    assert nb.metadata.get("kernelspec", {}).get("language", "python") == "python"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_first_cell_is_the_setup_cell(name):
    nb = load(name)
    cells = code_cells(nb)
    assert cells, f"{name} has no code cell"
    assert nb.cells[0].cell_type == "code", f"{name}: the first cell must be the set-up code cell"
    assert nb.cells[0].source == SETUP_CELL, (
        f"{name}: the first cell must be exactly tinytf.book.SETUP_CELL (Colab installs tinytf with it)")
    assert set(SETUP_TAGS) <= set(nb.cells[0].metadata.get("tags", [])), (
        f"{name}: the set-up cell must be tagged {SETUP_TAGS}: the HTML page starts with the chapter's title")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_markdown_title_follows_the_setup_cell(name):
    nb = load(name)
    assert len(nb.cells) > 1 and nb.cells[1].cell_type == "markdown", f"{name}: cell 2 must be markdown"
    first_line = nb.cells[1].source.strip().splitlines()[0]
    if name in NOTES:
        match = NOTES_TITLE.match(first_line)
        assert match, f"{name}: cell 2 must start with '# Chapter N lab notes', found {first_line!r}"
        assert re.search(rf"\]\({name.split('/')[-1].removesuffix('_notes')}\.ipynb\)", nb.cells[1].source), (
            f"{name}: the notes' opening paragraph must link back to their chapter")
    else:
        match = TITLE.match(first_line)
        assert match, f"{name}: cell 2 must start with '# N. Title', found {first_line!r}"
    prefix = name.split("/")[-1].split("_")[0]
    if prefix.isdigit():
        assert int(match.group(1)) == int(prefix), f"{name}: title number {match.group(1)} != file number {prefix}"


@pytest.mark.parametrize("name", LESSONS)
def test_the_introductions_chapter_map_uses_the_chapters_title(name):
    """intro.md's chapter map names each chapter by the title its page shows (no drift between the two)."""
    nb = load(name)
    title = nb.cells[1].source.strip().splitlines()[0].lstrip("#").strip()
    stem = name.split("/")[-1].removesuffix(".ipynb")
    intro = (ROOT / "intro.md").read_text(encoding="utf-8")
    assert f"| [{title}](chapters/{stem}.ipynb)" in intro, (
        f"intro.md's chapter map must link {stem} as [{title}] (the chapter's own title)")


def live_only(cell) -> bool:
    """A live-only cell (e.g. a download of real weights): tagged skip-execution (nbclient and myst-nb do not run
    it) and nbval-skip (nbval does not run it); it is committed without outputs."""
    tags = cell.metadata.get("tags", [])
    return "skip-execution" in tags and "nbval-skip" in tags


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_code_cell_was_executed_in_order(name):
    nb = load(name)
    counts = [c.execution_count for c in code_cells(nb) if not live_only(c)]
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code" and "skip-execution" in c.metadata.get("tags", []):
            assert live_only(c) and not c.outputs and c.execution_count is None, (
                f"{name} cell {i}: a skip-execution cell must also be tagged nbval-skip and carry no outputs")
    missing = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.execution_count is None
               and not live_only(c)]
    assert not missing, f"{name}: code cells {missing} have no execution_count (run the notebook top to bottom)"
    assert counts == list(range(1, len(counts) + 1)), (
        f"{name}: execution counts {counts} are not 1..N: run it top to bottom in a fresh kernel")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_error_outputs(name):
    nb = load(name)
    errors = [(i, o.get("ename")) for i, c in enumerate(nb.cells) if c.cell_type == "code"
              for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{name}: committed error outputs {errors}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_output_loads_from_another_host(name):
    nb = load(name)
    bad = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for mime, text in output_texts(cell):
            for pattern in (REMOTE_LOAD, CDN_HOSTS):
                hit = pattern.search(text)
                if hit:
                    bad.append(f"cell {i} {mime}: ...{text[max(0, hit.start() - 40):hit.end() + 60]!r}")
    assert not bad, f"{name}: outputs reference a remote host (the book must work offline):\n" + "\n".join(bad)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_each_figure_is_stored_once(name):
    """A figure output of tinytf.viz.show holds the figure once: its plotly JSON (what JupyterLab draws, nbval
    compares and the book's mime render plugin turns into the page's HTML) and its title as text/plain; no HTML
    copy of it (that is Colab's and classic Jupyter's live output only)."""
    nb = load(name)
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "application/vnd.plotly.v1+json" in data or "plotly-graph-div" in str(data.get("text/html", "")):
                assert set(data) == {"application/vnd.plotly.v1+json", "text/plain"}, (
                    f"{name} cell {i}: a figure output with {sorted(data)}; re-execute it (tinytf.viz.show)")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_widget_outputs_carry_a_static_note(name):
    """A live-only widget view is never rendered in the HTML book; its text/html note is."""
    nb = load(name)
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                note = data.get("text/html", "")
                assert "launch" in note.lower() and ("binder" in note.lower() or "colab" in note.lower()), (
                    f"{name} cell {i}: widget output without a text/html note pointing to Binder/Colab")


@pytest.mark.parametrize("name", LESSONS)
def test_exercises_have_hidden_solutions(name):
    nb = load(name)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    blocks = DETAILS.findall(markdown)
    assert blocks, f"{name}: no <details><summary>…</summary>…</details> solution/answer block"
    for block in blocks:
        body = re.sub(r"<summary>.*?</summary>", "", block, flags=re.S)
        body = re.sub(r"</?details>", "", body).strip()
        assert body, f"{name}: an empty <details> block"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_seeded(name):
    nb = load(name)
    source = "\n".join(c.source for c in code_cells(nb))
    assert "seed_everything(" in source, f"{name}: call tinytf.seed_everything(0) before anything random"


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # every control character except newline (\n)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_markdown_holds_no_control_characters(name):
    """A tab or backspace in a markdown cell is almost always a Python escape gone wrong: "\\text" written
    through a string that turned "\\t" into a tab renders as "ext{bytes}" in the formula."""
    nb = load(name)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            hit = CONTROL.search(cell.source)
            assert not hit, (f"{name} cell {i}: control character {hit.group(0)!r} in "
                             f"{cell.source[max(0, hit.start() - 40): hit.end() + 40]!r}")


# A "<word>" in markdown prose is read by the browser as an unknown HTML tag and vanishes from the page:
# tokens such as <eos>, <bos>, <pad> belong in backticks. Code blocks, code spans and math are stripped first.
KNOWN_HTML = {"a", "abbr", "b", "blockquote", "br", "center", "code", "dd", "del", "details", "div", "dl", "dt",
              "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "iframe", "img", "ins",
              "kbd", "li", "mark", "ol", "p", "pre", "s", "small", "span", "strong", "sub", "summary", "sup",
              "table", "tbody", "td", "th", "thead", "tr", "u", "ul"}
FENCED = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
TAG_LIKE = re.compile(r"</?([A-Za-z][A-Za-z0-9_-]*)[^<>\n]*>")


def bare_tags(markdown: str) -> list:
    text = MATH.sub("", CODE_SPAN.sub("", FENCED.sub("", markdown)))
    return [m.group(0) for m in TAG_LIKE.finditer(text) if m.group(1).lower() not in KNOWN_HTML]


def test_bare_tags_detector():
    assert bare_tags("the source has 12 positions, <eos> included") == ["<eos>"]
    assert bare_tags("row 0 reads `<bos>`; <details><summary>x</summary></details>") == []
    assert bare_tags("```python\nx = '<pad>'\n```\n$a<b>c$") == []


DOCS_WITH_SOURCE = [n for n in toc_docnames() if doc_source(n) is not None]


def markdown_sources(name: str) -> list:
    """The markdown a reader reads on a page: a notebook's markdown cells, or the whole .md file."""
    path = doc_source(name)
    if path.suffix == ".ipynb":
        return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]
    return [path.read_text(encoding="utf-8")]


# Sphinx's gettext builder does not extract a markdown table that sits inside a directive ({dropdown},
# {admonition}, {note} ...): its cells would stay English in the Chinese edition. Such content is written as a
# list, or the table is moved out of the directive.
DIRECTIVE = re.compile(r"^(`{3,}|:{3,})\{[^}]+\}[^\n]*\n(.*?)^\1\s*$", re.S | re.M)
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$", re.M)


def tables_in_directives(markdown: str) -> list:
    return [m.group(0).splitlines()[0] for m in DIRECTIVE.finditer(markdown) if TABLE_RULE.search(m.group(2))]


def test_tables_in_directives_detector():
    assert tables_in_directives("````{dropdown} Names\n| a | b |\n|---|---|\n| 1 | 2 |\n````\n") == ["````{dropdown} Names"]
    assert tables_in_directives(":::{note}\n| a | b |\n| :-- | --: |\n:::\n") == [":::{note}"]
    assert tables_in_directives("| a | b |\n|---|---|\n\n```{note}\n- a list\n```\n") == []


@pytest.mark.parametrize("name", DOCS_WITH_SOURCE)
def test_no_markdown_table_inside_a_directive(name):
    sources = markdown_sources(name)
    hits = [d for source in sources for d in tables_in_directives(source)]
    assert not hits, (f"{name}: a table inside {hits}: gettext does not extract it, so it stays English in "
                      "the Chinese edition; write it as a list or move it out of the directive")


# A fence (``` or :::) left open swallows the rest of its cell: an opening fence at the end of a cell draws an empty
# code box, one in the middle turns the prose after it into code.
FENCE = re.compile(r"^\s*(`{3,}|:{3,})(.*)$")


def unclosed_fences(markdown: str) -> list:
    """The opening lines of fences that are never closed. Inside a plain code block only its own closing fence
    counts; a directive's body (```{note} ...) is markdown and may hold shorter fences of its own."""
    stack = []  # (fence, directive?, the opening line)
    for line in markdown.splitlines():
        m = FENCE.match(line)
        if not m:
            continue
        fence, rest = m.group(1), m.group(2).strip()
        top = stack[-1] if stack else None
        closes = top is not None and not rest and fence[0] == top[0][0] and len(fence) >= len(top[0])
        if closes:
            stack.pop()
        elif top is None or top[1]:
            stack.append((fence, rest.startswith("{"), line.strip()))
    return [opening for _, _, opening in stack]


def test_unclosed_fences_detector():
    assert unclosed_fences("text:\n```\n") == ["```"]
    assert unclosed_fences("````{dropdown} A\n```python\nx = 1\n```\n````\n") == []
    assert unclosed_fences("```{note}\nbody\n```\nmore\n```python\nx\n") == ["```python"]
    assert unclosed_fences("```\ncode\n````\n") == []  # a longer fence closes a plain block too
    assert unclosed_fences(":::{note}\nA\n:::\n") == []


@pytest.mark.parametrize("name", DOCS_WITH_SOURCE)
def test_every_fence_is_closed(name):
    hits = [f for source in markdown_sources(name) for f in unclosed_fences(source)]
    assert not hits, f"{name}: fences never closed {hits} (an empty code box, or prose rendered as code)"


def backticks_in_fence_info(markdown: str) -> list:
    """Opening lines of backtick fences whose info string holds a backtick (```{dropdown} Why `x`): CommonMark
    does not open such a fence, so the directive is drawn as a paragraph of text with its ``` showing."""
    return [line.strip() for line in markdown.splitlines()
            if (m := FENCE.match(line)) and m.group(1).startswith("`") and "`" in m.group(2)]


def test_backticks_in_fence_info_detector():
    assert backticks_in_fence_info("```{dropdown} Why `x` is 1\nbody\n```\n") == ["```{dropdown} Why `x` is 1"]
    assert backticks_in_fence_info("```{dropdown} Why x is 1\nA `code` span\n```\n") == []
    assert backticks_in_fence_info(":::{dropdown} Why `x` is 1\nbody\n:::\n") == []


@pytest.mark.parametrize("name", DOCS_WITH_SOURCE)
def test_no_backtick_in_a_fence_title(name):
    hits = [f for source in markdown_sources(name) for f in backticks_in_fence_info(source)]
    assert not hits, f"{name}: {hits}: a backtick in a ``` fence's title keeps the fence from opening (use :::)"


@pytest.mark.parametrize("name", DOCS_WITH_SOURCE)
def test_markdown_has_no_bare_angle_bracket_words(name):
    sources = markdown_sources(name)
    hits = [tag for source in sources for tag in bare_tags(source)]
    assert not hits, f"{name}: unescaped {hits} in markdown (the browser swallows them); wrap them in backticks"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_printed_floats_carry_no_float32_noise(name):
    """Numbers at float32 rounding level (a few 1e-7) change from one CPU to another: the chapters print
    them as the bound they satisfy (tinytf.below), never their digits."""
    nb = load(name)
    noise = re.compile(r"(?<![\w.])\d\.\d+e-0[6-9]\b|(?<![\w.])\d\.\d+e-[1-9]\d\b|\b0\.0{5,}\d")
    for i, cell in enumerate(code_cells(nb)):
        if "nbval-ignore-output" in cell.metadata.get("tags", []):
            continue
        for mime, text in output_texts(cell):
            if mime in ("stream", "text/plain"):
                hit = noise.search(text)
                assert not hit, f"{name} code cell {i}: prints {hit.group(0)!r}, a float32-noise-level number"


# --- Issue #11: the book's own voice, labelled exercises, implement-and-check exercises, no mid-lesson asserts

HIDDEN_TAGS = {"hide-input", "hide-cell", "remove-input", "remove-cell"}
# The chapters issue #11 covers (chapters added later, e.g. the frontier block, keep their own conventions).
ISSUE_11_CHAPTERS = [n for n in NOTEBOOKS if n.split("/")[-1] in (
    "01_tokens_embeddings_positions", "02_causal_self_attention", "03_normalisation", "04_feed_forward",
    "05_residuals_pre_post_norm", "06_decoder_block", "07_tiny_transformer", "08_encoder_decoder",
    "09_2017_to_2026", "10_generation_kv_cache", "12_misconceptions")]
IMPLEMENT_CHAPTERS = [n for n in ISSUE_11_CHAPTERS if not n.endswith("12_misconceptions")]
VOICE_PAGES = ISSUE_11_CHAPTERS + NOTES  # the book's voice holds on the lab-notes pages too
SOURCE_REFERENCES = re.compile(r"seed 00\d|source (?:page|material)", re.I)


def _tags(cell):
    return set(cell.metadata.get("tags", []))


@pytest.mark.parametrize("name", VOICE_PAGES)
def test_no_references_to_source_pages(name):
    """Readers never see the pages the book was written from: no "seed 001", "source material" in its text
    (markdown, code shown to readers, printed outputs)."""
    nb = load(name)
    hits = []
    for i, cell in enumerate(nb.cells):
        texts = [cell.source] + [t for mime, t in output_texts(cell) if mime in ("stream", "text/plain")] \
            if cell.cell_type == "code" else [cell.source]
        for text in texts:
            hit = SOURCE_REFERENCES.search(text)
            if hit:
                hits.append(f"cell {i}: ...{text[max(0, hit.start() - 40): hit.end() + 40]!r}")
    assert not hits, f"{name}: the text refers to its source pages:\n" + "\n".join(hits)


def test_glossary_and_intro_have_no_source_references():
    for page in ("chapters/glossary.md", "intro.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        hit = SOURCE_REFERENCES.search(text)
        assert not hit, f"{page}: ...{text[max(0, hit.start() - 40): hit.end() + 40]!r}"


def _exercise_text(nb) -> str:
    """The markdown between '## Exercises' and the next '## ' heading (the self-check)."""
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    match = re.search(r"^## Exercises\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    return match.group(1) if match else ""


EXERCISE_START = re.compile(r"^\*\*(\d+)\.(.*)$", re.M)


@pytest.mark.parametrize("name", ISSUE_11_CHAPTERS)
def test_every_exercise_is_labelled(name):
    nb = load(name)
    exercises = EXERCISE_START.findall(_exercise_text(nb))
    assert exercises, f"{name}: no '## Exercises' section with numbered exercises (**1. ...)"
    numbers = [int(n) for n, _ in exercises]
    assert numbers == list(range(1, len(numbers) + 1)), f"{name}: exercises numbered {numbers}"
    unlabelled = [n for n, rest in exercises if not re.match(r"\s*\((Easy|Medium|Hard)\)", rest)]
    assert not unlabelled, f"{name}: exercises {unlabelled} carry no (Easy), (Medium) or (Hard) label"


CHECK_CALL = re.compile(r"""tinytf\.exercises\.check\(\s*["'](\w+)["']""")


def _stream_text(cell) -> str:
    return "".join(t for mime, t in output_texts(cell) if mime in ("stream", "text/plain"))


@pytest.mark.parametrize("name", IMPLEMENT_CHAPTERS)
def test_implement_and_check_exercise(name):
    """Chapters 1-10 of issue #11: an exercise cell with a stub the reader replaces (the checker reports 'not attempted'),
    then a collapsed cell running the same checker on a solution, which passes with a portable report."""
    from tinytf import exercises

    nb = load(name)
    cells = nb.cells
    stubs = [(i, CHECK_CALL.search(c.source).group(1)) for i, c in enumerate(cells)
             if c.cell_type == "code" and CHECK_CALL.search(c.source) and "raise NotImplementedError" in c.source
             and not (_tags(c) & HIDDEN_TAGS)]
    assert stubs, f"{name}: no visible exercise cell with a stub (raise NotImplementedError) and tinytf.exercises.check"
    for i, exercise in stubs:
        assert exercise in exercises.EXERCISES, f"{name} cell {i}: unknown exercise {exercise!r}"
        assert f"{exercise}: not attempted" in _stream_text(cells[i]), (
            f"{name} cell {i}: the stub's committed output must say the exercise is not attempted yet")
        solutions = [j for j, c in enumerate(cells) if j > i and c.cell_type == "code" and _tags(c) & HIDDEN_TAGS
                     and CHECK_CALL.search(c.source) and CHECK_CALL.search(c.source).group(1) == exercise]
        assert solutions, f"{name}: no collapsed solution cell (hide-input or hide-cell) checking {exercise!r} after cell {i}"
        report = _stream_text(cells[solutions[0]])
        assert re.search(rf"^{exercise}: passed: ", report, re.M), f"{name}: the solution of {exercise!r} does not pass: {report!r}"
        assert "NOT below" not in report


def _top_level_asserts(source: str):
    return [line for line in source.splitlines() if line.startswith("assert ")]


@pytest.mark.parametrize("name", VOICE_PAGES)
def test_asserts_are_not_in_the_middle_of_a_lesson(name):
    """Checks that guard the book's correctness live in collapsed cells (remove-input / hide-input)."""
    nb = load(name)
    visible = [(i, _top_level_asserts(c.source)) for i, c in enumerate(nb.cells)
               if c.cell_type == "code" and not (_tags(c) & HIDDEN_TAGS)]
    visible = [(i, lines) for i, lines in visible if lines]
    assert not visible, f"{name}: asserts in cells shown to readers: {visible}"


@pytest.mark.parametrize("name", VOICE_PAGES)
def test_no_test_harness_talk(name):
    """The teaching text does not talk about the book's test machinery."""
    nb = load(name)
    harness = re.compile(r"notebook (?:tests|fail)|the book's tests|not compared by|the tests do not compare|"
                         r"make the notebook fail|nbval", re.I)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" or not (_tags(cell) & HIDDEN_TAGS):
            hit = harness.search(cell.source)
            assert not hit, f"{name} cell {i}: ...{cell.source[max(0, hit.start() - 60): hit.end() + 40]!r}"
