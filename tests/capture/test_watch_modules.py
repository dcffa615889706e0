"""Module attribution: every backward node belongs to the innermost nn.Module that made it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import gradviz


def test_mlp_nodes_belong_to_their_layers() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x = torch.randn(3, 4)
    with gradviz.watch(model) as w:
        out = model(x)
    graph = w.trace(out)
    forward = graph.forward
    assert forward is not None
    assert [m.label for m in forward.modules] == [
        "Sequential",
        "0 (Linear)",
        "1 (ReLU)",
        "2 (Linear)",
    ]
    owner = {n.id: forward.module_for_node(n.id) for n in graph.nodes}
    assert all(scope is not None for scope in owner.values()), "every node assigned"
    for node in graph.nodes:
        scope = owner[node.id]
        assert scope is not None
        if node.type_name == "ReluBackward0":
            assert scope.path == "1"
        if node.is_accumulate_grad:
            record = next(t for t in graph.tensors if t.node_id == node.id)
            assert record.name is not None and f".{scope.path}." in f".{record.name}"
    # parameters are named by their path as torch names it, under the model's variable
    # (a bare "2.bias" reads like a number)
    assert {t.name for t in graph.tensors if t.role is gradviz.Role.LEAF} == {
        f"model.{name}" for name, _ in model.named_parameters()
    }


def test_transformer_layer_every_node_assigned() -> None:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(
        d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True
    )
    src = torch.randn(2, 3, 8)
    expected = layer(src)
    with gradviz.watch() as w:  # automatic detection, no model given
        out = layer(src)
    assert torch.equal(expected, out)
    graph = w.trace(out)
    forward = graph.forward
    assert forward is not None
    unassigned = [n.type_name for n in graph.nodes if n.id not in forward.node_modules]
    assert unassigned == []
    paths = {forward.modules[i].path for i in forward.node_modules.values()}
    assert {"self_attn", "linear1", "linear2", "norm1", "norm2"} <= paths
    # every sequence number sits inside the range of the module it was given
    for node in graph.nodes:
        scope = forward.module_for_node(node.id)
        assert scope is not None
        if not node.is_accumulate_grad:
            assert scope.seq_start <= node.sequence_nr < scope.seq_end


@pytest.mark.needs_dot
def test_clusters_and_collapsing_render() -> None:
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    x = torch.randn(4, 2)
    with gradviz.watch(model) as w:
        out = model(x)
    graph = w.trace(out)
    clustered = graph.to_dot(view="combined", modules=True)
    assert "subgraph cluster_b_m1" in clustered and "subgraph cluster_f_m1" in clustered
    collapsed = graph.to_dot(view="backward", collapse_depth=1)
    assert "AddmmBackward0" not in collapsed and "bm1" in collapsed and "bm3" in collapsed
    graph.svg(view="forward", modules=True, collapse_depth=1)
    graph.svg(view="backward", modules=True)
