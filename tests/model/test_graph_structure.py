"""``Graph.structure``: a traced graph as plain data without values, for keeping the shape
of a graph (the film strip's layout) without holding torch objects or summarizing values."""

from __future__ import annotations

import torch
from torch import nn

import gradviz


def traced() -> gradviz.Graph:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    loss = model(torch.randn(5, 3)).pow(2).mean()
    return gradviz.trace(loss, params=model)


def test_structure_is_the_same_graph_without_values_or_torch_objects() -> None:
    graph = traced()
    plain = graph.structure()
    full = graph.to_dict()
    for tensor in full["tensors"]:
        tensor["data"] = tensor["grad"] = None
    for node in full["nodes"]:
        node["saved"], node["saved_freed"] = [], False
    assert plain.to_dict() == full
    assert all(n.torch_node is None and n.leaf_tensor is None for n in plain.nodes)
    assert all(t.tensor is None for t in plain.tensors)


def test_structure_is_a_graph_of_the_same_kind_that_draws_shapes_only() -> None:
    graph = traced()
    plain = graph.structure()
    assert type(plain) is type(graph)
    assert "4×3 float32" in plain.to_dot(values=False)  # a weight's shape
    drawn = plain.to_dot()
    assert "0.weight" in drawn
    assert not any(word in drawn for word in ("min ", "max ", "mean "))
    assert "mean " in graph.to_dot()  # the traced graph itself draws values
