"""A page's save summarizes each kept gradient once (its health, edge labels, panel text and
quiz all tell the same tensors), and only inside the save: afterwards a tensor changed in
place is summarized afresh. The texts are those the uncached summaries give."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz.model import recording as recording_module
from gradviz.model.recording import as_summary, summaries_once
from gradviz.model.summarize import summarize
from gradviz.model.values import Summary
from gradviz.stepper.page import stepper_payload


def watched() -> gradviz.Recording:
    """Gradients big enough to be summarized (more than a handful of values), kept as copies."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 8))
    with gradviz.watch(model) as w:
        loss = model(torch.randn(4, 8)).square().mean()
    return w.record(loss, keep="all")


def counting(monkeypatch: pytest.MonkeyPatch) -> Counter[int]:
    """Counts ``summarize`` calls per tensor object (as ``as_summary`` makes them)."""
    calls: Counter[int] = Counter()

    def counted(value: torch.Tensor, *args: Any) -> Summary:
        calls[id(value)] += 1
        return summarize(value, *args)

    monkeypatch.setattr(recording_module, "summarize", counted)
    return calls


def test_a_save_summarizes_each_kept_tensor_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rec = watched()
    calls = counting(monkeypatch)
    rec.save(tmp_path / "replay.html")
    assert calls, "the page summarizes the kept gradients"
    assert max(calls.values()) == 1


def test_without_the_block_every_call_summarizes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache lives only as long as the block: that is what makes it safe."""
    calls = counting(monkeypatch)
    value = torch.randn(5, 5)
    as_summary(value)
    as_summary(value)
    assert calls[id(value)] == 2
    with summaries_once():
        as_summary(value)
        with summaries_once():  # an inner block joins the outer one
            as_summary(value)
        as_summary(value)
    assert calls[id(value)] == 3


def test_a_tensor_changed_after_a_save_reads_anew(tmp_path: Path) -> None:
    rec = watched()
    kept = next(v for step in rec.steps for v in step.grad_inputs if isinstance(v, torch.Tensor))
    before = stepper_payload(rec)
    kept.mul_(3)  # the user changes a kept gradient between two pages
    with summaries_once():
        assert as_summary(kept) == summarize(kept)
    after = stepper_payload(rec)
    assert before["data"]["steps"] != after["data"]["steps"]


def test_the_page_reads_as_without_the_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rec = watched()
    cached = stepper_payload(rec)
    monkeypatch.setattr("gradviz.stepper.page.summaries_once", _no_cache)
    assert stepper_payload(rec) == cached


def test_the_cache_is_per_thread() -> None:
    """Another thread (a widget's kernel thread, a layout worker) sees no open block."""
    seen: list[object] = []
    with summaries_once():
        assert recording_module._ONCE.get() is not None
        thread = threading.Thread(target=lambda: seen.append(recording_module._ONCE.get()))
        thread.start()
        thread.join()
    assert seen == [None]
    assert recording_module._ONCE.get() is None


class _no_cache:  # stands in for the context manager
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
