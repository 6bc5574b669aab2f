"""One exception type for bad input, so callers (and widgets) can catch it and show its message."""


class TinyTFInputError(ValueError):
    """Raised for input a model cannot use; the message says what was given and what was expected."""
