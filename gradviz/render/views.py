"""``to_dot``: which DOT writer draws a graph, after folding repeated blocks when asked.

The backward writer (``dot``) and the writer of views with ``watch()`` data (``watched``)
sit below this module, so neither imports the other's caller.
"""

from __future__ import annotations

import warnings

from gradviz.errors import GradvizWarning
from gradviz.model.graph import Graph
from gradviz.render.dot import _DotWriter, check_ids
from gradviz.render.fold import fold_with_reason
from gradviz.render.layered import FOLDABLE
from gradviz.render.options import RenderOptions
from gradviz.render.watched import forward_aware_dot

__all__ = ["to_dot"]


def to_dot(graph: Graph, options: RenderOptions | None = None) -> str:
    """The whole graph as DOT text; deterministic for the same graph and options."""
    options = options or RenderOptions()
    check_ids(graph)
    if options.fold:
        if options.view == "forward":
            raise ValueError("fold= draws the backward graph; use view='backward' with it")
        graph, why = fold_with_reason(graph, 2 if options.fold is True else int(options.fold))
        if why:
            warnings.warn(f"fold=True folded nothing: {why}", GradvizWarning, stacklevel=3)
    if options.view == "forward" or graph.forward is not None or options.modules or options.marks:
        # views that use watch() data
        dot = forward_aware_dot(graph, options)
    else:
        dot = _DotWriter(graph, options).write()
    if not options.fold and options.view != "forward" and _worth_folding(graph):
        dot = f"{dot.rstrip()}\n{FOLDABLE}\n"
    return dot


# Graphs this size may take dot long enough for the layout's warnings to advise fold=True;
# checking whether anything folds costs about 0.1 ms a node, so bigger ones are not checked.
FOLD_HINT_NODES = (500, 20_000)


def _worth_folding(graph: Graph) -> bool:
    """True when ``fold=True`` would fold repeated blocks of this graph (checked only for
    graphs big enough to need it: see FOLD_HINT_NODES)."""
    low, high = FOLD_HINT_NODES
    columns = graph.node_columns()  # counted from the walk's columns: no objects built
    count = len(columns[0]) if columns is not None else len(graph.nodes)
    if not low <= count <= high:
        return False
    return not fold_with_reason(graph)[1]
