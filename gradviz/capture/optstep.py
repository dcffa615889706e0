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

from gradviz.capture.ondemand import settle_values
from gradviz.capture.record import RecordKeywords, record
from gradviz.errors import GradvizError
from gradviz.model.optstep import OptimizerStep, ParamStep, StepSettings
from gradviz.model.recording import Recording
from gradviz.model.summarize import summarize
from gradviz.model.values import Scalar, Summary

__all__ = ["StepWatcher", "leaf_grads", "nonzero_grad", "record_step"]


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
    watcher = StepWatcher(optimizer, labels=_labels(optimizer, params))
    recording = record(loss, names=names, params=params, **options)
    watcher.take_grads()
    settle_values(recording.graph.tensors)  # the drawing shows the values the backward used
    optimizer.step()
    return watcher.finish(recording)


class StepWatcher:
    """What one ``optimizer.step()`` did, taken in two looks: before (the parameters, their
    state and, unless given, their ``.grad`` before the backward) and after the step.

    ``record_step`` makes one around its own backward and step; the command line makes one
    from a global optimizer step hook. ``grads_before`` maps ``id(param)`` to the ``.grad``
    it held before the backward (None: empty or zeros); parameters it leaves out are read
    now. ``labels`` maps ``id(param)`` to its name.
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        labels: Mapping[int, str] | None = None,
        grads_before: Mapping[int, torch.Tensor | None] | None = None,
    ) -> None:
        self.optimizer = optimizer
        self.labels = dict(labels or {})
        self.tracked = [
            (g, p) for g, group in enumerate(optimizer.param_groups) for p in group["params"]
        ]
        self.before = [p.detach().clone() for _, p in self.tracked]
        given = grads_before or {}
        self.grads_before = [
            given[id(p)] if id(p) in given else nonzero_grad(p) for _, p in self.tracked
        ]
        self.state_before = [_state(optimizer, p) for _, p in self.tracked]
        self.used: list[torch.Tensor | None] = []

    def take_grads(self) -> None:
        """The gradients the step is about to use (call it right before ``step()``)."""
        self.used = [None if p.grad is None else p.grad.detach().clone() for _, p in self.tracked]

    def finish(self, recording: Recording) -> OptimizerStep:
        """After ``step()``: each parameter's change and state, with ``recording``."""
        steps = []
        for index, (group, param) in enumerate(self.tracked):
            after = param.detach().clone()
            update = after - self.before[index]
            grad = self.used[index] if self.used else None
            steps.append(
                ParamStep(
                    name=self.labels.get(id(param), f"group{group}.param{index}"),
                    group=group,
                    before=summarize(self.before[index]),
                    after=summarize(after),
                    grad=None if grad is None else summarize(grad),
                    grad_before_backward=_maybe(self.grads_before[index]),
                    update=summarize(update),
                    weight_norm=_norm(self.before[index]),
                    update_norm=_norm(update),
                    grad_norm=None if grad is None else _norm(grad),
                    state_before=self.state_before[index],
                    state_after=_state(self.optimizer, param),
                    after_norm=_norm(after),
                )
            )
        settings = StepSettings(
            type(self.optimizer).__name__,
            tuple(_hyper(group) for group in self.optimizer.param_groups),
        )
        return OptimizerStep(recording, settings, steps)


def nonzero_grad(param: torch.Tensor) -> torch.Tensor | None:
    """A copy of ``param.grad``, or None when it is empty or all zeros: a ``.grad`` of zeros
    (``zero_grad(set_to_none=False)``) adds nothing, so only a non-zero one means the step
    will use the sum of several backward passes."""
    grad = param.grad
    return None if grad is None or not bool(grad.any()) else grad.detach().clone()


def leaf_grads(roots: tuple[torch.Tensor, ...]) -> dict[int, torch.Tensor | None]:
    """``nonzero_grad`` of every leaf that a backward from ``roots`` accumulates into, by
    ``id``: what ``.grad`` held before that backward."""
    found: dict[int, torch.Tensor | None] = {}
    seen: set[int] = set()
    stack = [r.grad_fn for r in roots if r.grad_fn is not None]
    for root in roots:
        if root.grad_fn is None and root.requires_grad:
            found[id(root)] = nonzero_grad(root)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            found[id(variable)] = nonzero_grad(variable)
        stack += [child for child, _ in node.next_functions if child is not None]
    return found


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
