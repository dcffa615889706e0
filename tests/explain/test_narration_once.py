"""A replay's narration reads the graph once, not once per step: the panels are the same as
told one step (one forward frame) at a time, and no per-step scan of the graph remains."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import gradviz
from gradviz.explain import steps
from gradviz.explain.steps import describe_step
from gradviz.model.graph import Graph
from gradviz.model.recording import Recording
from gradviz.replay import forwardframes
from gradviz.replay.forwardframes import describe_forward, describe_forwards
from gradviz.replay.frames import replay_data


def watched() -> Recording:
    """Repeated op types (nodes told apart by rank), a line that runs several ops, a loop."""
    torch.manual_seed(0)
    layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(3))
    x = torch.randn(2, 4)
    with gradviz.watch(layers) as w:
        h = x
        for layer in layers:
            h = torch.tanh(layer(h)) * 2 + h
        loss = h.square().mean()
    return w.record(loss)


def test_the_panels_are_those_told_one_at_a_time() -> None:
    rec = watched()
    data = replay_data(rec)
    count = len(rec.forward_ops)
    assert data["forward"] == [describe_forward(rec, j) for j in range(1, count + 1)]
    assert data["forward"] == describe_forwards(rec)
    assert data["steps"] == [describe_step(rec, i) for i in range(len(rec.steps) + 1)]
    told = " ".join(step["narration"] for step in data["steps"])
    assert "(#2)" in told  # nodes of one type told apart by their rank, as step by step


def test_the_replay_data_does_not_scan_the_graph_per_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rec = watched()
    calls = {"tensors_at": 0, "op_times": 0}
    real_tensors_at, real_op_times = Graph.tensors_at, forwardframes._op_times

    def tensors_at(self: Graph, node_id: str) -> Any:
        calls["tensors_at"] += 1
        return real_tensors_at(self, node_id)

    def op_times(recording: Recording) -> Any:
        calls["op_times"] += 1
        return real_op_times(recording)

    monkeypatch.setattr(Graph, "tensors_at", tensors_at)
    monkeypatch.setattr(forwardframes, "_op_times", op_times)
    replay_data(rec)
    assert calls == {"tensors_at": 0, "op_times": 1}
    # outside a replay, one step still reads the graph as it is
    describe_step(rec, 3)
    assert calls["tensors_at"] > 0


def test_each_recorded_gradient_is_told_once_per_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """A gradient is told by the node that sent it and by the one that got it: inside a
    replay its text is written once (the same text, as the first test checks)."""
    rec = watched()
    told: list[int] = []
    real_show = steps.show

    def show(value: Any, noun: str = "gradient") -> str:
        told.append(id(value))
        return real_show(value, noun)

    monkeypatch.setattr(steps, "show", show)
    [describe_step(rec, i) for i in range(len(rec.steps) + 1)]
    one_by_one = len(told)
    assert len(set(told)) < one_by_one  # the same gradients, told more than once
    told.clear()
    replay_data(rec)
    # the gradients the steps sent and got, told once each (a formula's local values and
    # a leaf's .grad are told as before)
    assert len(told) < one_by_one
