"""Properties of record() over random expression graphs (hypothesis, tests/support/expressions.py).

Every example is built twice from the same instructions: once for a plain PyTorch run,
once under gradviz. Gradients must be bitwise PyTorch's, every node must receive the sum
of what was sent to it, the order must respect every edge and match the prediction, DOT
must not depend on the run, and no hook may outlive the recording. The examples are
derandomized, so every run checks the same graphs.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings

import gradviz
from gradviz import Recording
from gradviz.model.summarize import summarize
from gradviz.model.values import Summary
from gradviz.render.views import to_dot
from gradviz.replay.frames import replay_options
from tests.support import as_tensor
from tests.support.expressions import Built, Leaf, Op, Program, build, programs

EXAMPLES = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
FEWER = settings(EXAMPLES, max_examples=100)


# -- comparisons -----------------------------------------------------------------------------
def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same dtype, shape and bits (unlike torch.equal: NaN equals NaN, -0.0 is not 0.0)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    bits = {torch.float32: torch.int32, torch.float64: torch.int64}[a.dtype]
    return torch.equal(a.view(bits), b.view(bits))


def assert_bitwise(got: torch.Tensor | None, expected: torch.Tensor | None, what: str) -> None:
    """Same None-ness, dtype, shape, strides and bits."""
    if expected is None:
        assert got is None, f"{what}: expected no gradient, got {got}"
        return
    assert got is not None, f"{what}: expected {expected}, got None"
    assert got.stride() == expected.stride(), what
    assert same_bits(got, expected), f"{what}: {got} != {expected}"


def plain_grads(program: Program) -> list[torch.Tensor | None]:
    built = build(program)
    built.root.backward()
    return [leaf.grad for leaf in built.grad_leaves]


def sent_to(recording: Recording, node_id: str, nr: int) -> list[torch.Tensor]:
    """The seed entering output ``nr`` of ``node_id`` and every gradient sent to it, in the
    order the senders ran (computed from the edges and steps, not from gradviz's check)."""
    sent: list[torch.Tensor] = []
    seed = recording.seeds.get((node_id, nr))
    if seed is not None:
        sent.append(as_tensor(seed))
    for step in recording.steps:
        for edge in recording.graph.out_edges(step.node_id):
            if edge.dst == node_id and edge.input_nr == nr:
                value = step.grad_inputs[edge.slot]
                if value is not None:
                    sent.append(as_tensor(value))
    return sent


def assert_sum_of_sent(received: torch.Tensor | None, sent: list[torch.Tensor], what: str) -> None:
    """Exact for one sender; several are summed by the engine, so allow rounding."""
    if not sent:
        assert received is None, f"{what}: received {received} but nothing was sent"
        return
    assert received is not None, f"{what}: received None but {len(sent)} gradients were sent"
    total = sent[0]
    for value in sent[1:]:
        total = total + value
    assert received.dtype == total.dtype and received.shape == total.shape, what
    if len(sent) == 1:
        assert same_bits(received, total), f"{what}: {received} != {total}"
    else:
        tol = 1e-12 if total.dtype == torch.float64 else 1e-6
        assert torch.allclose(received, total, rtol=tol, atol=tol, equal_nan=True), what


def assert_flow(recording: Recording) -> None:
    """(b): each received gradient is the sum of what was sent to it; gradviz agrees."""
    for step in recording.steps:
        assert step.finished and step.flow_ok, step.flow_note
        for nr, received in enumerate(step.grad_outputs):
            value = None if received is None else as_tensor(received)
            sent = sent_to(recording, step.node_id, nr)
            assert_sum_of_sent(value, sent, f"{step.type_name} {step.node_id} output {nr}")


def assert_order(recording: Recording) -> None:
    """(c): no node runs before a node that sends to it; the order is the predicted one."""
    position = {node_id: index for index, node_id in enumerate(recording.order)}
    assert len(position) == len(recording.steps), "a node ran twice"
    for edge in recording.graph.edges:
        if edge.dst in position and edge.src in position:
            assert position[edge.src] < position[edge.dst], edge
    assert recording.order == recording.predicted_order()


def assert_leaf_steps(recording: Recording, built: Built) -> None:
    """Each AccumulateGrad step saw the leaf's final .grad arrive."""
    for step in recording.steps:
        node = recording.graph.node(step.node_id)
        if node.is_accumulate_grad:
            assert step.leaf_grad_before is None
            assert_bitwise(as_tensor(step.leaf_grad_after), node.leaf_tensor.grad, "leaf step")
    ran = {recording.graph.node(s.node_id).leaf_tensor for s in recording.steps}
    for leaf in built.grad_leaves:
        assert (leaf.grad is not None) == (leaf in ran)


# -- the properties --------------------------------------------------------------------------
# Found by hypothesis: a transposed gradient reaching a leaf whose .grad was None. PyTorch
# stores a contiguous copy (the leaf's layout); the recording kept the received
# transposed tensor as .grad-after, with other strides than the real .grad.
TRANSPOSED_INTO_LEAF = Program(
    leaves=(Leaf(shape=(2, 3), dtype="float32", requires_grad=True, seed=0),),
    ops=(Op("t", (0,)), Op("neg", (1,))),
    root=(2,),
)


def recorded_like_plain(program: Program) -> tuple[Built, Recording]:
    """``record(keep="all")`` of a fresh build: (a) leaf gradients bitwise those of a plain
    backward, (b) every received gradient the sum of what was sent, (c) edges respected."""
    expected = plain_grads(program)
    built = build(program)
    recording = gradviz.record(built.root, keep="all")
    for index, (leaf, grad) in enumerate(zip(built.grad_leaves, expected, strict=True)):
        assert_bitwise(leaf.grad, grad, f"leaf {index}")  # (a)
    assert_flow(recording)  # (b)
    assert_order(recording)  # (c)
    return built, recording


@EXAMPLES
@given(programs())
@example(TRANSPOSED_INTO_LEAF)
def test_record_matches_plain_backward(program: Program) -> None:
    built, recording = recorded_like_plain(program)
    assert recording.order == recording.graph.execution_order()
    assert sorted(recording.order) == sorted(node.id for node in recording.graph.nodes)
    assert_leaf_steps(recording, built)


@FEWER
@given(programs())
def test_record_grad_matches_autograd_grad(program: Program) -> None:
    plain = build(program)
    expected = torch.autograd.grad(plain.root, plain.grad_leaves, allow_unused=True)
    built = build(program)
    grads, recording = gradviz.record_grad(
        built.root, built.grad_leaves, allow_unused=True, keep="all"
    )

    for index, (got, grad) in enumerate(zip(grads, expected, strict=True)):
        assert_bitwise(got, grad, f"input {index}")  # (a)
    assert all(leaf.grad is None for leaf in built.grad_leaves)  # grad() leaves .grad alone
    assert_flow(recording)  # (b)
    assert_order(recording)  # (c)
    # no AccumulateGrad runs: the returned gradient is what was sent to the leaf's node
    assert not any(recording.graph.node(s.node_id).is_accumulate_grad for s in recording.steps)
    for leaf, got in zip(built.grad_leaves, grads, strict=True):
        node = next((n for n in recording.graph.nodes if n.leaf_tensor is leaf), None)
        sent = [] if node is None else sent_to(recording, node.id, 0)
        assert_sum_of_sent(got, sent, "returned gradient")


def assert_summarizes(summary: object, value: object, what: str) -> None:
    """A keep="summary" value describes the keep="all" one: exactly for small tensors."""
    if value is None:
        assert summary is None, what
        return
    assert isinstance(summary, Summary), what
    full = summarize(as_tensor(value))
    assert (summary.shape, summary.dtype, summary.numel) == (full.shape, full.dtype, full.numel)
    assert summary.complete == full.complete and summary.values == full.values, what
    assert (summary.min, summary.max) == (full.min, full.max), what
    for got, want in ((summary.mean, full.mean), (summary.norm, full.norm)):
        assert (got is None) == (want is None), what
        if got is not None and want is not None:
            assert got == pytest.approx(want, rel=1e-9, abs=1e-12), what


@FEWER
@given(programs())
def test_summary_recording_keeps_gradients_and_describes_them(program: Program) -> None:
    expected = plain_grads(program)
    full = gradviz.record(build(program).root, keep="all")
    built = build(program)
    recording = gradviz.record(built.root, keep="summary")

    for index, (leaf, grad) in enumerate(zip(built.grad_leaves, expected, strict=True)):
        assert_bitwise(leaf.grad, grad, f"leaf {index}")  # (a)
    assert all(step.finished and step.flow_ok for step in recording.steps)  # (b)
    assert_order(recording)  # (c)
    assert recording.order == full.order
    for step, twin in zip(recording.steps, full.steps, strict=True):
        what = f"{step.type_name} {step.node_id}"
        for got, want in zip(step.grad_outputs, twin.grad_outputs, strict=True):
            assert_summarizes(got, want, what + " received")
        for got, want in zip(step.grad_inputs, twin.grad_inputs, strict=True):
            assert_summarizes(got, want, what + " sent")


@FEWER
@given(programs())
def test_dot_is_deterministic(program: Program) -> None:
    """(d): two fresh builds of one program draw byte-identical DOT, traced and replayed."""
    first, second = build(program), build(program)
    assert gradviz.trace(first.root).to_dot() == gradviz.trace(second.root).to_dot()
    one, two = gradviz.record(first.root), gradviz.record(second.root)
    assert to_dot(one.graph, replay_options(one)) == to_dot(two.graph, replay_options(two))


@FEWER
@given(programs())
def test_no_hook_outlives_the_recording(program: Program) -> None:
    """(e): a second, plain backward through the same graph is not recorded and gives
    exactly the gradients of two plain backward passes."""
    plain = build(program)
    plain.root.backward(retain_graph=True)
    plain.root.backward()

    built = build(program)
    recording = gradviz.record(built.root, retain_graph=True)
    steps = list(recording.steps)
    built.root.backward()

    assert recording.steps == steps  # nothing appended, nothing changed
    for index, (leaf, twin) in enumerate(zip(built.grad_leaves, plain.grad_leaves, strict=True)):
        assert_bitwise(leaf.grad, twin.grad, f"leaf {index}")


class Boom(Exception):
    pass


def fail_once(grad: torch.Tensor) -> None:
    raise Boom


@FEWER
@given(programs())
def test_no_hook_outlives_a_failed_recording(program: Program) -> None:
    """(e) when backward raises midway: a user's hook on the root's input fails the first
    backward; the hooks are gone for the second, which matches the same plain sequence."""
    plain = build(program)
    handle = plain.values[program.root[0]].register_hook(fail_once)
    with pytest.raises(Boom):
        plain.root.backward(retain_graph=True)
    handle.remove()
    plain.root.backward()

    built = build(program)
    handle = built.values[program.root[0]].register_hook(fail_once)
    with pytest.raises(gradviz.BackwardFailed) as raised:
        gradviz.record(built.root, retain_graph=True)
    handle.remove()
    recording = raised.value.recording
    steps = list(recording.steps)
    built.root.backward()

    assert recording.steps == steps
    for index, (leaf, twin) in enumerate(zip(built.grad_leaves, plain.grad_leaves, strict=True)):
        assert_bitwise(leaf.grad, twin.grad, f"leaf {index}")


# Found by hypothesis: nan reaching a node from two senders (y * y) failed the flow check,
# as if a hook had changed it (nan != nan); with summaries, an infinite gradient did too
# (inf - inf is nan).
NAN_FROM_TWO_SENDERS = Program(
    leaves=(Leaf(shape=(), dtype="float32", requires_grad=True, seed=0, special=math.nan),),
    ops=(Op("sin", (0,)), Op("soft_sqrt", (1,))),
    root=(2,),
)
INF_FROM_TWO_SENDERS = Program(
    leaves=(Leaf(shape=(2,), dtype="float64", requires_grad=True, seed=0, special=math.inf),),
    ops=(Op("square", (0,)), Op("mul_scalar", (0,), (3.0,)), Op("add", (1, 2))),
    root=(3,),
)


@FEWER
@given(programs(special=True))
@example(NAN_FROM_TWO_SENDERS)
@example(INF_FROM_TWO_SENDERS)
def test_nan_and_inf_flow_like_any_gradient(program: Program) -> None:
    """A diverged model (nan, inf in the leaves) records as faithfully, and the flow check
    does not blame a hook for non-finite sums, with copies or with summaries."""
    recorded_like_plain(program)
    summarized = gradviz.record(build(program).root, keep="summary")
    assert all(step.flow_ok for step in summarized.steps), [
        step.flow_note for step in summarized.steps if not step.flow_ok
    ]
