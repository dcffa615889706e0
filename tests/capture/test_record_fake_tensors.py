"""``record()`` under ``FakeTensorMode``: fake tensors have shapes but no values. The
backward runs as a plain one does (the same fake gradients), the recording holds the
graph and every step with placeholders for the values, and nothing warns or raises."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

import gradviz
from gradviz.escape import json_text
from gradviz.model.recording import short_text, value_text
from gradviz.model.values import Summary


def forward() -> tuple[torch.Tensor, list[torch.Tensor]]:
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 2, requires_grad=True)
    return ((x @ w).tanh() * 2.0 + x.t().sum()).sum(), [x, w]


def read_everything(recording: gradviz.Recording) -> None:
    """The narration, the health and memory views: none may raise on missing values."""
    recording.frames()
    recording.health()
    recording.memory()


@pytest.mark.parametrize("keep", ["all", "summary", "auto"])
def test_record_under_fake_tensor_mode(keep: str) -> None:
    with FakeTensorMode():
        root, leaves = forward()
        root.backward()
        plain = [leaf.grad for leaf in leaves]

        root, leaves = forward()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # torch's warnings too (a fake data pointer)
            recording = gradviz.record(root, keep=keep)  # type: ignore[arg-type]

        for leaf, expected in zip(leaves, plain, strict=True):
            assert isinstance(leaf.grad, FakeTensor) and isinstance(expected, FakeTensor)
            assert (leaf.grad.shape, leaf.grad.dtype) == (expected.shape, expected.dtype)
        read_everything(recording)  # inside the mode
    read_everything(recording)  # and after it

    assert recording.order and len(recording.steps) == len(recording.graph.nodes)
    values = [
        value
        for step in recording.steps
        for value in (*step.grad_outputs, *step.grad_inputs)
        if value is not None
    ]
    assert values
    for value in values:  # placeholders: shape and dtype, no numbers
        assert isinstance(value, Summary) and not value.available
        assert "not available" in value_text(value)
        short_text(value)
    json_text(recording.to_dict())
