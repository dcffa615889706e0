"""One hook per node where it records the same step as a prehook and a hook would; two
where the step must open before the node runs (``gradviz.capture.hooks``)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import gradviz
from gradviz.model.recording import GradValue


def as_tensor(value: GradValue | None) -> torch.Tensor:
    assert isinstance(value, torch.Tensor)
    return value


class DoublesInPlace(torch.autograd.Function):
    """Its backward changes what it received in place (allowed, if unusual)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad.mul_(2)


def test_a_custom_backward_changing_its_input_in_place_is_recorded_before_it_ran() -> None:
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = x.sin() * 3.0
    loss = DoublesInPlace.apply(y).exp().sum()
    recording = gradviz.record(loss, keep="all")
    assert y.grad_fn is not None
    custom = next(s for s in recording.steps if s.type_name == "DoublesInPlaceBackward")
    received = as_tensor(custom.grad_outputs[0])
    out = torch.tensor([0.5, -1.0, 2.0]).sin() * 3.0 * 2
    assert torch.equal(received, out.exp())  # d exp(z).sum() / dz, before the doubling
    assert custom.flow_ok, custom.flow_note
    sent = as_tensor(custom.grad_inputs[0])
    assert torch.equal(sent, 2 * received)


def test_a_leaf_with_a_grad_already_keeps_its_value_from_before() -> None:
    x = torch.tensor([0.5, -1.0], requires_grad=True)
    x.grad = torch.tensor([10.0, 20.0])
    before = x.grad.clone()
    recording = gradviz.record((x * 3).sum(), keep="all")
    step = next(s for s in recording.steps if s.type_name == "AccumulateGrad")
    assert torch.equal(as_tensor(step.leaf_grad_before), before)
    assert torch.equal(as_tensor(step.leaf_grad_after), x.grad)
    assert step.flow_ok, step.flow_note


def test_the_step_order_and_values_are_those_of_two_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same recording with one hook per node and with a prehook and a hook on each."""
    import importlib

    hooks = importlib.import_module("gradviz.capture.record")

    def run() -> gradviz.Recording:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        return gradviz.record(model(torch.randn(3, 4)).square().mean(), keep="all")

    one = run()
    monkeypatch.setattr(hooks, "one_hook_will_do", lambda *args: False)
    two = run()
    assert one.order == two.order
    for a, b in zip(one.steps, two.steps, strict=True):
        for left, right in zip(
            (*a.grad_outputs, *a.grad_inputs, a.leaf_grad_after),
            (*b.grad_outputs, *b.grad_inputs, b.leaf_grad_after),
            strict=True,
        ):
            assert (left is None) == (right is None)
            if left is not None:
                assert torch.equal(as_tensor(left), as_tensor(right))
