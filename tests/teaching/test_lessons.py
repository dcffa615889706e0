"""The lessons as ``gradviz.teaching.lessons`` builds them, replayed and checked against
PyTorch: each replay leaves exactly the gradients a plain PyTorch run of the same build does,
and each lesson shows what it is there to teach."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.model.recording import Recording
from gradviz.teaching.lessons import LESSONS, Built, Lesson, lesson

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _leaves(built: Built) -> dict[str, torch.Tensor]:
    return {name: t for name, t in built.names.items() if t.is_leaf and t.requires_grad}


def _plain(built: Built) -> dict[str, torch.Tensor | None]:
    """What PyTorch alone gives for the lesson: .grad of each leaf, or autograd.grad's."""
    if built.inputs is not None:
        grads = torch.autograd.grad(built.roots, built.inputs, grad_outputs=built.gradient)
        return {f"input {i}": g for i, g in enumerate(grads)}
    torch.autograd.backward(built.roots, grad_tensors=built.gradient)
    return {name: t.grad for name, t in _leaves(built).items()}


def _recorded(built: Built, recording: Recording) -> dict[str, torch.Tensor | None]:
    if built.inputs is None:
        return {name: t.grad for name, t in _leaves(built).items()}
    graph, found = recording.graph, {}
    for i, node_id in enumerate(recording.input_nodes or []):
        sent = [
            step.grad_inputs[edge.slot]
            for edge in graph.in_edges(node_id)
            if (step := recording.step_for(edge.src)) is not None
        ]
        found[f"input {i}"] = sum(s for s in sent if isinstance(s, torch.Tensor))
    return found


# notebooks without a lesson of one backward graph: the tour, and the training run (many
# backward passes, watched with watch_training)
NOT_LESSONS = {"00": "00-tour", "13": "13-a-network-that-diverges"}


def test_ten_lessons_numbered_as_the_notebooks() -> None:
    numbers = [item.number for item in LESSONS]
    found = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))
    assert set(NOT_LESSONS.values()) <= set(found)
    assert numbers == [name[:2] for name in found if name[:2] not in NOT_LESSONS]
    assert len({item.slug.split("-", 1)[1] for item in LESSONS}) == len(LESSONS)
    assert all(item.about for item in LESSONS)


@pytest.mark.parametrize("item", LESSONS, ids=lambda item: item.slug)
def test_replay_gives_what_pytorch_gives(item: Lesson) -> None:
    expected = _plain(item.build())
    built = item.build()
    recording = built.record()
    got = _recorded(built, recording)
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        if value is None:  # PyTorch leaves it None (lesson 12: detached): so must the replay
            assert got[name] is None and item.slug == "12-detach-cut", name
            continue
        assert got[name] is not None, name
        assert torch.equal(got[name], value), name
    assert recording.order == recording.predicted_order()


@pytest.mark.parametrize("item", LESSONS, ids=lambda item: item.slug)
def test_replay_under_watch_is_the_same_pass(item: Lesson) -> None:
    plain = item.build().record()
    with gradviz.watch() as w:
        built = item.build()
    watched = built.record(w)
    assert watched.order == plain.order
    assert [s.type_name for s in watched.steps] == [s.type_name for s in plain.steps]


def _exceptions(built: Built) -> list[str]:
    """What keeps a build from being a plain backward of scalar roots (Lesson.plain)."""
    found = []
    if any(root.numel() != 1 for root in built.roots):
        found.append("a non-scalar root")
    if any(t._backward_hooks for t in built.names.values()):
        found.append("a tensor hook")
    if any(t.is_leaf and t.grad is not None for t in built.names.values()):
        found.append("a .grad from an earlier pass")
    graph = gradviz.trace(*built.roots, names=built.names)
    if any(t.node_id is None for t in graph.tensors if t.tensor is not None and t.requires_grad):
        found.append("a named tensor off the graph")
    return found


@pytest.mark.parametrize("item", LESSONS, ids=lambda item: item.slug)
def test_plain_says_whether_generic_checks_apply(item: Lesson) -> None:
    exceptions = _exceptions(item.build())
    assert (exceptions == []) is item.plain, exceptions


def test_building_leaves_the_random_stream_alone() -> None:
    state = torch.get_rng_state()
    for item in LESSONS:
        item.build()
    assert torch.equal(state, torch.get_rng_state())


def _node(recording: Recording, name: str) -> str:
    node_id = recording.graph.tensor(name).node_id
    assert node_id is not None, name
    return node_id


def test_in_place_add_records_although_c_changed() -> None:
    built = lesson("in-place").build()
    assert built.names["c"]._version == 1
    recording = built.record()
    assert recording.graph.node(_node(recording, "e")).type_name == "AddBackward0"
    assert all(step.flow_ok for step in recording.steps)


def test_unbind_edges_carry_the_output_indices() -> None:
    recording = lesson("unbind").build().record()
    unbind = _node(recording, "b")
    assert sorted(e.input_nr for e in recording.graph.in_edges(unbind)) == [0, 1, 2]


def test_accumulate_adds_to_the_first_pass_and_retains_b() -> None:
    twin = lesson("accumulate").build()
    (once,) = torch.autograd.grad(twin.roots, twin.names["A"])
    built = lesson("accumulate").build()
    recording = built.record()
    acc = recording.step_for(_node(recording, "A"))
    assert acc is not None and isinstance(acc.leaf_grad_before, torch.Tensor)
    assert torch.equal(acc.leaf_grad_before, once)
    assert torch.equal(built.names["A"].grad, 2 * once)
    assert built.names["B"].grad is not None
    assert recording.graph.tensor("B").id in recording.steps[1].retained


def test_second_derivative_runs_no_accumulate_grad() -> None:
    built = lesson("second-derivative").build()
    x = built.names["x"]
    f = 5 * x**2 * built.names["y"]  # the lesson's f, again: its root is df/dx
    (first,) = torch.autograd.grad(f, x, create_graph=True)
    (second,) = torch.autograd.grad(first, x)
    assert torch.equal(built.roots[0], first)
    recording = built.record()
    assert recording.mode == "grad"
    assert all(s.type_name != "AccumulateGrad" for s in recording.steps)
    assert x.grad is None
    got = _recorded(built, recording)["input 0"]
    assert got is not None and torch.equal(got, second)


def test_gradient_arg_seeds_the_non_scalar_root() -> None:
    built = lesson("gradient-arg").build()
    assert built.roots[0].numel() > 1 and built.gradient is not None
    recording = built.record()
    (seed,) = recording.seeds.values()
    assert torch.equal(seed, built.gradient[0])
    pow_step = recording.step_for(_node(recording, "y"))
    assert pow_step is not None and torch.equal(pow_step.grad_outputs[0], built.gradient[0])


def test_hooks_are_flagged_where_they_changed_a_gradient() -> None:
    recording = lesson("hooks").build().record()
    flagged = {s.node_id for s in recording.steps if not s.flow_ok}
    assert flagged == {_node(recording, "y"), _node(recording, "w")}


def test_no_grad_eval_leaves_weight_and_scale_off_the_graph() -> None:
    built = lesson("no-grad-eval").build()
    roles = {t.name: t.role for t in gradviz.trace(*built.roots, names=built.names).tensors}
    assert roles["scale"] is gradviz.Role.CONSTANT and not built.names["scale"].requires_grad
    assert roles["weight"] is gradviz.Role.CONSTANT and roles["bias"] is gradviz.Role.LEAF
    types = {n.type_name for n in gradviz.trace(*built.roots).nodes}
    assert not any("Dropout" in t or "Div" in t for t in types), types


def test_copy_slices_routes_the_slice() -> None:
    recording = lesson("copy-slices").build().record()
    assert recording.graph.node(_node(recording, "s")).type_name == "CopySlices"
