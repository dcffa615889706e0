"""Graphs to files: DOT text, laid-out SVG/PNG/PDF, or JSON, chosen by the file's suffix.

The one place that maps a suffix to an export format; Graphviz itself runs in ``backend``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    """Save by suffix: .svg/.png/.pdf (laid out), .dot (DOT text) or .json (plain data)."""
    suffix = path.suffix.lower().lstrip(".")
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == "json":
        if options:
            raise TypeError(".json saves the data only; render options do not apply")
        path.write_text(graph.to_json(), encoding="utf-8")
    elif suffix == "dot":
        path.write_text(graph_dot(graph, **options), encoding="utf-8")
    elif suffix in FORMATS:
        path.write_bytes(run_dot(graph_dot(graph, **options), suffix))
    else:
        raise ValueError(
            f"cannot save {path.name!r}: use a .svg, .png, .pdf, .dot or .json file name"
        )
    return path
