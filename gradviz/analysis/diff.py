"""``rec.diff(other)``: two recordings of (nearly) the same computation on one layout.

Nodes are matched by where they sit, not by id (ids count visit order, so one extra node
shifts them all): named leaves' ``AccumulateGrad`` nodes by the leaf's name and the roots
by position, then outwards from every matched pair: the node below through the same input
slot, or the node above that feeds it through the same slot, when the types agree. What
matches is compared by the gradients it sent: the ratio of their norms and whether they
differ (every value when both kept them all, else their summaries; NaN equals NaN in the
same place); what does not is "only in A" or "only in B" (a ``detach``, a new layer). The
union of both graphs is kept to be drawn once (``gradviz.render.reports``: the unmatched
nodes marked, each matched edge labelled with its ratio). Numbers print with digits enough
to show the difference they report.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import torch

from gradviz.model.graph import Edge, Graph, Node
from gradviz.model.public import built
from gradviz.model.recording import GradValue, Recording, as_summary

__all__ = [
    "NodeChange",
    "RecordingDiff",
    "diff_recordings",
    "distinct_texts",
    "match_nodes",
    "ratio_text",
]


def match_nodes(a: Graph, b: Graph) -> dict[str, str]:
    """Node id in A -> its counterpart in B (see the module docstring)."""
    matched: dict[str, str] = {}
    taken: set[str] = set()
    queue: deque[tuple[str, str]] = deque()

    def pair(x: str, y: str) -> None:
        if x not in matched and y not in taken and a.node(x).type_name == b.node(y).type_name:
            matched[x] = y
            taken.add(y)
            queue.append((x, y))

    leaves_b = {r.name: r.node_id for r in b.tensors if r.name and r.node_id is not None}
    for record in a.tensors:
        found = leaves_b.get(record.name) if record.name else None
        if record.node_id is not None and found is not None:
            pair(record.node_id, found)
    for x, y in zip(a.root_ids, b.root_ids, strict=False):
        pair(x, y)
    while queue:
        x, y = queue.popleft()
        down_b = b.out_edges(y)
        for edge in a.out_edges(x):  # the same input slot, the same type below
            if edge.slot < len(down_b):
                other = down_b[edge.slot]
                if edge.dst is not None and other.dst is not None:
                    pair(edge.dst, other.dst)
        up_b = b.in_edges(y)
        for edge in a.in_edges(x):  # the node that feeds it through the same slot
            for other in up_b:
                if other.slot == edge.slot and other.src not in taken:
                    pair(edge.src, other.src)
                    break
    return matched


def _norm(values: tuple[GradValue | None, ...]) -> float | None:
    total = 0.0
    for value in values:
        if value is None:
            continue
        norm = as_summary(value).norm
        if norm is None:
            return None
        total += norm * norm
    return math.sqrt(total)


def _same(a: tuple[GradValue | None, ...], b: tuple[GradValue | None, ...]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if (x is None) != (y is None):
            return False
        if x is not None and y is not None and not _same_value(x, y):
            return False
    return True


def _same_value(x: GradValue, y: GradValue) -> bool:
    """Every value when both are kept whole (``keep="all"``), else their summaries; NaN
    equals NaN in the same place (two identical runs match)."""
    if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
        found = _same_tensor(x, y)
        if found is not None:
            return found
    return bool(_comparable(as_summary(x).to_dict()) == _comparable(as_summary(y).to_dict()))


def _same_tensor(x: torch.Tensor, y: torch.Tensor) -> bool | None:
    """Equal shape, dtype and values (NaN where the other has NaN); None: the values cannot
    be read (a meta tensor), so their summaries decide."""
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    try:
        a, b = _dense(x), _dense(y).to(x.device)
        if torch.equal(a, b):
            return True
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def _dense(tensor: torch.Tensor) -> torch.Tensor:
    data = tensor.detach()
    if data.layout != torch.strided:
        data = data.to_dense()
    return data.resolve_conj().resolve_neg()


def _comparable(value: Any) -> Any:
    """``value`` with every float NaN replaced by a marker, so that NaN equals NaN."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_comparable(v) for v in value]
    return value


def distinct_texts(a: float, b: float, digits: int = 4) -> tuple[str, str]:
    """``a`` and ``b`` with at least ``digits`` significant digits, and more until the two
    texts differ (the same text for two different numbers would hide the difference)."""
    text_a, text_b = f"{a:.{digits}g}", f"{b:.{digits}g}"
    while text_a == text_b and a != b and digits < 17:
        digits += 1
        text_a, text_b = f"{a:.{digits}g}", f"{b:.{digits}g}"
    return text_a, text_b


def ratio_text(ratio: float | None, digits: int = 4) -> str:
    """A ratio of norms: 'n/a', or digits enough that one which is not 1 does not print 1."""
    return "n/a" if ratio is None else distinct_texts(ratio, 1.0, digits)[0]


@dataclass(frozen=True)
class NodeChange:
    """A node found in both recordings, and how its sent gradients compare."""

    node_a: str
    node_b: str
    type_name: str
    step_a: int | None  # when it ran in A (None: it did not run)
    step_b: int | None
    norm_a: float | None
    norm_b: float | None
    same: bool  # the gradients it sent are equal in both (every value, or the summaries)

    @property
    def ratio(self) -> float | None:
        """‖sent in B‖ / ‖sent in A‖ (None when A's is zero or unknown)."""
        if self.norm_a in (None, 0.0) or self.norm_b is None:
            return None
        return self.norm_b / self.norm_a


@dataclass
class RecordingDiff:
    """What changed between recording ``a`` and recording ``b``."""

    a: Recording
    b: Recording
    changes: list[NodeChange]
    only_a: list[str]  # node ids of A with no match in B
    only_b: list[str]  # node ids of B with no match in A
    union: Graph  # A's nodes plus B's unmatched ones (ids "b_<id>")

    @property
    def differing(self) -> list[NodeChange]:
        return [c for c in self.changes if not c.same]

    @property
    def first_difference(self) -> NodeChange | None:
        """The first node, in A's order, whose sent gradient differs in B."""
        ran = [c for c in self.differing if c.step_a is not None]
        return min(ran, key=lambda c: c.step_a or 0) if ran else None

    @property
    def identical(self) -> bool:
        return not self.only_a and not self.only_b and not self.differing

    def marks(self) -> tuple[str, ...]:
        return tuple(self.only_a) + tuple(f"b_{n}" for n in self.only_b)

    def summary_text(self) -> str:
        lines = [
            f"A: {len(self.a)} steps, B: {len(self.b)} steps; {len(self.changes)} nodes in "
            f"both, {len(self.only_a)} only in A, {len(self.only_b)} only in B."
        ]
        for node_id in self.only_a:
            lines.append(f"only in A: {self.a.graph.node(node_id).type_name} ({node_id})")
        for node_id in self.only_b:
            lines.append(f"only in B: {self.b.graph.node(node_id).type_name} ({node_id})")
        first = self.first_difference
        if first is not None:
            lines.append(
                f"first differing gradient: {first.type_name} ({first.node_a}) at step "
                f"{first.step_a} of A{_norms_text(first)}"
            )
        for change in self.differing:
            ratio = ratio_text(change.ratio)
            lines.append(f"{change.type_name} ({change.node_a}): ‖B‖/‖A‖ = {ratio}")
        if self.identical:
            lines.append("The two recordings match: same nodes, same gradients.")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "only_a": list(self.only_a),
            "only_b": list(self.only_b),
            "changes": [
                {
                    "node_a": c.node_a, "node_b": c.node_b,
                    "type": c.type_name, "step_a": c.step_a, "step_b": c.step_b,
                    "norm_a": c.norm_a, "norm_b": c.norm_b, "ratio": c.ratio, "same": c.same,
                }
                for c in self.changes
            ],
        }  # fmt: skip

    def __str__(self) -> str:
        return self.summary_text()


def _norms_text(change: NodeChange) -> str:
    """', ‖A‖ = 2.236, ‖B‖ = 2.237' with digits enough to tell them apart."""
    if change.norm_a is None or change.norm_b is None:
        return ""
    if change.norm_a == change.norm_b:
        return f", ‖A‖ = ‖B‖ = {change.norm_a:.4g} (the values differ)"
    text_a, text_b = distinct_texts(change.norm_a, change.norm_b)
    return f", ‖A‖ = {text_a}, ‖B‖ = {text_b}"


def _union(a: Graph, b: Graph, matched_b: dict[str, str], only_b: list[str]) -> Graph:
    """A's nodes and edges plus B's unmatched nodes (ids ``b_<id>``) and their edges."""
    nodes = [Node(n.id, n.type_name, n.name, n.sequence_nr, n.saved) for n in a.nodes]
    extra = set(only_b)
    for node_id in only_b:
        node = b.node(node_id)
        nodes.append(Node(f"b_{node_id}", node.type_name, node.name, node.sequence_nr))
    edges = list(a.edges)
    taken = {(e.src, e.slot) for e in edges}

    def name(node_id: str) -> str:
        return f"b_{node_id}" if node_id in extra else matched_b[node_id]

    for edge in b.edges:
        if edge.src not in extra and (edge.dst is None or edge.dst not in extra):
            continue
        src = name(edge.src)
        slot = edge.slot
        while (src, slot) in taken:  # a matched node with a new input: a fresh slot
            slot += 1
        taken.add((src, slot))
        dst = None if edge.dst is None else name(edge.dst)
        edges.append(Edge(src, slot, dst, edge.input_nr))
    return Graph(nodes, edges, list(a.root_ids), list(a.tensors))


def diff_recordings(a: Recording, b: Recording) -> RecordingDiff:
    """Compare two recordings (see the module docstring)."""
    pairs = match_nodes(a.graph, b.graph)
    changes: list[NodeChange] = []
    matched_b: dict[str, str] = {}
    only_a: list[str] = []
    for node in a.graph.nodes:
        other = pairs.get(node.id)
        if other is None:
            only_a.append(node.id)
            continue
        matched_b[other] = node.id
        step_a = a.step_for(node.id)
        step_b = b.step_for(other)
        sent_a = step_a.grad_inputs if step_a is not None else ()
        sent_b = step_b.grad_inputs if step_b is not None else ()
        if node.is_accumulate_grad:  # a leaf sends nothing on: compare what it received
            sent_a = step_a.grad_outputs if step_a is not None else ()
            sent_b = step_b.grad_outputs if step_b is not None else ()
        changes.append(
            NodeChange(
                node_a=node.id, node_b=other, type_name=node.type_name,
                step_a=None if step_a is None else step_a.index,
                step_b=None if step_b is None else step_b.index,
                norm_a=_norm(sent_a), norm_b=_norm(sent_b), same=_same(sent_a, sent_b),
            )
        )  # fmt: skip
    only_b = [n.id for n in b.graph.nodes if n.id not in matched_b]
    return built(RecordingDiff)(
        a, b, changes, only_a, only_b, _union(a.graph, b.graph, matched_b, only_b)
    )
