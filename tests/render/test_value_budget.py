"""The default drawing's value budget: a traced graph's first drawing reads at most
``VALUE_BUDGET`` tensor values, smallest tensors first, and says so on the boxes it left
unread; ``values=True`` reads every tensor, ``values=False`` none."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import gradviz
from gradviz.errors import InvalidArgument
from gradviz.model.graph import TensorRecord
from gradviz.model.values import Role
from gradviz.render.value_budget import UNSUMMARIZED_TIP, VALUE_BUDGET, over_budget

WIDE = VALUE_BUDGET // 1000 + 1  # a 1000 x WIDE weight is just over the budget


def wide_model() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(WIDE, 1000), nn.Tanh(), nn.Linear(1000, 1))
    return model, model(torch.randn(2, WIDE)).square().mean()


def box(dot: str, name: str) -> str:
    (line,) = [line for line in dot.splitlines() if f"<B>{name}</B>" in line]
    return line


class Waiting(TensorRecord):
    """A record whose summary would read ``count`` values."""

    def __init__(self, record_id: str, count: int) -> None:
        super().__init__(
            id=record_id, name=record_id, shape=(count,), dtype="float32", device="cpu",
            requires_grad=True, is_leaf=True, version=0, grad_fn=None, data=None, grad=None,
            role=Role.LEAF, node_id=None, output_nr=None,
        )  # fmt: skip
        self.count = count

    def pending_values(self) -> int:
        return self.count


def test_the_smallest_are_read_first_until_the_budget_is_spent() -> None:
    records = [Waiting("a", 600), Waiting("b", 300), Waiting("c", 200), Waiting("d", 0)]
    assert over_budget(records, budget=1100) == frozenset()
    assert over_budget(records, budget=550) == {"a"}  # b and c fit, a does not
    assert over_budget(records, budget=250) == {"a", "b"}
    assert over_budget(records, budget=0) == {"a", "b", "c"}


def test_a_default_drawing_leaves_the_big_weight_unread_and_says_so() -> None:
    model, loss = wide_model()
    graph = gradviz.trace(loss, params=model)
    dot = graph.to_dot()
    weight = box(dot, "0.weight")
    assert f"1000×{WIDE} float32 …" in weight and "min " not in weight
    assert "values not summarized" in weight and "values=True" in UNSUMMARIZED_TIP
    assert "min " in box(dot, "0.bias") and "min " in box(dot, "2.weight")
    (record,) = [t for t in graph.tensors if t.name == "0.weight"]
    assert record.pending_values() == 1000 * WIDE  # the drawing did not summarize it


def test_values_true_reads_every_tensor_and_false_none() -> None:
    model, loss = wide_model()
    every = gradviz.trace(loss, params=model).to_dot(values=True)
    weight = model[0].weight.detach()
    assert "min " in box(every, "0.weight") and "…" not in box(every, "0.weight")
    assert f"min {float(weight.min()):.4g}" in box(every, "0.weight")
    none = gradviz.trace(loss, params=model).to_dot(values=False)
    assert not any("min " in line for line in none.splitlines())
    assert "…" not in box(none, "0.weight")


def test_a_recordings_drawing_follows_the_same_rule() -> None:
    model, loss = wide_model()
    graph = gradviz.record(loss, params=model).graph
    assert "…" in box(graph.to_dot(), "0.weight")
    assert "min " in box(graph.to_dot(values=True), "0.weight")


def test_values_takes_true_false_or_auto() -> None:
    _, loss = wide_model()
    with pytest.raises(InvalidArgument, match="values= takes True"):
        gradviz.trace(loss).to_dot(values="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="values= takes True"):
        gradviz.trace(loss).to_dot(values=1)  # type: ignore[arg-type]
