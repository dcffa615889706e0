"""A graph fresh from ``trace()`` builds its ``TensorRecord`` objects on first use of
``graph.tensors``; a drawing without values reads the tensor rows instead. The records built
late are the records the long way (``_Walker._record``) makes at trace time, whatever
happened to the tensors in between, and a drawing from the rows is the drawing from the
records."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch

import gradviz
from gradviz.capture.trace import _named_tensors, _Walker
from gradviz.model.graph import TensorRecord
from gradviz.model.summarize import summarize
from tests.support.models import MODELS


def _fields(record: TensorRecord) -> dict[str, Any]:
    """Every field of a record (summaries as their dicts), and the tensor it keeps."""
    out = {f.name: getattr(record, f.name) for f in dataclasses.fields(TensorRecord)}
    for key in ("data", "grad"):
        out[key] = None if out[key] is None else out[key].to_dict()
    out["tensor"] = id(record.tensor)
    out["label"] = record.label
    return out


def _eager(roots: tuple[torch.Tensor, ...], names: dict[str, torch.Tensor]) -> list[Any]:
    """What the long way makes of every tensor of the walk, at trace time: roots first,
    then the leaves in visit order, then the other named tensors, once each."""
    walker = _Walker(roots, _named_tensors(None, names))
    walker.walk()
    order: list[tuple[torch.Tensor, bool]] = []
    seen: set[int] = set()
    for index, tensors in enumerate((roots, [leaf for leaf, _ in walker.leaves], names.values())):
        for tensor in tensors:
            if id(tensor) not in seen:
                seen.add(id(tensor))
                order.append((tensor, index == 0))
    return [walker._record(f"t{i}", tensor, is_root) for i, (tensor, is_root) in enumerate(order)]


def _cases() -> list[tuple[str, tuple[torch.Tensor, ...], dict[str, torch.Tensor]]]:
    cases = []
    for name, build in MODELS.items():
        loss, names = build()
        cases.append((name, (loss,), names))
        cases.append((name + " unnamed", (loss,), {}))
    x = torch.randn(3, requires_grad=True)
    w = torch.randn(3, requires_grad=True)
    w.grad = torch.ones(3)
    mid = x * w
    cases.append(("roots, a leaf root, a branch", (mid.sum(), x), {"mid": mid, "w": w}))
    return cases


@pytest.mark.parametrize("case", _cases(), ids=lambda case: case[0])
def test_records_built_on_first_use_equal_the_eager_ones(
    case: tuple[str, tuple[torch.Tensor, ...], dict[str, torch.Tensor]],
) -> None:
    _, roots, names = case
    graph = gradviz.trace(*roots, names=names)
    rows = graph.tensor_rows()
    assert rows is not None  # nothing built yet
    lazy = graph.tensors
    assert graph.tensor_rows() is None and graph.tensors is lazy  # built once
    eager = _eager(roots, names)
    assert [_fields(r) for r in lazy] == [_fields(r) for r in eager]
    fields = [(r.id, r.name, r.role, r.shape, r.dtype, r.node_id, r.is_root) for r in lazy]
    assert fields == [(*row[:3], tuple(row[3]), *row[4:]) for row in rows]


OPTIONS: list[dict[str, Any]] = [
    {"values": False},
    {"values": False, "legend": False, "direction": "LR"},
    {"values": False, "shapes": False, "theme": "dark"},
    {"shapes": False},
    {"values": False, "prefix": "p-1"},
]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_a_drawing_from_tensor_rows_is_the_drawing_from_records(options: dict[str, Any]) -> None:
    for name, roots, names in _cases():
        fresh = gradviz.trace(*roots, names=names)
        from_rows = fresh.to_dot(**options)
        assert fresh.tensor_rows() is not None, name  # the drawing built no record
        built = gradviz.trace(*roots, names=names)
        _ = built.tensors
        assert built.tensor_rows() is None
        assert built.to_dot(**options) == from_rows, name
        assert built.prefix == fresh.prefix


def test_records_built_late_say_what_the_tensors_were_at_trace_time() -> None:
    w = torch.nn.Parameter(torch.randn(4, 3))
    b = torch.nn.Parameter(torch.randn(4))
    b.grad = torch.full((4,), 2.0)
    before_b_grad = summarize(b.grad)
    loss = torch.nn.functional.linear(torch.randn(2, 3), w, b).square().sum()
    graph = gradviz.trace(loss, names={"w": w, "b": b})
    w_grad_was_none = w.grad is None
    loss.backward()  # accumulates into b.grad in place; w.grad appears
    w.data = torch.zeros(5, dtype=torch.float64)  # shape, dtype: changed without a version
    b.requires_grad_(False)
    records = {r.name: r for r in graph.tensors}  # built only now
    assert w_grad_was_none and records["w"].grad is None
    assert records["w"].shape == (4, 3) and records["w"].dtype == "float32"
    assert records["w"].requires_grad and records["w"].role is gradviz.Role.LEAF
    assert records["b"].requires_grad and records["b"].node_id is not None
    grad = records["b"].grad
    assert grad is not None and not grad.available  # accumulated into since the trace
    assert before_b_grad.available


def test_a_leaf_changed_before_the_trace_takes_the_long_way() -> None:
    x = torch.randn(3, requires_grad=True)
    y = (x * 2).sum()
    x.requires_grad_(False)  # its AccumulateGrad stays on the graph
    with torch.inference_mode():
        z = torch.ones(3, requires_grad=True)  # a leaf without a version counter
    root = y + (z + 1).sum()
    graph = gradviz.trace(root, names={"x": x, "z": z})
    assert graph.to_dot(values=False) == gradviz.trace(root, names={"x": x, "z": z}).to_dot(
        values=False
    )
    eager = _eager((root,), {"x": x, "z": z})
    assert [_fields(r) for r in graph.tensors] == [_fields(r) for r in eager]
    records = {r.name: r for r in graph.tensors}
    assert records["x"].role is gradviz.Role.CONSTANT and records["x"].node_id is None
    assert records["z"].version == 0 and records["z"].role is gradviz.Role.LEAF


def test_records_appended_after_the_trace_stay() -> None:
    x = torch.randn(3, requires_grad=True)
    graph = gradviz.trace((x * 2).sum(), names={"x": x})
    extra = dataclasses.replace(graph.tensors[0], id="t9", name="extra")
    graph.tensors.append(extra)
    assert graph.tensors[-1] is extra and graph.tensor_rows() is None
    assert 't9 [id="' in graph.to_dot(values=False, view="combined")


@pytest.mark.parametrize("bad", ["Node", "EDGE", "Legend", "sub graph"])
def test_the_check_of_all_ids_at_once_refuses_a_keyword_in_any_case(bad: str) -> None:
    from gradviz.errors import InvalidInput
    from gradviz.model.graph import Edge, Graph, Node
    from gradviz.render.dot import check_ids

    graph = Graph(
        [Node("n0", "X", "X", 1), Node(bad, "Y", "Y", 0)],
        [Edge("n0", 0, bad, 0)],
        ["n0"],
        [],
    )
    with pytest.raises(InvalidInput, match="does not draw"):
        check_ids(graph)
