"""Check translated gettext catalogues (locales/<lang>/LC_MESSAGES/**/*.po) message by message.

    python scripts/i18n_check.py                      # every catalogue of every language
    python scripts/i18n_check.py path/to/page.po ...  # some catalogues

A message is reported when its translation is missing, a copy of an English sentence, or marked fuzzy, or when it does not keep the
markup of the English text: every inline code span, math span ($...$, $$...$$), MyST role
({cite:p}`key`, {ref}`label`, {numref}`...`, ...; the title of {ref}`title <label>` may be
translated), link target ](...), URL and footnote reference
([^1]) must appear in the translation exactly as often as in the original (order may change, as
Chinese word order differs). Exit status 1 when anything is reported.
"""
from __future__ import annotations

import re
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
# an untitled cross-reference ({ref}`label`) may gain a title in translation ({ref}`11.3 节 <label>`)
_UNTITLED_ROLE = re.compile(r"^(\{(?:ref|numref|doc|term)\})`([^`<>]+)`$")


def protected(text: str) -> Counter:
    """The spans of `text` that a translation must keep unchanged, with their counts. For a cross-reference
    only its role and target count: a translation may translate its title ({ref}`the title <label>`) or give an
    untitled one a title ({ref}`label` -> {ref}`11.3 节 <label>`)."""
    spans = (m.group(0) for m in _TOKENS.finditer(text))
    return Counter(_UNTITLED_ROLE.sub(r"\1<\2>", _TITLED_ROLE.sub(r"\1<\2>", span)) for span in spans)


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
        want, got = protected(msgid), protected(msgstr)
        if want != got:
            missing = sorted((want - got).elements())
            extra = sorted((got - want).elements())
            out.append(f"markup changed in {short!r}: missing {missing} extra {extra}")
    return out


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(LOCALES.glob("*/LC_MESSAGES/**/*.po"))
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
