"""New numbers on an old layout: the explorer keeps a graph where it was when only values change.

Graphviz sizes a box by its text, so the same graph with other numbers can come out laid
out a little differently. When the structure is the same, the old SVG keeps its shapes and
positions and takes the new SVG's texts, element by element.
"""

from __future__ import annotations

import re

__all__ = ["same_layout"]

_PARTS = re.compile(r'<g id="([^"]*)"|(<text[^>]*>)(.*?)</text>', re.DOTALL)


def _texts(svg: str) -> tuple[list[str], list[str], list[tuple[int, int]]]:
    """Each text's element id (the group it is in), its content and where the content lies."""
    owners: list[str] = []
    contents: list[str] = []
    spans: list[tuple[int, int]] = []
    owner = ""
    for match in _PARTS.finditer(svg):
        if match.group(1) is not None:
            owner = match.group(1)
            continue
        owners.append(owner)
        contents.append(match.group(3))
        spans.append(match.span(3))
    return owners, contents, spans


def same_layout(old: str, new: str) -> str | None:
    """``old`` with ``new``'s texts, or None when the two do not hold the same texts in the
    same elements (the drawing changed: use ``new`` as laid out)."""
    old_owners, _, spans = _texts(old)
    new_owners, contents, _ = _texts(new)
    if old_owners != new_owners:
        return None
    pieces = []
    at = 0
    for (start, end), content in zip(spans, contents, strict=True):
        pieces.append(old[at:start])
        pieces.append(content)
        at = end
    pieces.append(old[at:])
    return "".join(pieces)
