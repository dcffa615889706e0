"""Arguments of the wrong kind get a GradvizError that says what to pass, never a bare
TypeError or AttributeError from deep inside."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import gradviz
from gradviz.errors import InvalidArgument, StepNotFound
from gradviz.stepper.widget import Stepper


@pytest.fixture
def recording() -> gradviz.Recording:
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    return gradviz.record((a * 3).sum(), names={"a": a})


@pytest.mark.parametrize("bad", ["1", None, 1.0, [1], True])
def test_goto_takes_an_int(recording: gradviz.Recording, bad: Any) -> None:
    stepper = Stepper(recording)
    with pytest.raises(InvalidArgument, match=r"goto\(\) takes a step number, an int"):
        stepper.goto(bad)


def test_goto_names_the_step_it_was_given(recording: gradviz.Recording) -> None:
    stepper = Stepper(recording)
    last = len(recording.steps)
    assert stepper.goto(np.int64(1)) == 1  # numpy ints are ints
    assert stepper.goto(last) == last
    for bad in (-1, -5, last + 1):  # no forward frames here: -1 is no step
        with pytest.raises(StepNotFound, match=rf"^goto\({bad}\): step {bad} does not exist"):
            stepper.goto(bad)
    with pytest.raises(IndexError):  # still an IndexError, as before
        stepper.goto(last + 1)


def test_stepper_takes_a_recording_not_a_graph(recording: gradviz.Recording) -> None:
    with pytest.raises(InvalidArgument, match=r"not a Graph .*gradviz.record\(loss\)"):
        Stepper(recording.graph)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="not a Tensor"):
        Stepper(torch.ones(2))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=r"Stepper\(step=\) takes a step number"):
        Stepper(recording, step="2")  # type: ignore[arg-type]


def test_names_must_be_a_dict() -> None:
    x = torch.ones(2, requires_grad=True)
    for bad in ([x], ["x"], (("x", x),), "x"):
        with pytest.raises(InvalidArgument, match=r"names= takes a dict .*names=\{'x': x"):
            gradviz.trace(x * 2, names=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgument, match="names= takes a dict"):
            gradviz.record((x * 2).sum(), names=bad)  # type: ignore[arg-type]
    assert x.grad is None  # refused before any backward ran


def test_params_takes_a_module_a_dict_or_pairs() -> None:
    model = nn.Linear(2, 1)
    loss = model(torch.ones(1, 2)).sum()
    for bad in ("model", 3, model.weight):
        with pytest.raises(InvalidArgument, match=r"params= takes a module \(params=model\)"):
            gradviz.trace(loss, params=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=r"without names \(model.parameters\(\)\?\)"):
        gradviz.trace(loss, params=model.parameters())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=r"without names"):
        gradviz.trace(loss, params=[model.weight, model.bias])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="got an item str"):
        gradviz.trace(loss, params=["weight"])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="maps names to tensors"):
        gradviz.trace(loss, params=[(1, model.weight)])  # type: ignore[list-item]
    # what is documented still works, and names the parameters
    for good in (model, dict(model.named_parameters()), model.named_parameters()):
        names = {t.name for t in gradviz.trace(loss, params=good).tensors}
        assert {"weight", "bias"} <= names
    with pytest.raises(gradviz.GradvizError):
        gradviz.record(loss, params="model")  # type: ignore[arg-type]
    assert model.weight.grad is None
