"""Memory in the replay: saved bytes read from the storages, checked against torch."""

from __future__ import annotations

import pytest
import torch

import gradviz
from gradviz.analysis.memory import format_bytes
from gradviz.replay.frames import replay_data
from tests.support.saved import saved_bytes_of


def test_shared_activation_counted_once_and_freed_after_its_last_holder() -> None:
    x = torch.randn(1000, requires_grad=True)
    y = x.exp()  # ExpBackward0 saves its result, y
    z = y.sin()  # SinBackward0 saves its input, y again: one storage
    loss = z.sum()
    expected = {}
    for node in (loss.grad_fn.next_functions[0][0], y.grad_fn):
        expected.update(saved_bytes_of(node))
    assert expected == {y.untyped_storage().data_ptr(): y.untyped_storage().nbytes()}
    rec = gradviz.record(loss)
    memory = rec.memory()
    assert memory.saved_total == sum(expected.values()) == 4000
    assert sorted(memory.node_bytes.values()) == [4000, 4000]  # each node holds it
    order = [s.type_name for s in rec.steps]
    freed_at = [s.index for s in memory.steps if s.freed]
    assert [order[i - 1] for i in freed_at] == ["ExpBackward0"]  # the last of its holders
    assert memory.steps[-1].saved == 0
    # torch agrees the graph let go: reading a saved value now raises, a 2nd backward fails
    with pytest.raises(RuntimeError, match="second time"):
        _ = y.grad_fn._saved_result
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()
    text = memory.explain_second_backward()
    assert "retain_graph=True" in text and format_bytes(4000) in text
    # .grad of x is 4000 bytes at the end
    assert memory.steps[-1].grads == x.grad.untyped_storage().nbytes()
    assert memory.peak >= memory.saved_total


def test_retain_graph_frees_nothing() -> None:
    x = torch.randn(64, requires_grad=True)
    loss = (x.tanh() * x).sum()
    rec = gradviz.record(loss, retain_graph=True)
    memory = rec.memory()
    assert memory.retained and all(s.freed == 0 for s in memory.steps)
    assert memory.steps[-1].saved == memory.saved_total > 0
    loss.backward()  # torch agrees: the saved tensors are still there
    assert "can run over it again" in memory.explain_second_backward()


def test_weights_are_flagged_as_owned_by_a_leaf() -> None:
    torch.manual_seed(0)
    layer = torch.nn.Linear(8, 4)
    data = torch.randn(3, 8, requires_grad=True)
    loss = layer(data).relu().sum()
    relu = loss.grad_fn.next_functions[0][0]
    addmm = relu.next_functions[0][0]
    saved = {**saved_bytes_of(addmm), **saved_bytes_of(relu)}
    memory = gradviz.record(loss).memory()
    assert memory.saved_total == sum(saved.values())
    # Addmm saves the input (for the weight's gradient) and the weight's transpose (for the
    # input's): both storages belong to leaves, so freeing the graph does not free them
    owned = data.untyped_storage().nbytes() + layer.weight.untyped_storage().nbytes()
    assert memory.leaf_owned == owned


def test_replay_data_has_the_running_total_and_peak() -> None:
    """The stepper's compact memory data adds up to the timeline, step by step."""
    x = torch.randn(10, requires_grad=True)
    rec = gradviz.record((x.exp() * 2).sum())
    data = replay_data(rec, explain=True)
    memory, timeline = data["memory"], rec.memory()
    assert len(memory["flight"]) == len(rec) + 1 == data["count"]
    assert memory["peak"] == timeline.peak and memory["saved"] == timeline.saved_total
    freed, grads, held, dot_grad = dict(memory["freed"]), dict(memory["grads"]), memory["saved"], 0
    for step in timeline.steps:  # what the browser sums up
        held -= freed.get(step.index, 0)
        dot_grad = grads.get(step.index, dot_grad)
        assert held == step.saved
        assert held + memory["flight"][step.index] + dot_grad == step.total
    assert "memory" not in replay_data(rec) and "memory" not in data["steps"][0]
    assert format_bytes(memory["peak"]).endswith("B")
