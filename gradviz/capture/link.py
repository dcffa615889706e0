"""Link a traced backward graph to the forward pass ``watch()`` captured.

A backward node belongs to the op during which its ``_sequence_nr()`` was allocated (that
covers internal nodes such as ``TBackward0`` inside ``F.linear`` too) and to the innermost
module call whose range holds it. An ``AccumulateGrad`` has no usable sequence number: it
belongs to the op that put its leaf on the graph (``requires_grad=True`` at creation, or
switched on later) and to the innermost module holding every node that feeds into it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping
from typing import Any

from gradviz.model.forward import Forward
from gradviz.model.graph import Graph, TensorRecord

__all__ = ["link", "name_freed"]


def name_freed(
    graph: Graph,
    forward: Forward,
    grad_edges: Mapping[str, tuple[int, int, str]],
    alive: Callable[[str], Any],
) -> dict[str, str]:
    """Add a tensor record for each named tensor freed before the trace (the locals of a
    function that has returned) whose grad_fn is on the graph: its name stays on the
    picture. Returns graph tensor id -> forward tensor id for the records added."""
    nodes = {node.sequence_nr: node.id for node in graph.nodes if not node.is_accumulate_grad}
    taken = {(t.node_id, t.output_nr) for t in graph.tensors if t.name}
    names = {t.name for t in graph.tensors if t.name}
    added: dict[str, str] = {}
    for item in forward.tensors:
        edge = grad_edges.get(item.id)
        if edge is None or not item.name or item.name in names or item.name_source == "param":
            continue
        node_id = nodes.get(edge[0])
        if node_id is None or (node_id, edge[1]) in taken or alive(item.id) is not None:
            continue
        record_id = f"t{len(graph.tensors)}"
        graph.tensors.append(
            TensorRecord(
                id=record_id,
                name=item.name,
                shape=item.shape,
                dtype=item.dtype,
                device=edge[2],
                requires_grad=item.requires_grad,
                is_leaf=item.is_leaf,
                version=item.version or 0,
                grad_fn=item.grad_fn,
                data=item.data,
                grad=None,
                role=item.role,
                node_id=node_id,
                output_nr=edge[1],
            )
        )
        taken.add((node_id, edge[1]))
        names.add(item.name)
        added[record_id] = item.id
    if added:  # the id prefix covers the tensor records, as Graph() computes it
        graph.prefix = graph.structure_prefix()
    return added


def link(
    graph: Graph,
    forward: Forward,
    find: Callable[[Any], str | None],
    explicit: Mapping[str, Any] | None = None,
) -> Forward:
    """A copy of ``forward`` with ``node_ops``, ``node_modules`` and ``tensor_links`` set."""
    linked = forward.copy()
    for name, tensor in (explicit or {}).items():  # explicit names= win in the forward data too
        tensor_id = find(tensor)
        if tensor_id is not None:
            item = linked.tensor(tensor_id)
            item.name, item.name_source = name, "names"
    ranged = [op for op in linked.ops if op.seq_end > op.seq_start]
    starts = [op.seq_start for op in ranged]
    for node in graph.nodes:
        if node.is_accumulate_grad:
            continue
        position = bisect.bisect_right(starts, node.sequence_nr) - 1
        if position >= 0 and node.sequence_nr < ranged[position].seq_end:
            linked.node_ops[node.id] = ranged[position].index
        module = _innermost(linked, node.sequence_nr)
        if module is not None:
            linked.node_modules[node.id] = module
    for node in graph.nodes:
        if not node.is_accumulate_grad:
            continue
        tensor_id = None if node.leaf_tensor is None else find(node.leaf_tensor)
        if tensor_id is not None:
            op = _leaf_op(linked, tensor_id)
            if op is not None:
                linked.node_ops[node.id] = op
        consumers = [linked.node_modules.get(edge.src) for edge in graph.in_edges(node.id)]
        common = _common_ancestor(linked, consumers)
        if common is not None:
            linked.node_modules[node.id] = common
    for record in graph.tensors:
        if record.tensor is None:
            continue
        tensor_id = find(record.tensor)
        if tensor_id is not None:
            linked.tensor_links[record.id] = tensor_id
    linked.first_replayed = _recorded_pass_start(linked, graph)
    return linked


def _recorded_pass_start(forward: Forward, graph: Graph) -> int:
    """The first op of the pass that built this graph.

    A ``watch()`` around a training loop sees every iteration, and a replay of them all
    would show 1,000 passes to explain one graph. An earlier iteration shows itself as an
    op that recorded backward nodes which are not in this graph, on a source line that
    also made nodes of this graph (the loop body ran again); the recorded pass starts
    right after the last such op. Ops between (making inputs, zero_grad) stay.
    """
    ours = {
        index for node, index in forward.node_ops.items() if not graph.node(node).is_accumulate_grad
    }
    if not ours:
        return 0
    first = min(ours)
    lines = {
        (op.line.filename, op.line.lineno) for op in forward.ops if op.index in ours and op.line
    }
    start = 0
    for op in forward.ops[:first]:
        recorded = op.seq_end > op.seq_start and op.index not in ours
        if recorded and op.line is not None and (op.line.filename, op.line.lineno) in lines:
            start = op.index + 1
    return start


def _innermost(forward: Forward, sequence_nr: int) -> int | None:
    best = None
    for scope in forward.modules:
        if scope.seq_start <= sequence_nr < scope.seq_end and (
            best is None or scope.depth > forward.modules[best].depth
        ):
            best = scope.index
    return best


def _leaf_op(forward: Forward, tensor_id: str) -> int | None:
    """The op that made the tensor a leaf on the graph."""
    for op in reversed(forward.ops):
        if op.kind == "requires_grad" and tensor_id in op.outputs:
            return op.index
    created = forward.tensor(tensor_id).created_by
    return created


def _common_ancestor(forward: Forward, scopes: list[int | None]) -> int | None:
    if not scopes or any(s is None for s in scopes):
        return None
    chains = [[m.index for m in forward.module_chain(s)] for s in scopes]
    common: int | None = None
    for level in zip(*chains, strict=False):
        if len(set(level)) != 1:
            break
        common = level[0]
    return common
