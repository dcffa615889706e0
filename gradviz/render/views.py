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
        return forward_aware_dot(graph, options)
    return _DotWriter(graph, options).write()
