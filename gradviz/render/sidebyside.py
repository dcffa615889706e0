"""The watched combined view laid out as two graphs, placed side by side, links drawn here.

Asking ``dot`` for both sides at once makes it route every forward-to-backward link across
two clusters: on a 6-layer GPT that took 46 s (ResNet-50: minutes) where the two sides
alone take 0.5 s and 1.2 s. So each side is laid out on its own (``run_dot``, with its
big-graph fallback), the forward side goes on the left, the backward side on the right,
and each link becomes a curve from the right edge of its left end to the left edge of its
right end. Element ids and classes are the ones one ``dot`` run would give (``edge
gv_link``, ``<prefix>_l_<tensor>``), so the stepper and per-step styling are unchanged.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from gradviz.escape import html_text
from gradviz.render.backend import run_dot
from gradviz.render.links import CombinedSides, LinkSpec

__all__ = ["GAP", "side_by_side_svg"]

GAP = 160.0  # points between the two sides, where the links run
TITLE_HEIGHT = 22.0  # points above each side for its heading
_SVG = "{http://www.w3.org/2000/svg}"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")
# Graphviz draws the background with stroke "transparent" (2.4x) or "none" (later versions)
_BACKGROUND = re.compile(r'<polygon fill="[^"]*" stroke="(?:transparent|none)" points="[^"]*"/>\n?')
_TRANSFORM = re.compile(r"translate\((-?[\d.]+)[ ,](-?[\d.]+)\)")


@dataclass(frozen=True)
class _Side:
    """One side's SVG body and where its nodes are, in its own outer coordinates."""

    body: str  # the side's <g class="graph"> with its content
    width: float
    height: float
    boxes: dict[str, tuple[float, float, float, float]]  # DOT name -> x0, y0, x1, y1


def _escape(text: str) -> str:
    """Text or an attribute value written straight into the SVG (labels already shortened)."""
    return html_text(text, None)


def _side(svg: str, group_id: str) -> _Side:
    root = ET.fromstring(svg)
    width, height = (float(v) for v in root.attrib["viewBox"].split()[2:4])
    graph = root.find(f"{_SVG}g")
    assert graph is not None
    moved = _TRANSFORM.search(graph.attrib.get("transform", ""))
    dx, dy = (float(moved.group(1)), float(moved.group(2))) if moved else (0.0, 0.0)
    boxes: dict[str, tuple[float, float, float, float]] = {}
    for group in graph.iter(f"{_SVG}g"):
        if not group.attrib.get("class", "").startswith("node"):
            continue
        title = group.find(f"{_SVG}title")
        xs: list[float] = []
        ys: list[float] = []
        for shape in group.iter():
            tag = shape.tag.removeprefix(_SVG)
            if tag == "ellipse":
                cx, cy = float(shape.attrib["cx"]), float(shape.attrib["cy"])
                rx, ry = float(shape.attrib["rx"]), float(shape.attrib["ry"])
                xs += [cx - rx, cx + rx]
                ys += [cy - ry, cy + ry]
            elif tag in ("polygon", "path", "polyline"):
                text = shape.attrib.get("points", "") or shape.attrib.get("d", "")
                numbers = [float(n) for n in _NUMBER.findall(text)]
                xs += numbers[0::2]
                ys += numbers[1::2]
        if title is not None and title.text and xs:
            boxes[title.text] = (min(xs) + dx, min(ys) + dy, max(xs) + dx, max(ys) + dy)
    start = svg.index("<g ", svg.index("<svg"))
    body = svg[start : svg.rindex("</svg>")]
    body = re.sub(r'^<g id="[^"]*" class="graph"', f'<g id="{group_id}" class="graph"', body)
    # the side's own background: one background is drawn for both sides
    body = _BACKGROUND.sub("", body, count=1)
    return _Side(body, width, height, boxes)


def _link(spec: LinkSpec, start: tuple[float, float], end: tuple[float, float], colour: str) -> str:
    """A curve that leaves and enters horizontally, its arrowhead and its gradient label."""
    (x1, y1), (x2, y2) = start, end
    bend = max(abs(x2 - x1) / 2, 30.0)
    direction = 1.0 if x2 >= x1 else -1.0
    c1, c2 = x1 + bend * direction, x2 - bend * direction
    tip = x2
    if spec.arrow:
        x2 -= 7.0 * direction  # the arrowhead ends at the box
    path = f"M{x1:.1f},{y1:.1f} C{c1:.1f},{y1:.1f} {c2:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
    parts = [
        f'<g id="{_escape(spec.id)}" class="edge {spec.css_class}">',
        f"<title>{_escape(spec.src)}&#45;&gt;{_escape(spec.dst)}</title>",
        f'<path fill="none" stroke="{_escape(spec.color)}" '
        f'stroke-dasharray="{spec.dash}" d="{path}"/>',
    ]
    if spec.arrow:
        back = x2
        parts.append(
            f'<polygon fill="{_escape(spec.color)}" stroke="{_escape(spec.color)}" '
            f'points="{tip:.1f},{y2:.1f} {back:.1f},{y2 - 2.5:.1f} '
            f'{back:.1f},{y2 + 2.5:.1f} {tip:.1f},{y2:.1f}"/>'
        )
    if spec.label:
        parts.append(
            f'<text text-anchor="middle" x="{(x1 + x2) / 2:.1f}" y="{(y1 + y2) / 2 - 3:.1f}" '
            'font-family="Helvetica,Arial,sans-serif" font-weight="bold" font-size="10.00" '
            f'fill="{_escape(colour)}">{_escape(spec.label)}</text>'
        )
    parts.append("</g>")
    return "\n".join(parts)


def side_by_side_svg(
    sides: CombinedSides,
    prefix: str,
    background: str,
    text: str,
    grad_colour: str,
    laid: tuple[str, str] | None = None,
) -> str:
    """One SVG: the forward side's layout, the backward side's beside it, links between.
    ``laid``: the two sides' SVGs when they were laid out already (``run_dot`` of
    ``sides.forward`` and ``sides.backward``, e.g. concurrently with other views)."""
    if laid is None:
        laid = (
            run_dot(sides.forward, "svg").decode("utf-8"),
            run_dot(sides.backward, "svg").decode("utf-8"),
        )
    left = _side(laid[0], f"{prefix}_forward")
    right = _side(laid[1], f"{prefix}_backward")
    shift = left.width + GAP
    width = shift + right.width
    height = max(left.height, right.height) + TITLE_HEIGHT
    links = []
    for spec in sides.links:
        a = left.boxes.get(spec.src) or _moved(right.boxes.get(spec.src), shift)
        b = left.boxes.get(spec.dst) or _moved(right.boxes.get(spec.dst), shift)
        if a is None or b is None:
            continue
        forward_first = a[0] < b[0]
        start = (a[2] if forward_first else a[0], (a[1] + a[3]) / 2 + TITLE_HEIGHT)
        end = (b[0] if forward_first else b[2], (b[1] + b[3]) / 2 + TITLE_HEIGHT)
        links.append(_link(spec, start, end, grad_colour))
    font = 'font-family="Helvetica,Arial,sans-serif" font-size="13.00" font-weight="bold"'
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
        f'<svg width="{width:.0f}pt" height="{height:.0f}pt" '
        f'viewBox="0.00 0.00 {width:.2f} {height:.2f}" '
        'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">\n'
        f'<g id="{prefix}" class="graph">\n'
        f'<rect x="0" y="0" width="{width:.2f}" height="{height:.2f}" '
        f'fill="{_escape(background)}"/>\n'
        f'<text x="14" y="16" {font} fill="{_escape(text)}">'
        "forward pass (what the code ran)</text>\n"
        f'<text x="{shift + 14:.1f}" y="16" {font} fill="{_escape(text)}">'
        "backward graph (what autograd built)</text>\n"
        + "\n".join(links)
        + f'\n<g transform="translate(0 {TITLE_HEIGHT})">\n{left.body}</g>\n'
        f'<g transform="translate({shift:.2f} {TITLE_HEIGHT})">\n{right.body}</g>\n'
        "</g>\n</svg>\n"
    )


def _moved(
    box: tuple[float, float, float, float] | None, shift: float
) -> tuple[float, float, float, float] | None:
    return None if box is None else (box[0] + shift, box[1], box[2] + shift, box[3])
