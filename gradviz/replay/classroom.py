"""The classroom's data for the stepper: each leaf's ``.grad`` before and after its
``AccumulateGrad`` runs, and the predict-then-reveal quiz's answers (from the recorded
order and values, so the page grades without a kernel)."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

import torch

from gradviz.model.graph import Graph
from gradviz.model.recording import GradValue, Recording, as_summary

__all__ = ["grad_updates", "quiz_answers"]

MAX_READY = 8  # the ready nodes the quiz lists, highest sequence number first
MAX_CHARS = 40  # the tensor record's grad field is drawn with this many characters


def _text(value: GradValue | None) -> str:
    return "None" if value is None else as_summary(value).text(MAX_CHARS)


def grad_updates(recording: Recording, prefix: str) -> list[dict[str, Any]]:
    """For each drawn leaf: its record's SVG id, the step whose ``AccumulateGrad`` writes its
    ``.grad``, and the field's text before and after (``None`` -> ``36``)."""
    ran = {s.node_id: s for s in recording.steps}
    updates = []
    for record in recording.graph.tensors:
        step = ran.get(record.node_id or "")
        if step is None or step.type_name != "AccumulateGrad" or not record.is_leaf:
            continue
        updates.append(
            {
                "id": f"{prefix}_{record.id}",
                "step": step.index,
                "before": _text(step.leaf_grad_before),
                "after": _text(step.leaf_grad_after),
            }
        )
    return updates


def _scalar(value: GradValue | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, torch.Tensor) and value.dim() != 0:
        return None  # a summary's shape is the tensor's: not one scalar, not summarised
    summary = as_summary(value)
    if summary.shape != () or not summary.complete or not summary.values:
        return None
    return float(summary.values[0])


def quiz_answers(recording: Recording, prefix: str) -> list[dict[str, Any]]:
    """Per backward step 1..N: the node that ran (the answer), the ready set just before it
    (id, type, sequence number), and for scalar lessons the number it sent (``None`` when
    not a single scalar): the first gradient it sends on, or the ``.grad`` an
    ``AccumulateGrad`` wrote."""
    graph = recording.graph
    recorded = {s.node_id for s in recording.steps}
    waits: dict[str, int] = dict.fromkeys(recorded, 0)  # senders not yet run
    sends_to: dict[str, set[str]] = {n: set() for n in recorded}
    for edge in graph.edges:
        if edge.dst in recorded and edge.src in recorded and edge.dst not in sends_to[edge.src]:
            sends_to[edge.src].add(edge.dst)
            waits[edge.dst] += 1
    ready = _Ready(graph, (n for n, count in waits.items() if count == 0))
    # sequence numbers count every node the process ever made: shown from the graph's first
    numbers = [graph.node(n).sequence_nr for n in recorded]
    base = min((q for q in numbers if q < 2**63), default=0)
    answers = []
    for step in recording.steps:
        first = ready.first(MAX_READY)
        sent = step.leaf_grad_after if step.type_name == "AccumulateGrad" else None
        if sent is None:  # the first gradient it sends on
            sent = next((g for g in step.grad_inputs if g is not None), None)
        answers.append(
            {
                "node": f"{prefix}_{step.node_id}",
                "type": step.type_name,
                "ready": [
                    {
                        "node": f"{prefix}_{n}",
                        "type": graph.node(n).type_name,
                        "seq": _seq_text(graph.node(n).sequence_nr, base),
                    }
                    for n in first
                ],
                "value": _scalar(sent),
            }
        )
        ready.discard(step.node_id)
        for dst in sends_to.get(step.node_id, ()):
            waits[dst] -= 1
            if waits[dst] == 0:
                ready.add(dst)
    return answers


class _Ready:
    """The ready set, its highest sequence numbers first (ties by id) on demand: a heap, so
    that listing the first few at each step costs a logarithm of how many are ready, not a
    sort of them all (thousands of leaves are ready at once after a ``torch.stack``)."""

    def __init__(self, graph: Graph, nodes: Iterable[str]) -> None:
        self._graph = graph
        self._members: set[str] = set()
        self._heap: list[tuple[int, str]] = []
        for node in nodes:
            self.add(node)

    def add(self, node: str) -> None:
        if node not in self._members:
            self._members.add(node)
            heapq.heappush(self._heap, (-self._graph.node(node).sequence_nr, node))

    def discard(self, node: str) -> None:
        self._members.discard(node)  # its heap entry goes when it reaches the top

    def first(self, count: int) -> list[str]:
        taken: list[tuple[int, str]] = []
        while self._heap and len(taken) < count:
            entry = heapq.heappop(self._heap)
            if entry[1] in self._members and (not taken or taken[-1] != entry):
                taken.append(entry)
        for entry in taken:
            heapq.heappush(self._heap, entry)
        return [node for _, node in taken]


def _seq_text(sequence_nr: int, base: int) -> str:
    """The number relative to the graph's first node ("+0", "+3"; only the order matters);
    AccumulateGrad's is 2**64 - 1: the engine runs it as soon as it is ready."""
    return "max (2^64-1)" if sequence_nr >= 2**63 else f"+{sequence_nr - base}"
