"""The pieces of DOT text that depend on the theme and the names in a drawing only, kept
from one drawing to the next.

A drawing of a 300-node model spent a fifth of its time quoting the same theme colours and
escaping the same node types again (the header, the legend, each role's style, each node
type's box). The store is keyed by the theme's value (``Theme`` is a frozen dataclass), so
a theme changed after it was made (``object.__setattr__``) finds no entry and is written
(and checked) afresh; it stays small, and starts over when it grows past its bounds.
"""

from __future__ import annotations

import threading
from typing import Any

from gradviz.model.values import Role
from gradviz.render.theme import Theme

__all__ = ["DotTexts", "texts_for"]

_MAX_STORES = 16  # themes and flags kept at once
_MAX_ENTRIES = 20_000  # names, shapes and types kept per store


class DotTexts:
    """One theme's pieces (with one ``shapes`` flag), each made on first use by the writer.
    Every entry is a pure function of its key, the theme and the flag."""

    def __init__(self) -> None:
        self.node_style: str | None = None  # the attributes every node shares
        self.offgraph_tail: str | None = None  # what follows an off-graph input's id
        self.roles: dict[Role, tuple[str, str]] = {}  # box style, link colour
        self.types: dict[str, tuple[str, str | None]] = {}  # escaped title, tooltip
        self.node_tails: dict[str, str] = {}  # what follows a plain node's id, per type
        # the same inside the nodes' block, whose defaults carry the box and style
        self.scoped_tails: dict[str, str] = {}
        # the defaults of the backward nodes' block and of the leaves' block (node, edge)
        self.node_scope: tuple[str, ...] | None = None
        self.leaf_scope: tuple[str, ...] | None = None
        self.labels: dict[str, tuple[str, str]] = {}  # escaped name, tooltip attribute
        self.shapes: dict[tuple[tuple[int, ...], str], str] = {}  # escaped shape line
        # what follows a compact box's id, per (role, label, shape, dtype) and, for a box
        # whose values the default drawing left unread, "unread"
        self.box_tails: dict[tuple[Any, ...], str] = {}
        # the same inside the leaves' block (label and tooltip)
        self.scoped_box_tails: dict[tuple[Any, ...], str] = {}
        # a leaf's label and tooltip (inside the leaves' block), per (label, shape, dtype)
        self.leaf_labels: dict[tuple[str, tuple[int, ...], str], str] = {}
        self.headers: dict[tuple[str, str, tuple[tuple[str, str], ...]], tuple[str, ...]] = {}
        self.legends: dict[tuple[str, bool], tuple[str, ...]] = {}  # (prefix, note) -> lines

    def size(self) -> int:
        return (
            len(self.types)
            + len(self.labels)
            + len(self.shapes)
            + len(self.box_tails)
            + len(self.scoped_box_tails)
            + len(self.leaf_labels)
            + len(self.scoped_tails)
            + len(self.headers)
            + len(self.legends)
        )


_lock = threading.Lock()
_stores: dict[tuple[Theme, bool], DotTexts] = {}


def texts_for(theme: Theme, shapes: bool) -> DotTexts:
    """The store for drawings with this theme (by value) and ``shapes`` flag. A new store
    checks its theme first (``theme.check()``): its values go into DOT as they are, and a
    theme changed after it was made has another value, hence a new store."""
    try:
        key = (theme, shapes)
        texts = _stores.get(key)
    except TypeError:  # a theme given an unhashable value: check() says what is wrong
        theme.check()
        return DotTexts()
    if texts is None or texts.size() > _MAX_ENTRIES:
        theme.check()
        texts = DotTexts()
        with _lock:
            if len(_stores) >= _MAX_STORES:
                _stores.clear()
            _stores[key] = texts
    return texts
