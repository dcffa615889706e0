"""A graph fresh from ``trace()`` holds its nodes and edges as plain rows and builds the
``Node``/``Edge`` objects on first use: whichever a drawing reads, it is the same drawing."""

from __future__ import annotations

import pytest
import torch

import gradviz
from gradviz.teaching.lessons import LESSONS
from tests.support.models import MODELS

OPTIONS: list[dict[str, object]] = [
    {},
    {"values": False},
    {"view": "combined", "values": False},
    {"legend": False, "direction": "LR", "shapes": False},
    {"theme": "dark", "prefix": "p-1"},
]


def _graphs() -> list[tuple[str, tuple[torch.Tensor, ...], dict[str, torch.Tensor]]]:
    cases = []
    for item in LESSONS:
        built = item.build()
        cases.append((item.slug, tuple(built.roots), dict(built.names)))
    for name, build in MODELS.items():
        loss, names = build()
        cases.append((name, (loss,), names))
    x = torch.randn(3, requires_grad=True)
    a, b, c = x.unbind(0)  # a multi-output node, and a conv without bias (off-graph input)
    conv = torch.nn.Conv2d(1, 2, 3, bias=False)
    image = torch.randn(1, 1, 5, 5)
    root = a * c + b + conv(image * x.sum()).sum()
    cases.append(("unbind and conv", (root,), {"x": x}))
    return cases


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_rows_and_built_objects_draw_the_same(options: dict[str, object]) -> None:
    for name, roots, names in _graphs():
        fresh = gradviz.trace(*roots, names=names)
        assert fresh.node_rows() is not None, name  # nothing built yet
        from_rows = fresh.to_dot(**options)  # type: ignore[arg-type]
        built = gradviz.trace(*roots, names=names)
        nodes, edges = built.nodes, built.edges  # builds the objects
        assert built.node_rows() is None
        assert [(n.id, n.type_name) for n in nodes] == fresh.node_rows(), name
        assert [(e.src, e.slot, e.dst, e.input_nr) for e in edges] == fresh.edge_rows()
        assert built.to_dot(**options) == from_rows, name  # type: ignore[arg-type]
        assert built.prefix == fresh.prefix


def test_built_nodes_hold_what_the_walk_saw() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)
    loss = (x * w).sum()
    graph = gradviz.trace(loss, names={"x": x, "w": w})
    nodes = graph.nodes
    assert [n.type_name for n in nodes] == [
        "SumBackward0",
        "MulBackward0",
        "AccumulateGrad",
        "AccumulateGrad",
    ]
    assert [n.id for n in nodes] == ["n0", "n1", "n2", "n3"]
    assert nodes[0].torch_node is loss.grad_fn
    assert nodes[1].torch_node is loss.grad_fn.next_functions[0][0]
    assert nodes[0].sequence_nr == loss.grad_fn._sequence_nr()
    assert nodes[0].name == loss.grad_fn.name()
    assert nodes[2].leaf_tensor is x and nodes[3].leaf_tensor is w
    assert graph.nodes is nodes  # built once: the objects are the graph's from then on
    assert graph.tensor("x").node_id == "n2" and graph.tensor("w").node_id == "n3"
    assert graph.node("n1").type_name == "MulBackward0"
    assert [e.key for e in graph.in_edges("n2")] == ["n1.0"]


def test_a_changed_node_is_drawn_as_changed() -> None:
    x = torch.tensor(2.0, requires_grad=True)
    graph = gradviz.trace(x * 3)
    graph.nodes[0].type_name = "Renamed<Node>"
    dot = graph.to_dot()
    assert "Renamed&lt;Node&gt;" in dot and "MulBackward0" not in dot
