"""Check translated gettext catalogues (locales/<lang>/LC_MESSAGES/**/*.po) message by message.

    python scripts/i18n_check.py                      # every catalogue of every language
    python scripts/i18n_check.py path/to/page.po ...  # some catalogues

A message is reported when its translation is missing, a copy of an English sentence, or marked fuzzy, or when it does not keep the
markup of the English text: every inline code span, math span ($...$, $$...$$; only the words inside a
\\text{...}, or a \\mathrm{...} of whole words, may be translated), MyST role
({cite:p}`key`, {ref}`label`, {numref}`...`, ...; the title of {ref}`title <label>` may be
translated), link target ](...), URL and footnote reference
([^1]) must appear in the translation exactly as often as in the original (order may change, as
Chinese word order differs). In a Chinese catalogue, a cross-reference or link whose visible text begins (ends)
with a Chinese character or punctuation mark must not be separated by a space from a Chinese character before
(after) it ("从 {doc}`第 6 章 <...>` 开始" is drawn "从 第 6 章 开始"); a space next to Latin letters or digits
stays ("见 {ref}`8.7 节 <...>`"). Nor may a bold run that ends with full-width punctuation be followed by a space
("**说法。** 注意力" is drawn "说法。 注意力"): the punctuation goes after the bold ("**说法**。注意力"). Exit status 1
when anything is reported.

    python scripts/i18n_check.py --fix-spacing        # remove those spaces (moving a bold run's punctuation out)
                                                      # in every catalogue, then check
"""
from __future__ import annotations

import re
import unicodedata
import sys
from collections import Counter
from pathlib import Path

from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[1]
LOCALES = ROOT / "locales"

# Things a translation must carry over verbatim. Roles first, so that a role's backticked target is
# counted as part of the role and not again as a code span.
_ROLE = r"\{[a-z:]+\}`[^`]*`"
_CODE = r"``[^`]+``|`[^`\n]+`"
_DISPLAY_MATH = r"\$\$.+?\$\$"
_MATH = r"(?<![\\$])\$(?!\$)[^$]+?(?<![\\$])\$"
_LINK_TARGET = r"\]\([^)]*\)"
_URL = r"https?://[^\s)>\]]+"
_FOOTNOTE = r"\[\^[^\]]+\]"
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_TOKENS = re.compile("|".join(f"(?:{p})" for p in
                              (_ROLE, _CODE, _DISPLAY_MATH, _MATH, _LINK_TARGET, _URL, _FOOTNOTE)), re.S)


_TITLED_ROLE = re.compile(r"^(\{(?:ref|numref|doc|term)\})`[^`<]*<([^`>]+)>`$")
# an untitled cross-reference ({ref}`label`) may gain a title in translation ({ref}`10.3 节 <label>`)
_UNTITLED_ROLE = re.compile(r"^(\{(?:ref|numref|doc|term)\})`([^`<>]+)`$")


_CJK = "\u3000-\u303f\u4e00-\u9fff\uff00-\uffef\u201c\u201d"
_IS_CJK = re.compile(f"[{_CJK}]")
# a cross-reference with a title ({ref}`title <label>`, {doc}`title <page>`) or a Markdown link [text](target)
_LINKED = re.compile(r"(?P<pre> +)?(?P<link>\{(?:ref|numref|doc|term)\}`(?P<title>[^`<]+?) *<[^`>]+>`"
                     r"|\[(?P<text>[^\]]+)\]\([^)]*\))(?P<post> +)?")


def _spacing_fixed(text: str) -> str:
    """`text` without the spaces between a Chinese character and a link whose visible text touches it with a
    Chinese character (see the module's docstring)."""
    def fix(m: re.Match) -> str:
        shown = (m.group("title") or m.group("text") or "").strip()
        before = text[:m.start()][-1:] if m.group("pre") else ""
        after = text[m.end():][:1] if m.group("post") else ""
        pre = "" if (before and _IS_CJK.match(before) and _IS_CJK.match(shown[:1])) else (m.group("pre") or "")
        post = "" if (after and _IS_CJK.match(after) and _IS_CJK.match(shown[-1:])) else (m.group("post") or "")
        return pre + m.group("link") + post
    return _LINKED.sub(fix, text)


# a bold run ending with full-width punctuation, then spaces: "**说法。** 注意力" is drawn "说法。 注意力", and the space
# cannot simply go (CommonMark: a closing "**" after punctuation and before a letter does not close), so the
# punctuation moves out of the bold: "**说法**。注意力" (the run of 。：？！；， at its end, or else a closing ）)
_BOLD = re.compile(r"\*\*(?P<body>[^*\n]+?)\*\*(?P<space> +(?=\S))?")
_SENTENCE_END = re.compile(r"[。：？！；，]+$")


def _bold_spacing_fixed(text: str) -> str:
    """`text` with the punctuation that ends a bold run followed by spaces, or directly by a letter, moved out of
    the bold, and the spaces removed (see _BOLD)."""
    def fix(m: re.Match) -> str:
        body = m.group("body")
        end = _SENTENCE_END.search(body)
        cut = end.start() if end else (len(body) - 1 if body.endswith("）") else None)
        if cut is None or cut == 0:
            return m.group(0)
        after = m.string[m.end():m.end() + 1]
        # no space, but a letter right after the "**": it does not close either ("**说法。**注意力" shows the "**")
        glued = after and not after.isspace() and not unicodedata.category(after).startswith(("P", "S"))
        if not (m.group("space") or glued):
            return m.group(0)
        return f"**{body[:cut]}**{body[cut:]}"
    return _BOLD.sub(fix, text)


# the words inside maths that a translation may translate: the contents of every \text{...}, and of a \mathrm{...}
# that holds whole words (two letters or more, or Chinese), not a symbol such as \mathrm{d} or \mathrm{T}
_MATH_TEXT = re.compile(r"\\text\{[^{}]*\}")
_MATH_WORDS = re.compile(rf"\\mathrm\{{(?:[A-Za-z]{{2,}}|[^{{}}]*[{_CJK}][^{{}}]*)(?:[ \\,~-]+[A-Za-z]{{2,}})*\}}")


def math_key(math: str) -> str:
    """`math` with the words a translation may translate replaced by a placeholder: two formulas are the same
    formula when their keys are equal. Every other change (a symbol, an operator, a number) still differs."""
    return _MATH_WORDS.sub(r"\\mathrm{…}", _MATH_TEXT.sub(r"\\text{…}", math))


def _is_math(span: str) -> bool:
    return span.startswith("$")


def protected(text: str) -> Counter:
    """The spans of `text` that a translation must keep unchanged, with their counts. For a cross-reference
    only its role and target count: a translation may translate its title ({ref}`the title <label>`) or give an
    untitled one a title ({ref}`label` -> {ref}`10.3 节 <label>`). In maths the words of \\text{...} (and of a
    \\mathrm{...} of whole words) may be translated (``math_key``); everything else in it must stay."""
    spans = (m.group(0) for m in _TOKENS.finditer(text))
    return Counter(math_key(span) if _is_math(span) else
                   _UNTITLED_ROLE.sub(r"\1<\2>", _TITLED_ROLE.sub(r"\1<\2>", span)) for span in spans)


def problems(po_path: Path) -> list[str]:
    """One line per message of `po_path` that is untranslated, fuzzy or changes protected markup."""
    with po_path.open("rb") as handle:
        catalog = read_po(handle)
    out = []
    for message in catalog:
        if not message.id:
            continue  # the header
        msgid = message.id if isinstance(message.id, str) else message.id[0]
        msgstr = message.string if isinstance(message.string, str) else message.string[0]
        short = msgid[:70].replace("\n", " ")
        if not msgstr:
            out.append(f"untranslated: {short!r}")
            continue
        if message.fuzzy:
            out.append(f"fuzzy: {short!r}")
        if msgstr == msgid and "\\" not in msgid and len(_WORD.findall(_TOKENS.sub(" ", msgid))) >= 6:
            # a sentence of English copied as its own translation (display maths, names and code may stay)
            out.append(f"untranslated: {short!r} (the English copied)")
        if _chinese(po_path):
            if _spacing_fixed(msgstr) != msgstr:
                out.append(f"space between Chinese text and a link in {short!r} (python scripts/i18n_check.py "
                           f"--fix-spacing)")
            if _bold_spacing_fixed(msgstr) != msgstr:
                out.append(f"full-width punctuation ending a bold run before a space or a letter in {short!r} "
                           f"(python scripts/i18n_check.py --fix-spacing)")
        want, got = protected(msgid), protected(msgstr)
        if want != got:
            missing = sorted((want - got).elements())
            extra = sorted((got - want).elements())
            out.append(f"markup changed in {short!r}: missing {missing} extra {extra}")
    return out


def _chinese(po_path: Path) -> bool:
    """A catalogue of a Chinese edition (locales/zh_CN/...)."""
    return any(part.lower().startswith("zh") for part in po_path.parts)


def fix_spacing(po_path: Path) -> int:
    """Rewrite the msgstr lines of `po_path` with `_spacing_fixed`; the number of lines changed."""
    lines = po_path.read_text(encoding="utf-8").split("\n")
    changed, in_msgstr = 0, False
    for i, line in enumerate(lines):
        if line.startswith("msgstr "):
            in_msgstr = True
        elif not line.startswith('"'):
            in_msgstr = False
        if in_msgstr:
            new = _bold_spacing_fixed(_spacing_fixed(line))
            if new != line:
                lines[i], changed = new, changed + 1
    if changed:
        po_path.write_text("\n".join(lines), encoding="utf-8")
    return changed


def main(argv: list[str]) -> int:
    fix = "--fix-spacing" in argv
    argv = [a for a in argv if a != "--fix-spacing"]
    paths = [Path(a) for a in argv] or sorted(LOCALES.glob("*/LC_MESSAGES/**/*.po"))
    if fix:
        for path in paths:
            if _chinese(path):
                print(f"{path}: {fix_spacing(path)} line(s) with spaces removed")
    total = 0
    for path in paths:
        found = problems(path)
        total += len(found)
        for line in found:
            print(f"{path}: {line}")
    print(f"{len(paths)} catalogue(s), {total} problem(s)")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
