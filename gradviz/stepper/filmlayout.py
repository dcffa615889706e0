"""The backward layout the film strip recolours: the run's graph drawn once by Graphviz, and
which training number paints each drawn element.

The drawing shows shapes, not values: it is walked at the first watched step, and its
tensors' values (the loss, the weights) would be that step's wherever the strip is scrubbed.

A parameter's tensor box and its ``AccumulateGrad`` node take that parameter's gradient
norm; a node that hands a module's parameters their gradient (an edge straight into their
``AccumulateGrad``, or through one node with a single input, such as ``TBackward0``) takes
that module's norm; an edge takes the norm of the gradient it sent, on steps kept with
``edges=True``. Colours come from a log scale between the two health bands
(``colour_class``), so the same number always gets the same colour.
"""

from __future__ import annotations

import math
from typing import Any

from gradviz.errors import GradvizError
from gradviz.model.graph import Graph
from gradviz.model.training import TrainingRun, owner_of
from gradviz.render.export import graph_svg
from gradviz.render.pagesvg import page_svg

__all__ = ["BINS", "colour_class", "layout_data", "paint_map"]

# colours between the vanishing and the exploding band, one per equal log step: with the
# default bands (1e-6, 1e3) one per decade
BINS = 9


def colour_class(value: float | None, low: float, high: float) -> str:
    """The colour class of a norm: ``gv-c-none`` (no gradient), ``gv-c-bad`` (NaN or Inf),
    ``gv-c-low`` (below ``low``: vanishing), ``gv-c-high`` (above ``high``: exploding), else
    ``gv-c0``..``gv-c8`` by where ``log10(value)`` falls between ``log10(low)`` and
    ``log10(high)`` (the front end computes the same)."""
    if value is None:
        return "gv-c-none"
    if not math.isfinite(value):
        return "gv-c-bad"
    if value < low:
        return "gv-c-low"
    if value > high:
        return "gv-c-high"
    share = (math.log10(value) - math.log10(low)) / (math.log10(high) - math.log10(low))
    return f"gv-c{min(BINS - 1, math.floor(share * BINS))}"


def paint_map(graph: Graph, params: list[str], modules: list[str]) -> dict[str, list[Any]]:
    """Graph id of a node or tensor box (drawn with the id ``<graph's id>_<it>``) ->
    ``["p", i]`` (parameter ``params[i]``) or ``["m", j]`` (module ``modules[j]``)."""
    index = {name: i for i, name in enumerate(params)}
    paint: dict[str, list[Any]] = {}
    module_of_leaf: dict[str, str] = {}
    for tensor in graph.tensors:
        if tensor.name in index and tensor.node_id is not None:
            i = index[tensor.name]
            paint[tensor.id] = ["p", i]
            paint[tensor.node_id] = ["p", i]
            module_of_leaf[tensor.node_id] = owner_of(tensor.name)
    outs: dict[str, list[str]] = {}
    for edge in graph.edges:
        if edge.dst is not None:
            outs.setdefault(edge.src, []).append(edge.dst)
    column = {name: j for j, name in enumerate(modules)}
    for node in graph.nodes:
        if node.id in paint:
            continue
        owners: set[str] = set()
        for dst in outs.get(node.id, []):
            if dst in module_of_leaf:
                owners.add(module_of_leaf[dst])
            elif len(outs.get(dst, [])) == 1 and outs[dst][0] in module_of_leaf:
                owners.add(module_of_leaf[outs[dst][0]])
        if len(owners) == 1:
            (owner,) = owners
            if owner in column:
                paint[node.id] = ["m", column[owner]]
    return paint


def layout_data(run: TrainingRun, modules: list[str]) -> dict[str, Any]:
    """The drawing and its paint map, or a ``note`` saying why there is no drawing (no
    backward watched; Graphviz missing or failing)."""
    graph = run.graph
    if graph is None:
        return {"svg": None, "paint": {}, "note": "no backward was watched: nothing to draw"}
    try:
        svg = page_svg(graph_svg(graph, values=False))
    except GradvizError as error:
        return {"svg": None, "paint": {}, "note": f"the backward graph is not drawn ({error})"}
    return {"svg": svg, "paint": paint_map(graph, list(run.params), modules), "note": None}
