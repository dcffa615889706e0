"""User text made safe to draw: one function per output language, used by every renderer.

Names, labels and type names come from users and may hold anything: markup, DOT syntax,
control characters, unpaired surrogates, a 10,000-character string. On screen (DOT and
hence SVG) such text is shortened to ``MAX_LABEL_CHARS`` and every character that XML
cannot carry or a reader cannot see is replaced by a visible stand-in; the stepper's panel
receives the whole text as JSON (``gradviz.stepper.page.json_for_script``) and shows it as text.
Pure stdlib, like ``render``.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

__all__ = [
    "ELLIPSIS",
    "MAX_LABEL_CHARS",
    "dot_quote",
    "html_text",
    "isolated",
    "json_text",
    "shorten",
    "utf8",
    "visible_text",
    "wire_safe",
]

# A name longer than this is drawn shortened (ending in ELLIPSIS), with the whole text in
# the element's tooltip; the stepper's panel always shows it whole.
MAX_LABEL_CHARS = 40
ELLIPSIS = "…"

REPLACEMENT = "\ufffd"
# C0 controls and DEL as their Unicode "control pictures" (U+2400..U+2421): XML 1.0 forbids
# most of them even as character references, and a tab or newline in a label would vanish.
_PICTURES = {code: chr(0x2400 + code) for code in range(0x20)} | {0x7F: "\u2421"}
# Characters XML 1.0 cannot hold (unpaired surrogates, U+FFFE, U+FFFF), invisible C1
# controls, and the bidi embeddings / overrides / isolates that would reorder the text
# drawn after them (Trojan-source style): shown as U+FFFD. Plain marks (LRM, RLM, ALM) and
# joiners (ZWJ in emoji sequences) stay: they only shape the text they belong to.
_REPLACED = re.compile("[\x80-\x9f\ud800-\udfff\ufffe\uffff\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff\u202a-\u202e\u2066-\u2069]")


# Characters that set the direction of the text after them (marks, embeddings, overrides,
# isolates); a name holding one is isolated where it is set into a sentence.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def isolated(name: str) -> str:
    """``name`` for a sentence shown as text (the stepper's panel): kept whole, but a name
    holding direction controls is wrapped in FIRST STRONG ISOLATE ... POP DIRECTIONAL
    ISOLATE, so that an override inside it cannot reorder the rest of the sentence."""
    if _BIDI.search(name) is None:
        return name
    return f"\u2068{name}\u2069"


def shorten(text: str, limit: int | None = MAX_LABEL_CHARS) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis (None: whole)."""
    if limit is None or len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + ELLIPSIS


def visible_text(text: str) -> str:
    """``text`` with every character XML 1.0 or a reader cannot take shown by a stand-in."""
    if _UNSAFE.search(text) is None:  # the usual case: nothing to replace
        return text
    text = text.translate(_PICTURES)
    return _REPLACED.sub(REPLACEMENT, text)


def html_text(text: object, limit: int | None = MAX_LABEL_CHARS) -> str:
    """Text for a Graphviz HTML-like label (and hence for SVG): shortened, visible, escaped.

    Graphviz decodes the entities itself, so ``<``, ``&`` and quotes reach the SVG as
    text; nothing typed into a name can open an element or end the label.
    """
    return html.escape(visible_text(shorten(str(text), limit)), quote=True)


def dot_quote(text: str) -> str:
    """A DOT double-quoted string holding ``text`` literally (ids, tooltips, attributes)."""
    text = visible_text(text)
    if '"' in text or "\\" in text:
        # a backslash starts a Graphviz escape (\\N, \\l, ...); doubled, it is itself
        text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text + '"'


def json_text(value: Any, indent: int | None = None, compact: bool = False) -> str:
    """JSON that can always be written as UTF-8: an unpaired surrogate in a name (say, a
    file name decoded with ``surrogateescape``) becomes a ``\\udXXX`` escape, still valid
    JSON, instead of failing the write."""
    separators = (",", ":") if compact else None
    text = json.dumps(value, ensure_ascii=False, indent=indent, separators=separators)
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def utf8(text: str) -> bytes:
    """``text`` as UTF-8 for hashing; unpaired surrogates pass through instead of raising."""
    return text.encode("utf-8", "surrogatepass")


def wire_safe(value: Any) -> Any:
    """JSON-like ``value`` with unpaired surrogates replaced by U+FFFD (what a browser shows
    for them): Jupyter sends widget state as strict UTF-8 and would fail on them."""
    text = json.dumps(value, ensure_ascii=False)
    if _SURROGATE.search(text) is None:  # the usual case: the value as it is
        return value
    return json.loads(_SURROGATE.sub(REPLACEMENT, text))
