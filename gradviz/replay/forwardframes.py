"""Forward frames: the graph growing op by op under ``watch()``, and what each op did, in
words (steps ``-F`` .. ``-1`` of a replay; see ``gradviz.replay.frames``)."""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass
from typing import Any

from gradviz.model.forward import FOp, Forward
from gradviz.model.recording import Recording
from gradviz.render.watched import box_name

__all__ = [
    "ForwardFrame",
    "box_steps",
    "describe_forward",
    "describe_forwards",
    "forward_frame",
    "forward_frames",
]


# -- forward frames: the graph growing, op by op (under watch()) ----------------------------
@dataclass(frozen=True)
class ForwardFrame:
    """What the replay shows once forward op ``index`` (counted from 1) has run."""

    index: int  # 1 .. F, as the panel counts ("forward 3 / 12")
    step: int  # the stepper's step: index - F - 1, negative, before the seed at 0
    op: FOp
    outputs: tuple[str, ...]  # forward tensor ids the op made or changed in place
    # backward nodes that appear with the op: those it created (recording.forward_op(n) is
    # op), and a custom Function's node when the op made that Function's output
    nodes: tuple[str, ...]
    visible_nodes: tuple[str, ...]  # backward nodes created so far (this op included)
    narration: str


def _forward(recording: Recording) -> Forward:
    forward = recording.graph.forward
    if forward is None or not forward.replayed:
        raise IndexError(
            "this recording has no forward frames: record it with gradviz.watch(), e.g.\n"
            "    with gradviz.watch() as w:\n        loss = model(x).sum()\n"
            "    recording = w.record(loss)"
        )
    return forward


def _op_times(recording: Recording) -> tuple[dict[int, int], dict[str, int]]:
    """The step of each forward op (by ``FOp.index``) and of each backward node it made."""
    forward = recording.graph.forward
    if forward is None:
        return {}, {}
    replayed = forward.replayed
    count = len(replayed)
    op_time = {op.index: position - count for position, op in enumerate(replayed)}
    node_time = {
        node_id: op_time[index] for node_id, index in forward.node_ops.items() if index in op_time
    }
    _place_unlinked(recording, forward, op_time, node_time)
    return op_time, node_time


def _place_unlinked(
    recording: Recording, forward: Forward, op_time: dict[int, int], node_time: dict[str, int]
) -> None:
    """Give a step to each node no op made (a custom ``autograd.Function``'s, the one
    ``torch.utils.checkpoint(use_reentrant=True)`` leaves): the moment its output appeared.

    Its sequence number is taken as ``apply`` starts, before its forward's ops run (under
    no_grad: they allocate none), so it exists once the first op that started after that
    number has run; its output is that of the last op of its forward: the op that made its
    output tensor when the trace linked one, else the op just before the first op that used
    the output (the node's consumers), never earlier than that first op.
    """
    graph = recording.graph
    starts = [op.seq_start for op in forward.ops]
    made_by = {
        record.node_id: forward.tensor(linked).created_by
        for record in graph.tensors
        if record.node_id is not None
        and (linked := forward.tensor_links.get(record.id)) is not None
    }
    pending = [
        node
        for node in graph.nodes
        if node.id not in node_time
        and node.id not in forward.node_ops
        and not node.is_accumulate_grad
        and node.sequence_nr >= 0
    ]
    earliest: dict[str, int] = {}
    for node in pending:
        first = bisect.bisect_right(starts, node.sequence_nr)  # numbers only grow
        if first == len(starts):
            earliest[node.id] = -1  # after the last op
        elif forward.ops[first].index in op_time:
            earliest[node.id] = op_time[forward.ops[first].index]
        # else: made in an earlier pass than the replayed one: there from the start

    def place(node_id: str, busy: set[str]) -> int | None:
        if node_id in node_time:
            return node_time[node_id]
        low = earliest.get(node_id)
        if low is None or node_id in busy:
            return None
        busy.add(node_id)
        made = made_by.get(node_id)
        if made is not None and op_time.get(made, low - 1) >= low:
            time = op_time[made]
        else:
            used = [place(edge.src, busy) for edge in graph.in_edges(node_id)]
            known = [t for t in used if t is not None]
            time = max(low, min(known) - 1) if known else -1
        node_time[node_id] = time
        return time

    for node in pending:
        place(node.id, set())


def box_steps(forward: Forward, op_time: dict[int, int]) -> dict[str, int | None]:
    """DOT name of each forward tensor box (one per state, ``render.forward_boxes.box_name``) ->
    the step at which it appears: that of the op that made the state, or that first found
    the tensor so (a change no op made: ``.grad`` written, ``.data`` set). None: there from
    the start (a tensor made before the watch, or a state from before the replayed pass)."""
    steps: dict[str, int | None] = {}
    drawn: dict[str, int] = {}  # tensor id -> its first state drawn

    def add(tensor_id: str, index: int) -> None:
        name = box_name(tensor_id, index)
        if name in steps:
            return
        states = forward.tensor(tensor_id).states
        moment = states[index] if index < len(states) else None
        if moment is None or (index == 0 and not moment.after):
            steps[name] = None  # found so by the first op that read it
        else:
            steps[name] = op_time.get(moment.op)
        drawn[tensor_id] = min(index, drawn.get(tensor_id, index))

    for op in forward.replayed:
        read, made = forward.states_in(op)
        tensors = [a.tensor for a in op.inputs if a.tensor is not None]
        tensors += _op_outputs(op)
        for tensor_id, index in zip(tensors, read + made, strict=True):
            add(tensor_id, index)
    for tensor_id, first in list(drawn.items()):  # states no op read: ``.grad`` written
        for index in forward.states_seen(tensor_id):
            if index > first:
                add(tensor_id, index)
    return steps


def _op_outputs(op: FOp) -> tuple[str, ...]:
    outputs = list(op.outputs)
    for bump in op.bumps:
        if bump.tensor not in outputs:
            outputs.append(bump.tensor)
    return tuple(outputs)


def forward_frame(recording: Recording, step: int) -> ForwardFrame:
    """Under ``watch()``: the replay at forward step ``step`` (-F..-1): ``-F`` once the
    first forward op has run, ``-1`` once the last has (the state once forward op
    ``step + F + 1``, counted from 1, has run; ``Recording.forward_frame`` is this
    function)."""
    count = len(_forward(recording).replayed)
    if not -count <= step <= -1:
        raise IndexError(
            f"forward step {step} does not exist: this recording's forward steps are "
            f"-{count} to -1 (0 is the seed, 1..N the backward steps)"
        )
    return _forward_frame(recording, step + count + 1)


def _forward_frame(recording: Recording, index: int) -> ForwardFrame:
    """Forward frame ``index`` (1 .. F, as the panel counts): after the index-th op ran."""
    forward = _forward(recording)
    count = len(forward.replayed)
    if not 1 <= index <= count:
        raise IndexError(f"forward frame {index} does not exist: this recording has 1 to {count}")
    op = forward.replayed[index - 1]
    step = index - count - 1
    _, node_time = _op_times(recording)
    order = [n.id for n in recording.graph.nodes]
    nodes = tuple(n for n in order if node_time.get(n) == step)
    visible = tuple(n for n in order if node_time.get(n, step) <= step)
    return ForwardFrame(
        index=index,
        step=step,
        op=op,
        outputs=_op_outputs(op),
        nodes=nodes,
        visible_nodes=visible,
        narration=forward_narration(recording, op) + _appeared(recording, nodes),
    )


def forward_frames(recording: Recording) -> list[ForwardFrame]:
    """Every forward frame, in the order the ops ran (empty without ``watch()``)."""
    return [_forward_frame(recording, j) for j in range(1, len(recording.forward_ops) + 1)]


def _names(forward: Forward, tensor_ids: tuple[str, ...] | list[str]) -> str:
    return ", ".join(forward.label(t) for t in tensor_ids)


def _switches_on(op: FOp) -> bool:
    if op.name.startswith("requires_grad ="):
        return op.name.endswith("True")
    return not any(a.tensor is None and a.value is False for a in op.inputs)


def _op_effect(recording: Recording, op: FOp) -> str:
    """What one forward op did to the graph, in a few words."""
    forward = _forward(recording)
    outputs = _op_outputs(op)
    made = _names(forward, outputs)
    if op.kind == "requires_grad":
        if _switches_on(op):
            return f"{made} joins the graph (a leaf that requires grad)"
        return f"{made} leaves the graph (requires_grad off)"
    if op.kind == "inplace":
        changes = [
            f"{forward.label(b.tensor)}'s version {b.before} → {b.after}" for b in op.bumps
        ] or [f"{made} changed in place"]
        text = "; ".join(changes)
        recorded = [g for g in op.grad_fns if g]
        if recorded:
            text += f" ({recorded[0]} recorded)"
        return text
    if op.kind == "detach":
        return f"{made} shares the data but is cut off the graph"
    if op.kind == "factory":
        wants_grad = any(a.position == "requires_grad" and a.value is True for a in op.inputs)
        ids = {m.id for m in recording.graph.nodes}
        nodes = [n for n, index in forward.node_ops.items() if index == op.index and n in ids]
        if nodes or wants_grad:
            return f"{made} made: a leaf that requires grad"
        return f"{made} made: off the graph (requires_grad=False)"
    recorded = list(dict.fromkeys(g for g in op.grad_fns if g))
    if recorded:
        text = " and ".join(recorded) + " recorded"
        if len(outputs) > 1:
            text += f" ({len(outputs)} outputs: {made})"
        return text
    if op.inference_mode:
        return f"{made} made under inference_mode: nothing recorded"
    if not op.grad_enabled:
        return f"{made} made under no_grad: nothing recorded"
    return f"no input requires grad: nothing recorded ({made} is off the graph)"


def forward_narration(
    recording: Recording, op: FOp, lines: Counter[tuple[str, int]] | None = None
) -> str:
    """'i = g / h at lessons.py:63: DivBackward0 recorded', and the like. ``lines``: how
    many forward ops each source line ran (``_ops_per_line``), when already counted."""
    where = op.name
    if op.line is not None:
        code = op.line.text.strip()
        where = f"{code} at {op.line.short()}" if code else f"{op.name} at {op.line.short()}"
        line = (op.line.filename, op.line.lineno)
        shared = (lines if lines is not None else _ops_per_line(recording))[line]
        if code and shared > 1 and op.kind != "factory":  # say which op of the line
            made = _names(_forward(recording), _op_outputs(op))
            where += f": {op.name}" if made == op.name else f": {op.name} → {made}"
    return f"{where}: {_op_effect(recording, op)}"


def _appeared(recording: Recording, nodes: tuple[str, ...]) -> str:
    """'; TwiceBackward recorded: ...' for the nodes of a frame that no op made (a custom
    Function's, whose forward ended with this op); "" when there are none."""
    forward = _forward(recording)
    others = [recording.graph.node(n).type_name for n in nodes if n not in forward.node_ops]
    if not others:
        return ""
    names = " and ".join(dict.fromkeys(others))
    return f"; {names} recorded: its forward returned this op's output"


def _ops_per_line(recording: Recording) -> Counter[tuple[str, int]]:
    return Counter((o.line.filename, o.line.lineno) for o in recording.forward_ops if o.line)


def describe_forward(recording: Recording, index: int) -> dict[str, Any]:
    """The side panel's data for forward frame ``index`` (1 .. F): plain strings only."""
    frame = _forward_frame(recording, index)
    return _forward_panel(recording, frame.index, frame.op, frame.nodes, frame.narration)


def describe_forwards(recording: Recording) -> list[dict[str, Any]]:
    """``describe_forward`` of every forward frame, the graph and the ops read once (frame
    by frame, each read them all again: 0.25 s of ResNet-50's save for its 230 frames)."""
    forward = _forward(recording)
    count = len(forward.replayed)
    _, node_time = _op_times(recording)
    made: dict[int, list[str]] = {}
    for node in recording.graph.nodes:
        step = node_time.get(node.id)
        if step is not None:
            made.setdefault(step, []).append(node.id)
    lines = _ops_per_line(recording)
    return [
        _forward_panel(
            recording,
            index,
            op,
            tuple(made.get(index - count - 1, ())),
            forward_narration(recording, op, lines)
            + _appeared(recording, tuple(made.get(index - count - 1, ()))),
        )
        for index, op in enumerate(forward.replayed, 1)
    ]


def _forward_panel(
    recording: Recording, index: int, op: FOp, nodes: tuple[str, ...], narration: str
) -> dict[str, Any]:
    forward = _forward(recording)
    count = len(forward.replayed)
    recorded = [g for g in op.grad_fns if g]
    return {
        "index": index,
        "step": index - count - 1,
        "type": op.name,
        "kind": op.kind,
        "line": None if op.line is None else op.line.short(),
        "code": None if op.line is None else op.line.text.strip(),
        "outputs": [forward.label(t) for t in _op_outputs(op)],
        "recorded": recorded[0] if recorded else None,
        "nodes": list(nodes),
        "narration": narration,
    }
