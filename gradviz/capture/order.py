"""Predict the order autograd's CPU engine runs a graph's nodes, before it runs.

The engine keeps ready nodes in a ``std::priority_queue`` ordered by sequence number
(highest first; ``AccumulateGrad`` has the largest). Ties between equal sequence numbers
are settled by the heap's own mechanics, so this module replays libstdc++'s
``push_heap``/``pop_heap`` exactly instead of using Python's ``heapq``.
"""

from __future__ import annotations

from collections.abc import Collection

from gradviz.model.graph import Graph
from gradviz.model.recording import Recording

__all__ = ["needed_nodes", "predict_order", "predicted_order"]


class _StdPriorityQueue:
    """libstdc++'s binary max-heap, keyed by an int; FIFO is not guaranteed for ties."""

    def __init__(self) -> None:
        self.items: list[tuple[int, str]] = []

    def __len__(self) -> int:
        return len(self.items)

    def push(self, key: int, value: str) -> None:
        items = self.items
        items.append((key, value))
        hole = len(items) - 1
        item = items[hole]
        parent = (hole - 1) // 2
        while hole > 0 and items[parent][0] < item[0]:
            items[hole] = items[parent]
            hole = parent
            parent = (hole - 1) // 2
        items[hole] = item

    def pop(self) -> str:
        items = self.items
        top = items[0]
        last = items.pop()
        if items:
            self._adjust(0, len(items), last)
        return top[1]

    def _adjust(self, hole: int, length: int, value: tuple[int, str]) -> None:
        items = self.items
        top = hole
        child = hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if items[child][0] < items[child - 1][0]:
                child -= 1
            items[hole] = items[child]
            hole = child
        if (length & 1) == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            items[hole] = items[child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > top and items[parent][0] < value[0]:
            items[hole] = items[parent]
            hole = parent
            parent = (hole - 1) // 2
        items[hole] = value


def needed_nodes(graph: Graph, targets: Collection[str]) -> set[str]:
    """The nodes from which a target node can be reached (``backward(inputs=...)``)."""
    reverse: dict[str, list[str]] = {n.id: [] for n in graph.nodes}
    for edge in graph.edges:
        if edge.dst is not None:
            reverse[edge.dst].append(edge.src)
    needed = set(targets)
    stack = list(targets)
    while stack:
        for src in reverse[stack.pop()]:
            if src not in needed:
                needed.add(src)
                stack.append(src)
    return needed


def predict_order(graph: Graph, only: Collection[str] | None = None) -> list[str]:
    """Node ids in the order the engine will run them; ``only`` restricts to needed nodes."""
    keep = set(only) if only is not None else {n.id for n in graph.nodes}
    dependencies = {n.id: 0 for n in graph.nodes}
    for edge in graph.edges:
        if edge.dst is not None:
            dependencies[edge.dst] += 1
    queue = _StdPriorityQueue()
    seq = {n.id: n.sequence_nr for n in graph.nodes}
    # The engine's GraphRoot feeds every root first: one more dependency each, released
    # in root order before anything runs.
    for root in graph.root_ids:
        dependencies[root] += 1
    for root in graph.root_ids:
        dependencies[root] -= 1
        if dependencies[root] == 0 and root in keep:
            queue.push(seq[root], root)
    order: list[str] = []
    while queue:
        node_id = queue.pop()
        order.append(node_id)
        for edge in graph.out_edges(node_id):
            if edge.dst is None:
                continue
            dependencies[edge.dst] -= 1
            if dependencies[edge.dst] == 0 and edge.dst in keep:
                queue.push(seq[edge.dst], edge.dst)
    return order


def predicted_order(recording: Recording) -> list[str]:
    """The order predicted from the graph alone, before any backward ran
    (``Recording.predicted_order`` is this function)."""
    graph = recording.graph
    if recording.input_nodes is None and recording.mode == "backward":
        return predict_order(graph)
    targets = recording.input_nodes or []
    needed = needed_nodes(graph, targets)
    if recording.mode == "grad":  # grad() captures at the inputs instead of running them
        needed -= {t for t in targets if graph.node(t).is_accumulate_grad}
    return predict_order(graph, only=needed)
