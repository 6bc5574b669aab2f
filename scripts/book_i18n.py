"""Sphinx extension (loaded through _config.yml -> sphinx.local_extensions) for the book's two editions:
English at ``_build/html/`` and Chinese at ``_build/html/zh/`` (scripts/build_book.py builds both; the
Chinese one with ``language: zh_CN`` and the catalogues of ``locales/zh_CN/LC_MESSAGES``).

* **Numbered titles are translated.** Sphinx translates a message by parsing its msgstr with the page's own
  parser, and keeps the English text when the result is not a paragraph. A chapter's title is
  ``# 3. Normalisation: ...``: its message, ``3. Normalisation: ...``, parsed as Markdown is an *ordered
  list* starting at 3, not a paragraph, so every chapter kept its English ``<h1>`` and ``<title>`` in the
  Chinese edition although the catalogue translates it (``TranslateListLikeTitles``, right after Sphinx's
  ``Locale`` transform, parses such a title's msgstr with the list marker escaped).
* **Display formulas may translate the words of their \\text{...}** (and nothing else: ``i18n_check.math_key``).
  Sphinx would parse such a msgstr as a literal block, which MyST reads as "::" (``TranslateMathBlocks`` puts the
  translated formula in place before that).
* **A language switch in every page's header** (``_templates/tinytf-lang-switch.html``, placed by
  ``html_theme_options.article_header_end``): "中文" on an English page, "English" on a Chinese page, a relative
  link to the same page of the other edition (so it works from ``file://``), with ``hreflang``, its text marked
  with the other edition's ``lang`` and a Chinese tooltip (阅读本页的中文版 / 阅读本页英文版).
* **The API page stays English** in the Chinese edition (it is generated from the code's English docstrings):
  it gets a one-line Chinese note that says so, and its content is marked ``lang="en"``.
* The Chinese edition's ``index.html`` (the forward to the landing page) says so in Chinese.
* **The interface is Chinese too** (what Sphinx, the themes and myst-nb write around the text). Sphinx reads a
  project catalogue of its own domain, ``locales/zh_CN/LC_MESSAGES/sphinx.po``, before its zh_CN catalogue and
  pydata-sphinx-theme's: it holds what those leave empty (the permalinks' "Link to this heading", the colour-mode
  button, the footer's copyright). Three sources have no gettext call, so this module translates them through that
  same catalogue: myst-nb's hidden-cell prompts ("Show code cell source", its summary's aria-label; the node's HTML
  visitor is replaced by one that translates), the sphinx-book-theme templates' fixed attributes
  (``TEMPLATE_ATTRIBUTES``, replaced in the written pages), and the API page's title (``API_TITLE_ZH``, in the
  sidebar, the next/previous links and the ``<title>``). sphinx-book-theme's own domain reads
  ``booktheme.po`` first (``booktheme_catalogue``: the launch buttons; 打印为 PDF instead of the theme's 列印成 PDF);
  the launch buttons' tooltips, which the theme glues together ("Launch on" + " Binder"), are rewritten in the
  written pages as whole phrases (``launch_titles_zh``: 在 Binder 中启动, 在 Colab 中启动).
  The search field's placeholder is ``search_bar_text`` of the Chinese config (scripts/build_book.py).
* **The Chinese search index in seconds, not minutes.** Sphinx's Chinese search language
  (``sphinx.search.zh.SearchChinese``) keeps every Latin word it has split in a class-level *list* and tests each
  word it stems for membership in it: quadratic in the book's length (a quarter of the Chinese build's time, ~19 s).
  ``fast_chinese_search`` makes that list a set with the list's ``extend``: the same words, the same answers to
  ``in``, so the same index (tests/book/test_i18n.py compares both on a sample).
"""
from __future__ import annotations

import gettext
import re
from html import escape
from os import path
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.locale import _
from sphinx.search import zh as search_zh
from sphinx.transforms import SphinxTransform

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "_templates"
ZH_DIR = "zh"  # the Chinese edition's folder inside the English one
API_DOC = "chapters/api"
API_NOTE_ZH = ("本页由 tinytf 代码中的英文文档字符串（docstring）自动生成，因此正文保持英文。页面的编排与本书一致："
               "先是<strong>模型核心</strong>（<code>tinytf/*.py</code>，按各章讲授的顺序），然后是<strong>实验室</strong>"
               "（<code>tinytf/lab/</code>：任务与训练、检查点、测量、计算器、互操作与练习），最后是<strong>图形</strong>"
               "（<code>tinytf/viz/</code>）。各章用到的一切也都能直接从 <code>tinytf</code> 导入，"
               "例如 <code>tinytf.TinyConfig</code>、<code>tinytf.generate</code>。文档字符串中的形状字母："
               "B 批大小，T 查询位置数，S 键位置数，C 即 <code>d_model</code>，H 头数，H_kv 键/值头数，D 每头维度，"
               "F 即 <code>d_ff</code>，V 词表大小。")
API_TITLE_ZH = "API 参考"  # the API page's title in the Chinese edition (its content stays English)
# attributes that sphinx-book-theme's templates write in English without a gettext call; their msgids are in
# locales/zh_CN/LC_MESSAGES/sphinx.po
TEMPLATE_ATTRIBUTES = (("title", "Toggle primary sidebar"), ("title", "Toggle secondary sidebar"),
                       ("aria-label", "Main"), ("aria-label", "Page"))

# the launch buttons' tooltips: sphinx-book-theme writes translation("Launch on") + " Binder", which no word order
# of Chinese can translate (启动于 Binder); the Chinese pages get the whole phrase instead (chinese_index)
LAUNCH_TITLE = re.compile(r'title="(?:Launch on|启动于) (Binder|Colab|JupyterHub|Deepnote)"')
LAUNCH_TITLE_ZH = 'title="在 {} 中启动"'

# what Markdown reads as the start of a block other than a paragraph: "3. ", "3) ", "- ", "+ ", "* ", "# ", "> "
BLOCK_START = re.compile(r"^(\s*)(\d{1,9}(?=[.)](?:\s|$))|[-+*#>](?=\s|$))")


def is_chinese(config) -> bool:
    return str(config.language or "en").lower().startswith("zh")


def escape_block_start(msgstr: str) -> str:
    """``3. 归一化`` -> ``3\\. 归一化``: the same text, read as a paragraph."""
    hit = BLOCK_START.match(msgstr)
    if not hit:
        return msgstr
    marker = hit.group(2)
    if marker[0].isdigit():
        end = hit.end(2)
        return msgstr[:end] + "\\" + msgstr[end:]
    return msgstr[:hit.start(2)] + "\\" + msgstr[hit.start(2):]


def page_catalog(transform: SphinxTransform):
    """The translated catalogue of the page `transform` works on, or None (English build, or no catalogue)."""
    from sphinx.locale import init as init_locale
    from sphinx.util.i18n import docname_to_domain

    config = transform.config
    if not config.language or config.language == "en":
        return None
    domain = docname_to_domain(transform.env.docname, config.gettext_compact)
    dirs = [path.join(transform.env.srcdir, d) for d in config.locale_dirs]
    catalog, has_catalog = init_locale(dirs, config.language, domain)
    return catalog if has_catalog else None


class TranslateListLikeTitles(SphinxTransform):
    """Translate the section titles that Sphinx's ``Locale`` transform (priority 20) left in English because
    their msgstr parses as a list (``3. ...``) or another block rather than a paragraph."""

    default_priority = 21

    def apply(self, **kwargs) -> None:
        from sphinx.transforms.i18n import publish_msgstr
        from sphinx.util.nodes import extract_messages

        catalog = page_catalog(self)
        if catalog is None:
            return
        for node, msg in extract_messages(self.document):
            if not isinstance(node, nodes.title) or node.get("translated"):
                continue
            msgstr = catalog.gettext(msg)
            if not msgstr.strip() or msgstr == msg:
                continue
            escaped = escape_block_start(msgstr)
            if escaped == msgstr:
                continue  # not the list case: leave Sphinx's decision alone
            patch = publish_msgstr(self.app, escaped, self.document["source"], node.line, self.config,
                                   self.document.settings)
            if not isinstance(patch, nodes.paragraph):
                continue
            node.children = []
            node.extend(patch.children)
            node["translated"] = True


class TranslateMathBlocks(SphinxTransform):
    """Translate a display formula (a math_block) whose msgstr translates only the words of its \\text{...}
    (i18n_check.math_key). Sphinx's ``Locale`` transform (priority 20) parses a literal node's msgstr as
    ``::`` + an indented block, which MyST reads as the paragraph "::": the formula came out as ``\\[::\\]``.
    Here the formula's text is replaced directly, before ``Locale``, and marked translated so that it skips it.
    A msgstr that changes anything else of the formula is not used (the English formula stays)."""

    default_priority = 19

    def apply(self, **kwargs) -> None:
        from sphinx.util.nodes import extract_messages

        from i18n_check import math_key

        catalog = page_catalog(self)
        if catalog is None:
            return
        for node, msg in extract_messages(self.document):
            if not isinstance(node, nodes.math_block) or node.get("translated"):
                continue
            msgstr = catalog.gettext(msg)
            if not msgstr.strip() or msgstr == msg or math_key(msgstr) != math_key(msg):
                continue
            node.children = []
            node.append(nodes.Text(msgstr))
            node.rawsource = msgstr
            node["translated"] = True


class TranslateApiTitle(SphinxTransform):
    """The API page's title in Chinese (the page has no catalogue: its content stays English). Applied to the doctree,
    so the sidebar, the next/previous links, the <title> and the <h1> all say it; page_context marks the <h1>
    zh-CN inside the page's English content."""

    default_priority = 21

    def apply(self, **kwargs) -> None:
        if not is_chinese(self.config) or self.env.docname != API_DOC:
            return
        for title in self.document.findall(nodes.title):
            title.clear()
            title += nodes.Text(API_TITLE_ZH)
            break


def visit_hidden_cell(self, node) -> None:
    """myst-nb's HideCodeCellNode visitor (myst_nb.sphinx_.visit_HideCellInput), its English prompts and aria-label
    translated through the "sphinx" domain (locales/zh_CN/LC_MESSAGES/sphinx.po; unchanged in English)."""
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n')
    self.body.append(f'<summary aria-label="{escape(str(_("Toggle hidden content")))}">\n')
    self.body.append(f'<p class="collapsed admonition-title">{escape(str(_(node["prompt_show"])))}</p>\n')
    self.body.append(f'<p class="expanded admonition-title">{escape(str(_(node["prompt_hide"])))}</p>\n')
    self.body.append("</summary>\n")


def booktheme_catalogue(app: Sphinx) -> None:
    """Chinese edition: sphinx-book-theme's domain ("booktheme") reads locales/<lang>/LC_MESSAGES/booktheme.po
    first, the theme's own catalogue after it. Sphinx compiles only page catalogues and sphinx.po, so the .mo is
    written here, next to the .po that the build reads (the copy in _build/zh)."""
    from sphinx import locale
    from sphinx.util.i18n import CatalogInfo

    if not is_chinese(app.config):
        return
    for folder in app.config.locale_dirs:
        base = Path(app.srcdir, folder)
        messages = base / app.config.language / "LC_MESSAGES"
        if not (messages / "booktheme.po").is_file():
            continue
        info = CatalogInfo(str(messages), "booktheme", "utf-8")
        if info.is_outdated():
            info.write_mo(app.config.language)
        ours = gettext.translation("booktheme", str(base), [app.config.language])
        theirs = locale.translators.get(("general", "booktheme"))
        if theirs is not None:
            ours.add_fallback(theirs)
        locale.translators[("general", "booktheme")] = ours
        return


def add_templates(app: Sphinx, config) -> None:
    if str(TEMPLATES) not in [str(Path(app.confdir, t)) for t in config.templates_path]:
        config.templates_path = [*config.templates_path, str(TEMPLATES)]


def other_edition(app: Sphinx, pagename: str) -> dict:
    """The header's link to the same page in the other edition (relative, so file:// works). Its text names the
    other language in that language (``lang``); its tooltip is Chinese on both editions, so ``title_lang`` marks it
    where the page is English (on a Chinese page it has the page's language)."""
    up = "../" * pagename.count("/")
    if is_chinese(app.config):
        return {"href": f"{up}../{pagename}.html", "lang": "en", "text": "English", "title": "阅读本页英文版",
                "title_lang": ""}
    return {"href": f"{up}{ZH_DIR}/{pagename}.html", "lang": "zh-CN", "text": "中文", "title": "阅读本页的中文版",
            "title_lang": "zh-CN"}


def page_context(app: Sphinx, pagename, templatename, context, doctree) -> None:
    if app.builder.format != "html":
        return
    context["tinytf_edition_switch"] = other_edition(app, pagename)
    if is_chinese(app.config) and pagename == API_DOC and "body" in context:
        body = context["body"].replace("<h1>", '<h1 lang="zh-CN">', 1)  # API_TITLE_ZH in the English content
        # the title, then the Chinese note (what the page holds), then the English content
        end = body.find("</h1>") + len("</h1>")
        title, rest = (body[:end], body[end:]) if end > len("</h1>") else ("", body)
        close = rest.rstrip()
        close, tail = (close[:-len("</section>")], "</section>") if close.endswith("</section>") else (close, "")
        context["body"] = (f'{title}\n<p class="tinytf-lang-note" lang="zh-CN">{API_NOTE_ZH}</p>\n'
                           f'<div lang="en">\n{close}\n</div>{tail}\n')


ZH_INDEX = {'<html lang="en">': '<html lang="zh-CN">', "The book starts at ": "本书从这里开始：", "</a>.</p>": "</a>。</p>"}


def sidebar_captions(app: Sphinx) -> dict:
    """The table of contents' part captions ("Chapters", "Reference") -> their msgstr in the root page's catalogue.
    The theme draws the sidebar from the toctree as sphinx-external-toc inserted it, after Sphinx's translation
    step, so the captions reach every page in English; the built pages get them replaced here."""
    import yaml
    from babel.messages.pofile import read_po

    toc = yaml.safe_load((Path(app.srcdir) / "_toc.yml").read_text(encoding="utf-8"))
    captions = [part["caption"] for part in toc.get("parts", []) if part.get("caption")]
    out = {}
    for folder in app.config.locale_dirs:
        po = Path(app.srcdir, folder, app.config.language, "LC_MESSAGES", f"{app.config.root_doc}.po")
        if po.is_file():
            with po.open("rb") as handle:
                catalog = read_po(handle)
            out.update({c: catalog[c].string for c in captions if catalog.get(c) is not None and catalog[c].string})
    return out


def launch_titles_zh(html_text: str) -> str:
    """The launch buttons' tooltips as whole Chinese phrases: title="启动于 Binder" -> title="在 Binder 中启动"."""
    return LAUNCH_TITLE.sub(lambda m: LAUNCH_TITLE_ZH.format(m.group(1)), html_text)


def chinese_index(app: Sphinx, exception) -> None:
    """After book_offline.write_index: the Chinese edition's forward page in Chinese, and the sidebar's part
    captions, the theme templates' fixed attributes (TEMPLATE_ATTRIBUTES) and the launch tooltips translated on every
    page."""
    if exception is not None or app.builder.format != "html" or not is_chinese(app.config):
        return
    captions = sidebar_captions(app)
    attributes = {f'{name}="{msgid}"': f'{name}="{escape(str(_(msgid)))}"' for name, msgid in TEMPLATE_ATTRIBUTES}
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = text
        for english, chinese in captions.items():
            new = new.replace(f'<span class="caption-text">{english}</span>', f'<span class="caption-text">{chinese}</span>')
        for english, chinese in attributes.items():
            new = new.replace(english, chinese)
        new = launch_titles_zh(new)
        if new != text:
            page.write_text(new, encoding="utf-8")
    index = Path(app.outdir) / "index.html"
    if index.is_file():
        text = index.read_text(encoding="utf-8")
        for old, new in ZH_INDEX.items():
            text = text.replace(old, new)
        index.write_text(text, encoding="utf-8")


class _TermSet(set):
    """A set that also takes ``extend`` (what SearchChinese.split calls on its list of Latin terms)."""

    def extend(self, words) -> None:
        self.update(words)


def fast_chinese_search(app: Sphinx, config) -> None:
    """Give Sphinx's Chinese search language a set of Latin terms instead of a list (see the module docstring)."""
    if not str(config.language or "").startswith("zh"):
        return
    if not isinstance(search_zh.SearchChinese.latin_terms, _TermSet):
        search_zh.SearchChinese.latin_terms = _TermSet(search_zh.SearchChinese.latin_terms)


def setup(app: Sphinx):
    from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput

    app.connect("config-inited", fast_chinese_search)
    app.add_transform(TranslateListLikeTitles)
    app.add_transform(TranslateMathBlocks)
    app.add_transform(TranslateApiTitle)
    app.add_node(HideCodeCellNode, override=True, html=(visit_hidden_cell, depart_HideCellInput))
    app.connect("builder-inited", booktheme_catalogue)
    app.connect("config-inited", add_templates)
    app.connect("html-page-context", page_context)
    app.connect("build-finished", chinese_index, priority=950)  # after book_offline.write_index (900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
