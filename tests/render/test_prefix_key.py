"""The SVG id prefix hashes every column of the structure: a graph that differs from
another in any one field of a node, an edge or a tensor record gets another prefix, and
the same structure the same one, however it was made (walk, objects, JSON)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import torch

import gradviz
from gradviz.model.graph import Graph


def _data() -> dict[str, Any]:
    a = torch.ones(2, requires_grad=True)
    b = torch.ones(2, requires_grad=True)
    return gradviz.trace((a * b + a).sum(), names={"a": a, "b": b}).to_dict()


def _swap_types(data: dict[str, Any]) -> None:
    data["nodes"][1]["type_name"], data["nodes"][2]["type_name"] = (
        data["nodes"][2]["type_name"],
        data["nodes"][1]["type_name"],
    )


def _rename_node(data: dict[str, Any]) -> None:
    old = data["nodes"][2]["id"]
    data["nodes"][2]["id"] = "n99"
    for edge in data["edges"]:
        edge["src"] = "n99" if edge["src"] == old else edge["src"]
        edge["dst"] = "n99" if edge["dst"] == old else edge["dst"]


def _edge_field(field: str, value: object) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["edges"][-1][field] = value

    return change


def _tensor_name(data: dict[str, Any]) -> None:
    data["tensors"][-1]["name"] = "renamed"


def _tensor_node(data: dict[str, Any]) -> None:
    first, second = data["tensors"][-2], data["tensors"][-1]
    first["node_id"], second["node_id"] = second["node_id"], first["node_id"]


CHANGES = {
    "node types": _swap_types,
    "a node id": _rename_node,
    "an edge's slot": _edge_field("slot", 7),
    "an edge's slot above 255": _edge_field("slot", 300),
    "an edge's output number": _edge_field("input_nr", 1),
    "an edge's end": _edge_field("dst", "n0"),
    "an edge to no node": _edge_field("dst", None),
    "a tensor's name": _tensor_name,
    "a tensor's node": _tensor_node,
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_change_in_any_column_changes_the_prefix(
    change: Callable[[dict[str, Any]], None],
) -> None:
    data = _data()
    changed = copy.deepcopy(data)
    change(changed)
    assert Graph.from_dict(changed).prefix != Graph.from_dict(data).prefix


def test_the_same_structure_keeps_its_prefix_however_made() -> None:
    x = torch.randn(3, requires_grad=True)
    fresh = gradviz.trace((x.exp() * 2).sum())
    again = gradviz.trace((torch.randn(3, requires_grad=True).exp() * 3).sum())
    built = gradviz.trace((x.exp() * 2).sum())
    assert built.nodes and built.tensors  # objects built: the key is read from them
    loaded = Graph.from_dict(built.to_dict())
    assert fresh.prefix == again.prefix == built.prefix == loaded.prefix
    assert fresh.prefix == fresh.structure_prefix()
