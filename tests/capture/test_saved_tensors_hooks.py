"""The user's ``torch.autograd.graph.saved_tensors_hooks``: gradviz never runs their unpack
hook (reading a saved value would): it runs exactly as often with ``record()`` as without,
a one-shot hook (one that forgets what it unpacked) still works, and the saved value says
why gradviz did not read it."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import gradviz


class Scale(torch.autograd.Function):
    """A custom Function: its ``saved_tensors`` go through the hooks too."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * x


class Hooks:
    """Pack into a store, unpack from it (``one_shot``: and forget it), counting calls."""

    def __init__(self, one_shot: bool) -> None:
        self.one_shot = one_shot
        self.store: dict[int, torch.Tensor] = {}
        self.packed = self.unpacked = 0

    def pack(self, tensor: torch.Tensor) -> int:
        self.packed += 1
        self.store[self.packed] = tensor
        return self.packed

    def unpack(self, key: int) -> torch.Tensor:
        self.unpacked += 1
        return self.store.pop(key) if self.one_shot else self.store[key]


def forward(hooks: Hooks) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(3)
    x = torch.randn(5, requires_grad=True)
    w = torch.randn(5, 5, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(hooks.pack, hooks.unpack):
        loss = (Scale.apply(w @ x.sin()) * x).exp().sum()
    return x, loss


@pytest.mark.parametrize("one_shot", [False, True], ids=["ordinary", "one_shot"])
@pytest.mark.parametrize("keep", ["all", "summary"])
def test_unpack_hook_runs_as_often_as_without_gradviz(one_shot: bool, keep: str) -> None:
    plain_hooks = Hooks(one_shot)
    x, loss = forward(plain_hooks)
    loss.backward()
    plain_grad = x.grad

    hooks = Hooks(one_shot)
    x, loss = forward(hooks)
    recording = gradviz.record(loss, keep=keep)  # type: ignore[arg-type]

    assert plain_hooks.unpacked > 0
    assert (hooks.packed, hooks.unpacked) == (plain_hooks.packed, plain_hooks.unpacked)
    assert x.grad is not None and plain_grad is not None
    assert torch.equal(x.grad, plain_grad)
    assert len(recording.steps) == len(recording.graph.nodes)


def test_packed_saved_values_say_why_they_were_not_read() -> None:
    hooks = Hooks(one_shot=True)
    _, loss = forward(hooks)
    graph = gradviz.trace(loss)
    texts = {
        (node.type_name, saved.name): saved.text for node in graph.nodes for saved in node.saved
    }
    assert hooks.unpacked == 0
    for where in [("SinBackward0", "self"), ("ScaleBackward", "saved_tensors[0]")]:
        assert "saved_tensors_hooks" in texts[where], texts
    loss.backward()  # the one-shot hook still holds every value
    assert hooks.unpacked == hooks.packed


def test_values_saved_without_hooks_are_still_read() -> None:
    x = torch.randn(5, requires_grad=True)
    graph = gradviz.trace(x.sin().sum())
    sin = next(node for node in graph.nodes if node.type_name == "SinBackward0")
    assert sin.saved[0].summary is not None
