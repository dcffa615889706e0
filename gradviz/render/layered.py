"""A fast layered layout for graphs too big for Graphviz ``dot``.

``dot`` passes 1 s near 2,000 nodes and takes about 30 s at 10,000 (its crossing
minimisation and spline routing grow much faster than the graph), and ``sfdp`` still
takes ~10 s at 10,000 and loses the top-down reading. For big graphs gradviz places the
nodes itself, in O(nodes + edges): each node goes one layer below its lowest input
(longest path from the roots, so every edge points down), and within a layer near the
mean position of the nodes that feed it; then ``neato -n`` draws the given positions with
straight edges. Element ids and classes are the same as with ``dot``, so the stepper and
per-step styling work unchanged.

This module reads gradviz's own DOT text (one statement per line) and never runs
anything; ``gradviz.render.backend.run_dot`` decides when to use it.
"""

from __future__ import annotations

import html
import re
from collections import deque
from dataclasses import dataclass

__all__ = ["LARGE_GRAPH_NODES", "LayoutCost", "count_nodes", "estimate", "place"]

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

    @property
    def work(self) -> int:
        """One number to compare with a budget: the graph ``dot`` really lays out, weighed
        up for clusters (laid out one by one and then merged)."""
        size = self.nodes + self.edges + self.span
        return size * (2 if self.clusters else 1)


def estimate(dot_text: str) -> LayoutCost:
    """The size of the layout problem that ``dot`` would face for this DOT text."""
    _, nodes, edges = _statements(dot_text)
    layer, _ = _layering(nodes, edges)
    span = sum(
        abs(layer[dst] - layer[src]) - 1
        for src, dst in edges
        if src in layer and dst in layer and abs(layer[dst] - layer[src]) > 1
    )
    clusters = dot_text.count("subgraph cluster")
    return LayoutCost(len(nodes), len(edges), clusters, span)


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
    """The same DOT with ``pos`` on every node, for ``neato -n`` (straight edges)."""
    lines, nodes, edges = _statements(dot_text)
    order = list(nodes)
    layer, parents = _layering(nodes, edges)
    cache: dict[str, tuple[float, float]] = {}
    size = {name: _label_size(lines[index], cache) for name, index in nodes.items()}
    x = _columns(order, layer, parents, size)

    heights: dict[int, float] = {}
    for name in order:
        heights[layer[name]] = max(heights.get(layer[name], 0.0), size[name][1])
    top: dict[int, float] = {}
    y = 0.0
    for index in sorted(heights):
        top[index] = y + heights[index] / 2
        y += heights[index] + LAYER_GAP

    for name, index in nodes.items():
        line = lines[index]
        bracket = line.index("[") + 1
        pos = f'pos="{x[name]:.1f},{-top[layer[name]]:.1f}" '
        lines[index] = line[:bracket] + pos + line[bracket:]
    for index, line in enumerate(lines):
        if "{" in line:  # the graph's opening line
            lines[index] = line + "\n  graph [splines=false overlap=true outputorder=edgesfirst];"
            break
    return "\n".join(lines)


def _layers(
    order: list[str], children: dict[str, list[str]], parents: dict[str, list[str]]
) -> dict[str, int]:
    """Longest path from the sources (Kahn's order); nodes on a cycle go below the rest."""
    pending = {name: len(parents[name]) for name in order}
    layer = dict.fromkeys(order, 0)
    queue = deque(name for name in order if pending[name] == 0)
    seen = 0
    while queue:
        name = queue.popleft()
        seen += 1
        below = layer[name] + 1
        for child in children[name]:
            if layer[child] < below:
                layer[child] = below
            pending[child] -= 1
            if pending[child] == 0:
                queue.append(child)
    if seen < len(order):  # a cycle (gradviz graphs have none): stack the rest below
        deepest = max(layer.values(), default=0)
        for name in order:
            if pending[name] > 0:
                deepest += 1
                layer[name] = deepest
    return layer


def _columns(
    order: list[str],
    layer: dict[str, int],
    parents: dict[str, list[str]],
    size: dict[str, tuple[float, float]],
) -> dict[str, float]:
    """x of each node: near the mean of its parents, neighbours kept apart, layer centred."""
    rows: dict[int, list[str]] = {}
    for name in order:
        rows.setdefault(layer[name], []).append(name)
    x: dict[str, float] = {}
    for index in sorted(rows):
        row = rows[index]
        wanted: dict[str, float] = {}
        for position, name in enumerate(row):
            above = [x[p] for p in parents[name] if p in x]
            wanted[name] = sum(above) / len(above) if above else position * 1e-3
        row.sort(key=lambda n: wanted[n])
        placed: list[float] = []
        edge = float("-inf")
        for name in row:
            half = size[name][0] / 2
            centre = max(wanted[name], edge + half)
            placed.append(centre)
            edge = centre + half + NODE_GAP
        shift = sum(wanted[n] - c for n, c in zip(row, placed, strict=True)) / len(row)
        for name, centre in zip(row, placed, strict=True):
            x[name] = centre + shift
    return x
