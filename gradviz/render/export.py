"""Graphs to files: DOT text, laid-out SVG/PNG/PDF, or JSON, chosen by the file's suffix.

The one place that maps a suffix to an export format; Graphviz itself runs in ``backend``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gradviz.atomic import atomic_write
from gradviz.model.graph import Graph
from gradviz.render.backend import FORMATS, run_dot
from gradviz.render.options import RenderOptions
from gradviz.render.views import to_dot

__all__ = ["graph_dot", "graph_svg", "write_graph"]


def graph_dot(graph: Graph, **options: Any) -> str:
    """The graph as DOT text, from render keywords (checked by ``RenderOptions.make``)."""
    return to_dot(graph, RenderOptions.make(**options))


def graph_svg(graph: Graph, **options: Any) -> str:
    """The graph laid out by Graphviz, as SVG text."""
    return run_dot(graph_dot(graph, **options), "svg").decode("utf-8")


def write_graph(graph: Graph, path: Path, **options: Any) -> Path:
    """Save by suffix: .svg/.png/.pdf (laid out), .dot (DOT text) or .json (plain data).
    ``dpi=`` sets a PNG's resolution. Every file is written atomically."""
    suffix = path.suffix.lower().lstrip(".")
    dpi = options.pop("dpi", None)
    if dpi is not None and suffix != "png":
        raise TypeError("dpi= applies to .png files only")
    if suffix == "json":
        if options:
            raise TypeError(".json saves the data only; render options do not apply")
        return atomic_write(path, graph.to_json())
    if suffix == "dot":
        return atomic_write(path, graph_dot(graph, **options))
    if suffix in FORMATS:
        return atomic_write(path, run_dot(graph_dot(graph, **options), suffix, dpi=dpi))
    raise ValueError(f"cannot save {path.name!r}: use a .svg, .png, .pdf, .dot or .json file name")
