"""``record_step``: record the backward pass, then run ``optimizer.step()`` and keep what
it did to each parameter and to the optimizer's state.

gradviz only reads: the backward is ``record()`` (hooks that return None) and the step is
the optimizer's own ``step()``, called once, so the parameters end up bitwise as after a
plain ``loss.backward(); optimizer.step()``. Copies are taken with ``detach().clone()``
before and after; the optimizer never sees them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from typing_extensions import Unpack

from gradviz.capture.record import RecordKeywords, record
from gradviz.errors import GradvizError
from gradviz.model.optstep import OptimizerStep, ParamStep, StepSettings
from gradviz.model.summarize import summarize
from gradviz.model.values import Scalar, Summary

__all__ = ["record_step"]


def record_step(
    optimizer: torch.optim.Optimizer,
    loss: torch.Tensor,
    names: Mapping[str, torch.Tensor] | None = None,
    params: torch.nn.Module | None = None,
    **options: Unpack[RecordKeywords],
) -> OptimizerStep:
    """``loss.backward()`` recorded, then ``optimizer.step()``; returns both as data.

    ``params``: a module whose parameter paths name the parameters (``fc1.weight``);
    without it they are ``group0.param1``. ``options`` go to ``gradviz.record``.
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise GradvizError(
            f"record_step takes a torch.optim.Optimizer, not {type(optimizer).__name__}: "
            "gradviz.record_step(optimizer, loss)"
        )
    if not isinstance(loss, torch.Tensor):
        raise GradvizError(
            f"record_step takes the loss tensor, not {type(loss).__name__}: "
            "gradviz.record_step(optimizer, loss)"
        )
    labels = _labels(optimizer, params)
    tracked = [(g, p) for g, group in enumerate(optimizer.param_groups) for p in group["params"]]
    before = [p.detach().clone() for _, p in tracked]
    # a .grad of zeros (zero_grad(set_to_none=False)) adds nothing: only a non-zero one
    # means the step will use the sum of several backward passes
    grads_before = [
        None if p.grad is None or not bool(p.grad.any()) else p.grad.detach().clone()
        for _, p in tracked
    ]
    state_before = [_state(optimizer, p) for _, p in tracked]
    recording = record(loss, names=names, params=params, **options)
    used = [None if p.grad is None else p.grad.detach().clone() for _, p in tracked]
    optimizer.step()
    steps = []
    for index, (group, param) in enumerate(tracked):
        after = param.detach().clone()
        update = after - before[index]
        grad = used[index]
        steps.append(
            ParamStep(
                name=labels.get(id(param), f"group{group}.param{index}"),
                group=group,
                before=summarize(before[index]),
                after=summarize(after),
                grad=None if grad is None else summarize(grad),
                grad_before_backward=_maybe(grads_before[index]),
                update=summarize(update),
                weight_norm=_norm(before[index]),
                update_norm=_norm(update),
                grad_norm=None if grad is None else _norm(grad),
                state_before=state_before[index],
                state_after=_state(optimizer, param),
            )
        )
    settings = StepSettings(
        type(optimizer).__name__,
        tuple(_hyper(group) for group in optimizer.param_groups),
    )
    return OptimizerStep(recording, settings, steps)


def _labels(optimizer: torch.optim.Optimizer, module: torch.nn.Module | None) -> dict[int, str]:
    if module is None:
        return {}
    return {id(p): name for name, p in module.named_parameters()}


def _maybe(tensor: torch.Tensor | None) -> Summary | None:
    return None if tensor is None else summarize(tensor)


def _norm(tensor: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(tensor.detach().to(torch.float64)))


def _state(optimizer: torch.optim.Optimizer, param: torch.Tensor) -> dict[str, Summary | Scalar]:
    """The optimizer's per-parameter state (momentum buffer, Adam's moments, step)."""
    found: dict[str, Summary | Scalar] = {}
    for key, value in optimizer.state.get(param, {}).items():
        if isinstance(value, torch.Tensor):
            found[str(key)] = (
                value.item() if value.numel() == 1 and value.dim() == 0 else summarize(value)
            )
        elif isinstance(value, bool | int | float):
            found[str(key)] = value
    return found


def _hyper(group: Mapping[str, Any]) -> dict[str, Scalar]:
    """A group's plain settings (lr, momentum, betas as text, weight_decay, ...)."""
    found: dict[str, Scalar] = {}
    for key, value in group.items():
        if key == "params":
            continue
        if isinstance(value, bool | int | float | str):
            found[key] = value
        elif isinstance(value, tuple):
            found[key] = repr(value)
        elif isinstance(value, torch.Tensor) and value.numel() == 1:
            found[key] = value.item()
    return found
