"""While a replay's views are laid out (Graphviz children on the machine's cores), the page's
data is computed with torch on one thread, and the user's thread count comes back after,
also when the save fails."""

from __future__ import annotations

import pytest
import torch

import gradviz
import gradviz.stepper.page
from gradviz.replay.layouts import layout_batch


def recording() -> gradviz.Recording:
    x = torch.randn(5, requires_grad=True)
    return gradviz.record((x.tanh() * 2).sum())


def test_the_batch_runs_torch_on_one_thread_and_restores_it() -> None:
    rec = recording()
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with layout_batch(rec, [], ()):
            assert torch.get_num_threads() == 1
            with layout_batch(rec, [], ()):  # a nested batch leaves it to the outer one
                assert torch.get_num_threads() == 1
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_thread_count_comes_back_when_the_save_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rec = recording()
    seen: list[int] = []

    def failing(*args: object, **kwargs: object) -> None:
        seen.append(torch.get_num_threads())
        raise RuntimeError("boom")

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        monkeypatch.setattr("gradviz.stepper.page.replay_data", failing)
        with pytest.raises(RuntimeError, match="boom"):
            gradviz.stepper.page.replay_html(rec)
        assert seen == [1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
