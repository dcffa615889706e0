"""The only place that runs Graphviz: DOT in, SVG/PNG/PDF out, once per render."""

from __future__ import annotations

import shutil
import warnings

import graphviz

from gradviz.errors import GradvizError, GradvizWarning, GraphvizNotFound
from gradviz.render import layered

__all__ = ["FORMATS", "dot_available", "run_dot"]

FORMATS = ("svg", "png", "pdf")


def dot_available() -> bool:
    return shutil.which("dot") is not None


def run_dot(dot_text: str, fmt: str = "svg", engine: str = "dot") -> bytes:
    """Lay out DOT text with Graphviz and return the rendered bytes.

    With the default ``engine="dot"``, graphs of more than
    ``gradviz.render.layered.LARGE_GRAPH_NODES`` nodes are laid out by gradviz's fast layered
    layout and drawn by ``neato -n`` instead (``dot`` would take tens of seconds); a
    ``GradvizWarning`` says so.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
    no_op = None
    if engine == "dot":
        nodes = layered.count_nodes(dot_text)
        if nodes > layered.LARGE_GRAPH_NODES:
            warnings.warn(
                f"this graph has {nodes} nodes, more than Graphviz dot lays out quickly "
                f"(gradviz.render.layered.LARGE_GRAPH_NODES = {layered.LARGE_GRAPH_NODES}): "
                "gradviz placed the nodes in layers itself and drew straight edges. "
                "fold=True draws repeated blocks once; raise LARGE_GRAPH_NODES to force dot.",
                GradvizWarning,
                stacklevel=2,
            )
            dot_text, engine, no_op = layered.place(dot_text), "neato", 1
    try:
        out: bytes = graphviz.pipe(
            engine, fmt, dot_text.encode("utf-8"), neato_no_op=no_op, quiet=True
        )
    except graphviz.ExecutableNotFound as error:
        raise GraphvizNotFound(str(error)) from None
    except graphviz.CalledProcessError as error:
        stderr = (error.stderr or b"").decode("utf-8", "replace").strip()
        raise GradvizError(
            f"Graphviz '{engine}' failed to lay out the graph: {stderr}. This is a gradviz "
            "bug; please report it with the DOT text (graph.save('graph.dot'))."
        ) from None
    return out
