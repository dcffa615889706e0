"""A fast layered layout for graphs too big for Graphviz ``dot``.

``dot`` passes 1 s near 2,000 nodes and takes about 30 s at 10,000 (its crossing
minimisation and x positioning grow much faster than the graph; with a gradient label on
every edge it doubles its ranks: a T5-shaped replay's backward view, 1,645 nodes, took
20 s of CPU). For views without module boxes gradviz places the nodes itself, in time
linear in the ranked graph (``place``): each node goes one layer below its lowest input,
long edges become chains of virtual nodes, barycentre sweeps order the layers, and labels
get room of their own; ``neato -n2`` then draws the given positions and edge splines.
Element ids and classes are the same as with ``dot``, so the stepper and per-step styling
work unchanged. Module boxes (clusters) are not drawn by this layout.

This module reads gradviz's own DOT text (one statement per line) and never runs
anything; ``gradviz.render.backend.run_dot`` decides when to use it.
"""

from __future__ import annotations

import html
import re
from collections import deque
from dataclasses import dataclass, field
from itertools import pairwise

__all__ = ["FOLDABLE", "LARGE_GRAPH_NODES", "LayoutCost", "count_nodes", "estimate", "place"]

# The comment line a DOT writer adds when ``fold=True`` would fold the graph's repeated
# blocks: the layout's warnings advise ``fold=True`` only then.
FOLDABLE = "// gradviz: foldable"

# Graphs with more node statements than this are laid out by ``place`` + ``neato -n``.
LARGE_GRAPH_NODES = 2000

_KEYWORDS = {"graph", "node", "edge", "subgraph", "digraph"}
_TAG = re.compile(r"<[^>]*>")
_BREAK = re.compile(r"<BR\s*/?>|</TR>", re.I)

CHAR_WIDTH = 6.6  # points per character at the default 11 pt font, with some slack
LINE_HEIGHT = 15.0
LAYER_GAP = 36.0  # vertical space between layers (points)
NODE_GAP = 18.0  # horizontal space between neighbours


def _statements(dot_text: str) -> tuple[list[str], dict[str, int], list[tuple[str, str]]]:
    """Lines, node name -> line index, and edges, from gradviz's one-statement-per-line DOT."""
    lines = dot_text.split("\n")
    nodes: dict[str, int] = {}
    edges: list[tuple[str, str]] = []
    for index, line in enumerate(lines):
        head, _, rest = line.lstrip().partition(" ")
        if rest.startswith("-> "):
            dst = rest[3:].partition(" ")[0].rstrip(";").partition(":")[0]
            edges.append((head.partition(":")[0], dst))
        elif rest.startswith("[") and head not in _KEYWORDS and head not in nodes:
            nodes[head] = index
    return lines, nodes, edges


def count_nodes(dot_text: str) -> int:
    """How many node statements the DOT text has (edges and defaults not counted)."""
    return len(_statements(dot_text)[1])


@dataclass(frozen=True)
class LayoutCost:
    """What makes ``dot`` slow, read from the DOT text in O(nodes + edges).

    ``dot`` ranks the nodes, then breaks every edge that spans several ranks into a chain of
    virtual nodes, and its crossing minimisation and spline routing work on that longer graph:
    a few hundred nodes with long edges (weights shared across time steps, forward and
    backward side by side) cost more than thousands in a chain. ``span`` counts those virtual
    nodes, ranked here by longest path, as ``place`` does.
    """

    nodes: int
    edges: int
    clusters: int
    span: int
    labels: int = 0  # labelled edges: ``dot`` doubles its ranks to make room for them
    boxes: int = 0  # clusters that draw module boxes (the legend's cluster not counted)

    @property
    def flat(self) -> bool:
        """No module boxes: ``place`` draws the view as ``dot`` would, only faster."""
        return self.boxes == 0

    @property
    def work(self) -> int:
        """One number to compare with a budget: the graph ``dot`` really lays out, weighed
        up for clusters (laid out one by one and then merged)."""
        span = 2 * self.span + self.edges if self.labels else self.span
        size = self.nodes + self.edges + span
        return size * (2 if self.clusters else 1)


def estimate(dot_text: str) -> LayoutCost:
    """The size of the layout problem that ``dot`` would face for this DOT text."""
    lines, nodes, edges = _statements(dot_text)
    layer, _ = _layering(nodes, edges)
    span = sum(
        abs(layer[dst] - layer[src]) - 1
        for src, dst in edges
        if src in layer and dst in layer and abs(layer[dst] - layer[src]) > 1
    )
    clusters = dot_text.count("subgraph cluster")
    boxes = clusters - dot_text.count("subgraph cluster_legend")
    labels = sum(1 for line in lines if "->" in line and _EDGE_LABEL.search(line) is not None)
    return LayoutCost(len(nodes), len(edges), clusters, span, labels, boxes)


def _layering(
    nodes: dict[str, int], edges: list[tuple[str, str]]
) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Each node's layer and its parents, from the edges between known nodes (what
    ``estimate`` and ``place`` both start from)."""
    order = list(nodes)
    children: dict[str, list[str]] = {name: [] for name in order}
    parents: dict[str, list[str]] = {name: [] for name in order}
    for src, dst in edges:
        if src in children and dst in children and src != dst:
            children[src].append(dst)
            parents[dst].append(src)
    back = _back_edges(order, children)
    if back:
        children = {
            name: [c for c in below if (name, c) not in back] for name, below in children.items()
        }
        parents = {
            name: [p for p in above if (p, name) not in back] for name, above in parents.items()
        }
    return _layers(order, children, parents), parents


_HTML_LABEL = re.compile(r"label=<((?:[^<>]|<[^<>]*>)*)>")
_QUOTED_LABEL = re.compile(r'label="((?:[^"\\]|\\.)*)"')


def _label_size(statement: str, cache: dict[str, tuple[float, float]]) -> tuple[float, float]:
    """Width and height in points of a node, estimated from its label text."""
    found = _HTML_LABEL.search(statement)
    if found is not None:
        text = found.group(1)
        if text in cache:
            return cache[text]
        lines = [html.unescape(_TAG.sub("", part)) for part in _BREAK.split(text)]
    else:
        quoted = _QUOTED_LABEL.search(statement)
        text = quoted.group(1) if quoted else ""
        if text in cache:
            return cache[text]
        lines = text.split("\\n")
    lines = [line for line in lines if line.strip()] or [""]
    width = max(len(line) for line in lines) * CHAR_WIDTH + 24.0
    height = len(lines) * LINE_HEIGHT + 12.0
    cache[text] = (max(width, 30.0), max(height, 20.0))
    return cache[text]


def place(dot_text: str) -> str:
    """The same DOT with ``pos`` on every node and routed edge, for ``neato -n2``.

    A Sugiyama-style layout in time linear in the ranked graph: each edge that spans
    several layers becomes a chain of virtual nodes, so edges run between the nodes of the
    layers they cross, never through them; a few barycentre sweeps order each layer to
    cut crossings; each layer's x positions are the least-squares closest to the mean of
    the node's neighbours that keep the order and the spacing (isotonic regression, one
    pass per layer). A labelled edge gets a virtual node as wide as its label, in a layer
    of its own between the node layers, so labels overlap neither nodes nor each other."""
    lines = dot_text.split("\n")
    nodes, edges = _parse(lines)
    layer, _ = _layering(nodes, [(src, dst) for src, dst, _ in edges])
    _pull_down(layer, edges)
    cache: dict[str, tuple[float, float]] = {}
    sizes = [_node_size(lines[index], cache) for index in nodes.values()]
    labels = {index: _edge_label_size(lines[index], cache) for _, _, index in edges}
    labelled = {index: size for index, size in labels.items() if size is not None}
    graph = _Ranked(2 if labelled else 1)
    ids = {
        name: graph.add(layer[name] * graph.step, size)
        for name, size in zip(nodes, sizes, strict=True)
    }
    downward = [
        (ids[src], ids[dst], index)
        for src, dst, index in edges
        if src in ids and dst in ids and graph.rank[ids[dst]] > graph.rank[ids[src]]
    ]
    routes = graph.route(downward, labelled)
    graph.order()
    graph.settle()
    top = graph.heights()

    for name, index in nodes.items():
        vertex = ids[name]
        _set_pos(lines, index, f'pos="{graph.x[vertex]:.1f},{-top[graph.rank[vertex]]:.1f}"')
    for index, route in routes.items():
        _set_pos(lines, index, graph.spline(route, top, labelled.get(index)))
    for index, line in enumerate(lines):
        if "{" in line:  # the graph's opening line
            lines[index] = line + "\n  graph [splines=false overlap=true outputorder=edgesfirst];"
            break
    return "\n".join(lines)


def _set_pos(lines: list[str], index: int, attributes: str) -> None:
    line = lines[index]
    bracket = line.find("[")
    if bracket < 0:  # a bare statement: give it an attribute list
        stripped = line.rstrip().rstrip(";")
        lines[index] = f"{stripped} [{attributes}];"
    else:
        lines[index] = f"{line[: bracket + 1]}{attributes} {line[bracket + 1 :]}"


def _parse(lines: list[str]) -> tuple[dict[str, int], list[tuple[str, str, int]]]:
    """Node name -> line index, and each edge with its line (first hop of a chain)."""
    nodes: dict[str, int] = {}
    edges: list[tuple[str, str, int]] = []
    for index, line in enumerate(lines):
        head, _, rest = line.lstrip().partition(" ")
        if rest.startswith("-> "):
            dst = rest[3:].partition(" ")[0].rstrip(";").partition(":")[0]
            edges.append((head.partition(":")[0], dst, index))
        elif rest.startswith("[") and head not in _KEYWORDS and head not in nodes:
            nodes[head] = index
    return nodes, edges


def _pull_down(layer: dict[str, int], edges: list[tuple[str, str, int]]) -> None:
    """Nodes with at least as many outputs as inputs go down to just above their first
    consumer (deepest first, so chains follow): a weight fed into a late layer sits next to
    it, not at the top with an edge down the whole graph. Moving such a node shortens its
    outgoing edges by at least as much as it lengthens its incoming ones. A node with inputs
    stays where it is when its nearest consumer joins several edges (the weight gradient
    every step of an unrolled loop adds to): its long edge then shares that join's trunk
    (``_Ranked.route``) instead of running alone beside it, once per step."""
    children: dict[str, list[str]] = {}
    inputs: dict[str, int] = {}
    for src, dst, _ in edges:
        if src in layer and dst in layer and src != dst:
            children.setdefault(src, []).append(dst)
            inputs[dst] = inputs.get(dst, 0) + 1
    for name in sorted(children, key=layer.__getitem__, reverse=True):
        below = children[name]
        if len(below) < inputs.get(name, 0):
            continue
        nearest = min(below, key=layer.__getitem__)
        if inputs.get(name, 0) and inputs.get(nearest, 0) > 1:
            continue  # a join's long edges share one trunk; this node's would not
        layer[name] = max(layer[name], layer[nearest] - 1)


_SIZE = re.compile(r"\b(width|height)=\"?([0-9.]+)")
_EDGE_LABEL = re.compile(r"[\[\s]label=(<(?:[^<>]|<[^<>]*>)*>|\"(?:[^\"\\]|\\.)*\")")
MIN_WIDTH = 54.0  # Graphviz's default node size (0.75 x 0.5 inch), in points
MIN_HEIGHT = 36.0
ARROW = 7.0  # arrowhead length at the theme's arrowsize 0.7


def _node_size(statement: str, cache: dict[str, tuple[float, float]]) -> tuple[float, float]:
    """The node's size as Graphviz draws it: the label's, at least width/height."""
    width, height = _label_size(statement, cache)
    least = {"width": MIN_WIDTH, "height": MIN_HEIGHT}
    for key, value in _SIZE.findall(
        statement.partition(" label=")[0] + statement.rpartition(">")[2]
    ):
        least[key] = float(value) * 72.0
    return max(width, least["width"]), max(height - 4.0, least["height"])


def _edge_label_size(
    statement: str, cache: dict[str, tuple[float, float]]
) -> tuple[float, float] | None:
    found = _EDGE_LABEL.search(statement)
    if found is None:
        return None
    width, height = _label_size(f"label={found.group(1)}", cache)
    return width - 16.0, height - 8.0


class _Ranked:
    """The ranked graph: real and virtual nodes, their ranks, order and x positions."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.rank: list[int] = []
        self.width: list[float] = []
        self.height: list[float] = []
        self.ups: list[list[int]] = []
        self.downs: list[list[int]] = []
        self.x: list[float] = []
        self.offset: list[float] = []  # where the edge passes, from the vertex's centre
        self.rows: dict[int, list[int]] = {}
        self.trunks: dict[int, _Trunk] = {}  # by the node whose long edges share it
        self.lanes: dict[int, int] = {}  # a trunk's virtual node -> the trunk's lane
        self.gaps: dict[int, float] = {}  # rank -> the free band below it (``heights``)
        self._pulled: tuple[list[list[int]], list[list[int]]] | None = None  # ``_pulls``

    def add(self, rank: int, size: tuple[float, float]) -> int:
        vertex = len(self.rank)
        self.rank.append(rank)
        self.width.append(size[0])
        self.height.append(size[1])
        self.offset.append(0.0)
        self.ups.append([])
        self.downs.append([])
        self.rows.setdefault(rank, []).append(vertex)
        return vertex

    def route(
        self, edges: list[tuple[int, int, int]], labels: dict[int, tuple[float, float]]
    ) -> dict[int, _Route]:
        """Each downward edge's route, by its line. A long edge (one that crosses more than
        one node layer) whose source sends, or whose head receives, other long edges
        joins that end's trunk: one chain of virtual nodes shared by all of them, as a
        weight's gradient that every step of an unrolled loop adds to draws one line up
        the whole graph. Without trunks such a graph has a virtual node per edge and layer
        crossed, which grows with the square of its length."""
        long_span = 2 * self.step
        sends: dict[int, int] = {}
        receives: dict[int, int] = {}
        for src, dst, _ in edges:
            if self.rank[dst] - self.rank[src] > long_span:
                sends[src] = sends.get(src, 0) + 1
                receives[dst] = receives.get(dst, 0) + 1
        routes: dict[int, _Route] = {}
        for src, dst, index in edges:
            label = labels.get(index)
            first, last = self.rank[src], self.rank[dst]
            if last - first <= long_span:
                routes[index] = _Route.of(self.chain(src, dst, label))
            elif sends[src] >= 2 and sends[src] >= receives[dst]:
                stop = last - 2 if label else last - 1  # a label takes the layer above dst
                trunk = self._trunk(src, first + 1, stop)
                tail = ([self._label_vertex(last - 1, label)] if label else []) + [dst]
                self._hops([trunk.vertices[stop], *tail])
                routes[index] = _Route([src], trunk, first + 1, stop, tail)
            elif receives[dst] >= 2:
                start = first + 2 if label else first + 1  # a label takes the layer below src
                trunk = self._trunk(dst, start, last - 1)
                head = [src] + ([self._label_vertex(first + 1, label)] if label else [])
                self._hops([*head, trunk.vertices[start]])
                routes[index] = _Route(head, trunk, start, last - 1, [dst])
            else:
                routes[index] = _Route.of(self.chain(src, dst, label))
        return routes

    def _trunk(self, end: int, low: int, high: int) -> _Trunk:
        """``end``'s trunk, grown to cover ranks ``low`` to ``high`` (its end included)."""
        trunk = self.trunks.get(end)
        if trunk is None:
            start = self.rank[end]
            trunk = self.trunks[end] = _Trunk(end, {start: end}, start, start, len(self.trunks))
        for rank in [*range(low, trunk.low), *range(trunk.high + 1, high + 1)]:
            vertex = trunk.vertices[rank] = self.add(rank, (4.0, 0.0))
            self.lanes[vertex] = trunk.lane
        if low < trunk.low:
            self._hops([trunk.vertices[r] for r in range(low, trunk.low + 1)])
            trunk.low = low
        if high > trunk.high:
            self._hops([trunk.vertices[r] for r in range(trunk.high, high + 1)])
            trunk.high = high
        return trunk

    def _hops(self, path: list[int]) -> None:
        for upper, lower in pairwise(path):
            self.downs[upper].append(lower)
            self.ups[lower].append(upper)

    def _label_vertex(self, rank: int, label: tuple[float, float]) -> int:
        """A virtual node as wide as the label; the edge passes at its left."""
        vertex = self.add(rank, (label[0] + 8.0, label[1]))
        self.offset[vertex] = 2.0 - (label[0] + 8.0) / 2
        return vertex

    def chain(self, src: int, dst: int, label: tuple[float, float] | None) -> list[int]:
        """The vertices an edge passes: its ends and a virtual node in each layer between
        (the middle one as wide as the label, if any)."""
        first, last = self.rank[src], self.rank[dst]
        middle = first + (last - first) // 2
        chain = [src]
        for rank in range(first + 1, last):
            if label and rank == middle:  # the edge passes at the left, the label right
                chain.append(self._label_vertex(rank, label))
            else:
                chain.append(self.add(rank, (4.0, 0.0)))
        chain.append(dst)
        self._hops(chain)
        return chain

    def order(self, sweeps: int = 4) -> None:
        """Barycentre sweeps, down then up: each vertex moves to the mean position of its
        neighbours in the layer before (a trunk's: the trunk's, ``_pulls``)."""
        where = [0.0] * len(self.rank)
        ranks = sorted(self.rows)
        for rank in ranks:
            for position, vertex in enumerate(self.rows[rank]):
                where[vertex] = float(position)
        ups, downs = self._pulls()
        for sweep in range(sweeps):
            down = sweep % 2 == 0
            for rank in ranks if down else reversed(ranks):
                row = self.rows[rank]
                near = ups if down else downs
                key = {}
                for vertex in row:
                    others = near[vertex]
                    key[vertex] = (
                        sum(where[o] for o in others) / len(others) if others else where[vertex]
                    )
                row.sort(key=key.__getitem__)
                if self.lanes:  # trunks run at the right, each in its own lane
                    row.sort(key=lambda vertex: self.lanes.get(vertex, -1))
                for position, vertex in enumerate(row):
                    where[vertex] = float(position)

    def settle(self) -> None:
        """x positions: packed, then pulled towards the neighbours above, below, above."""
        self.x = [0.0] * len(self.rank)
        for row in self.rows.values():
            edge = 0.0
            for vertex in row:
                self.x[vertex] = edge + self.width[vertex] / 2
                edge += self.width[vertex] + NODE_GAP
            shift = edge / 2
            for vertex in row:
                self.x[vertex] -= shift
        ranks = sorted(self.rows)
        ups, downs = self._pulls()
        for near, order in ((ups, ranks), (downs, ranks[::-1]), (ups, ranks)):
            for rank in order:
                row = self.rows[rank]
                wanted = [
                    sum(self.x[o] + self.offset[o] for o in near[v]) / len(near[v]) - self.offset[v]
                    if near[v]
                    else self.x[v]
                    for v in row
                ]
                gaps = [(self.width[a] + self.width[b]) / 2 + NODE_GAP for a, b in pairwise(row)]
                for vertex, x in zip(row, _isotonic(wanted, gaps), strict=True):
                    self.x[vertex] = x
        self._straighten()

    def _straighten(self) -> None:
        """Each trunk as one vertical line right of every node and earlier trunk in the
        layers it spans: its edges then bend only where they join or leave it."""
        right: dict[int, float] = {}  # rank -> the right edge of what is placed there
        for rank, row in self.rows.items():
            placed = [self.x[v] + self.width[v] / 2 for v in row if v not in self.lanes]
            right[rank] = max(placed, default=-NODE_GAP)
        for trunk in sorted(self.trunks.values(), key=lambda t: t.lane):
            inner = [v for v in trunk.vertices.values() if v != trunk.end]
            if not inner:
                continue
            ranks = [self.rank[v] for v in inner]
            column = max(right[r] for r in ranks) + NODE_GAP
            for vertex, rank in zip(inner, ranks, strict=True):
                self.x[vertex] = column
                right[rank] = column + 2.0

    def _pulls(self) -> tuple[list[list[int]], list[list[int]]]:
        if self._pulled is None:
            self._pulled = self._trunk_pulls()
        return self._pulled

    def _trunk_pulls(self) -> tuple[list[list[int]], list[list[int]]]:
        """The neighbours each vertex is pulled towards: a trunk's virtual nodes follow
        the trunk alone, not the edges that branch off it: the nodes beside a trunk are
        not dragged towards the column ``_straighten`` then puts it in. Made once."""
        if not self.trunks:
            return self.ups, self.downs
        ups, downs = list(self.ups), list(self.downs)
        for trunk in self.trunks.values():
            for rank in range(trunk.low, trunk.high + 1):
                vertex = trunk.vertices[rank]
                if vertex == trunk.end:
                    continue
                above, below = trunk.vertices.get(rank - 1), trunk.vertices.get(rank + 1)
                ups[vertex] = [] if above is None else [above]
                downs[vertex] = [] if below is None else [below]
        return ups, downs

    def heights(self) -> dict[int, float]:
        """Each rank's centre, measured down from the top (points)."""
        tallest: dict[int, float] = {}
        for rank, row in self.rows.items():
            tallest[rank] = max(self.height[v] for v in row)
        gap = LAYER_GAP if self.step == 1 else LAYER_GAP * 0.6
        top: dict[int, float] = {}
        y = 0.0
        for rank in range(min(tallest, default=0), max(tallest, default=-1) + 1):
            height = tallest.get(rank, 0.0)
            top[rank] = y + height / 2
            y += height + gap
            self.gaps[rank] = y - gap / 2  # the middle of the free band below the rank
        return top

    def spline(
        self, route: _Route, top: dict[int, float], label: tuple[float, float] | None
    ) -> str:
        """The edge's ``pos`` (a B-spline with vertical tangents through its virtual nodes,
        ending in an arrowhead on the head's top) and its label's ``lp``. Along a trunk
        it passes the trunk's two ends only (a trunk is straight). It
        runs down through its virtual nodes' own slots and moves sideways only in the free
        band between two layers, so it never crosses a node, however far it moves."""
        src, dst = route.head[0], route.tail[-1]
        points = [(self.x[src], -top[self.rank[src]] - self.height[src] / 2)]
        label_at = ""
        passed = route.head[1:]
        if route.trunk is not None:
            passed += self._along(route.trunk, route.low, route.high)
        passed += route.tail[:-1]
        previous = src
        for vertex in [*passed, dst]:
            x = self.x[vertex] + self.offset[vertex]
            if abs(x - points[-1][0]) > 0.5:  # across in the free band below the layer
                band = -self.gaps[self.rank[previous]]
                points += [(points[-1][0], band), (x, band)]
            previous = vertex
            if vertex == dst:
                break
            y = -top[self.rank[vertex]]
            if self.offset[vertex] and label is not None:  # the label's virtual node
                label_at = f' lp="{x + 4.0 + label[0] / 2:.1f},{y:.1f}"'
            points.append((x, y))
        tip_y = -top[self.rank[dst]] + self.height[dst] / 2
        tip = (self.x[dst], tip_y)
        points.append((self.x[dst], tip_y + ARROW))
        points = _without_straight_runs(points)
        parts = [f"{points[0][0]:.1f},{points[0][1]:.1f}"]
        for (x0, y0), (x1, y1) in pairwise(points):
            mid = (y0 + y1) / 2
            parts.append(f"{x0:.1f},{mid:.1f} {x1:.1f},{mid:.1f} {x1:.1f},{y1:.1f}")
        return f'pos="e,{tip[0]:.1f},{tip[1]:.1f} {" ".join(parts)}"{label_at}'

    def _along(self, trunk: _Trunk, low: int, high: int) -> list[int]:
        """The trunk's vertices at ranks ``low`` and ``high``: between them the trunk is
        one straight line (``_straighten``), so the route needs no point of its own there."""
        return [trunk.vertices[low]] if low == high else [trunk.vertices[low], trunk.vertices[high]]


@dataclass
class _Trunk:
    """The virtual nodes one node's long edges share, by rank (its own rank: itself)."""

    end: int
    vertices: dict[int, int]
    low: int = 0
    high: int = 0
    lane: int = 0  # its place among the trunks, right of the nodes


@dataclass
class _Route:
    """An edge's vertices: ``head``, then (on a trunk) the trunk's from ``low`` to
    ``high``, then ``tail``; a short edge's are all in ``head``."""

    head: list[int]
    trunk: _Trunk | None = None
    low: int = 0
    high: int = 0
    tail: list[int] = field(default_factory=list)

    @staticmethod
    def of(chain: list[int]) -> _Route:
        return _Route(chain[:-1], tail=chain[-1:])


def _without_straight_runs(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The route without the points inside a vertical run (a long edge passing layers
    straight down): one curve spans the run, so a drawing's path data grows with its
    edges' bends, not with how many layers each edge crosses."""
    kept = points[:1]
    for before, point, after in zip(points, points[1:], points[2:], strict=False):
        if abs(before[0] - point[0]) < 0.5 and abs(after[0] - point[0]) < 0.5:
            continue
        kept.append(point)
    return kept + points[-1:] if len(points) > 1 else kept


def _isotonic(wanted: list[float], gaps: list[float]) -> list[float]:
    """The positions closest to ``wanted`` (least squares) that keep the order with at
    least ``gaps`` between neighbours: pool-adjacent-violators on the shifted targets."""
    offsets = [0.0]
    for gap in gaps:
        offsets.append(offsets[-1] + gap)
    blocks: list[list[float]] = []  # [sum, count]
    for target, offset in zip(wanted, offsets, strict=True):
        blocks.append([target - offset, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    result: list[float] = []
    for total, count in blocks:
        result.extend([total / count] * int(count))
    return [value + offset for value, offset in zip(result, offsets, strict=True)]


def _layers(
    order: list[str], children: dict[str, list[str]], parents: dict[str, list[str]]
) -> dict[str, int]:
    """Longest path from the sources (Kahn's order) of an acyclic graph."""
    pending = {name: len(parents[name]) for name in order}
    layer = dict.fromkeys(order, 0)
    queue = deque(name for name in order if pending[name] == 0)
    while queue:
        name = queue.popleft()
        below = layer[name] + 1
        for child in children[name]:
            if layer[child] < below:
                layer[child] = below
            pending[child] -= 1
            if pending[child] == 0:
                queue.append(child)
    return layer


def _back_edges(order: list[str], children: dict[str, list[str]]) -> set[tuple[str, str]]:
    """The edges that close a cycle, found as Graphviz finds them: by a depth-first search
    from each node in the statements' order, an edge to a node still on the search's path.
    Pointing them up makes the graph acyclic. An op that returns its input (``x.to(x.dtype)``
    in every Llama layer's norm) makes such a cycle in a forward drawing: laid out without
    its back edge, the tensor sits just above the op; stacked below the whole graph, as
    before, it gave edges across 1,400 layers."""
    back: set[tuple[str, str]] = set()
    state = dict.fromkeys(order, 0)  # 0 unseen, 1 on the path, 2 finished
    for root in order:
        if state[root]:
            continue
        state[root] = 1
        path = [(root, iter(children[root]))]
        while path:
            name, below = path[-1]
            child = next(below, None)
            if child is None:
                state[name] = 2
                path.pop()
            elif state[child] == 1:
                back.add((name, child))
            elif state[child] == 0:
                state[child] = 1
                path.append((child, iter(children[child])))
    return back
