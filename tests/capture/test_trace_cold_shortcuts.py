"""What a fresh ``trace()`` and its first drawing leave out to stay cheap when the caches are
cold, and that each shortcut holds only where it is sound."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import gradviz
from gradviz.errors import InvalidInput
from gradviz.model.graph import Edge, Graph, Node
from gradviz.render import dot_ids
from gradviz.render.views import to_dot
from tests.support.models import MODELS


def _refuse_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []

    def counted(ids: list[object]) -> bool:
        calls.append(len(ids))
        return original(ids)

    original = dot_ids._all_plain
    monkeypatch.setattr(dot_ids, "_all_plain", counted)
    return calls


def test_a_fresh_trace_is_drawn_without_checking_the_ids_its_walk_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _refuse_checks(monkeypatch)
    loss, names = MODELS["conv"]()
    graph = gradviz.trace(loss, names=names)
    assert graph.rows_have_plain_ids()
    dot = graph.to_dot(values=False)
    assert calls == []
    # the same text as once the objects exist and every id is checked
    graph.nodes  # noqa: B018  # builds the Node and Edge objects
    assert not graph.rows_have_plain_ids()
    assert graph.to_dot(values=False) == dot
    assert len(calls) == 1


def test_ids_are_checked_again_once_the_lists_can_be_changed() -> None:
    x = torch.randn(3, requires_grad=True)
    graph = gradviz.trace((x * 2).sum())
    graph.nodes.append(Node("a b", "X", "X", 0))
    with pytest.raises(InvalidInput, match="does not draw"):
        graph.to_dot()
    built = gradviz.trace((x * 2).sum())
    built.tensors[0] = dataclasses.replace(built.tensors[0], id='x" onclick="')
    assert not built.rows_have_plain_ids()
    with pytest.raises(InvalidInput, match="does not draw"):
        built.to_dot()


def test_rows_from_anyone_else_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _refuse_checks(monkeypatch)
    graph = Graph.from_columns(
        (["n0", "node"], ["X", "Y"]),
        (["n0"], [0], ["node"], [0]),
        lambda: ([Node("n0", "X", "X", 1), Node("node", "Y", "Y", 0)], [Edge("n0", 0, "node", 0)]),
        ["n0"],
        [],
        list,
    )
    assert not graph.rows_have_plain_ids()
    with pytest.raises(InvalidInput, match="does not draw"):
        to_dot(graph)
    assert calls


def test_a_graph_with_watch_data_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _refuse_checks(monkeypatch)
    x = torch.randn(3, requires_grad=True)
    with gradviz.watch() as watch:
        loss = (x.exp() * 2).sum()
    graph = watch.trace(loss, names={"x": x})
    assert not graph.rows_have_plain_ids()
    graph.to_dot(view="backward")
    assert calls


def test_a_walk_keeps_nodes_and_edges_as_columns_that_agree_with_the_objects() -> None:
    loss, names = MODELS["transformer"]()
    fresh = gradviz.trace(loss, names=names)
    columns = fresh.node_columns()
    assert columns is not None
    ids, type_names = columns
    srcs, slots, dsts, input_nrs = fresh.edge_columns()
    assert fresh.node_rows() == list(zip(ids, type_names, strict=True))
    assert fresh.edge_rows() == list(zip(srcs, slots, dsts, input_nrs, strict=True))
    built = gradviz.trace(loss, names=names)
    nodes, edges = built.nodes, built.edges
    assert built.node_columns() is None
    assert ids == [n.id for n in nodes] and type_names == [n.type_name for n in nodes]
    assert (srcs, slots, dsts, input_nrs) == built.edge_columns()
    assert [(e.src, e.slot, e.dst, e.input_nr) for e in edges] == built.edge_rows()
    # the same prefix whichever way the key is read, and after a round trip through JSON
    assert fresh.prefix == built.prefix == Graph.from_dict(built.to_dict()).prefix
    assert fresh.to_dot(values=False) == built.to_dot(values=False)


def test_node_ids_are_made_once_and_any_number_of_them_is_right() -> None:
    small = gradviz.trace((torch.randn(3, requires_grad=True) * 2).sum())
    again = gradviz.trace((torch.randn(3, requires_grad=True) * 3).sum())
    small_ids, again_ids = small.node_columns()[0], again.node_columns()[0]  # type: ignore[index]
    assert small_ids == again_ids == ["n0", "n1", "n2"]
    assert all(a is b for a, b in zip(small_ids, again_ids, strict=True))  # shared, not remade
    x = torch.randn(2, requires_grad=True)
    y = x
    for _ in range(6000):  # more nodes than any walk before: ids made as found
        y = y * 1.0
    chain = gradviz.trace(y.sum())
    ids = chain.node_columns()[0]  # type: ignore[index]
    assert ids == [f"n{index}" for index in range(len(ids))] and len(ids) == 6002
    assert set(chain.edge_columns()[0]) <= set(ids)
    dot = chain.to_dot(values=False)
    chain.nodes  # noqa: B018
    assert chain.to_dot(values=False) == dot


def test_a_leaf_off_the_cpu_keeps_its_device_and_a_changed_leaf_takes_the_long_way() -> None:
    from tests.capture.test_trace_tensor_rows import _eager, _fields

    x = torch.randn(3, device="meta", requires_grad=True)
    w = torch.randn(3, requires_grad=True)
    loss = (x * 2).sum()
    other = (w * 3).sum()
    names = {"x": x, "w": w}
    expected = [_fields(record) for record in _eager((loss,), names)]
    graph = gradviz.trace(loss, names=names)
    assert [_fields(record) for record in graph.tensors] == expected
    assert graph.tensor("x").device == "meta"
    w.requires_grad_(False)  # after the forward: w is no plain leaf any more
    expected = [_fields(record) for record in _eager((other,), names)]
    graph = gradviz.trace(other, names=names)
    assert [_fields(record) for record in graph.tensors] == expected
    assert graph.tensor("w").role is gradviz.Role.CONSTANT


def test_options_from_plain_keywords_are_made_once_and_only_when_equal() -> None:
    from gradviz.render import theme as themes
    from gradviz.render.options import RenderOptions

    made = RenderOptions.make(values=False, direction="left-right")
    assert RenderOptions.make(values=False, direction="left-right") is made
    assert made.direction == "LR" and made.values is False
    assert RenderOptions.make(fold=True).fold is True
    assert RenderOptions.make(fold=1).fold == 1  # True == 1, but not the same option
    assert RenderOptions.make(fold=1).fold is not True
    assert RenderOptions.make(fold=True).fold is True
    labels = {"n0.0": "1"}
    assert RenderOptions.make(edge_labels=labels) is not RenderOptions.make(edge_labels=labels)
    dark = RenderOptions.make(theme="dark")
    replaced = dataclasses.replace(themes.THEMES["dark"], background="black")
    old = themes.THEMES["dark"]
    themes.THEMES["dark"] = replaced
    try:
        assert RenderOptions.make(theme="dark").theme is replaced  # the name's theme now
    finally:
        themes.THEMES["dark"] = old
    assert RenderOptions.make(theme="dark").theme is old is dark.theme
    with pytest.raises(ValueError, match="direction"):
        RenderOptions.make(direction="sideways")
    with pytest.raises(ValueError, match="direction"):  # a failure is never kept
        RenderOptions.make(direction="sideways")

    class Wider(RenderOptions):
        pass

    assert type(Wider.make(values=False, direction="left-right")) is Wider  # never the base's
