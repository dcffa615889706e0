"""Which modules a collapsed view draws as one box each: a depth, names, or ``"auto"``.

One depth for the whole model draws most models as one box: BERT's ``bert`` holds 942 of
its 950 backward nodes at depth 1. ``"auto"`` picks a frontier of modules at mixed depths
instead, by what the drawing shows: starting from the top-level modules it opens every
wrapper around a single child module, then the box holding the most backward nodes while
one holds more than half of them or fewer than ``MIN_THINGS`` things are drawn, as long as
no more than ``MAX_THINGS`` are. Opening a module draws its child modules as boxes and its
own nodes as they are, so a list of identical blocks reads as the list. A graph that
shows ``MAX_THINGS`` or fewer things whole gets no box at all.

Pure data over ``watch()``'s module scopes: no torch.
"""

from __future__ import annotations

import weakref
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from gradviz.errors import InvalidArgument
from gradviz.model.forward import Forward
from gradviz.model.graph import Graph
from gradviz.model.values import Role

__all__ = ["MAX_THINGS", "MIN_THINGS", "Collapse", "auto_frontier", "boxed", "collapse_spec"]

MIN_THINGS = 15  # a first view that shows fewer has room to open a box
MAX_THINGS = 60  # nor more: boxes and nodes a reader takes in at once
BIG_BOX = 0.5  # a box holding more than this share of the nodes hides the model's structure

# how modules are drawn as boxes: a depth (every module that deep), module indices, "auto"
# (``auto_frontier``) or module paths; ``collapse_spec`` checks what users pass
Collapse = int | str | tuple[str, ...] | frozenset[int]


def collapse_spec(value: object) -> int | str | tuple[str, ...] | None:
    """A ``collapse=`` keyword checked: a depth, ``"auto"``, or module paths (a list)."""
    if value is None or value == "auto":
        return None if value is None else "auto"
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InvalidArgument(
        f"collapse={value!r}: pass a depth (0: the model as one box), 'auto', or a list of "
        "module paths such as ['encoder.layer.0', 'pooler'] to draw as one box each"
    )


@dataclass(frozen=True)
class _Tree:
    """Per module: its child modules that hold nodes, its own nodes and leaves, and how
    many backward nodes and drawn things (nodes, parameter boxes) lie below it."""

    children: dict[int | None, list[int]]
    own: dict[int | None, int]  # things drawn for the module's own nodes, opened
    below: dict[int, int]  # backward nodes below the module (its own and its children's)
    total: int


def _tree(graph: Graph, forward: Forward) -> _Tree:
    own: dict[int | None, int] = defaultdict(int)
    below: dict[int, int] = defaultdict(int)
    children: dict[int | None, list[int]] = defaultdict(list)
    for node in graph.nodes:
        module = forward.node_modules.get(node.id)
        own[module] += 1
        for scope in forward.module_chain(module):
            below[scope.index] += 1
    for record in graph.tensors:  # parameter and root boxes drawn beside their node
        if record.node_id is not None and (record.is_root or record.role is Role.LEAF):
            own[forward.node_modules.get(record.node_id)] += 1
    for index in sorted(below):
        children[forward.modules[index].parent].append(index)
    return _Tree(dict(children), dict(own), dict(below), len(graph.nodes))


_FRONTIERS: weakref.WeakKeyDictionary[Graph, frozenset[int]] = weakref.WeakKeyDictionary()


def auto_frontier(graph: Graph) -> frozenset[int]:
    """The modules the ``"auto"`` view draws as boxes (indices into ``forward.modules``)."""
    kept = _FRONTIERS.get(graph)
    if kept is not None:
        return kept
    forward = graph.forward
    if forward is None:
        return frozenset()
    tree = _tree(graph, forward)
    if sum(tree.own.values()) <= MAX_THINGS:  # the whole graph reads at once: no box
        _FRONTIERS[graph] = frozenset()
        return frozenset()
    boxes = set(tree.children.get(None, []))
    shown = len(boxes) + tree.own.get(None, 0)

    def opened(index: int) -> int:  # things drawn once ``index`` is opened
        return shown - 1 + len(tree.children.get(index, [])) + tree.own.get(index, 0)

    while boxes:
        wrappers = [b for b in boxes if len(tree.children.get(b, [])) == 1 and not tree.own.get(b)]
        if wrappers:  # a wrapper opens by itself: the same count, one level of detail more
            chosen = min(wrappers)
        else:
            chosen = max(boxes, key=lambda b: (tree.below[b], -b))
            big = tree.below[chosen] > BIG_BOX * tree.total
            if not (big or shown < MIN_THINGS) or opened(chosen) > MAX_THINGS:
                break
        shown = opened(chosen)
        boxes.remove(chosen)
        boxes.update(tree.children.get(chosen, []))
    frontier = frozenset(boxes)
    _FRONTIERS[graph] = frontier
    return frontier


def boxed(graph: Graph, collapse: Collapse) -> int | frozenset[int]:
    """``collapse`` as a depth or the module indices drawn as boxes (names looked up)."""
    if isinstance(collapse, int | frozenset):
        return collapse
    if collapse == "auto":
        return auto_frontier(graph)
    names: Sequence[str] = (collapse,) if isinstance(collapse, str) else collapse
    modules = [] if graph.forward is None else graph.forward.modules
    found = frozenset(m.index for m in modules if m.path in names)
    missing = sorted(set(names) - {m.path for m in modules})
    if missing:
        known = sorted({m.path for m in modules if m.path})
        raise InvalidArgument(
            f"collapse={list(names)!r}: no module call named {missing}; this recording's "
            f"modules are {known[:40]}{' …' if len(known) > 40 else ''}"
        )
    return found
