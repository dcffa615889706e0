"""record(): the real backward, recorded; every number checked against PyTorch itself."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz import BackwardFailed, GraphFreed, Recording
from gradviz.capture.record import PostHook, PreHook, _Recorder
from gradviz.model.graph import Node
from gradviz.model.recording import as_summary
from gradviz.model.values import Summary, format_number
from gradviz.teaching.lessons import LESSONS, Lesson, lesson
from tests.support import as_tensor
from tests.support.models import MODELS, Build

Case = Callable[[], tuple[tuple[torch.Tensor, ...], dict[str, torch.Tensor]]]


def lesson_case(item: Lesson) -> Case:
    def build() -> tuple[tuple[torch.Tensor, ...], dict[str, torch.Tensor]]:
        built = item.build()
        return built.roots, built.names

    return build


def model_case(build: Build) -> Case:
    def make() -> tuple[tuple[torch.Tensor, ...], dict[str, torch.Tensor]]:
        loss, params = build()
        return (loss,), params

    return make


CASES: dict[str, Case] = {item.slug: lesson_case(item) for item in LESSONS if item.plain}
CASES.update({name: model_case(build) for name, build in MODELS.items()})


def leaf_grads(names: dict[str, torch.Tensor]) -> dict[str, torch.Tensor | None]:
    return {n: t.grad for n, t in names.items() if t.is_leaf and t.requires_grad}


@pytest.fixture
def hook_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Counts every call of gradviz's hooks, to prove they are gone afterwards."""
    calls: list[str] = []
    hooks_for = _Recorder.hooks_for

    def counting_hooks_for(self: _Recorder, node: Node) -> tuple[PreHook, PostHook]:
        prehook, hook = hooks_for(self, node)

        def counting_prehook(grads: tuple[torch.Tensor | None, ...]) -> None:
            calls.append(node.id)
            prehook(grads)

        def counting_hook(
            gi: tuple[torch.Tensor | None, ...], go: tuple[torch.Tensor | None, ...]
        ) -> None:
            calls.append(node.id)
            hook(gi, go)

        return counting_prehook, counting_hook

    one_hook_for = _Recorder.one_hook_for

    def counting_one_hook_for(self: _Recorder, node: Node) -> PostHook:
        hook = one_hook_for(self, node)

        def counting_hook(
            gi: tuple[torch.Tensor | None, ...], go: tuple[torch.Tensor | None, ...]
        ) -> None:
            calls.append(node.id)
            hook(gi, go)

        return counting_hook

    monkeypatch.setattr(_Recorder, "hooks_for", counting_hooks_for)
    monkeypatch.setattr(_Recorder, "one_hook_for", counting_one_hook_for)
    yield calls


@pytest.mark.parametrize("name", list(CASES))
def test_recording_matches_pytorch(name: str, hook_calls: list[str]) -> None:
    plain_roots, plain_names = CASES[name]()
    torch.autograd.backward(plain_roots)
    expected = leaf_grads(plain_names)

    roots, names = CASES[name]()
    recording = gradviz.record(*roots, names=names, retain_graph=True)
    graph = recording.graph

    # bitwise equal to the unrecorded run
    got = leaf_grads(names)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert value is not None and torch.equal(got[key], value), key  # type: ignore[arg-type]

    # the engine's real order is the predicted one, and every node ran once
    assert recording.order == graph.execution_order()
    assert sorted(recording.order) == sorted(n.id for n in graph.nodes)

    # what each node sent is what PyTorch's own node computes from what it received
    for step in recording.steps:
        assert step.finished and step.flow_ok, step.flow_note
        node = graph.node(step.node_id)
        if node.is_accumulate_grad:
            after = as_tensor(step.leaf_grad_after)
            assert torch.equal(after, node.leaf_tensor.grad)
            assert torch.equal(after, as_tensor(step.grad_outputs[0]))
            continue
        received = [None if g is None else as_tensor(g) for g in step.grad_outputs]
        with torch.no_grad():
            recomputed = node.torch_node(*received)
        if isinstance(recomputed, torch.Tensor):
            recomputed = (recomputed,)
        assert len(recomputed) == len(step.grad_inputs)
        for sent, again in zip(step.grad_inputs, recomputed, strict=True):
            if sent is None:
                assert again is None
                continue
            sent_tensor = as_tensor(sent)
            if again.shape != sent_tensor.shape:  # the engine sums broadcast gradients down
                again = again.sum_to_size(sent_tensor.shape)
            assert torch.equal(sent_tensor, again)

    # the seed: what enters the root is d root / d root = 1
    assert len(recording.seeds) == 1
    seed = as_tensor(next(iter(recording.seeds.values())))
    assert torch.equal(seed, torch.ones_like(roots[0]))

    # no hook of gradviz's survives the recording
    calls_during = len(hook_calls)
    # one hook per node, or a prehook and a hook (gradviz.capture.hooks)
    assert len(recording.steps) <= calls_during <= 2 * len(recording.steps)
    assert set(hook_calls) == {step.node_id for step in recording.steps}
    for root in roots:
        root.backward(retain_graph=True)
    assert len(hook_calls) == calls_during


@pytest.mark.parametrize("name", list(CASES))
def test_received_gradients_are_the_derivatives_of_named_tensors(name: str) -> None:
    roots, names = CASES[name]()
    branches = {n: t for n, t in names.items() if t.grad_fn is not None}
    expected = dict(
        zip(
            branches,
            torch.autograd.grad(roots[0], list(branches.values()), retain_graph=True),
            strict=True,
        )
    )
    recording = gradviz.record(*roots, names=names)
    for tensor_name, value in expected.items():
        record = recording.graph.tensor(tensor_name)
        assert record.node_id is not None and record.output_nr is not None
        step = recording.step_for(record.node_id)
        assert step is not None
        assert torch.equal(as_tensor(step.grad_outputs[record.output_nr]), value), tensor_name


def test_ten_op_lesson_replay_shows_the_lessons_numbers() -> None:
    plain = lesson("ten-ops").build()
    plain.roots[0].backward()
    c_grad = plain.names["c"].grad
    h_grad = plain.names["h"].grad
    assert c_grad is not None and h_grad is not None

    built = lesson("ten-ops").build()
    recording = gradviz.record(*built.roots, names=built.names)
    graph = recording.graph
    last = recording.frame(len(recording))
    c_id, h_id = graph.tensor("c").id, graph.tensor("h").id
    assert last.leaf_grads[c_id] == format_number(c_grad.item())
    assert last.leaf_grads[h_id] == format_number(h_grad.item())

    # the two streams into AccumulateGrad(h) are separate edge labels, summing to h.grad
    acc_h = graph.tensor("h").node_id
    assert acc_h is not None
    streams = graph.in_edges(acc_h)
    assert len(streams) == 2
    values = []
    for edge in streams:
        producer = recording.step_for(edge.src)
        assert producer is not None
        value = as_tensor(producer.grad_inputs[edge.slot])
        values.append(value)
        assert last.edge_grads[edge.key] == format_number(value.item())
    assert torch.equal(values[0] + values[1], h_grad)

    svg = recording.svg()
    texts = {t.text for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")}
    assert f"grad {format_number(c_grad.item())}" in texts
    assert f"grad {format_number(h_grad.item())}" in texts


def test_frames_move_through_the_recorded_order() -> None:
    built = lesson("ten-ops").build()
    recording = gradviz.record(*built.roots, names=built.names)
    first = recording.frame(0)
    assert first.active is None and first.done == () and first.edge_grads == {}
    assert len(first.pending) == len(recording.graph.nodes)
    for index, step in enumerate(recording.steps, start=1):
        frame = recording.frame(index)
        assert frame.active == step.node_id
        assert frame.done == tuple(recording.order[: index - 1])
        assert len(frame.done) + 1 + len(frame.pending) == len(recording.graph.nodes)
        assert str(format_number(float(as_tensor(step.grad_outputs[0]).item()))) in (
            frame.narration
        )
    with pytest.raises(IndexError, match="steps 0"):
        recording.frame(len(recording) + 1)


def test_several_roots_and_non_scalar_roots_with_gradient() -> None:
    def build() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        torch.manual_seed(3)
        x = torch.randn(4, requires_grad=True)
        return x, x.exp(), (x * 3).sum()

    x0, y0, z0 = build()
    seed = torch.linspace(-1, 1, 4)
    torch.autograd.backward([y0, z0], [seed, torch.tensor(2.0)])
    x, y, z = build()
    recording = gradviz.record(y, z, gradient=[seed, torch.tensor(2.0)])
    assert x.grad is not None and torch.equal(x.grad, x0.grad)  # type: ignore[arg-type]
    assert recording.order == recording.graph.execution_order()
    assert all(step.flow_ok for step in recording.steps)
    with pytest.raises(ValueError, match="needs gradient="):
        gradviz.record(build()[1])


def test_accumulation_over_two_recordings() -> None:
    built = lesson("ten-ops").build()
    plain = lesson("ten-ops").build()
    plain.roots[0].backward(retain_graph=True)
    once = plain.names["h"].grad.clone()  # type: ignore[union-attr]
    plain.roots[0].backward()
    twice = plain.names["h"].grad

    gradviz.record(*built.roots, names=built.names, retain_graph=True)
    second = gradviz.record(*built.roots, names=built.names)
    acc_h = second.graph.tensor("h").node_id
    assert acc_h is not None
    step = second.step_for(acc_h)
    assert step is not None
    assert torch.equal(as_tensor(step.leaf_grad_before), once)
    assert torch.equal(as_tensor(step.leaf_grad_after), twice)  # type: ignore[arg-type]
    assert step.flow_ok
    with pytest.raises(GraphFreed, match="retain_graph=True"):
        gradviz.record(*built.roots)


def test_inputs_prunes_nodes_and_marks_them_not_run() -> None:
    plain = lesson("ten-ops").build()
    plain.roots[0].backward(inputs=[plain.names["h"]])
    built = lesson("ten-ops").build()
    h, c = built.names["h"], built.names["c"]
    recording = gradviz.record(*built.roots, names=built.names, inputs=[h])
    assert c.grad is None and torch.equal(h.grad, plain.names["h"].grad)  # type: ignore[arg-type]
    assert recording.order == recording.predicted_order()
    acc_c = recording.graph.tensor("c").node_id
    assert acc_c in recording.not_run
    assert recording.frame(len(recording)).not_run == tuple(recording.not_run)


def test_autograd_grad_variant_leaves_grad_untouched() -> None:
    plain = lesson("ten-ops").build()
    expected = torch.autograd.grad(plain.roots[0], [plain.names["c"], plain.names["h"]])
    built = lesson("ten-ops").build()
    c, h = built.names["c"], built.names["h"]
    grads, recording = gradviz.record_grad(built.roots[0], [c, h], names=built.names)
    assert all(torch.equal(g, e) for g, e in zip(grads, expected, strict=True))  # type: ignore[arg-type]
    assert c.grad is None and h.grad is None
    assert all(step.type_name != "AccumulateGrad" for step in recording.steps)
    assert recording.order == recording.predicted_order()


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_create_graph_gives_second_derivatives() -> None:
    x0 = torch.tensor(1.5, requires_grad=True)
    (first,) = torch.autograd.grad(x0**3 * x0.sin(), x0, create_graph=True)
    (second,) = torch.autograd.grad(first, x0)

    x = torch.tensor(1.5, requires_grad=True)
    recording = gradviz.record(x**3 * x.sin(), create_graph=True)
    assert x.grad is not None and x.grad.grad_fn is not None
    assert torch.equal(x.grad, first)
    acc = recording.step_for(recording.graph.nodes[-1].id)
    assert acc is not None and as_tensor(acc.leaf_grad_after).grad_fn is not None
    grad_of_grad = x.grad
    x.grad = None
    again = gradviz.record(grad_of_grad)  # trace and record the gradient's own graph
    assert torch.equal(x.grad, second)  # type: ignore[arg-type]
    assert again.order == again.graph.execution_order()


def test_user_hook_that_changes_a_gradient_is_flagged() -> None:
    plain = lesson("ten-ops").build()
    plain.names["i"].register_hook(lambda g: g * 2)
    plain.roots[0].backward()
    built = lesson("ten-ops").build()
    built.names["i"].register_hook(lambda g: g * 2)
    recording = gradviz.record(*built.roots, names=built.names)
    for name in ("c", "h"):
        assert torch.equal(built.names[name].grad, plain.names[name].grad)  # type: ignore[arg-type]
    div = recording.graph.tensor("i").node_id
    assert div is not None
    flagged = [s for s in recording.steps if not s.flow_ok]
    assert [s.node_id for s in flagged] == [div]
    assert "changed the gradient" in flagged[0].flow_note
    assert "Flow check" in recording.frame(flagged[0].index).narration


def test_retained_grads_are_captured_when_they_fill() -> None:
    built = lesson("ten-ops").build()
    built.names["i"].retain_grad()
    recording = gradviz.record(*built.roots, names=built.names)
    record = recording.graph.tensor("i")
    assert record.node_id is not None
    step = recording.step_for(record.node_id)
    assert step is not None
    assert torch.equal(as_tensor(step.retained[record.id]), built.names["i"].grad)  # type: ignore[arg-type]
    frame = recording.frame(step.index)
    assert frame.retained_grads[record.id] == format_number(built.names["i"].grad.item())  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["ten-ops", "mlp"])
def test_summary_mode_keeps_statistics_that_match_pytorch(name: str) -> None:
    key = "05-ten-ops" if name == "ten-ops" else name
    full_roots, full_names = CASES[key]()
    full = gradviz.record(*full_roots, names=full_names, keep="all")
    roots, names = CASES[key]()
    summary = gradviz.record(*roots, names=names, keep="summary")
    assert summary.keep == "summary" and summary.order == full.order
    for kept, step in zip(summary.steps, full.steps, strict=True):
        assert kept.flow_ok, kept.flow_note
        for small, big in zip(kept.grad_outputs, step.grad_outputs, strict=True):
            if big is None:
                assert small is None
                continue
            assert isinstance(small, Summary)
            tensor = as_tensor(big)
            assert small.shape == tuple(tensor.shape)
            assert small.max == pytest.approx(tensor.max().item())
            assert small.min == pytest.approx(tensor.min().item())
            assert small.norm == pytest.approx(torch.linalg.vector_norm(tensor).item(), rel=1e-5)
    assert [as_summary(v).values for v in summary.seeds.values()] == [(1.0,)]


def test_summaries_of_views_are_the_summaries_of_the_values() -> None:
    """TBackward passes on a transpose of what it received: its summary reuses the
    statistics of that gradient and must equal a fresh summary of the view, exactly."""
    from gradviz.model.summarize import summarize

    def build() -> torch.Tensor:
        torch.manual_seed(3)
        model = torch.nn.Sequential(
            torch.nn.Linear(64, 300), torch.nn.Tanh(), torch.nn.Linear(300, 32)
        )
        return model(torch.randn(8, 64)).square().mean()

    full = gradviz.record(build(), keep="all")
    summary = gradviz.record(build(), keep="summary")
    transposes = 0
    for kept, step in zip(summary.steps, full.steps, strict=True):
        assert kept.flow_ok, kept.flow_note
        transposes += kept.type_name == "TBackward0"
        for small, big in zip(kept.grad_inputs, step.grad_inputs, strict=True):
            assert (small is None) == (big is None)
            if big is not None:
                assert small == summarize(as_tensor(big))  # clone() keeps the strides
    assert transposes == 2


def test_auto_keeps_everything_for_small_graphs() -> None:
    built = lesson("chain").build()
    assert gradviz.record(*built.roots).keep == "all"
    with pytest.raises(ValueError, match="keep must be"):
        gradviz.record(*lesson("chain").build().roots, keep="most")  # type: ignore[arg-type]


def test_a_failing_backward_removes_hooks_and_names_the_node(hook_calls: list[str]) -> None:
    c = torch.tensor(2.0, requires_grad=True) * 1.0
    d = torch.tensor(3.0, requires_grad=True)
    e = c * d
    with torch.no_grad():
        c += 1  # MulBackward0 saved c: backward must fail there
    with pytest.raises(BackwardFailed, match="MulBackward0") as raised:
        gradviz.record(e)
    error = raised.value
    assert isinstance(error.recording, Recording)
    assert error.node_id == error.recording.graph.root_ids[0]
    assert "inplace" in str(error)
    assert isinstance(error.__cause__, RuntimeError)
    calls = len(hook_calls)
    with pytest.raises(RuntimeError):
        e.backward()
    assert len(hook_calls) == calls


def test_a_user_error_inside_backward_keeps_the_steps_so_far() -> None:
    built = lesson("ten-ops").build()

    def fail(grad: torch.Tensor) -> None:
        raise ValueError("boom")

    built.names["g"].register_hook(fail)
    with pytest.raises(BackwardFailed, match="boom") as raised:
        gradviz.record(*built.roots, names=built.names)
    recording = raised.value.recording
    assert isinstance(recording, Recording)
    assert [s.type_name for s in recording.steps][:3] == [
        "MulBackward0",
        "AddBackward0",
        "DivBackward0",
    ]


@pytest.mark.needs_dot
def test_step_svgs_share_one_layout(tmp_path: Path) -> None:
    built = lesson("ten-ops").build()
    recording = gradviz.record(*built.roots, names=built.names)
    paths = recording.save_steps(tmp_path)
    assert len(paths) == len(recording) + 1

    def geometry(svg: str) -> str:
        return "\n".join(re.findall(r'(?:points|d|x|y)="[^"]*"', svg))

    layouts = {geometry(p.read_text()) for p in paths}
    assert len(layouts) == 1
    prefix = recording.graph.prefix
    for index, path in enumerate(paths[1:], start=1):
        root = ET.fromstring(path.read_text())
        active = [
            g.attrib["id"]
            for g in root.iter("{http://www.w3.org/2000/svg}g")
            if "gv_active" in g.attrib.get("class", "").split()
        ]
        assert active == [f"{prefix}_{recording.steps[index - 1].node_id}"]


def test_save_json(tmp_path: Path) -> None:
    built = lesson("chain").build()
    recording = gradviz.record(*built.roots, names=built.names)
    import json

    data = json.loads(recording.save(tmp_path / "r.json").read_text())
    assert [s["node_id"] for s in data["steps"]] == recording.order
    with pytest.raises(ValueError, match="cannot save"):
        recording.save(tmp_path / "r.txt")
