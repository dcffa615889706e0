"""trace() reads no node's saved values during the walk; they are read on first use."""

from __future__ import annotations

import torch

import gradviz
from gradviz.capture import _autograd


def _counting(monkeypatch) -> list[object]:  # type: ignore[no-untyped-def]
    calls: list[object] = []
    real = _autograd.read_saved  # what the reader calls per node

    def counted(node: object) -> tuple[list[tuple[str, object]], bool, bool, bool]:
        calls.append(node)
        return real(node)

    monkeypatch.setattr(_autograd, "read_saved", counted)
    return calls


def test_a_structure_only_drawing_reads_no_saved_value(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    calls = _counting(monkeypatch)
    a = torch.randn(3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    graph = gradviz.trace((a * b).sin().sum())
    dot = graph.to_dot(values=False)
    assert calls == []
    assert "MulBackward0" in dot
    # asked for, they are read (once per node) and are the node's real saved values
    saved = {s.name: s.summary for s in graph.nodes[2].saved}
    assert graph.nodes[2].type_name == "MulBackward0"
    assert saved["self"] is not None and saved["self"].values == tuple(a.tolist())
    assert saved["other"] is not None and saved["other"].values == tuple(b.tolist())
    _ = graph.nodes[2].saved_freed
    assert len(calls) == 1


def test_memory_storages_are_read_on_demand_and_match_an_eager_read() -> None:
    w = torch.randn(8, 8, requires_grad=True)
    x = torch.randn(4, 8, requires_grad=True)
    lazy = gradviz.trace((x @ w).relu().sum())
    eager = gradviz.trace((x @ w).relu().sum())
    for node in eager.nodes:
        _ = node.saved  # read every node first, in the walk's order
    assert lazy.saved_storages.keys() == eager.saved_storages.keys()
    sizes = {k: [(n, b) for _, n, b in v] for k, v in lazy.saved_storages.items()}
    assert sizes == {k: [(n, b) for _, n, b in v] for k, v in eager.saved_storages.items()}
    assert any(leaf for entries in lazy.saved_storages.values() for _, _, leaf in entries)


def test_record_reads_saved_values_before_its_backward_frees_them() -> None:
    a = torch.tensor([2.0, 3.0], requires_grad=True)
    b = torch.tensor([4.0, 5.0], requires_grad=True)
    recording = gradviz.record((a * b).sum())
    mul = next(n for n in recording.graph.nodes if n.type_name == "MulBackward0")
    assert not mul.saved_freed
    saved = {s.name: s.summary for s in mul.saved}
    assert saved["self"] is not None and saved["self"].values == tuple(a.tolist())


def test_saved_values_asked_for_after_a_plain_backward_read_as_freed() -> None:
    a = torch.tensor(2.0, requires_grad=True)
    c = a * a
    graph = gradviz.trace(c)
    c.backward()
    assert graph.nodes[0].saved_freed and graph.nodes[0].saved == ()
