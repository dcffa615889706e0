"""The only place that runs Graphviz: DOT in, SVG/PNG/PDF out, once per render."""

from __future__ import annotations

import re
import shutil
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import graphviz

from gradviz import biglayout
from gradviz.errors import GradvizError, GradvizWarning, GraphvizNotFound
from gradviz.theme import Theme

if TYPE_CHECKING:
    from gradviz.graph import Graph

__all__ = ["FORMATS", "SvgTemplate", "dot_available", "run_dot", "step_css", "write_graph"]

FORMATS = ("svg", "png", "pdf")


def dot_available() -> bool:
    return shutil.which("dot") is not None


def run_dot(dot_text: str, fmt: str = "svg", engine: str = "dot") -> bytes:
    """Lay out DOT text with Graphviz and return the rendered bytes.

    With the default ``engine="dot"``, graphs of more than
    ``gradviz.biglayout.LARGE_GRAPH_NODES`` nodes are laid out by gradviz's fast layered
    layout and drawn by ``neato -n`` instead (``dot`` would take tens of seconds); a
    ``GradvizWarning`` says so.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
    no_op = None
    if engine == "dot":
        nodes = biglayout.count_nodes(dot_text)
        if nodes > biglayout.LARGE_GRAPH_NODES:
            warnings.warn(
                f"this graph has {nodes} nodes, more than Graphviz dot lays out quickly "
                f"(gradviz.biglayout.LARGE_GRAPH_NODES = {biglayout.LARGE_GRAPH_NODES}): "
                "gradviz placed the nodes in layers itself and drew straight edges. "
                "fold=True draws repeated blocks once; raise LARGE_GRAPH_NODES to force dot.",
                GradvizWarning,
                stacklevel=2,
            )
            dot_text, engine, no_op = biglayout.place(dot_text), "neato", 1
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


_GROUP = re.compile(r'<g id="(?P<id>[^"]+)" class="(?P<cls>[^"]*)">')
_TEXT = re.compile(r"<text ")


class SvgTemplate:
    """One Graphviz layout, restyled per step by rewriting the class of elements by id.

    Node and edge positions never change between steps: only ``class`` attributes do, and
    one stylesheet (``step_css``) turns classes into looks, here and in the browser alike.
    """

    def __init__(self, svg: str, grad_label_ids: set[str]) -> None:
        self.parts: list[str] = []
        self.ids: list[str] = []
        self.base: list[str] = []
        position = 0
        for match in _GROUP.finditer(svg):
            self.parts.append(svg[position : match.start("cls")])
            self.ids.append(match.group("id"))
            self.base.append(match.group("cls"))
            position = match.end("cls")
        tail = svg[position:]
        self.parts.append(tail)
        # the first <text> of an edge that carries a gradient label is that label
        for index, element_id in enumerate(self.ids):
            if element_id in grad_label_ids:
                following = self.parts[index + 1]
                self.parts[index + 1] = _TEXT.sub('<text class="gv_grad" ', following, count=1)

    def render(self, classes: Mapping[str, str], css: str = "") -> str:
        out: list[str] = []
        for part, element_id, base in zip(self.parts, self.ids, self.base, strict=False):
            out.append(part)
            extra = classes.get(element_id)
            out.append(f"{base} {extra}" if extra else base)
        out.append(self.parts[-1])
        text = "".join(out)
        if css:
            text = _insert_style(text, css)
        return text


def _insert_style(svg: str, css: str) -> str:
    """Put a <style> element right after the opening <svg ...> tag."""
    start = svg.find("<svg")
    end = svg.find(">", start) + 1
    return svg[:end] + f"\n<style>{css}</style>" + svg[end:]


def step_css(theme: Theme, scope: str = "") -> str:
    """The stylesheet that gives replay classes their look; ``scope`` prefixes selectors."""
    step = theme.step
    s = f"{scope} " if scope else ""
    return (
        f"{s}.gv_pending{{opacity:{step.pending_opacity}}}"
        f"{s}.gv_notrun{{opacity:{step.pending_opacity / 2}}}"
        f"{s}.gv_notrun>path,{s}.gv_notrun>polygon{{stroke-dasharray:4 3}}"
        f"{s}.gv_active>path,{s}.gv_active>polygon{{stroke:{step.active_border};"
        f"stroke-width:{step.active_width}px}}"
        f"{s}.gv_flowing>path{{stroke:{step.active_border};stroke-width:2.2px}}"
        f"{s}.gv_flowing>polygon{{stroke:{step.active_border};fill:{step.active_border}}}"
        f"{s}.gv_hidegrad .gv_grad{{visibility:hidden}}"
        f"{s}.gv_filled>polygon{{stroke:{step.active_border}}}"
        f"{s}.gv_nonfinite>path,{s}.gv_nonfinite>polygon{{stroke:{step.nonfinite_border};"
        f"stroke-width:{step.active_width}px;stroke-dasharray:7 3}}"
    )
