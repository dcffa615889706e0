"""``record_step``: record the backward pass, then run ``optimizer.step()`` and keep what
it did to each parameter and to the optimizer's state.

gradviz only reads: the backward is ``record()`` (hooks that return None) and the step is
the optimizer's own ``step()`` (``step(closure)`` when given), called once, so the
parameters end up bitwise as after a plain ``loss.backward(); optimizer.step()``. Copies
are taken with ``detach().clone()`` by the step's last pre-hook and after it; the optimizer
never sees them, and a copy or norm that fails is a note, never an error inside the step.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import torch
from typing_extensions import Unpack

from gradviz.capture.ondemand import settle_values
from gradviz.capture.record import RecordKeywords, record
from gradviz.errors import GradvizError, GradvizWarning
from gradviz.model.optstep import OptimizerStep, ParamStep, StepSettings
from gradviz.model.public import built
from gradviz.model.recording import Recording
from gradviz.model.summarize import summarize
from gradviz.model.values import Scalar, Summary

__all__ = ["StepWatcher", "leaf_grads", "needs_closure", "nonzero_grad", "record_step"]


def record_step(
    optimizer: torch.optim.Optimizer,
    loss: torch.Tensor,
    names: Mapping[str, torch.Tensor] | None = None,
    params: torch.nn.Module | None = None,
    closure: Callable[[], Any] | None = None,
    **options: Unpack[RecordKeywords],
) -> OptimizerStep:
    """``loss.backward()`` recorded, then ``optimizer.step()``; returns both as data.

    ``params``: a module whose parameter paths name the parameters (``fc1.weight``);
    without it they are ``group0.param1``. ``closure`` goes to ``step(closure)`` (LBFGS
    needs one). ``options`` go to ``gradviz.record``. What gradviz cannot read of the step
    is left out with a warning and a line in ``notes``; the step itself always runs whole.
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
    if closure is None and needs_closure(optimizer):
        raise GradvizError(
            f"{type(optimizer).__name__}.step() needs a closure that re-evaluates the loss: "
            "gradviz.record_step(optimizer, loss, closure=closure)"
        )
    watcher = StepWatcher(optimizer, labels=_labels(optimizer, params))
    recording = record(loss, names=names, params=params, **options)
    settle_values(recording.graph.tensors)  # the drawing shows the values the backward used
    watcher.attach()
    try:
        if closure is None:
            optimizer.step()
        else:
            calls = [0]

            def counted() -> Any:
                calls[0] += 1
                return closure()

            optimizer.step(counted)
            watcher.note(
                f"step(closure) called the closure {calls[0]} time(s) inside the step: the "
                "gradients shown are those .grad held when the step began (the recorded "
                "backward's); the closure's own backward passes are not recorded"
            )
    finally:
        watcher.detach()
    return watcher.finish(recording)


def needs_closure(optimizer: torch.optim.Optimizer) -> bool:
    """True when ``optimizer.step`` has a ``closure`` parameter without a default."""
    try:
        found = inspect.signature(optimizer.step).parameters.get("closure")
    except (TypeError, ValueError):  # a signature Python cannot read: assume none needed
        return False
    return found is not None and found.default is inspect.Parameter.empty


class StepWatcher:
    """What one ``optimizer.step()`` did, taken in three looks: when made (each ``.grad``
    before the backward, unless given), right before the step's body runs (the parameters,
    their state and the gradients the step uses, read by a step pre-hook that ``attach``
    registers last, so after every other pre-hook, a gradient clipping one included) and
    after the step.

    ``record_step`` makes one around its own backward and step; the command line makes one
    from a global optimizer step hook. ``grads_before`` maps ``id(param)`` to the ``.grad``
    it held before the backward (None: empty or zeros); parameters it leaves out are read
    now. ``labels`` maps ``id(param)`` to its name.

    Every look only reads, and one that fails (a layout gradviz cannot read) is left out
    with a ``GradvizWarning`` and a line in ``notes``: it never raises into the step.
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        labels: Mapping[int, str] | None = None,
        grads_before: Mapping[int, torch.Tensor | None] | None = None,
    ) -> None:
        self.optimizer = optimizer
        self.labels = dict(labels or {})
        self.notes: list[str] = []
        self.tracked = [
            (g, p) for g, group in enumerate(optimizer.param_groups) for p in group["params"]
        ]
        given = grads_before or {}
        self.grads_before: list[torch.Tensor | None] = []
        for index, (_, param) in enumerate(self.tracked):
            try:
                found = given[id(param)] if id(param) in given else nonzero_grad(param)
            except Exception as error:  # whatever it is, the step runs on
                self._cannot(f"the .grad {self._name(index)} held before the backward", error)
                found = None
            self.grads_before.append(found)
        self.before: list[torch.Tensor | None] = []
        self.state_before: list[dict[str, Summary | Scalar]] = []
        self.used: list[torch.Tensor | None] = []
        self.looked = False
        self._handle: Any = None

    def note(self, text: str) -> None:
        """A line for the result: something about the step its numbers do not show."""
        if text not in self.notes:
            self.notes.append(text)

    def _cannot(self, what: str, error: BaseException) -> None:
        text = f"gradviz could not read {what} ({type(error).__name__}: {error}); left out"
        warnings.warn(text, GradvizWarning, stacklevel=3)
        self.note(text)

    def _name(self, index: int) -> str:
        group, param = self.tracked[index]
        return self.labels.get(id(param), f"group{group}.param{index}")

    def attach(self) -> None:
        """Register the look before the step as the optimizer's last step pre-hook; call it
        right before ``step()`` (or from a global pre-hook, which runs before them all)."""
        self.detach()
        self._handle = self.optimizer.register_step_pre_hook(self._look_before)

    def detach(self) -> None:
        """Remove the pre-hook ``attach`` registered (not while the hooks are running)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.remove()

    def _look_before(self, optimizer: torch.optim.Optimizer, *hook_args: Any) -> None:
        if self.looked:
            return None  # LBFGS and the like: only the first step is this one
        self.looked = True
        for index, (_, param) in enumerate(self.tracked):
            before: torch.Tensor | None = None
            used: torch.Tensor | None = None
            state: dict[str, Summary | Scalar] = {}
            try:
                before = param.detach().clone()
                used = None if param.grad is None else param.grad.detach().clone()
                state = _state(optimizer, param)
            except Exception as error:  # whatever it is, the step runs on
                self._cannot(f"{self._name(index)} before the step", error)
            self.before.append(before)
            self.used.append(used)
            self.state_before.append(state)
        return None

    def take_grads(self) -> None:
        """Look before the step now (when no pre-hook was attached)."""
        self._look_before(self.optimizer)

    def finish(self, recording: Recording) -> OptimizerStep:
        """After ``step()``: each parameter's change and state, with ``recording``."""
        settings = StepSettings(type(self.optimizer).__name__, ())
        try:
            settings = StepSettings(
                settings.optimizer, tuple(_hyper(group) for group in self.optimizer.param_groups)
            )
        except Exception as error:  # whatever it is, the step has run
            self._cannot("the optimizer's settings", error)
        if not self.looked:
            self.note("the step ran without gradviz's look before it: nothing to compare")
            return built(OptimizerStep)(recording, settings, [], list(self.notes))
        steps = []
        for index, (group, param) in enumerate(self.tracked):
            before = self.before[index]
            if before is None:
                continue  # said when the look before failed
            try:
                steps.append(self._param_step(index, group, param, before))
            except Exception as error:  # whatever it is, the step has run
                self._cannot(f"what the step did to {self._name(index)}", error)
        return built(OptimizerStep)(recording, settings, steps, list(self.notes))

    def _param_step(
        self, index: int, group: int, param: torch.Tensor, before: torch.Tensor
    ) -> ParamStep:
        after = param.detach().clone()
        update = after - before
        grad = self.used[index]
        return ParamStep(
            name=self._name(index),
            group=group,
            before=summarize(before),
            after=summarize(after),
            grad=None if grad is None else summarize(grad),
            grad_before_backward=_maybe(self.grads_before[index]),
            update=summarize(update),
            weight_norm=_norm(before),
            update_norm=_norm(update),
            grad_norm=None if grad is None else _norm(grad),
            state_before=self.state_before[index],
            state_after=_state(self.optimizer, param),
            after_norm=_norm(after),
        )


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
    """The L2 norm of the whole value in double precision: complex values keep their
    imaginary part, a sparse tensor counts its stored values (summed where repeated)."""
    data = tensor.detach()
    if data.layout == torch.sparse_coo:
        data = data.coalesce().values()
    elif data.layout != torch.strided:
        data = data.values()
    wide = torch.complex128 if data.is_complex() else torch.float64
    return float(torch.linalg.vector_norm(data.to(wide)))


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
