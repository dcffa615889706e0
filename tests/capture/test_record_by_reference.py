"""``keep="all"`` keeps the gradients on their way by reference, not as copies, where no
Python code of the user's runs inside the backward (``gradviz.capture.hooks``): the same
order and values as copies, the same ``.grad`` as a plain backward, and nothing the user
changes in place afterwards reaches the recording."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import gradviz
from gradviz.capture import record as record_module
from gradviz.errors import GradvizWarning
from gradviz.model.recording import GradValue, Recording
from tests.support.models import MODELS


def as_tensor(value: GradValue | None) -> torch.Tensor:
    assert isinstance(value, torch.Tensor)
    return value


def copied(monkeypatch: pytest.MonkeyPatch, make: Callable[[], torch.Tensor]) -> Recording:
    """The recording with every gradient copied (as before gradviz kept references)."""
    with monkeypatch.context() as patch:
        patch.setattr(record_module, "references_safe", lambda graph: False)
        return gradviz.record(make(), keep="all")


def assert_same_steps(shared: Recording, copies: Recording) -> None:
    assert shared.order == copies.order
    for mine, theirs in zip(shared.steps, copies.steps, strict=True):
        pairs = [
            *zip(mine.grad_outputs, theirs.grad_outputs, strict=True),
            *zip(mine.grad_inputs, theirs.grad_inputs, strict=True),
            (mine.leaf_grad_after, theirs.leaf_grad_after),
        ]
        for a, b in pairs:
            assert (a is None) == (b is None)
            if a is not None:
                assert torch.equal(as_tensor(a), as_tensor(b)), mine
                assert as_tensor(a).stride() == as_tensor(b).stride(), mine
        assert mine.flow_ok and mine.flow_checked, mine.flow_note


def many_uses() -> torch.Tensor:
    """x reaches one node through five paths: the engine adds into its buffer four times."""
    torch.manual_seed(4)
    x = torch.randn(50, 40, requires_grad=True)
    w = torch.randn(40, 30, requires_grad=True)
    h = x @ w
    parts = [h.sin(), h.cos() * h, h.exp(), h.tanh(), h.t().t() * 2.0]
    return sum(p.square().mean() for p in parts)  # type: ignore[return-value]


@pytest.mark.parametrize("name", [*MODELS, "many uses"])
def test_references_keep_what_copies_keep(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    def make() -> torch.Tensor:
        return many_uses() if name == "many uses" else MODELS[name]()[0]

    assert_same_steps(gradviz.record(make(), keep="all"), copied(monkeypatch, make))


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * 2


def transposed(user_code: str = "") -> torch.Tensor:
    """A transpose between two nodes that are not leaves: TBackward sends a transpose of
    what it received on to MulBackward (and optionally user code inside the backward)."""
    torch.manual_seed(5)
    leaf = torch.randn(5, 4, requires_grad=True)
    h = (leaf * 1.5).t()
    if user_code == "custom Function":
        h = Twice.apply(h)
    elif user_code == "node hook":
        assert h.grad_fn is not None
        h.grad_fn.register_hook(lambda grad_inputs, grad_outputs: None)
    elif user_code == "leaf tensor hook":
        leaf.register_hook(lambda grad: None)
    return h.exp().sum()


def transposes_share_memory(recording: Recording) -> list[bool]:
    """For each TBackward step: whether what it sent (a transpose of what it received) was
    kept in the memory it received, i.e. not copied."""
    found = []
    for step in recording.steps:
        if step.type_name == "TBackward0":
            sent, received = as_tensor(step.grad_inputs[0]), as_tensor(step.grad_outputs[0])
            found.append(sent.data_ptr() == received.data_ptr())
    assert found
    return found


def test_a_transpose_is_kept_without_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    assert all(transposes_share_memory(gradviz.record(transposed(), keep="all")))
    assert not any(transposes_share_memory(copied(monkeypatch, transposed)))


def test_a_broadcast_is_kept_as_the_one_value_it_repeats(monkeypatch: pytest.MonkeyPatch) -> None:
    """SumBackward sends its one value expanded: kept by reference it takes 4 bytes."""

    def make() -> torch.Tensor:
        return (torch.randn(1000, requires_grad=True) * 2.0).exp().sum()

    for recording, stride in (
        (gradviz.record(make(), keep="all"), 0),
        (copied(monkeypatch, make), 1),
    ):
        step = next(s for s in recording.steps if s.type_name == "SumBackward0")
        assert as_tensor(step.grad_inputs[0]).stride() == (stride,)


@pytest.mark.parametrize("name", list(MODELS))
def test_grads_are_bitwise_a_plain_backwards_and_stay_apart(name: str) -> None:
    """The same .grad as without gradviz; changing .grad in place afterwards (clipping,
    adding into it) leaves the recording alone."""
    loss, named = MODELS[name]()
    leaves = [t for t in named.values() if t.is_leaf]
    recording = gradviz.record(loss, keep="all")
    kept = {
        (step.index, slot): as_tensor(value).clone()
        for step in recording.steps
        for slot, value in enumerate([*step.grad_outputs, *step.grad_inputs])
        if value is not None
    }
    plain_loss, plain_named = MODELS[name]()
    plain_loss.backward()
    plain_leaves = [t for t in plain_named.values() if t.is_leaf]
    for leaf, twin in zip(leaves, plain_leaves, strict=True):
        assert leaf.grad is not None and twin.grad is not None
        assert torch.equal(leaf.grad, twin.grad) and leaf.grad.stride() == twin.grad.stride()

    torch.nn.utils.clip_grad_norm_(leaves, 1e-3)
    for leaf in leaves:
        assert leaf.grad is not None
        leaf.grad.add_(1.0)
    for step in recording.steps:
        for slot, value in enumerate([*step.grad_outputs, *step.grad_inputs]):
            if value is not None:
                assert torch.equal(as_tensor(value), kept[step.index, slot]), step


def test_scalar_leaves_share_their_grad_as_in_pytorch() -> None:
    """PyTorch moves each 0-d leaf's gradient (views of the one seed) into its .grad: the
    two .grad share memory, and a second backward adds into both. gradviz keeps that."""

    def make() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        a = torch.tensor(0.5, requires_grad=True)
        b = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
        return a, b, a.sin().sum() + b.sum() + b.sum()

    a, b, loss = make()
    first = gradviz.record(loss, retain_graph=True, keep="all")
    before = [as_tensor(v).clone() for s in first.steps for v in s.grad_inputs if v is not None]
    second = gradviz.record(loss, keep="all")
    pa, pb, plain = make()
    plain.backward(retain_graph=True)
    plain.backward()
    assert a.grad is not None and pa.grad is not None and b.grad is not None
    assert pb.grad is not None
    assert torch.equal(a.grad, pa.grad) and torch.equal(b.grad, pb.grad)
    after = [as_tensor(v) for s in first.steps for v in s.grad_inputs if v is not None]
    assert all(torch.equal(x, y) for x, y in zip(before, after, strict=True))
    assert second.order == first.order


def test_a_seed_changed_afterwards_leaves_the_recording_alone() -> None:
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = x.exp()
    seed = torch.tensor([1.0, 2.0, 3.0])
    recording = gradviz.record(y, gradient=seed, keep="all")
    seed.mul_(10)
    first = recording.steps[0]
    assert torch.equal(as_tensor(first.grad_outputs[0]), torch.tensor([1.0, 2.0, 3.0]))


def test_a_hook_changing_a_gradient_in_place_is_reported() -> None:
    """PyTorch's rule: a tensor hook returns a new gradient, it never changes its argument.
    gradviz cannot see hooks on intermediate tensors; one that breaks the rule is named."""
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    h = x * 3.0
    y = h.exp()

    def doubles_in_place(grad: torch.Tensor) -> Any:
        grad.mul_(2)

    h.register_hook(doubles_in_place)
    with pytest.warns(GradvizWarning, match="changed gradients in place"):
        gradviz.record(y.sum(), keep="all")


@pytest.mark.parametrize("user_code", ["custom Function", "node hook", "leaf tensor hook"])
def test_python_code_inside_the_backward_turns_references_off(user_code: str) -> None:
    """Code gradviz can see that may change a gradient in place: every gradient copied."""
    recording = gradviz.record(transposed(user_code), keep="all")
    assert not any(transposes_share_memory(recording))


@pytest.mark.parametrize("call", ["backward(inputs=)", "grad()"])
def test_gradients_handed_to_the_user_are_copies(call: str) -> None:
    """inputs= and grad(): the engine hands the inputs' gradients over, to be changed."""
    torch.manual_seed(6)
    leaf = torch.randn(5, 4, requires_grad=True)
    middle = leaf * 1.5
    loss = middle.t().exp().sum()
    if call == "grad()":
        _, recording = gradviz.record_grad(loss, [middle], keep="all")
    else:
        recording = gradviz.record(loss, inputs=[middle], keep="all")
    assert not any(transposes_share_memory(recording))


def test_a_gradient_grad_took_is_copied_once_for_all_its_views() -> None:
    """A weight's gradient reaches AccumulateGrad as TBackward's transpose, which PyTorch
    moves into .grad: after the backward the recording holds one copy of that memory, seen
    through both views, and none of it is .grad's."""
    loss, named = MODELS["mlp"]()
    recording = gradviz.record(loss, keep="all")
    grads = {t.grad.data_ptr() for t in named.values() if t.is_leaf and t.grad is not None}
    assert all(transposes_share_memory(recording))
    for step in recording.steps:
        for value in [*step.grad_outputs, *step.grad_inputs, step.leaf_grad_after]:
            if value is not None:
                assert as_tensor(value).data_ptr() not in grads, step


def test_a_view_of_the_seed_changed_afterwards_leaves_the_recording_alone() -> None:
    """ViewBackward sends a view of the user's own gradient= tensor on: its memory is the
    user's, to change later."""
    a = torch.tensor([[0.5, -1.0], [2.0, 3.0]], requires_grad=True)
    root = (a * 2.0).view(-1)
    seed = torch.tensor([1.0, 2.0, 3.0, 4.0])
    recording = gradviz.record(root, gradient=seed, keep="all")
    seed.mul_(10)
    view = next(s for s in recording.steps if s.type_name == "ViewBackward0")
    assert torch.equal(as_tensor(view.grad_inputs[0]), torch.tensor([[1.0, 2.0], [3.0, 4.0]]))


def test_retained_grads_changed_afterwards_leave_the_recording_alone() -> None:
    x = torch.randn(4, requires_grad=True)
    y = x * 2.0
    y.retain_grad()
    z = y.exp()
    z.retain_grad()
    recording = gradviz.record((z * 3.0).sum(), keep="all")
    before = [as_tensor(v).clone() for s in recording.steps for v in s.grad_inputs if v is not None]
    for tensor in (x, y, z):
        assert tensor.grad is not None
        tensor.grad.mul_(5)
    after = [as_tensor(v) for s in recording.steps for v in s.grad_inputs if v is not None]
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
