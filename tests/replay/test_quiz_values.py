"""The quiz's revealed number (``replay.classroom.quiz_answers``): the scalar a step sent,
as PyTorch computed it, and None wherever the gradient is not one scalar."""

from __future__ import annotations

import torch

import gradviz
from gradviz.replay.classroom import quiz_answers


def test_quiz_values_are_the_sent_scalars_and_none_for_tensors() -> None:
    x = torch.tensor(2.0, requires_grad=True)
    w = torch.tensor([1.0, -3.0, 0.5], requires_grad=True)
    loss = x * x * 3 + (w * x).sum()
    recording = gradviz.record(loss)
    answers = quiz_answers(recording, recording.graph.prefix)
    assert len(answers) == len(recording.steps)
    x_grad, w_grad = torch.autograd.grad(x * x * 3 + (w * x).sum(), [x, w])
    by_type: dict[str, list[float | None]] = {}
    for step, answer in zip(recording.steps, answers, strict=True):
        by_type.setdefault(step.type_name, []).append(answer["value"])
        sent = step.leaf_grad_after if step.type_name == "AccumulateGrad" else None
        if sent is None:
            sent = next((g for g in step.grad_inputs if g is not None), None)
        if isinstance(sent, torch.Tensor) and sent.dim() == 0:
            assert answer["value"] == float(sent)
        else:
            assert answer["value"] is None
    # the two leaves' .grad: x's is one scalar (shown), w's a 3-element tensor (not)
    assert float(x_grad) in by_type["AccumulateGrad"]
    assert by_type["AccumulateGrad"].count(None) == 1
    assert w_grad.shape == (3,)
