"""The narration's formula check reads a sent gradient as recorded and converts to float64
only the elements it checks (a TransformerEncoder's weight gradients were copied whole to
float64 for a check of 4,096 of their elements): the same narration as converting it whole."""

from __future__ import annotations

import pytest
import torch

import gradviz
from gradviz.explain import steps, symbols, text
from gradviz.explain.symbols import _context
from gradviz.replay.frames import replay_data


def recording() -> gradviz.Recording:
    """A linear layer whose weight gradient (64x96) is more than the check's 4,096 elements."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(96, 64), torch.nn.Tanh(), torch.nn.Linear(64, 8))
    with gradviz.watch(model) as w:
        loss = model(torch.randn(5, 96)).square().mean()
    return w.record(loss, keep="all")


def test_a_sent_gradient_is_read_as_recorded() -> None:
    rec = recording()
    step = next(s for s in rec.steps if s.type_name == "AddmmBackward0")
    ctx = _context(rec, step)
    for sent, kept in zip(ctx.sent, step.grad_inputs, strict=True):
        if isinstance(kept, torch.Tensor):
            assert sent is not None and sent.dtype == kept.dtype == torch.float32
            assert sent.data_ptr() == kept.data_ptr()  # no copy


def test_the_narration_is_the_same_as_with_whole_float64_copies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rec = recording()
    checked: list[int] = []
    real_agree = steps._agree

    def agree(expected: torch.Tensor, sent: torch.Tensor) -> bool:
        checked.append(sent.numel())
        return real_agree(expected, sent)

    monkeypatch.setattr(steps, "_agree", agree)
    now = replay_data(rec)["steps"]
    assert max(checked) > text.CHECKED_ELEMENTS  # a big sent gradient was checked on a sample
    monkeypatch.setattr(symbols, "_as_sent", text._as_tensor)  # the whole copy, as before
    assert replay_data(rec)["steps"] == now


def test_a_wrong_sent_gradient_still_disagrees() -> None:
    expected = torch.randn(64, 96, dtype=torch.float64)
    sent = expected.float()
    assert text._agree(expected, text._as_sent(sent))  # float32 rounding is within tolerance
    sent[::3] += 1.0  # wrong on every third row: the sample sees it
    assert not text._agree(expected, text._as_sent(sent))
