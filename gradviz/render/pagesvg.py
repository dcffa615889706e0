"""Graphviz SVG made lighter for the replay page, drawing the same picture.

Static exports (``svg()``, ``save("x.svg")``) keep Graphviz's output as it is; only the copy
the stepper ships goes through ``page_svg``. Every change keeps what the stepper reads:
element ids and classes, DOT names (a node's ``<title>``, or its id after the graph's
id and "_"), edges' ``<title>`` (their ends), and shapes given as absolute
coordinate pairs (the front end takes a node's bounds from its points).
"""

from __future__ import annotations

import re
from collections import Counter

__all__ = ["page_svg"]

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_GEOMETRY = re.compile(r'( (?:points|d|x|y|cx|cy|rx|ry)=")([^"]*)(?=")')
_DECIMAL_SPLIT = re.compile(r"(-?\d+\.\d+)")
_FONT = re.compile(r' font-family="([^"]*)"')
_FONT_SIZE = re.compile(r'( font-size="\d+)\.0+"')
_TEXT = re.compile(r"<text([^>]*)>([^<]*)</text>")
_CLOSED = re.compile(r'points="([^"]*)"')
# a path of cubic curves only, as Graphviz writes edges and rounded boxes
_CURVES = re.compile(r'd="(M-?[\d.]+,-?[\d.]+C(?:-?[\d.]+,-?[\d.]+ ?)+)"')
_GRAPH = re.compile(r'<g id="([^"]+)" class="graph"')
_PAIR = re.compile(r"-?[\d.]+,-?[\d.]+")  # one "x,y" pair, as written


def page_svg(svg: str) -> str:
    """``svg`` (Graphviz output or gradviz's side-by-side view) for the page: the ``<svg>``
    element alone, no comments, whole-point coordinates, flat curves (a rounded box's
    sides) as lines, default attributes dropped, the most used font family said once on
    the root, and the titles the front end can read from ids left out. On the 4-layer
    GPT's replay this takes about 15% off the gzip-compressed page."""
    svg = _COMMENT.sub("", svg[svg.index("<svg") :])
    svg = _CURVES.sub(_straight_segments, svg)
    svg = _round_geometry(svg)
    svg = _CLOSED.sub(_open_polygon, svg)
    svg = svg.replace(' text-anchor="start"', "")
    svg = _FONT_SIZE.sub(r'\1"', svg)
    svg = _TEXT.sub(_text, svg)
    svg = _hoist_font(svg)
    svg = re.sub(r">\n+<", "><", svg)
    return _drop_node_titles(svg)


def _round_geometry(svg: str) -> str:
    """Coordinates to whole points (half a point off at most: below a pixel at any zoom the
    camera uses), half to even. Rounded in bulk, with no call per number: a real model's
    page holds some 100,000 of them. The geometry values (numbers and path letters only) are
    joined by NUL, which none of them holds, split into numbers once, and put back."""
    parts = _GEOMETRY.split(svg)  # text, then (attribute, value, text) per attribute
    if len(parts) == 1:
        return svg
    pieces = _DECIMAL_SPLIT.split("\0".join(parts[2::3]))
    pieces[1::2] = [str(round(float(n))) for n in pieces[1::2]]  # an int: never "-0"
    parts[2::3] = "".join(pieces).split("\0")
    return "".join(parts)


def _open_polygon(match: re.Match[str]) -> str:
    """A polygon closes itself: Graphviz repeats the first point at the end."""
    points = match.group(1).split(" ")
    if len(points) > 3 and points[0] == points[-1]:
        points = points[:-1]
    return f'points="{" ".join(points)}"'


def _straight_segments(match: re.Match[str]) -> str:
    """The same path with its flat curves (both control points on the ends: the straight
    sides of a rounded box) written as lines; every other curve stays as it is. The pairs
    are compared and joined as the text Graphviz wrote (one call per path, some 2,500 a
    TransformerEncoder page: 34 -> 26 ms)."""
    pairs = _PAIR.findall(match.group(1))
    if len(pairs) % 3 != 1:
        return match.group(0)
    current = pairs[0]
    parts = ['d="M', current]
    for index in range(1, len(pairs), 3):
        c1, c2, end = pairs[index : index + 3]
        if c1 == current and c2 == end:
            parts += ("L", end)
        else:
            parts += ("C", c1, " ", c2, " ", end)
        current = end
    parts.append('"')
    return "".join(parts)


def _text(match: re.Match[str]) -> str:
    """``xml:space="preserve"`` only where it changes something: runs of spaces, or spaces
    at either end."""
    attributes, content = match.groups()
    if "  " not in content and content == content.strip(" "):
        attributes = attributes.replace(' xml:space="preserve"', "")
    return f"<text{attributes}>{content}</text>"


def _hoist_font(svg: str) -> str:
    """The most used font family once, on the root (text inherits it); others stay."""
    counts = Counter(_FONT.findall(svg))
    if not counts:
        return svg
    family, _ = counts.most_common(1)[0]
    svg = svg.replace(f' font-family="{family}"', "")
    end = svg.index("<svg") + len("<svg")
    return f'{svg[:end]} font-family="{family}"{svg[end:]}'


def _drop_node_titles(svg: str) -> str:
    """A node's ``<title>`` (its DOT name) goes where its id is the graph's id, "_" and
    that name, and a forward edge's (its ends) where its id is the graph's id, "_fe_" and
    the two names (without "_" in them): the front end reads them from the id then. Other
    edges and nodes keep theirs."""
    graph = _GRAPH.search(svg)
    if graph is None:
        return svg
    prefix = re.escape(graph.group(1))
    node = re.compile(rf'(<g id="{prefix}_([^"]+)" class="node[^"]*">)<title>\2</title>')
    svg = node.sub(r"\1", svg)
    # a forward edge's id is the graph's id, "_fe_", its ends: "_" between them
    edge = re.compile(
        rf'(<g id="{prefix}_fe_(\w+?)_(\w+)" class="edge[^"]*">)<title>\2&#45;&gt;\3</title>'
    )
    return edge.sub(lambda m: m.group(1) if "_" not in m.group(2) + m.group(3) else m.group(0), svg)
