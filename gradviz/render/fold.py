"""Folding: runs of structurally identical blocks drawn as one box with ``× N``.

A ResNet stage, the layers of an MLP or a transformer's blocks repeat the same backward
subgraph many times. ``fold_graph`` finds those runs and replaces each by one node, so
the drawing shows the structure once and says how often it repeats
(``graph.to_dot(fold=True)``).

How blocks are found, in O(nodes + edges):

1. The *spine*: the nodes that every path from the root to the deepest node passes
   through (its dominators: the residual adds of a ResNet, each layer of an MLP).
2. Each node belongs to the segment of the nearest spine node that dominates it, so a
   segment is one spine node with everything hanging off it (weights, side branches).
3. Each segment gets a signature: node types and edges, in a canonical walk order.
4. Runs of ``period`` consecutive segments repeated at least ``min_repeats`` times fold
   into one box, as long as nothing outside the run points into its middle.

Pure data: no torch, and the input graph is left untouched.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, replace

from gradviz.model.graph import Edge, Graph, Node

__all__ = ["FoldedNode", "fold_graph", "fold_with_reason"]

MAX_PERIOD = 8  # the longest block, in spine segments, that folding looks for
MIN_FOLDED_NODES = 4  # runs that cover fewer nodes are not worth a box


@dataclass(eq=False)
class FoldedNode(Node):
    """A box standing for ``repeats`` identical blocks; ``members`` are the node ids."""

    repeats: int = 1
    members: tuple[str, ...] = ()
    # each member's block, counted in the order the forward pass ran them (1 .. repeats)
    blocks: tuple[int, ...] = ()
    contents: str = ""  # the node types of one block, e.g. 'AddmmBackward0, ReluBackward0'


def fold_graph(graph: Graph, min_repeats: int = 2) -> Graph:
    """A new graph in which each run of identical blocks is one ``FoldedNode``."""
    return fold_with_reason(graph, min_repeats)[0]


def fold_with_reason(graph: Graph, min_repeats: int = 2) -> tuple[Graph, str]:
    """``fold_graph``, and when nothing folded, why (else "")."""
    if min_repeats < 2 or len(graph.nodes) < MIN_FOLDED_NODES * 2:
        return graph, f"the graph has {len(graph.nodes)} nodes: too few to hold repeated blocks"
    children = {n.id: [e.dst for e in graph.out_edges(n.id) if e.dst is not None] for n in graph}
    order = _topological(graph, children)
    if order is None:
        return graph, "the graph has a cycle"
    idom = _dominators(graph, order, children)
    spine = _spine(graph, order, children, idom)
    if len(spine) < min_repeats:
        return graph, (
            "no chain of nodes that every gradient passes through (the blocks are not in "
            "sequence, e.g. parallel branches all the way)"
        )
    segment = _segments(order, idom, spine)
    members: list[list[str]] = [[] for _ in spine]
    for node_id in order:
        if node_id in segment:
            members[segment[node_id]].append(node_id)
    signatures = [_signature(graph, spine, i, segment, children) for i in range(len(spine))]
    runs = _runs(signatures, [len(m) for m in members], min_repeats)
    parents: dict[str, list[str]] = {n.id: [] for n in graph}
    for node_id, kids in children.items():
        for kid in kids:
            parents[kid].append(node_id)
    folds: list[tuple[int, int, int]] = []
    for start, period, repeats in runs:
        inside = {n for s in range(start, start + period * repeats) for n in members[s]}
        entry = spine[start]
        if all(p in inside for n in inside if n != entry for p in parents[n]):
            folds.append((start, period, repeats))
    if not folds:
        if not runs:
            return graph, (
                f"no block repeats {min_repeats} or more times in a row along the chain of "
                f"{len(spine)} nodes every gradient passes through"
            )
        return graph, "each repeated run has a node fed from outside the run in its middle"
    return _build(graph, spine, members, folds), ""


def _topological(graph: Graph, children: dict[str, list[str]]) -> list[str] | None:
    pending = {n.id: 0 for n in graph}
    for kids in children.values():
        for kid in kids:
            pending[kid] += 1
    queue = deque(n.id for n in graph if pending[n.id] == 0)
    order: list[str] = []
    while queue:
        node_id = queue.popleft()
        order.append(node_id)
        for kid in children[node_id]:
            pending[kid] -= 1
            if pending[kid] == 0:
                queue.append(kid)
    return order if len(order) == len(graph.nodes) else None


_TOP = "<top>"  # a virtual root above every source, so several roots work too


def _dominators(graph: Graph, order: list[str], children: dict[str, list[str]]) -> dict[str, str]:
    """Immediate dominators on a DAG: one pass in topological order (Cooper et al.)."""
    rank = {node_id: i + 1 for i, node_id in enumerate(order)}
    rank[_TOP] = 0
    parents: dict[str, list[str]] = {node_id: [] for node_id in order}
    for node_id in order:
        for kid in children[node_id]:
            parents[kid].append(node_id)
    idom: dict[str, str] = {_TOP: _TOP}
    for node_id in order:
        preds = parents[node_id] or [_TOP]
        best = preds[0]
        for other in preds[1:]:
            a, b = best, other
            while a != b:
                while rank[a] > rank[b]:
                    a = idom[a]
                while rank[b] > rank[a]:
                    b = idom[b]
            best = a
        idom[node_id] = best
    return idom


def _spine(
    graph: Graph, order: list[str], children: dict[str, list[str]], idom: dict[str, str]
) -> list[str]:
    """The dominators of the deepest node, from the top down."""
    depth: dict[str, int] = {}
    for node_id in order:
        depth.setdefault(node_id, 0)
        for kid in children[node_id]:
            depth[kid] = max(depth.get(kid, 0), depth[node_id] + 1)
    # the first of the deepest, in topological order; not a leaf's AccumulateGrad: a weight
    # shared by several blocks (tied embeddings, a recurrent cell's weights) is reached from
    # all of them, so its only dominator is the root and the spine would be empty
    ops = [n for n in order if not graph.node(n).is_accumulate_grad] or order
    deepest = max(ops, key=depth.__getitem__)
    chain = []
    node_id = deepest
    while node_id != _TOP:
        chain.append(node_id)
        node_id = idom[node_id]
    return chain[::-1]


def _segments(order: list[str], idom: dict[str, str], spine: list[str]) -> dict[str, int]:
    """Node id -> index of the nearest spine node that dominates it."""
    index = {node_id: i for i, node_id in enumerate(spine)}
    segment: dict[str, int] = {}
    for node_id in order:  # dominators come first in topological order
        if node_id in index:
            segment[node_id] = index[node_id]
        elif idom[node_id] in segment:
            segment[node_id] = segment[idom[node_id]]
    return segment


def _signature(
    graph: Graph,
    spine: list[str],
    i: int,
    segment: dict[str, int],
    children: dict[str, list[str]],
) -> str:
    """Types and edges of segment ``i`` in a canonical walk order from its spine node."""
    local = {spine[i]: 0}
    queue = deque([spine[i]])
    parts = []
    while queue:
        node_id = queue.popleft()
        codes = []
        for edge in graph.out_edges(node_id):
            dst = edge.dst
            if dst is None:
                codes.append(f"-{edge.input_nr}")
            elif segment.get(dst) == i:
                if dst not in local:
                    local[dst] = len(local)
                    queue.append(dst)
                codes.append(f"{local[dst]}.{edge.input_nr}")
            elif _shared(graph, dst, segment):
                codes.append(f"s.{edge.input_nr}")  # a weight every block uses (an RNN cell)
            else:
                codes.append(f"x{segment.get(dst, -1) - i}.{edge.input_nr}")
        parts.append(f"{graph.node(node_id).type_name}({','.join(codes)})")
    return ";".join(parts)


def _shared(graph: Graph, node_id: str, segment: dict[str, int]) -> bool:
    """Fed from several segments: the same for each block, wherever it sits."""
    return len({segment.get(e.src, -1) for e in graph.in_edges(node_id)}) > 1


def _runs(signatures: list[str], sizes: list[int], min_repeats: int) -> list[tuple[int, int, int]]:
    """Greedy, left to right: (start, period, repeats) of the longest repeating runs."""
    runs = []
    i = 0
    count = len(signatures)
    while i < count:
        best = (0, 0, 0)  # (covered segments, -period, repeats)
        for period in range(1, min(MAX_PERIOD, (count - i) // min_repeats) + 1):
            unit = signatures[i : i + period]
            repeats = 1
            while signatures[i + repeats * period : i + (repeats + 1) * period] == unit:
                repeats += 1
            if repeats < min_repeats or sum(sizes[i : i + period * repeats]) < MIN_FOLDED_NODES:
                continue
            if (period * repeats, -period) > best[:2]:
                best = (period * repeats, -period, repeats)
        if best[0]:
            runs.append((i, -best[1], best[2]))
            i += best[0]
        else:
            i += 1
    return runs


def _build(
    graph: Graph, spine: list[str], members: list[list[str]], folds: list[tuple[int, int, int]]
) -> Graph:
    fold_of: dict[str, str] = {}  # member node id -> folded node id
    boxes: dict[str, FoldedNode] = {}  # spine entry -> its box
    for number, (start, period, repeats) in enumerate(folds):
        fold_id = f"fold{number}"
        inside = [n for s in range(start, start + period * repeats) for n in members[s]]
        # the spine runs from the loss back: its first block is the forward's last
        blocks = [
            repeats - (s - start) // period
            for s in range(start, start + period * repeats)
            for _ in members[s]
        ]
        unit = [n for s in range(start, start + period) for n in members[s]]
        for node_id in inside:
            fold_of[node_id] = fold_id
        entry = graph.node(spine[start])
        boxes[entry.id] = FoldedNode(
            id=fold_id,
            type_name=f"{repeats} × block",
            name=f"{repeats} identical blocks of {len(unit)} nodes",
            sequence_nr=entry.sequence_nr,
            repeats=repeats,
            members=tuple(inside),
            blocks=tuple(blocks),
            contents=_contents([graph.node(n).type_name for n in unit]),
        )
    nodes: list[Node] = []
    for node in graph.nodes:
        if node.id in boxes:
            nodes.append(boxes[node.id])
        elif node.id not in fold_of:
            nodes.append(node)
    edges: list[Edge] = []
    outgoing: dict[str, set[tuple[str, int]]] = {}
    for edge in graph.edges:
        src = fold_of.get(edge.src, edge.src)
        dst = None if edge.dst is None else fold_of.get(edge.dst, edge.dst)
        if src != edge.src:  # from inside a fold: keep one edge per target outside it
            if dst is None or dst == src or (dst, edge.input_nr) in outgoing.setdefault(src, set()):
                continue
            outgoing[src].add((dst, edge.input_nr))
            slot = len(outgoing[src]) - 1
            edges.append(Edge(src=src, slot=slot, dst=dst, input_nr=edge.input_nr))
        else:
            edges.append(replace(edge, dst=dst))
    tensors = []
    for record in graph.tensors:
        if record.node_id in fold_of:
            if not record.is_root:
                continue  # a leaf inside a folded block is drawn as part of the box
            record = replace(record, node_id=fold_of[record.node_id])
        tensors.append(record)
    roots = list(dict.fromkeys(fold_of.get(r, r) for r in graph.root_ids))
    folded = Graph(nodes, edges, roots, tensors)  # watch() data is not folded
    # the same SVG ids as the graph's own drawings: the replay's schedule names the
    # elements the folded drawing kept (a node outside every fold, an edge into one)
    folded.prefix = graph.prefix
    return folded


def _contents(type_names: list[str], width: int = 72) -> str:
    """The node types of one block with their counts, in lines of about ``width``."""
    lines: list[str] = []
    for name, n in Counter(type_names).items():
        item = f"{name} ×{n}" if n > 1 else name
        if lines and len(lines[-1]) + len(item) + 2 <= width:
            lines[-1] += ", " + item
        else:
            lines.append(item)
    return "\n".join(lines)
