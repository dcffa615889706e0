"""User text made safe to draw: one function per output language, used by every renderer.

Names, labels and type names come from users and may hold anything: markup, DOT syntax,
control characters, unpaired surrogates, a 10,000-character string. On screen (DOT and
hence SVG) such text is shortened to ``MAX_LABEL_CHARS`` and every character that XML
cannot carry or a reader cannot see is replaced by a visible stand-in; the stepper's panel
receives the whole text as JSON (``json_for_script``) and shows it as text.
Pure stdlib, like ``render``.
"""

from __future__ import annotations

import html
import json
import math
import re
from typing import Any

__all__ = [
    "ELLIPSIS",
    "MAX_DOT_STRING_BYTES",
    "MAX_HTML_TEXT_BYTES",
    "MAX_LABEL_CHARS",
    "dot_quote",
    "float_from_json",
    "html_text",
    "isolated",
    "json_for_script",
    "json_text",
    "shorten",
    "shorten_bytes",
    "utf8",
    "visible_text",
    "wire_safe",
]

# A name longer than this is drawn shortened (ending in ELLIPSIS), with the whole text in
# the element's tooltip; the stepper's panel always shows it whole.
MAX_LABEL_CHARS = 40
ELLIPSIS = "…"
# Graphviz's DOT scanner holds one quoted string, and one run of text in an HTML-like
# label, in a 16 KiB buffer counted in bytes of UTF-8 (10,000 'é' are 20,000 bytes): both
# are cut below that, escapes counted.
MAX_DOT_STRING_BYTES = 16_000
MAX_HTML_TEXT_BYTES = 16_000

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


def _fit(text: str, max_bytes: int, cost: dict[str, int] | None = None) -> str:
    """``text`` cut so that its UTF-8 (each character costing ``cost[ch]`` bytes when listed,
    its UTF-8 length otherwise) stays within ``max_bytes``, ending in ELLIPSIS when cut."""
    if len(text) * 6 <= max_bytes:  # no character costs more than 6: the usual case
        return text
    extra = cost or {}
    sizes = [extra.get(char) or len(char.encode("utf-8", "surrogatepass")) for char in text]
    if sum(sizes) <= max_bytes:
        return text
    budget = max_bytes - len(ELLIPSIS.encode("utf-8"))
    used = 0
    for index, size in enumerate(sizes):
        if used + size > budget:
            return text[:index] + ELLIPSIS
        used += size
    return text


def shorten_bytes(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` of UTF-8 (the last character an ellipsis):
    byte limits (Graphviz's) must count bytes, since a character takes one to four."""
    return _fit(text, max_bytes)


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
    return html.escape(
        _fit(visible_text(shorten(str(text), limit)), MAX_HTML_TEXT_BYTES, _HTML_COST)
    )


# what one character costs once escaped, where that is more than its UTF-8
_HTML_COST = {"&": 5, "<": 4, ">": 4, '"': 6, "'": 6}
_DOT_COST = {'"': 2, "\\": 2}


def dot_quote(text: str) -> str:
    """A DOT double-quoted string holding ``text`` literally (ids, tooltips, attributes),
    cut to what Graphviz can scan (``MAX_DOT_STRING_BYTES``)."""
    text = _fit(visible_text(text), MAX_DOT_STRING_BYTES, _DOT_COST)
    if '"' in text or "\\" in text:
        # a backslash starts a Graphviz escape (\\N, \\l, ...); doubled, it is itself
        text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text + '"'


# Standard JSON has no NaN or Infinity (JSON.parse, jq, serde and Go reject Python's bare
# NaN): gradviz writes a non-finite float as one of these strings, where a number is due.
NONFINITE_TEXT = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _finite_json(value: Any) -> Any:
    """``value`` with every non-finite float written as its ``NONFINITE_TEXT`` string."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: _finite_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_json(item) for item in value]
    return value


def float_from_json(value: Any) -> Any:
    """A number read from gradviz's JSON: ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``
    back as floats, anything else as it is."""
    if isinstance(value, str) and value in NONFINITE_TEXT:
        return NONFINITE_TEXT[value]
    return value


def json_text(value: Any, indent: int | None = None, compact: bool = False) -> str:
    """Standard JSON that can always be written as UTF-8: NaN and Infinity as strings
    (``float_from_json`` reads them back), and an unpaired surrogate in a name (say, a
    file name decoded with ``surrogateescape``) as a ``\\udXXX`` escape instead of failing
    the write."""
    separators = (",", ":") if compact else None
    try:
        text = json.dumps(
            value, ensure_ascii=False, indent=indent, separators=separators, allow_nan=False
        )
    except ValueError:  # a NaN or an Infinity somewhere: write it as text
        text = json.dumps(
            _finite_json(value),
            ensure_ascii=False,
            indent=indent,
            separators=separators,
            allow_nan=False,
        )
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


# What the HTML parser would read as markup inside a <script> element ("</script",
# "<!--" that starts the double-escaped state, "]]>" in foreign content) or JavaScript as a
# line break, written as JSON escapes: JSON.parse reads the same string back.
_SCRIPT_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def json_for_script(value: Any) -> str:
    """JSON to inline in a page's ``<script type="application/json">``: the one escaper of
    every data block gradviz writes. No ``</script``, ``<!--``, ``-->`` or ``]]>`` can appear
    in it whatever the names hold; NUL and unpaired surrogates are JSON escapes too."""
    return json_text(value, compact=True).translate(_SCRIPT_ESCAPES)


def utf8(text: str) -> bytes:
    """``text`` as UTF-8 for hashing; unpaired surrogates pass through instead of raising."""
    return text.encode("utf-8", "surrogatepass")


def wire_safe(value: Any) -> Any:
    """JSON-like ``value`` with unpaired surrogates replaced by U+FFFD (what a browser shows
    for them) and NaN / Infinity as text: Jupyter sends widget state as strict UTF-8 (a
    surrogate fails) in standard JSON (NaN falls back, deprecated, with a warning)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:  # a NaN or an Infinity somewhere
        value = _finite_json(value)
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    if _SURROGATE.search(text) is None:  # the usual case: the value as it is
        return value
    return json.loads(_SURROGATE.sub(REPLACEMENT, text))
