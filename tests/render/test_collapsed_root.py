"""A model that computes its loss inside ``forward`` (as Hugging Face models do): in the
collapsed (module box) views the loss's node sits inside a box, and the root's link goes
to that box; no edge names a node the DOT never declares (Graphviz would draw it as a bare
stray node labelled with its id)."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

import gradviz
from gradviz.model.graph import Graph
from gradviz.render.watched import collapsed_members
from gradviz.replay.modules import module_depths, view_options

_DECLARED = re.compile(r"^\s*(\w+) \[", re.MULTILINE)
_EDGE = re.compile(r"^\s*(\w+) -> (\w+) \[", re.MULTILINE)


class _ReturnsLoss(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 3))

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = self.body(x)
        return nn.functional.cross_entropy(logits, labels)


def _watched() -> Graph:
    torch.manual_seed(0)
    model = _ReturnsLoss()
    x, labels = torch.randn(2, 4), torch.tensor([0, 2])
    with gradviz.watch(model) as w:
        loss = model(x, labels)
    return w.trace(loss)


def _undeclared(dot: str) -> set[str]:
    declared = set(_DECLARED.findall(dot))
    ends = {name for pair in _EDGE.findall(dot) for name in pair}
    return ends - declared


def test_root_link_goes_to_the_box_holding_the_loss_node() -> None:
    graph = _watched()
    root = next(t for t in graph.tensors if t.is_root)
    assert root.node_id is not None
    boxes = {
        depth: [m for m, nodes in collapsed_members(graph, depth).items() if root.node_id in nodes]
        for depth in (0, 1)
    }
    assert boxes[0] and not boxes[1]  # in the model's box; at depth 1 drawn in its cluster
    for depth, holding in boxes.items():
        dot = graph.to_dot(modules=True, collapse_depth=depth)
        assert _undeclared(dot) == set(), depth
        target = f"bm{holding[0]}" if holding else root.node_id
        assert re.search(rf"^\s*{root.id} -> {target} \[", dot, re.MULTILINE), depth


def test_every_collapsed_view_of_the_recording_declares_its_edge_ends() -> None:
    torch.manual_seed(0)
    model = _ReturnsLoss()
    with gradviz.watch(model) as w:
        loss = model(torch.randn(2, 4), torch.tensor([1, 0]))
    recording = w.record(loss)
    views = [f"collapsed-{d}" for d in module_depths(recording)] or ["collapsed-0"]
    for view in views:
        options = view_options(view)
        dot = recording.graph.to_dot(**options)
        assert _undeclared(dot) == set(), view


@pytest.mark.needs_dot
def test_the_svg_has_no_stray_node() -> None:
    graph = _watched()
    root = next(t for t in graph.tensors if t.is_root)
    svg = graph.svg(modules=True, collapse_depth=0)
    titles = set(re.findall(r"<title>([^<]*)</title>", svg))
    assert root.node_id not in titles  # drawn only as part of its box
    assert f">{root.node_id}<" not in svg.replace(f"<title>{root.node_id}</title>", "")
