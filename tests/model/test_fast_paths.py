"""The hot loops' shortcuts build exactly what the plain constructors and checks build."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import gradviz
from gradviz.capture.ondemand import LiveNode
from gradviz.errors import InvalidInput
from gradviz.model.graph import Edge, Graph, Node
from gradviz.render.dot import check_ids


def test_edge_made_is_the_edge_the_constructor_makes() -> None:
    made = Edge.made("n1", 2, None, 0)
    assert made == Edge("n1", 2, None, 0) and type(made) is Edge
    assert made.key == "n1.2" and made.to_dict() == Edge("n1", 2, None, 0).to_dict()
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.src = "n2"  # type: ignore[misc]


def test_live_node_made_has_every_field_of_a_node() -> None:
    x = torch.randn(2, requires_grad=True)
    y = x.exp()
    assert y.grad_fn is not None
    node = LiveNode.made(
        lambda n: ((), False),
        id="n0",
        type_name="ExpBackward0",
        name="ExpBackward0",
        sequence_nr=3,
        torch_node=y.grad_fn,
        leaf_tensor=None,
    )
    plain = Node("n0", "ExpBackward0", "ExpBackward0", 3, torch_node=y.grad_fn)
    assert node.to_dict() == plain.to_dict()
    assert repr(node).replace("LiveNode", "Node") == repr(plain)


@pytest.mark.parametrize("bad", ["node", "a b", "x->y", 'n"0', "", "é"])
def test_check_ids_still_refuses_one_bad_id_among_many(bad: str) -> None:
    graph = gradviz.trace((torch.randn(3, requires_grad=True) * 2).sum())
    check_ids(graph)
    nodes = [Node(n.id, n.type_name, n.name, n.sequence_nr) for n in graph.nodes]
    nodes[-1] = Node(bad, "X", "X", 0)
    edges = [e for e in graph.edges if e.dst != graph.nodes[-1].id]
    with pytest.raises(InvalidInput, match="does not draw"):
        check_ids(Graph(nodes, edges, list(graph.root_ids), []))


def test_multi_output_nodes_in_one_pass_agree_with_the_graph() -> None:
    from gradviz.render.dot import _multi_output_nodes

    x = torch.randn(4, 3, requires_grad=True)
    a, b, c = x.unbind(1)
    graph = gradviz.trace((a * b + c.exp()).sum(), x.split(2)[1].sum())
    multi = _multi_output_nodes(graph)
    assert multi == {n.id for n in graph.nodes if graph.is_multi_output(n.id)}
    assert multi  # unbind and split have several outputs
    hand = Graph(
        [Node("n0", "X", "X", 1), Node("n1", "Y", "Y", 0)],
        [Edge("n0", 0, "n1", -1), Edge("n0", 1, "n1", 0)],
        ["n0"],
        [],
    )
    assert _multi_output_nodes(hand) == {"n1"} and hand.is_multi_output("n1")


def test_traced_tensor_records_are_the_records_a_plain_constructor_makes() -> None:
    from gradviz.capture.ondemand import LiveTensorRecord
    from gradviz.model.graph import TensorRecord
    from gradviz.model.summarize import summarize

    w = torch.randn(3, 2, requires_grad=True)
    w.grad = torch.ones(3, 2)
    graph = gradviz.trace((w * 2).sum(), names={"w": w})
    record = graph.tensor("w")
    assert isinstance(record, LiveTensorRecord)
    fields = {f.name: getattr(record, f.name) for f in dataclasses.fields(TensorRecord)}
    plain = TensorRecord(**fields)
    assert record.to_dict() == plain.to_dict()
    assert record.data == summarize(w) and record.grad == summarize(w.grad)
