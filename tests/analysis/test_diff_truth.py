"""``diff()`` says two recordings differ exactly when PyTorch's gradients do: full values
under ``keep="all"``, NaN equal to NaN in the same place, and printed numbers that show
the difference they report."""

from __future__ import annotations

import re
from typing import Literal

import pytest
import torch

import gradviz

Keep = Literal["all", "summary"]


def weighted(x: torch.Tensor, keep: Keep) -> tuple[gradviz.Recording, torch.Tensor]:
    """``(w * x).sum()``: the gradient ``w`` receives is ``x`` itself."""
    w = torch.ones_like(x, requires_grad=True)
    loss = (w * x).sum()
    return gradviz.record(loss, names={"w": w}, keep=keep), w


def test_swapped_values_differ_under_keep_all() -> None:
    x = torch.arange(100, dtype=torch.float32)
    y = x.clone()
    y[[50, 60]] = y[[60, 50]]  # same min, max, mean, norm and leading values
    a, wa = weighted(x, "all")
    b, wb = weighted(y, "all")
    assert wa.grad is not None and wb.grad is not None
    assert not torch.equal(wa.grad, wb.grad)  # PyTorch's own gradients differ
    d = a.diff(b)
    assert not d.identical
    assert "The two recordings match" not in d.summary_text()
    changed = {c.type_name for c in d.differing}
    assert "AccumulateGrad" in changed


@pytest.mark.parametrize("keep", ["all", "summary"])
def test_identical_runs_with_nan_match(keep: Keep) -> None:
    x = torch.tensor([1.0, float("nan"), 3.0, float("-inf")] + [0.5] * 30)
    a, wa = weighted(x, keep)
    b, wb = weighted(x.clone(), keep)
    assert wa.grad is not None and wb.grad is not None
    assert torch.equal(wa.grad.isnan(), wb.grad.isnan())
    d = a.diff(b)
    assert d.identical, d.summary_text()
    assert "The two recordings match" in d.summary_text()


def test_nan_in_another_place_differs_under_keep_all() -> None:
    x = torch.tensor([1.0, float("nan"), 3.0, 4.0])
    y = torch.tensor([1.0, 2.0, float("nan"), 4.0])
    a, _ = weighted(x, "all")
    b, _ = weighted(y, "all")
    assert not a.diff(b).identical


def test_the_first_difference_prints_norms_that_differ() -> None:
    x = torch.full((20,), 1.0, dtype=torch.float64)
    y = x.clone()
    y[7] += 1e-9  # a difference in the tenth significant digit of the norm
    a, wa = weighted(x, "summary")
    b, wb = weighted(y, "summary")
    assert wa.grad is not None and wb.grad is not None
    norm_a = float(torch.linalg.vector_norm(wa.grad))
    norm_b = float(torch.linalg.vector_norm(wb.grad))
    assert norm_a != norm_b
    d = a.diff(b)
    first = d.first_difference
    assert first is not None and first.norm_a == norm_a and first.norm_b == norm_b
    text = d.summary_text()
    line = next(line for line in text.split("\n") if line.startswith("first differing"))
    shown = re.findall(r"‖[AB]‖ = ([^,;)\s]+)", line)
    assert len(shown) == 2 and shown[0] != shown[1], line
    assert float(shown[0]) == pytest.approx(norm_a, rel=1e-8)
    assert float(shown[1]) == pytest.approx(norm_b, rel=1e-8)
    ratios = re.findall(r"‖B‖/‖A‖ = (\S+)", text)
    assert ratios and all(float(r) != 1.0 for r in ratios), text
