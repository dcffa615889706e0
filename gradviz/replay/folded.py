"""The replay of a folded drawing (``fold=True``): runs of identical blocks are one box.

The box (``<prefix>_fold<k>``) stands for every node of its run, so it is scheduled like a
collapsed module (``boxes``: the steps at which a node inside runs); the edges leaving it
were renumbered by the fold and flow when the first of the graph edges they stand for
does. Each step inside a fold says which repetition of the block it runs in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gradviz.model.recording import Recording
from gradviz.render.fold import FoldedNode, fold_graph

__all__ = ["FoldSchedule", "fold_schedule"]


@dataclass(frozen=True)
class FoldSchedule:
    """What a folded drawing adds to the replay's schedule and panel."""

    boxes: dict[str, list[int]] = field(default_factory=dict)  # box id -> its nodes' steps
    edges: dict[str, int] = field(default_factory=dict)  # a box's out edge id -> first flow
    drawn_as: dict[str, str] = field(default_factory=dict)  # node id -> the fold box's node id
    where: dict[str, str] = field(default_factory=dict)  # node id -> "block 3 of 6 (...)"


def fold_schedule(recording: Recording, prefix: str, fold: bool | int) -> FoldSchedule:
    """The schedule of the folds ``fold`` (a render option: True, or the fewest repeats)
    draws; empty when nothing folds."""
    if not fold:
        return FoldSchedule()
    graph = recording.graph
    folded = fold_graph(graph, 2 if fold is True else int(fold))
    boxes = [node for node in folded.nodes if isinstance(node, FoldedNode)]
    if not boxes:
        return FoldSchedule()
    ran_at = {step.node_id: step.index for step in recording.steps}
    schedule = FoldSchedule()
    for box in boxes:
        steps = sorted(ran_at[n] for n in box.members if n in ran_at)
        schedule.boxes[f"{prefix}_{box.id}"] = steps
        for node_id, block in zip(box.members, box.blocks, strict=True):
            schedule.drawn_as[node_id] = box.id
            schedule.where[node_id] = f"block {block} of {box.repeats} ({box.type_name})"
    # the first step at which a graph edge from inside a fold to (target, input) carries
    flowed: dict[tuple[str, str, int], int] = {}
    for step in recording.steps:
        box_id = schedule.drawn_as.get(step.node_id)
        if box_id is None:
            continue
        for edge in graph.out_edges(step.node_id):
            if edge.dst is None or not step.grad_inputs or step.grad_inputs[edge.slot] is None:
                continue
            key = (box_id, schedule.drawn_as.get(edge.dst, edge.dst), edge.input_nr)
            flowed.setdefault(key, step.index)
    for edge in folded.edges:
        at = flowed.get((edge.src, edge.dst or "", edge.input_nr))
        if at is not None and edge.src in {box.id for box in boxes}:
            schedule.edges[f"{prefix}_e_{edge.src}_{edge.slot}"] = at
    return schedule
