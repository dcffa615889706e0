"""A graph as the content of a file: DOT text, laid-out SVG/PNG/PDF, or JSON.

``gradviz.export`` chooses the format by the file's suffix and writes the file; Graphviz
itself runs in ``backend``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typing_extensions import Unpack

from gradviz.errors import InvalidArgument
from gradviz.model.graph import Graph
from gradviz.render.backend import FORMATS, run_dot
from gradviz.render.options import RenderKeywords, RenderOptions
from gradviz.render.picture import Picture
from gradviz.render.views import to_dot

__all__ = ["GRAPH_SUFFIXES", "graph_dot", "graph_file", "graph_svg"]

# what a graph saves as: Graphviz's drawings, its DOT text, the plain data
GRAPH_SUFFIXES = (*(f".{name}" for name in FORMATS), ".dot", ".json")


def graph_dot(graph: Graph, **options: Unpack[RenderKeywords]) -> str:
    """The graph as Graphviz DOT text, from render keywords (checked by
    ``RenderOptions.make``; ``Graph.to_dot`` is this function)."""
    return to_dot(graph, RenderOptions.make(**options))


def graph_svg(graph: Graph, **options: Unpack[RenderKeywords]) -> Picture:
    """The graph laid out by Graphviz ``dot``, as SVG text (``Graph.svg`` is this
    function); a notebook shows it in a box that scrolls sideways where it is wider than
    the output."""
    return Picture(run_dot(graph_dot(graph, **options), "svg").decode("utf-8"))


def graph_file(graph: Graph, suffix: str, options: Mapping[str, Any]) -> bytes | str:
    """The graph as the file of ``suffix``: .svg/.png/.pdf (laid out), .dot (DOT text) or
    .json (plain data). ``dpi=`` sets a PNG's resolution. ``gradviz.export`` writes it."""
    chosen = dict(options)
    dpi = chosen.pop("dpi", None)
    if dpi is not None and suffix != ".png":
        raise InvalidArgument("dpi= applies to .png files only")
    if suffix == ".json":
        if chosen:
            raise InvalidArgument(".json saves the data only; render options do not apply")
        return graph.to_json()
    if suffix == ".dot":
        return graph_dot(graph, **chosen)
    return run_dot(graph_dot(graph, **chosen), suffix.lstrip("."), dpi=dpi)
