"""Forward frames draw a backward node only once it exists: a custom ``autograd.Function``'s
node and the ``CheckpointFunctionBackward`` of ``torch.utils.checkpoint(use_reentrant=True)``
have no op of their own, and appear with the op that made their output tensor (the last op
of their forward), not from frame 1.

The expected frame comes from what ``watch()`` recorded: the op that created the output
tensor the user holds, or the tensor the next op read.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils.checkpoint import checkpoint

import gradviz
from gradviz.model.recording import Recording
from gradviz.replay.forwardframes import describe_forwards, forward_frames
from gradviz.replay.frames import replay_born


class _Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> torch.Tensor:
        return grad * 2


def _segment(t: torch.Tensor) -> torch.Tensor:
    return (t.sin() * 3).cos()


def _node(recording: Recording, type_name: str) -> str:
    return next(n.id for n in recording.graph.nodes if n.type_name == type_name)


def _frame_of_op(recording: Recording, op_index: int | None) -> int:
    """The frame (1 .. F) at which forward op ``op_index`` ran."""
    assert op_index is not None
    forward = recording.graph.forward
    assert forward is not None
    return [op.index for op in forward.replayed].index(op_index) + 1


def _appears(recording: Recording, node_id: str) -> int:
    """The first frame whose visible nodes hold ``node_id``; checks it stays after."""
    frames = forward_frames(recording)
    seen = [node_id in frame.visible_nodes for frame in frames]
    assert True in seen, node_id
    first = seen.index(True)
    assert all(seen[first:])
    assert [node_id in f.nodes for f in frames].count(True) == 1
    panels = describe_forwards(recording)
    assert node_id in panels[first]["nodes"]
    said = f"{recording.graph.node(node_id).type_name} recorded: its forward returned"
    assert said in panels[first]["narration"] == frames[first].narration
    return first + 1


def _named_outputs() -> tuple[Recording, dict[str, int]]:
    a = torch.randn(3, requires_grad=True)
    with gradviz.watch() as w:
        b = a.exp()
        c = b + 1
        d = _Twice.apply(c)
        e = d * 3
        f = checkpoint(_segment, e, use_reentrant=True)
        loss = f.sum()
    recording = w.record(loss)
    forward = recording.graph.forward
    assert forward is not None
    made = {}
    for name, tensor in (("d", d), ("f", f)):
        found = w.find(tensor)
        assert found is not None
        created = forward.tensor(found).created_by
        assert created is not None
        made[name] = _frame_of_op(recording, created)
    return recording, made


def test_custom_function_and_reentrant_checkpoint_appear_with_their_output() -> None:
    recording, made = _named_outputs()
    twice = _node(recording, "_TwiceBackward")
    ckpt = _node(recording, "CheckpointFunctionBackward")
    assert _appears(recording, twice) == made["d"] > 1
    assert _appears(recording, ckpt) == made["f"] > made["d"]


def test_an_output_nobody_names_appears_before_the_op_that_reads_it() -> None:
    a = torch.randn(3, requires_grad=True)
    with gradviz.watch() as w:
        e = _Twice.apply(a.exp()) * 3
        loss = checkpoint(_segment, e, use_reentrant=True).sum()
    recording = w.record(loss)
    forward = recording.graph.forward
    assert forward is not None

    def reader_input_frame(grad_fn: str) -> int:
        """The frame of the op that made the tensor read by the op recording ``grad_fn``."""
        reader = next(op for op in forward.replayed if grad_fn in op.grad_fns)
        tensor = next(arg.tensor for arg in reader.inputs if arg.tensor is not None)
        return _frame_of_op(recording, forward.tensor(tensor).created_by)

    twice = _node(recording, "_TwiceBackward")
    ckpt = _node(recording, "CheckpointFunctionBackward")
    assert _appears(recording, twice) == reader_input_frame("MulBackward0") > 1
    assert _appears(recording, ckpt) == reader_input_frame("SumBackward0")


@pytest.mark.needs_dot
def test_the_replay_draws_them_from_that_frame() -> None:
    recording, made = _named_outputs()
    count = len(recording.forward_ops)
    prefix = recording.graph.prefix
    born = replay_born(recording, ["backward"])["backward"]
    for type_name, name in (("_TwiceBackward", "d"), ("CheckpointFunctionBackward", "f")):
        node = _node(recording, type_name)
        assert born[f"{prefix}_{node}"] == made[name] - count - 1  # the frame's step
