"""Every drawing goes through here: DOT in, SVG/PNG/PDF out, once per render.

Graphviz runs through ``gradviz.graphviz_run`` (embedded by default, or the system ``dot``),
always with a time limit. Before ``dot`` runs, each view's cost is estimated
(``biglayout.estimate``: nodes, edges, clusters and the virtual nodes of long edges); a view
over the budget, or one that ``dot`` does not finish within ``LAYOUT_SECONDS``, is placed by
gradviz's own layered layout instead, and a ``GradvizWarning`` says so. PNG and PDF are drawn
from the SVG by resvg and svglib/reportlab, so no system program is needed.
"""

from __future__ import annotations

import io
import os
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradviz import biglayout
from gradviz.atomic import atomic_write
from gradviz.errors import GradvizError, GradvizWarning, GraphvizNotFound, GraphvizTimeout
from gradviz.graphviz_run import backend_name, run_graphviz
from gradviz.theme import Theme

if TYPE_CHECKING:
    from gradviz.graph import Graph

__all__ = [
    "DEFAULT_DPI",
    "FORMATS",
    "LAYERED_WORK",
    "LAYOUT_SECONDS",
    "LAYOUT_WORK",
    "SvgTemplate",
    "dot_available",
    "layout_plan",
    "run_dot",
    "step_css",
    "svg_to",
    "write_graph",
]

FORMATS = ("svg", "png", "pdf")
DEFAULT_DPI = 96.0  # PNG pixels per inch; Graphviz's points are 1/72 inch
MAX_PNG_PIXELS = 32767  # PNG viewers and resvg refuse wider or taller images
# The time budget of one view's ``dot`` layout (seconds); GRADVIZ_LAYOUT_SECONDS overrides.
LAYOUT_SECONDS = 20.0
# Estimated work (``biglayout.LayoutCost.work``) up to LAYOUT_WORK gets ``dot`` as it is, up
# to LAYERED_WORK ``dot`` with fewer crossing-minimisation and network-simplex rounds
# (CHEAP_DOT), above that gradviz's layered layout. Measured with Debian dot on 2 loaded
# cores: ResNet-50 backward (work 1,246) 0.5-0.9 s; its module view (2,492) 1.5 s; a GRU
# unrolled 16 steps (9,804) over 120 s, 11-13 s with CHEAP_DOT; the watched ResNet-50
# combined view (162,866) over 90 s either way.
LAYOUT_WORK = 5000
LAYERED_WORK = 30000
CHEAP_DOT = "graph [mclimit=0.1 nslimit=2 nslimit1=2 searchsize=10 remincross=false];"


def dot_available() -> bool:
    """True when some Graphviz (embedded or the system ``dot``) can run here."""
    try:
        backend_name()
    except GraphvizNotFound:
        return False
    return True


def _budget() -> float:
    value = os.environ.get("GRADVIZ_LAYOUT_SECONDS")
    if not value:
        return LAYOUT_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise GradvizError(f"GRADVIZ_LAYOUT_SECONDS must be a positive number, not {value!r}")
    return seconds


def layout_plan(cost: biglayout.LayoutCost) -> str:
    """``"dot"`` when Graphviz ``dot`` should lay this view out as it is, ``"cheap"`` for
    ``dot`` with fewer optimisation rounds, ``"layered"`` for gradviz's own layered layout
    (too many nodes, or too much work for any ``dot`` setting within the budget)."""
    if cost.nodes > biglayout.LARGE_GRAPH_NODES or cost.work > LAYERED_WORK:
        return "layered"
    return "cheap" if cost.work > LAYOUT_WORK else "dot"


def _with_graph_attributes(dot_text: str, statement: str) -> str:
    """The DOT with one more statement right after its opening line."""
    opening = dot_text.index("{") + 1
    return f"{dot_text[:opening]}\n  {statement}{dot_text[opening:]}"


def run_dot(
    dot_text: str,
    fmt: str = "svg",
    engine: str = "dot",
    *,
    dpi: float | None = None,
    seconds: float | None = None,
) -> bytes:
    """Lay out DOT text with Graphviz and return the rendered bytes.

    With the default ``engine="dot"`` the view's cost decides (``layout_plan``): a view too
    big for ``dot`` within the budget (``seconds``, else ``LAYOUT_SECONDS``), or one that
    ``dot`` does not finish in time, is placed by gradviz's layered layout
    (``gradviz.biglayout``) and drawn with straight edges; a ``GradvizWarning`` says so.
    ``dpi`` sets a PNG's resolution (``DEFAULT_DPI`` when None).
    """
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
    budget = _budget() if seconds is None else seconds
    if engine != "dot":
        svg = run_graphviz(dot_text, "svg", engine, budget)
    else:
        cost = biglayout.estimate(dot_text)
        plan = layout_plan(cost)
        svg = b""
        if plan == "layered":
            _tell(cost, "more than Graphviz dot lays out quickly")
        else:
            text = dot_text if plan == "dot" else _with_graph_attributes(dot_text, CHEAP_DOT)
            try:
                svg = run_graphviz(text, "svg", "dot", budget)
            except GraphvizTimeout:
                _tell(cost, f"Graphviz dot did not finish within the {budget:g} s budget")
            else:
                if plan == "cheap":
                    _tell(cost, "", cheap=True)
        if not svg:
            svg = run_graphviz(biglayout.place(dot_text), "svg", "nop", None)
    return svg if fmt == "svg" else svg_to(svg, fmt, dpi)


def _tell(cost: biglayout.LayoutCost, why: str, cheap: bool = False) -> None:
    """Say once per view (each view is laid out once, then cached) how it was laid out."""
    if cheap:
        warnings.warn(
            f"this view has {cost.nodes} nodes and {cost.edges} edges ({cost.span} edge "
            "segments across layers): Graphviz dot laid it out with fewer optimisation rounds "
            "to stay within its time budget, so edges may cross more than usual.",
            GradvizWarning,
            stacklevel=3,
        )
        return
    warnings.warn(
        f"this view has {cost.nodes} nodes and {cost.edges} edges ({cost.span} edge segments "
        f"across layers, {cost.clusters} clusters), {why}: gradviz placed the nodes in layers "
        "itself and drew straight edges. fold=True draws repeated blocks once; "
        "GRADVIZ_LAYOUT_SECONDS or gradviz.layout.LAYOUT_WORK give dot more room.",
        GradvizWarning,
        stacklevel=3,
    )


def svg_to(svg: bytes, fmt: str, dpi: float | None = None) -> bytes:
    """PNG (resvg) or PDF (svglib + reportlab) from Graphviz's SVG, without system programs."""
    if fmt == "pdf":
        from reportlab.graphics import renderPDF
        from svglib.svglib import svg2rlg

        drawing = svg2rlg(io.BytesIO(svg))
        if drawing is None:
            raise GradvizError("the SVG could not be converted to PDF (svglib read nothing)")
        pdf: bytes = renderPDF.drawToString(drawing)
        return pdf
    if fmt != "png":
        raise ValueError(f"cannot convert SVG to {fmt!r}: use 'png' or 'pdf'")
    import resvg_py

    resolution = DEFAULT_DPI if dpi is None else float(dpi)
    if not 0 < resolution <= 2400:
        raise ValueError(f"dpi must be a number in (0, 2400], not {dpi!r}")
    width, height = _svg_points(svg)
    largest = max(width, height) * resolution / 72
    if largest > MAX_PNG_PIXELS:
        fitted = MAX_PNG_PIXELS * 72 / max(width, height)
        warnings.warn(
            f"at {resolution:g} dpi this PNG would be {largest:.0f} px long, more than the "
            f"{MAX_PNG_PIXELS} px PNG viewers accept: drawn at {fitted:.0f} dpi instead. "
            "Save as .svg or .pdf to keep every detail.",
            GradvizWarning,
            stacklevel=3,
        )
        resolution = fitted
    png: bytes = resvg_py.svg_to_bytes(
        svg_string=_png_families(svg.decode("utf-8")),
        dpi=resolution,
        font_files=_png_fonts(),
        sans_serif_family="Bitstream Vera Sans",
        font_family="Bitstream Vera Sans",
    )
    return png


# Faces with Helvetica's widths (the widths Graphviz laid the labels out with), then Vera
_HELVETICA_LIKE = "Helvetica,Arial,Liberation Sans,Arimo,Nimbus Sans,Bitstream Vera Sans"


def _png_families(svg: str) -> str:
    """Helvetica is rarely installed: list the faces with its widths that often are. Also,
    CSS generic families are case-insensitive and resvg's are not: Graphviz 16 writes
    "sans-Serif", which resvg would not match, drawing regular text in a serif face."""
    svg = svg.replace('font-family="Helvetica,sans-Serif"', f'font-family="{_HELVETICA_LIKE}"')
    svg = svg.replace(
        'font-family="Helvetica,Arial,sans-serif"', f'font-family="{_HELVETICA_LIKE}"'
    )
    return svg.replace(",sans-Serif", ",sans-serif")


def _png_fonts() -> list[str]:
    """Bitstream Vera, shipped inside reportlab: the same text on every machine, even one
    without fonts (Helvetica is rarely installed; resvg then picked serif and sans at random).
    The system's fonts still cover characters Vera lacks."""
    import reportlab

    folder = Path(reportlab.__file__).parent / "fonts"
    return [str(folder / name) for name in ("Vera.ttf", "VeraBd.ttf", "VeraIt.ttf", "VeraBI.ttf")]


_SIZE = re.compile(rb'<svg[^>]*?\swidth="([\d.]+)pt"[^>]*?\sheight="([\d.]+)pt"', re.S)


def _svg_points(svg: bytes) -> tuple[float, float]:
    found = _SIZE.search(svg[:4096])
    return (float(found.group(1)), float(found.group(2))) if found else (0.0, 0.0)


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
        return atomic_write(path, graph.to_dot(**options))
    if suffix in FORMATS:
        return atomic_write(path, run_dot(graph.to_dot(**options), suffix, dpi=dpi))
    raise ValueError(f"cannot save {path.name!r}: use a .svg, .png, .pdf, .dot or .json file name")


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
