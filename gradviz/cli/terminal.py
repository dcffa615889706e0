"""Text for the terminal: a user's file and tensor names can hold characters that a
terminal acts on instead of showing (escape sequences, carriage returns) or that reorder
the rest of the line (right-to-left overrides, isolates). The command line shows each as
its escape (``\\u202e``, ``\\x1b``), so what is printed is what the name holds."""

from __future__ import annotations

import io
import unicodedata
from typing import TextIO

__all__ = ["EscapedStream", "terminal_line", "terminal_text"]

# controls, format characters (bidi marks, embeddings, overrides, isolates, zero-width
# ones), surrogates (undecodable bytes of a file name) and line or paragraph separators
_HIDDEN = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def terminal_line(text: object) -> str:
    """``str(text)`` on one line, every hidden or reordering character as its escape."""
    value = str(text)
    if value.isprintable():  # the usual case: nothing to escape
        return value
    return "".join(
        _escape(char) if char != "\t" and unicodedata.category(char) in _HIDDEN else char
        for char in value
    )


def terminal_text(text: object) -> str:
    """``terminal_line`` of each line of ``text``, its line breaks kept."""
    return "\n".join(terminal_line(line) for line in str(text).split("\n"))


class EscapedStream(io.TextIOBase):
    """A text stream that writes ``terminal_text`` of what it is given to ``stream``: for
    code that prints names itself (``gradviz demo``'s gallery)."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(terminal_text(text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()
