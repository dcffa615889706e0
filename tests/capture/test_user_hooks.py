"""The user's own hooks under gradviz: they fire as in a plain run, and their changes show.

Every hook kind PyTorch offers is registered twice, on two identical graphs: one runs a
plain backward, the other is recorded. The hooks must fire as often, with the same values,
and leave bitwise the same gradients. A hook that changes a gradient must show in the
recording as a ``HookChange`` (before and after, compared with what the hook itself was
given and returned), in the flow note, in the narration and in the stepper panel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz.explain.steps import describe_step, narrate, show
from gradviz.model.recording import HookChange, Recording, Step

Log = list[tuple[str, tuple[torch.Tensor | None, ...]]]


def copies(values: Any) -> tuple[torch.Tensor | None, ...]:
    if isinstance(values, torch.Tensor) or values is None:
        values = (values,)
    return tuple(None if v is None else v.detach().clone() for v in values)


@dataclass
class Built:
    """loss = sum(2·(exp(y) + y)), y = a·b: y's node gets two incoming gradients."""

    a: torch.Tensor
    b: torch.Tensor
    y: torch.Tensor
    loss: torch.Tensor
    log: Log = field(default_factory=list)

    @property
    def leaves(self) -> list[torch.Tensor]:
        return [self.a, self.b]


def build() -> Built:
    a = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    b = torch.tensor([1.5, 0.25, -0.75], requires_grad=True)
    y = a * b
    loss = ((y.exp() + y) * 2).sum()
    return Built(a, b, y, loss)


# -- the hooks: each registers on a Built, logs what it saw and returned, gives its handles --
def tensor_hook(on: str, change: bool) -> Callable[[Built], list[Any]]:
    def register(built: Built) -> list[Any]:
        def hook(grad: torch.Tensor) -> torch.Tensor | None:
            built.log.append(("in", copies(grad)))
            if not change:
                return None
            out = grad * 3
            built.log.append(("out", copies(out)))
            return out

        return [getattr(built, on).register_hook(hook)]

    return register


def node_prehook(change: bool) -> Callable[[Built], list[Any]]:
    def register(built: Built) -> list[Any]:
        def hook(grad_outputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...] | None:
            built.log.append(("in", copies(grad_outputs)))
            if not change:
                return None
            out = (grad_outputs[0] * 3,)
            built.log.append(("out", copies(out)))
            return out

        assert built.y.grad_fn is not None
        return [built.y.grad_fn.register_prehook(hook)]

    return register


def node_hook(change: bool) -> Callable[[Built], list[Any]]:
    def register(built: Built) -> list[Any]:
        def hook(grad_inputs: Any, grad_outputs: Any) -> tuple[torch.Tensor, ...] | None:
            built.log.append(("in", copies(grad_inputs) + copies(grad_outputs)))
            if not change:
                return None
            out = (grad_inputs[0] * 3, grad_inputs[1])
            built.log.append(("out", copies(out)))
            return out

        def second(grad_inputs: Any, grad_outputs: Any) -> None:
            built.log.append(("second", copies(grad_inputs)))  # sees the first one's result

        assert built.y.grad_fn is not None
        return [built.y.grad_fn.register_hook(hook), built.y.grad_fn.register_hook(second)]

    return register


def post_accumulate_hook(change: bool) -> Callable[[Built], list[Any]]:
    def register(built: Built) -> list[Any]:
        def hook(leaf: torch.Tensor) -> None:
            built.log.append(("in", copies(leaf.grad)))
            if change:
                assert leaf.grad is not None
                leaf.grad.mul_(3)
                built.log.append(("out", copies(leaf.grad)))

        return [built.a.register_post_accumulate_grad_hook(hook)]

    return register


def hook_kinds(change: bool) -> dict[str, Callable[[Built], list[Any]]]:
    """Each kind of hook a user can put on the graph, watching or changing the gradient."""
    return {
        "tensor hook on a non-leaf": tensor_hook("y", change=change),
        "tensor hook on a leaf": tensor_hook("a", change=change),
        "node prehook": node_prehook(change=change),
        "node hook": node_hook(change=change),
        "post-accumulate-grad hook": post_accumulate_hook(change=change),
    }


KINDS = hook_kinds(change=False)
CHANGING = hook_kinds(change=True)


def same_log(got: Log, expected: Log) -> None:
    assert [kind for kind, _ in got] == [kind for kind, _ in expected]
    for (_, mine), (_, theirs) in zip(got, expected, strict=True):
        assert len(mine) == len(theirs)
        for m, t in zip(mine, theirs, strict=True):
            assert (m is None and t is None) or (
                m is not None and t is not None and torch.equal(m, t)
            )


def same_grads(got: list[torch.Tensor], expected: list[torch.Tensor]) -> None:
    for mine, theirs in zip(got, expected, strict=True):
        assert mine.grad is not None and theirs.grad is not None
        assert torch.equal(mine.grad, theirs.grad)


def plain_and_recorded(register: Callable[[Built], list[Any]]) -> tuple[Built, Built, Recording]:
    plain = build()
    register(plain)
    plain.loss.backward()
    built = build()
    register(built)
    recording = gradviz.record(built.loss, names={"a": built.a, "b": built.b, "y": built.y})
    return plain, built, recording


@pytest.mark.parametrize("changes", [False, True], ids=["observing", "changing"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_hooks_fire_as_in_a_plain_run(kind: str, changes: bool) -> None:
    plain, built, recording = plain_and_recorded((CHANGING if changes else KINDS)[kind])
    assert plain.log, "the hook fired in the plain run"
    same_log(built.log, plain.log)
    same_grads(built.leaves, plain.leaves)
    if not changes:  # hooks that only look change nothing gradviz could see
        assert all(step.flow_ok and not step.hook_changes for step in recording.steps)


@pytest.mark.parametrize("changes", [False, True], ids=["observing", "changing"])
@pytest.mark.parametrize("kind", [k for k in KINDS if k != "post-accumulate-grad hook"])
def test_hooks_fire_as_in_a_plain_run_under_record_grad(kind: str, changes: bool) -> None:
    register = (CHANGING if changes else KINDS)[kind]
    plain = build()
    register(plain)
    expected = torch.autograd.grad(plain.loss, plain.leaves)
    built = build()
    register(built)
    got, recording = gradviz.record_grad(built.loss, built.leaves)
    assert plain.log
    same_log(built.log, plain.log)
    for mine, theirs in zip(got, expected, strict=True):
        assert mine is not None and torch.equal(mine, theirs)
    assert built.a.grad is None and built.b.grad is None
    assert len(recording.steps) == len(recording.graph.nodes) - 2  # no AccumulateGrad ran


def only_change(recording: Recording) -> tuple[Step, HookChange]:
    changed = [step for step in recording.steps if step.hook_changes]
    assert len(changed) == 1, [s.flow_note for s in recording.steps]
    assert len(changed[0].hook_changes) == 1, changed[0].flow_note
    return changed[0], changed[0].hook_changes[0]


def node_of(recording: Recording, tensor: torch.Tensor) -> str:
    node_id = next(t.node_id for t in recording.graph.tensors if t.tensor is tensor)
    assert node_id is not None
    return node_id


def assert_told(recording: Recording, step: Step, change: HookChange) -> None:
    """The flow note, the narration and the stepper panel all say the hook changed it."""
    assert not step.flow_ok
    assert change.text() in step.flow_note
    assert change.text() in narrate(recording, step.index)
    panel = describe_step(recording, step.index)
    assert panel["hooks"] == [change.text()]
    assert recording.to_dict()["steps"][step.index - 1]["hook_changes"][0]["where"] == change.where


@pytest.mark.parametrize("on", ["y", "a"])
def test_a_tensor_hook_change_shows_what_was_sent_and_what_arrived(on: str) -> None:
    _, built, recording = plain_and_recorded(tensor_hook(on, change=True))
    (_, (given,)), (_, (returned,)) = built.log
    step, change = only_change(recording)
    assert step.node_id == node_of(recording, getattr(built, on))
    assert change.where == "received" and change.slot == 0
    assert isinstance(change.before, torch.Tensor) and isinstance(change.after, torch.Tensor)
    assert given is not None and returned is not None
    assert torch.equal(change.before, given)  # what the producers sent, summed by the engine
    assert torch.equal(change.after, returned)
    assert_told(recording, step, change)


def test_a_node_prehook_change_shows_what_was_sent_and_what_arrived() -> None:
    _, built, recording = plain_and_recorded(node_prehook(change=True))
    (_, (given,)), (_, (returned,)) = built.log
    step, change = only_change(recording)
    assert step.node_id == node_of(recording, built.y)
    assert change.where == "received"
    assert given is not None and returned is not None
    assert torch.equal(change.before, given)  # type: ignore[arg-type]
    assert torch.equal(change.after, returned)  # type: ignore[arg-type]
    assert torch.equal(step.grad_outputs[0], returned)  # type: ignore[arg-type]
    assert_told(recording, step, change)


def test_a_node_hook_change_is_not_passed_off_as_the_ops_result() -> None:
    _, built, recording = plain_and_recorded(node_hook(change=True))
    (_, given), (_, returned), (_, second_saw) = built.log
    step, change = only_change(recording)
    assert step.node_id == node_of(recording, built.y)
    assert change.where == "sent" and change.slot == 0
    assert given[0] is not None and returned[0] is not None
    assert torch.equal(change.before, given[0])  # type: ignore[arg-type]
    assert torch.equal(change.after, returned[0])  # type: ignore[arg-type]
    assert torch.equal(second_saw[0], returned[0])  # type: ignore[arg-type]
    # what really flowed on is the hook's value; the op's own is kept beside it
    assert torch.equal(step.grad_inputs[0], returned[0])  # type: ignore[arg-type]
    assert step.sent_by_op is not None and torch.equal(step.sent_by_op[0], given[0])  # type: ignore[arg-type]
    assert_told(recording, step, change)
    # the chain rule is told (and checked) with the op's own result, not blamed for the hook
    panel = describe_step(recording, step.index)
    assert panel["op"] == "mul" and panel["checked"] is True
    told, note = narrate(recording, step.index).split(" Flow check: ")
    assert f"= {show(given[0])} to AccumulateGrad(a)" in told
    assert f"{show(returned[0])} to AccumulateGrad(a)" not in told
    assert note == step.flow_note + "."


def test_a_post_accumulate_grad_hook_change_shows_on_grad() -> None:
    _, built, recording = plain_and_recorded(post_accumulate_hook(change=True))
    (_, (given,)), _ = built.log
    step, change = only_change(recording)
    assert step.type_name == "AccumulateGrad" and change.where == "grad"
    assert given is not None and built.a.grad is not None
    assert torch.equal(change.before, given)  # type: ignore[arg-type]
    assert torch.equal(change.after, built.a.grad)  # type: ignore[arg-type]
    assert_told(recording, step, change)


# -- module backward hooks ------------------------------------------------------------------
def module_run(record: bool) -> tuple[Log, torch.nn.Linear, torch.Tensor, Recording | None]:
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 2)
    x = torch.tensor([[0.5, -1.0, 2.0]], requires_grad=True)
    log: Log = []

    def pre(module: torch.nn.Module, grad_output: Any) -> tuple[torch.Tensor, ...]:
        log.append(("pre in", copies(grad_output)))
        out = (grad_output[0] * 5,)
        log.append(("pre out", copies(out)))
        return out

    def post(module: torch.nn.Module, grad_input: Any, grad_output: Any) -> Any:
        log.append(("in", copies(grad_input) + copies(grad_output)))
        out = (grad_input[0] * 3,)
        log.append(("out", copies(out)))
        return out

    layer.register_full_backward_pre_hook(pre)
    layer.register_full_backward_hook(post)
    loss = layer(x).tanh().sum()
    if not record:
        loss.backward()
        return log, layer, x, None
    return log, layer, x, gradviz.record(loss)


def test_module_backward_hooks_fire_as_in_a_plain_run_and_show() -> None:
    plain_log, plain_layer, plain_x, _ = module_run(record=False)
    log, layer, x, recording = module_run(record=True)
    assert recording is not None
    same_log(log, plain_log)
    same_grads([x, *layer.parameters()], [plain_x, *plain_layer.parameters()])
    changed = [step for step in recording.steps if step.hook_changes]
    assert [s.type_name for s in changed] == ["BackwardHookFunctionBackward"] * 2
    by_kind = dict(log)
    pre_change, post_change = (step.hook_changes[0] for step in changed)
    assert torch.equal(pre_change.before, by_kind["pre in"][0])  # type: ignore[arg-type]
    assert torch.equal(pre_change.after, by_kind["pre out"][0])  # type: ignore[arg-type]
    assert torch.equal(post_change.before, by_kind["in"][0])  # type: ignore[arg-type]
    assert torch.equal(post_change.after, by_kind["out"][0])  # type: ignore[arg-type]
    for step in changed:
        assert_told(recording, step, step.hook_changes[0])


# -- gradviz leaves the user's hooks in place --------------------------------------------------
@pytest.mark.parametrize("kind", list(CHANGING))
def test_users_handles_stay_registered_and_removable(kind: str) -> None:
    """A second backward fires the user's hooks again, as in PyTorch; after the user
    removes them, a third fires nothing, and gradients match the plain run throughout."""

    def run(built: Built, first: Callable[[], object]) -> list[torch.Tensor]:
        handles = CHANGING[kind](built)
        first()
        grads = [
            g.clone() for g in torch.autograd.grad(built.loss, built.leaves, retain_graph=True)
        ]
        for handle in handles:
            handle.remove()
        fired = len(built.log)
        built.loss.backward(retain_graph=True)
        assert len(built.log) == fired, "a removed hook fired"
        return grads

    plain = build()
    plain_grads = run(plain, lambda: plain.loss.backward(retain_graph=True))
    built = build()
    grads = run(built, lambda: gradviz.record(built.loss, retain_graph=True))
    same_log(built.log, plain.log)
    same_grads(built.leaves, plain.leaves)
    for mine, theirs in zip(grads, plain_grads, strict=True):
        assert torch.equal(mine, theirs)


def test_gradviz_hooks_run_first_and_last_only_around_users_hooks() -> None:
    """gradviz's extra 'before the user's hooks' look is added only where the user has
    node hooks, and a graph without them records no before-values."""
    _, _, plain_recording = plain_and_recorded(lambda built: [])
    assert all(step.sent_by_op is None for step in plain_recording.steps)
    _, built, recording = plain_and_recorded(node_hook(change=False))
    with_op = [step.node_id for step in recording.steps if step.sent_by_op is not None]
    assert with_op == [node_of(recording, built.y)]


@pytest.mark.browser
@pytest.mark.needs_dot
def test_stepper_panel_says_a_hook_changed_the_gradient(tmp_path: Path) -> None:
    from tests.support.browser import chromium, open_local
    from tests.support.person import click_to_step

    _, _, recording = plain_and_recorded(node_hook(change=True))
    step, change = only_change(recording)
    page_file = recording.save(tmp_path / "hooked.html")
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_file)
        root = page.wait_for_selector(".gv-stepper")
        for index in range(1, step.index + 1):
            click_to_step(page, root, ".gv-next", index)
        warnings = [w.inner_text() for w in root.query_selector_all(".gv-panel .gv-warning")]
    assert not errors
    assert warnings == [change.text()]
