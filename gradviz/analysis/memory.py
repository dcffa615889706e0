"""Memory in the replay: what the saved tensors hold, and what backward frees step by step.

Each backward node keeps the tensors its formula needs (``_saved_self``, ``_saved_result``
...). ``trace()`` reads their storages (deduplicated: an activation saved by two nodes is
counted once). Without ``retain_graph=True`` the engine releases a node's saved tensors
right after the node ran, so a storage leaves the graph once the last node that saved it
has run; that is also why a second ``backward()`` fails: the values are gone. A storage a
leaf owns (a weight, an input batch the user's code still holds) is released by the graph
but stays alive with the leaf.

Besides the saved tensors, the total counts the gradients in flight (sent by a node, not
yet consumed by the node they go to) and the leaves' ``.grad``; their bytes come from the
recorded values' shape and dtype (a sparse one's from the indices and values it stores),
so they are an estimate of what the engine holds (it may sum several incoming gradients
into one buffer), while the saved bytes are read from the storages themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gradviz.model.recording import GradValue, Recording
from gradviz.model.summarize import dtype_name, sparse_nbytes

__all__ = ["REENTRANT_NODE", "MemoryStep", "MemoryTimeline", "format_bytes", "saved_memory"]

# The class name of the one node torch.utils.checkpoint(use_reentrant=True) leaves per segment
# (the tracer marks it checkpointed after checking its forward's module).
REENTRANT_NODE = "CheckpointFunctionBackward"

_ITEMSIZE = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "complex128": 16,
    "complex64": 8, "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
}  # fmt: skip


def format_bytes(count: int) -> str:
    """'812 B', '3.9 KiB', '1.5 MiB', '2.0 GiB'."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"  # pragma: no cover


def _grad_bytes(value: GradValue | None) -> int:
    """A gradient's bytes: numel times the dtype's size, or what a sparse one stores."""
    if value is None:
        return 0
    if isinstance(value, torch.Tensor):  # what its summary would say, without reading it
        stored = None if value.layout == torch.strided else sparse_nbytes(value)
        if stored is not None:
            return stored
        return value.numel() * _ITEMSIZE.get(dtype_name(value.dtype), 4)
    if value.nbytes is not None:
        return value.nbytes
    return value.numel * _ITEMSIZE.get(value.dtype, 4)


@dataclass(frozen=True)
class MemoryStep:
    """The memory after step ``index`` (0: the seed, before any node ran)."""

    index: int
    saved: int  # bytes of saved tensors the graph still holds
    freed: int  # saved bytes this step released
    in_flight: int  # gradients sent and not yet consumed (estimate)
    grads: int  # the leaves' .grad written so far (estimate)

    @property
    def total(self) -> int:
        return self.saved + self.in_flight + self.grads

    def panel(self, peak: int) -> dict[str, str]:
        """The stepper panel's plain strings."""
        return {
            "saved": format_bytes(self.saved),
            "freed": format_bytes(self.freed),
            "in_flight": format_bytes(self.in_flight),
            "grads": format_bytes(self.grads),
            "total": format_bytes(self.total),
            "peak": format_bytes(peak),
        }


@dataclass(frozen=True)
class MemoryTimeline:
    """The memory of a recorded backward, step by step, and what each node saved."""

    steps: tuple[MemoryStep, ...]
    node_bytes: dict[str, int]  # node id -> bytes its saved tensors hold (deduplicated)
    leaf_owned: int  # saved bytes that leaves own (not freed with the graph)
    retained: bool  # retain_graph=True: nothing was freed
    checkpointed: tuple[str, ...] = ()  # nodes run inside torch.utils.checkpoint
    # of those, use_reentrant=True's single nodes that each stand for a whole segment
    reentrant: tuple[str, ...] = ()

    @property
    def peak(self) -> int:
        return max(step.total for step in self.steps)

    @property
    def peak_step(self) -> int:
        return max(self.steps, key=lambda s: s.total).index

    @property
    def saved_total(self) -> int:
        return self.steps[0].saved

    def explain_checkpointing(self) -> str:
        """What ``torch.utils.checkpoint`` saved and what backward recomputes ("" if the
        graph has no checkpointed segment)."""
        inside = [node for node in self.checkpointed if node not in self.reentrant]
        parts = []
        if inside:
            inputs = {self.node_bytes.get(node, 0) for node in inside}
            held = format_bytes(max(inputs)) if inputs else "0 B"
            parts.append(
                f"{len(inside)} nodes ran inside torch.utils.checkpoint: they saved "
                f"no tensors of their own, only the segment's inputs ({held}, counted once). "
                "When backward first reaches one of them it reruns that segment's forward to "
                "recompute what they would have saved, uses it and frees it: less memory held "
                "between forward and backward, for one more forward of the segment."
            )
        if self.reentrant:
            held = format_bytes(sum(self.node_bytes.get(node, 0) for node in self.reentrant))
            parts.append(
                f"{len(self.reentrant)} node(s) named CheckpointFunctionBackward each stand for "
                "a whole segment run by torch.utils.checkpoint(use_reentrant=True): the "
                "segment ran without building a graph, so its operations do not appear here, "
                f"and the node saved only the segment's inputs ({held}). Its backward reruns "
                "the segment's forward, this time with a graph, and backpropagates through it."
            )
        return " ".join(parts)

    def explain_second_backward(self) -> str:
        """Why a second ``backward()`` over the same graph fails (or, retained, works)."""
        held = format_bytes(self.saved_total)
        if self.retained:
            return (
                f"This backward ran with retain_graph=True: the graph still holds its saved "
                f"tensors ({held}), so backward() can run over it again; they are freed when "
                "the graph itself is dropped."
            )
        return (
            f"Each node freed its saved tensors right after it ran ({held} in all). A second "
            "backward() over this graph would need them again and fails with 'Trying to "
            "backward through the graph a second time'. Pass retain_graph=True to the first "
            f"backward to keep them (the {held} stay alive), or run the forward pass again."
        )


def saved_memory(recording: Recording) -> MemoryTimeline:
    """The bytes each node's saved tensors hold, freed as backward passes them, with the
    running total (saved + gradients in flight + .grad) and its peak per step;
    ``explain_second_backward()`` says why a second backward fails. The graph must have
    been traced live: the storages are not kept in JSON (``Recording.memory`` is this
    function)."""
    graph = recording.graph
    holders: dict[str, set[str]] = {}
    sizes: dict[str, int] = {}
    owned: dict[str, bool] = {}
    node_bytes: dict[str, int] = {}
    for node_id, storages in graph.saved_storages.items():
        node_bytes[node_id] = sum(size for key, size, _ in storages)
        for key, size, leaf in storages:
            holders.setdefault(key, set()).add(node_id)
            sizes[key] = size
            owned[key] = leaf
    waiting = {key: len(nodes) for key, nodes in holders.items()}
    keys_of: dict[str, list[str]] = {}
    for key, nodes in holders.items():
        for node_id in nodes:
            keys_of.setdefault(node_id, []).append(key)
    retained = recording.graph_retained
    held = sum(sizes.values())
    pending: dict[str, int] = {}  # node id -> bytes of gradients sent to it, not yet used
    for (node_id, _), value in recording.seeds.items():
        pending[node_id] = pending.get(node_id, 0) + _grad_bytes(value)
    grads = 0
    steps = [MemoryStep(0, held, 0, sum(pending.values()), 0)]
    for number, step in enumerate(recording.steps, start=1):
        pending.pop(step.node_id, None)
        if graph.node(step.node_id).is_accumulate_grad:
            grads += _grad_bytes(step.leaf_grad_after) - _grad_bytes(step.leaf_grad_before)
        for edge in graph.out_edges(step.node_id):
            if edge.dst is not None and edge.slot < len(step.grad_inputs):
                sent = _grad_bytes(step.grad_inputs[edge.slot])
                pending[edge.dst] = pending.get(edge.dst, 0) + sent
        freed = 0
        if not retained:
            for key in keys_of.get(step.node_id, ()):
                waiting[key] -= 1
                if waiting[key] == 0:
                    freed += sizes[key]
        held -= freed
        steps.append(MemoryStep(number, held, freed, sum(pending.values()), grads))
    leaf_owned = sum(size for key, size in sizes.items() if owned[key])
    reentrant = tuple(
        node for node in graph.checkpointed if graph.node(node).type_name == REENTRANT_NODE
    )
    return MemoryTimeline(
        tuple(steps), node_bytes, leaf_owned, retained, graph.checkpointed, reentrant
    )
