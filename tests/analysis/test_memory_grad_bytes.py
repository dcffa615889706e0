"""A gradient's bytes in the memory timeline (``analysis.memory._grad_bytes``) read from the
tensor itself equal what its summary says (numel times the dtype's size; sparse tensors:
tests/analysis/test_memory_truth.py)."""

from __future__ import annotations

import torch

from gradviz.analysis.memory import _grad_bytes
from gradviz.model.recording import as_summary


def test_grad_bytes_of_a_tensor_equal_its_summarys() -> None:
    values = [
        torch.randn(3, 5),
        torch.randn(64, 128, dtype=torch.float64).t(),
        torch.ones(7, dtype=torch.float16),
        torch.tensor(2.0),
        torch.zeros(4, dtype=torch.int64),
        torch.empty(6, 2, device="meta"),
    ]
    for value in values:
        summary = as_summary(value)
        assert _grad_bytes(value) == _grad_bytes(summary) == summary.numel * value.element_size()
    assert _grad_bytes(None) == 0
