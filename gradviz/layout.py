"""The only place that runs Graphviz: DOT in, SVG/PNG/PDF out, once per render."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import graphviz

from gradviz.errors import GradvizError, GraphvizNotFound

if TYPE_CHECKING:
    from gradviz.graph import Graph

__all__ = ["FORMATS", "dot_available", "run_dot", "write_graph"]

FORMATS = ("svg", "png", "pdf")


def dot_available() -> bool:
    return shutil.which("dot") is not None


def run_dot(dot_text: str, fmt: str = "svg", engine: str = "dot") -> bytes:
    """Lay out DOT text with Graphviz and return the rendered bytes."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
    try:
        out: bytes = graphviz.pipe(engine, fmt, dot_text.encode("utf-8"), quiet=True)
    except graphviz.ExecutableNotFound as error:
        raise GraphvizNotFound(str(error)) from None
    except graphviz.CalledProcessError as error:
        stderr = (error.stderr or b"").decode("utf-8", "replace").strip()
        raise GradvizError(
            f"Graphviz '{engine}' failed to lay out the graph: {stderr}. This is a gradviz "
            "bug; please report it with the DOT text (graph.save('graph.dot'))."
        ) from None
    return out


def write_graph(graph: Graph, path: Path, **options: Any) -> Path:
    """Save by suffix: .svg/.png/.pdf (laid out), .dot (DOT text) or .json (plain data)."""
    suffix = path.suffix.lower().lstrip(".")
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == "json":
        if options:
            raise TypeError(".json saves the data only; render options do not apply")
        path.write_text(graph.to_json(), encoding="utf-8")
    elif suffix == "dot":
        path.write_text(graph.to_dot(**options), encoding="utf-8")
    elif suffix in FORMATS:
        path.write_bytes(run_dot(graph.to_dot(**options), suffix))
    else:
        raise ValueError(
            f"cannot save {path.name!r}: use a .svg, .png, .pdf, .dot or .json file name"
        )
    return path
