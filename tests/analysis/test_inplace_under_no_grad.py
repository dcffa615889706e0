"""An in-place change made under ``torch.no_grad()`` still bumps the version counter, so
``watch()`` must see it and the in-place explainer must report it, as PyTorch does."""

from __future__ import annotations

import pytest
import torch

import gradviz
from gradviz import explain_inplace


def test_a_no_grad_slice_zeroing_of_a_saved_tensor_is_the_failure() -> None:
    with gradviz.watch() as w:
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = x.exp()  # ExpBackward0 saves its result, h
        with torch.no_grad():
            h[1:].zero_()
        loss = h.sum()
    assert not w.errors
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as plain:
        loss.backward(retain_graph=True)
    with pytest.raises(gradviz.BackwardFailed) as failed:
        w.record(loss)
    report = explain_inplace(failed.value)
    assert "No tensor" not in report.message
    (finding,) = report.failing
    assert finding.node_type == "ExpBackward0" and finding.saved_as == "result"
    assert "h" in finding.tensor_name
    text = str(plain.value)
    assert f"is at version {finding.version_now}; expected version {finding.version_saved}" in text
    assert [op.name for op in finding.bumped_by] == ["zero_"]
    assert finding.bumped_by[0].line is not None
    assert finding.bumped_by[0].line.text == "h[1:].zero_()"


def test_a_no_grad_change_of_an_unsaved_tensor_is_reported_harmless() -> None:
    with gradviz.watch() as w:
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = x * 2
        y = h + 1  # AddBackward0 saves nothing of h
        with torch.no_grad():
            h[1:].zero_()
        loss = y.sum()
    loss.backward(retain_graph=True)  # PyTorch agrees: nothing fails
    report = explain_inplace(w.trace(loss))
    assert report.failing == []
    assert "No tensor" not in report.message
    harmless = [f for f in report.harmless if f.node_type == "AddBackward0"]
    assert len(harmless) == 1 and "unaffected" in harmless[0].message
    assert [op.name for op in harmless[0].bumped_by] == ["zero_"]
