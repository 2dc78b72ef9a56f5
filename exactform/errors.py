"""The one exception for bad input (standard library only, so the command line can catch it
without importing the readers)."""
from __future__ import annotations


class InputError(Exception):
    """Bad input: a one-line message with file, field path and index."""

    def __init__(self, source: str, path: str, message: str):
        self.source, self.path, self.message = source, path, message
        where = f"{source}: {path}" if path else source
        super().__init__(f"{where}: {message}")
