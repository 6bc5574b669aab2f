"""The docstring corpus is kept on disk between processes: the same corpus from the cache, a new one when a file changes."""
from __future__ import annotations

import os

from tinytf.lab import textdata


def _write(root, name, doc):
    (root / name).write_text(f'"""{doc}"""\n\ndef f():\n    """A function."""\n', encoding="utf-8")


def test_cached_corpus_equals_the_extraction_and_follows_changes(tmp_path, monkeypatch):
    root, cache = tmp_path / "lib", tmp_path / "cache"
    root.mkdir()
    monkeypatch.setenv("TINYTF_CACHE", str(cache))
    for i in range(12):
        _write(root, f"m{i:02d}.py", f"Module number {i}.")
    first = textdata.stdlib_corpus(root)
    assert len(list(cache.glob("corpus-*.json"))) == 1
    textdata._stdlib_corpus.cache_clear()  # a new process: only the disk cache is left
    again = textdata.stdlib_corpus(root)
    assert again is not first and again == first and again.sha256 == first.sha256
    assert bytes(again.val.tolist()) == bytes(first.val.tolist())
    # a changed file (new size and mtime) is extracted again, not taken from the cache
    _write(root, "m03.py", "Module number three, rewritten.")
    os.utime(root / "m03.py", ns=(1, 1))
    textdata._stdlib_corpus.cache_clear()
    changed = textdata.stdlib_corpus(root)
    assert "rewritten" in "".join(changed.texts) and changed.sha256 != first.sha256
    assert len(list(cache.glob("corpus-*.json"))) == 2


def test_a_broken_cache_file_is_extracted_again(tmp_path, monkeypatch):
    root, cache = tmp_path / "lib", tmp_path / "cache"
    root.mkdir()
    monkeypatch.setenv("TINYTF_CACHE", str(cache))
    _write(root, "a.py", "Alpha.")
    first = textdata.stdlib_corpus(root)
    for f in cache.glob("corpus-*.json"):
        f.write_text("{not json", encoding="utf-8")
    textdata._stdlib_corpus.cache_clear()
    assert textdata.stdlib_corpus(root) == first
