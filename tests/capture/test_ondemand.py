"""Values on demand: ``trace()`` summarizes no tensor during the walk; a label or a
reader asks for a summary, and a drawing without values asks for none."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
import torch

import gradviz
from gradviz.model.summarize import summarize


@pytest.fixture
def summaries(monkeypatch: pytest.MonkeyPatch) -> list[torch.Tensor]:
    """Every tensor gradviz.capture.ondemand summarizes from now on."""
    made: list[torch.Tensor] = []
    module = importlib.import_module("gradviz.capture.ondemand")

    def counting(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        made.append(tensor)
        return summarize(tensor, *args, **kwargs)

    monkeypatch.setattr(module, "summarize", counting)
    return made


def model_loss() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    return model, model(torch.randn(4, 8)).square().mean()


def test_trace_and_a_drawing_without_values_summarize_nothing(
    summaries: list[torch.Tensor],
) -> None:
    model, loss = model_loss()
    graph = gradviz.trace(loss, params=model)
    dot = graph.to_dot(values=False)
    assert summaries == []
    assert "8×8 float32" in dot  # the shape is drawn all the same
    assert graph.to_dot(values=False, view="combined").count("not shown") == len(graph.tensors)
    assert summaries == []


def test_a_summary_is_computed_when_asked_and_equals_the_eager_one(
    summaries: list[torch.Tensor],
) -> None:
    model, loss = model_loss()
    graph = gradviz.trace(loss, params=model)
    record = graph.tensor("0.weight")
    assert record.data == summarize(model[0].weight)
    assert len(summaries) == 1
    assert record.data == summarize(model[0].weight)  # computed once
    assert len(summaries) == 1
    graph.to_dot()  # the default drawing shows values: every leaf is summarized now
    assert {id(t) for t in summaries} >= {id(p) for p in model.parameters()}


def test_a_tensor_changed_in_place_before_it_was_asked_for_says_so() -> None:
    model, loss = model_loss()
    graph = gradviz.trace(loss, params=model)
    with torch.no_grad():
        model[2].bias.add_(1.0)
    changed = graph.tensor("2.bias").data
    assert changed is not None and not changed.available
    assert graph.tensor("0.bias").data == summarize(model[0].bias)


def test_record_keeps_the_grads_from_before_its_backward() -> None:
    model, loss = model_loss()
    loss.backward(retain_graph=True)
    before = model[0].weight.grad.clone()  # type: ignore[union-attr]
    recording = gradviz.record(loss, params=model)
    assert recording.graph.tensor("0.weight").grad == summarize(before)
    assert not torch.equal(model[0].weight.grad, before)  # type: ignore[arg-type]
