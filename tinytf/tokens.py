"""Byte-level tokens: each UTF-8 byte is one token id in [0, 256). No training, no download."""
from __future__ import annotations

import torch

from .errors import TinyTFInputError


# The messages of encode, as templates: the static book's panel (_static/tinytf-panel.js) fills the same
# templates (tinytf.viz.static_panel ships them), so a reader sees the same words in both.
EMPTY_TEXT = "encode: the text is empty; type at least one character"
NOT_IN_VOCAB = "encode: {chars} cannot be encoded: this model's vocabulary has {vocab} byte tokens (ids 0..{last})"


def encode(text: str, vocab_size: int = 256) -> torch.Tensor:
    """'cat' -> tensor([99, 97, 116]). Raises TinyTFInputError for empty text or bytes >= vocab_size."""
    if not isinstance(text, str):
        raise TinyTFInputError(f"encode: expected a string, got {type(text).__name__}")
    if text == "":
        raise TinyTFInputError(EMPTY_TEXT)
    data = text.encode("utf-8")
    bad = [c for c in text if any(b >= vocab_size for b in c.encode("utf-8"))]
    if bad:
        raise TinyTFInputError(NOT_IN_VOCAB.format(chars=repr("".join(dict.fromkeys(bad))), vocab=vocab_size,
                                                   last=vocab_size - 1))
    return torch.tensor(list(data), dtype=torch.long)


def decode(ids) -> str:
    """Token ids -> text (invalid UTF-8 shown as replacement characters)."""
    values = torch.as_tensor(ids).flatten().tolist()
    bad = [i for i in values if not (isinstance(i, int) and 0 <= i < 256)]
    if bad:
        raise TinyTFInputError(f"decode: got {bad[0]!r}, expected byte token ids in [0, 256)")
    return bytes(values).decode("utf-8", errors="replace")


def token_labels(ids) -> list:
    """Readable label per token for plot axes: the character, or its id when unprintable."""
    out = []
    for i in torch.as_tensor(ids).flatten().tolist():
        ch = chr(i) if 32 <= i < 127 else None
        out.append(repr(ch)[1:-1] if ch is not None else f"#{i}")
    return out
