"""Memory figures that match what stays alive: an input batch the user still holds belongs
to a leaf (it outlives the graph, as a weight does), a temporary made from it does not; a
sparse gradient counts the bytes it stores (indices and values), not its dense size.

Expected bytes come from PyTorch's own storages (``untyped_storage().nbytes()``).
"""

from __future__ import annotations

import pytest
import torch

import gradviz
from gradviz.analysis.memory import _grad_bytes
from gradviz.model.recording import as_summary
from gradviz.model.values import Summary
from tests.support.saved import saved_storages


def _layer() -> torch.nn.Linear:
    torch.manual_seed(0)
    return torch.nn.Linear(256, 8)


def _batch() -> torch.Tensor:
    return torch.randn(1024, 256)  # 1 MiB, no requires_grad: an input


@pytest.mark.parametrize("how", ["record", "trace"])
def test_an_input_batch_the_user_holds_is_owned_not_freed(how: str) -> None:
    layer, x = _layer(), _batch()
    loss = layer(x).relu().sum()
    saved = saved_storages(loss.grad_fn)
    assert saved[x.untyped_storage().data_ptr()] == x.untyped_storage().nbytes()
    recording = gradviz.record(loss) if how == "record" else gradviz.trace(loss)
    storages = recording.graph.saved_storages if how == "record" else recording.saved_storages
    flags = {size: owned for entries in storages.values() for _, size, owned in entries}
    assert flags[x.untyped_storage().nbytes()] is True
    if how == "record":
        memory = recording.memory()
        assert memory.saved_total == sum(saved.values())
        assert memory.leaf_owned == x.untyped_storage().nbytes()


def test_a_view_of_a_held_batch_is_owned_too() -> None:
    layer, x = _layer(), _batch()
    loss = layer(x[:512]).relu().sum()
    memory = gradviz.record(loss).memory()
    assert memory.leaf_owned == x.untyped_storage().nbytes()


def test_under_watch_the_held_batch_is_owned() -> None:
    layer, x = _layer(), _batch()
    with gradviz.watch(layer) as w:
        loss = layer(x).relu().sum()
    assert w.record(loss).memory().leaf_owned == x.untyped_storage().nbytes()


@pytest.mark.parametrize("make", [lambda x: x * 2, lambda x: (x * 2)[:512]])
def test_a_temporary_made_in_the_forward_is_freed_with_the_graph(make: object) -> None:
    layer, x = _layer(), _batch()
    assert callable(make)
    loss = layer(make(x)).relu().sum()
    saved = saved_storages(loss.grad_fn)
    assert x.untyped_storage().data_ptr() not in saved  # the graph holds the temporary only
    memory = gradviz.record(loss).memory()
    assert memory.saved_total == sum(saved.values())
    assert memory.leaf_owned == 0
    assert memory.steps[-1].saved == 0


def _stored(tensor: torch.Tensor) -> int:
    """The bytes of the storages behind a sparse tensor's indices and values."""
    if tensor.layout == torch.sparse_coo:
        parts = [tensor._indices(), tensor._values()]
    elif tensor.layout in (torch.sparse_csr, torch.sparse_bsr):
        parts = [tensor.crow_indices(), tensor.col_indices(), tensor.values()]
    else:
        parts = [tensor.ccol_indices(), tensor.row_indices(), tensor.values()]
    return sum(part.untyped_storage().nbytes() for part in parts)


def test_a_sparse_grad_counts_what_it_stores() -> None:
    torch.manual_seed(0)
    table = torch.nn.Embedding(4096, 64, sparse=True)  # dense: 1 MiB
    rows = torch.tensor([3, 7])
    loss = table(rows).sum()
    memory = gradviz.record(loss).memory()
    grad = table.weight.grad
    assert grad is not None and grad.layout == torch.sparse_coo
    assert memory.steps[-1].grads == _stored(grad.coalesce()) < grad.numel()
    # the same through a summary (keep="summary", or a recording read back from JSON)
    summary = as_summary(grad)
    assert summary.nbytes == _stored(grad.coalesce())
    assert Summary.from_dict(summary.to_dict()) == summary
    assert gradviz.record(table(rows).sum(), keep="summary").memory().steps[-1].grads == (
        summary.nbytes
    )


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
@pytest.mark.parametrize(
    "layout", ["coo", "csr", "csc", "bsr", "bsc"], ids=lambda name: f"sparse_{name}"
)
def test_every_sparse_layout_counts_indices_and_values(layout: str) -> None:
    dense = torch.zeros(64, 64)
    dense[0, :2] = 1.0
    dense[10, 5] = 2.0
    value = {
        "coo": lambda: dense.to_sparse(),
        "csr": lambda: dense.to_sparse_csr(),
        "csc": lambda: dense.to_sparse_csc(),
        "bsr": lambda: dense.to_sparse_bsr((2, 2)),
        "bsc": lambda: dense.to_sparse_bsc((2, 2)),
    }[layout]()
    assert _grad_bytes(value) == _grad_bytes(as_summary(value)) == _stored(value)
    assert _grad_bytes(value) < dense.numel() * dense.element_size()
