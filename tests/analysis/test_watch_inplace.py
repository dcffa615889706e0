"""The in-place explainer, for the lesson's failing (Mul) and harmless (Add) cases."""

from __future__ import annotations

import pytest
import torch

import gradviz
from gradviz import explain_inplace


def chain(op: str) -> tuple[gradviz.Watch, torch.Tensor]:
    with gradviz.watch() as w:
        a = torch.tensor(2.0, requires_grad=True)
        b = torch.tensor(3.0, requires_grad=True)
        c = a * b
        d = torch.tensor(4.0, requires_grad=True)
        e = c * d if op == "mul" else c + d
        c += 1
    return w, e


def test_mul_fails_and_is_explained() -> None:
    w, e = chain("mul")
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as plain:
        e.backward(retain_graph=True)
    with pytest.raises(gradviz.BackwardFailed) as failed:
        w.record(e)
    report = explain_inplace(failed.value)
    assert len(report.failing) == 1
    (finding,) = report.failing
    assert finding.node_id == failed.value.node_id
    assert finding.node_type == "MulBackward0"
    assert finding.tensor_name == "c" and finding.saved_as == "self"
    # the versions are the ones torch's own message states
    text = str(plain.value)
    assert f"is at version {finding.version_now}; expected version {finding.version_saved}" in text
    assert [op.name for op in finding.bumped_by] == ["add_"]
    assert finding.bumped_by[0].line is not None
    assert finding.bumped_by[0].line.text == "c += 1"
    message = report.message
    for words in ("MulBackward0", "saved c", "version 0", "version 1", "c += 1", "e = c * d"):
        assert words in message, words
    dot = report.to_dot()
    assert "gv_marked" in dot and f"{finding.node_id} [" in dot


def test_add_is_harmless_and_says_why() -> None:
    w, e = chain("add")
    e.backward(retain_graph=True)  # torch agrees: no error
    graph = w.trace(e)
    report = explain_inplace(graph)
    assert report.failing == []
    harmless = [f for f in report.harmless if f.node_type == "AddBackward0"]
    assert len(harmless) == 1
    assert harmless[0].tensor_name == "c"
    assert "did not save c" in harmless[0].message and "unaffected" in harmless[0].message


def test_slice_assignment_on_a_saved_view() -> None:
    with gradviz.watch() as w:
        x = torch.tensor(1.0, requires_grad=True)
        s = torch.ones(2)
        s[1] = s[0] * x
        z = s.sum()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward(retain_graph=True)
    report = explain_inplace(w.trace(z))
    (finding,) = report.failing
    assert finding.node_type == "MulBackward0"
    assert "a view of s" in finding.tensor_name
    assert [op.name for op in finding.bumped_by] == ["__setitem__"]


def test_needs_watch_data() -> None:
    a = torch.tensor(1.0, requires_grad=True)
    with pytest.raises(ValueError, match="watch"):
        explain_inplace(gradviz.trace(a * 2))
