"""The command line's view of a running script: which ``backward()`` call to record.

While the script runs, ``torch.autograd.backward`` (which ``tensor.backward()`` calls) is
replaced by a counter. Call ``N`` (``--call N``) is recorded with ``gradviz.watch()`` around
its forward pass, so the replay has forward frames and module views; every other call runs
as PyTorch's own backward, untouched. Without ``--call`` the last call is wanted, and which
one is last is only known when the script ends: then every call is recorded (each forward
watched anew), and only the latest recording is kept.

The forward pass of call ``N`` is what the script ran after call ``N - 1`` returned (or
since it started, for the first call), which is a training loop's iteration; the
optimizer's ``step()`` in between is left out (global optimizer step hooks pause the
watch). Those hooks also record the first ``optimizer.step()`` after the recorded call (and
before the next ``backward()``) as ``record_step`` would: the parameters and state before
and after, copied, while the optimizer's own ``step()`` runs untouched.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import torch
from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)
from typing_extensions import Unpack

from gradviz.capture.ondemand import settle_values
from gradviz.capture.optstep import StepWatcher, leaf_grads
from gradviz.capture.record import RecordKeywords
from gradviz.capture.watch import _ACTIVE
from gradviz.errors import BackwardFailed, GradvizError, GraphFreed, NotOnGraph
from gradviz.model.public import as_public
from gradviz.objects import OptimizerStep, Recording, Watch

__all__ = ["Capture", "names_in", "params_in"]

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_GRADVIZ_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def names_in(scope: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The tensors a scope names (``_private`` names left out)."""
    return {k: v for k, v in scope.items() if isinstance(v, torch.Tensor) and k[:1] != "_"}


def params_in(scope: dict[str, Any]) -> list[tuple[str, torch.Tensor]]:
    """Every parameter of the scope's modules, named ``module.path`` (``model.0.weight``)."""
    params: list[tuple[str, torch.Tensor]] = []
    for module_name, module in scope.items():
        if isinstance(module, torch.nn.Module) and module_name[:1] != "_":
            params += [(f"{module_name}.{p}", t) for p, t in module.named_parameters()]
    return params


def _caller() -> FrameType | None:
    """The script's frame that called backward: the first outside torch and gradviz."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith((_TORCH_DIR, _GRADVIZ_DIR)):
            return frame
        frame = frame.f_back
    return None


def _called_by_gradviz() -> bool:
    """True when gradviz itself (the script's own ``gradviz.record``) runs this backward."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and (
        os.path.abspath(frame.f_code.co_filename).startswith(_TORCH_DIR)
        or frame.f_code.co_filename == __file__  # Tensor.backward's stand-in, above
    ):
        frame = frame.f_back
    found = frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_GRADVIZ_DIR)
    del frame
    return found


def _close(_watch: Watch) -> None:
    """End a watch block; this frame's locals are private, so none of them names a tensor."""
    _watch.__exit__(None, None, None)


@dataclass
class Capture:
    """Counts the script's backward calls and records the chosen one (``call``; None: the
    last). ``recording`` is that call's recording, ``call_recorded`` its number (1-based),
    ``calls`` how many backward calls the script made, ``root_name`` the root's name in the
    calling scope and ``where`` its ``file:line``. ``optimizer_step`` is the first
    ``optimizer.step()`` after the recorded call, before the next backward (``steps``:
    record it)."""

    call: int | None = None
    watched: bool = True
    calls: int = 0
    recording: Recording | None = None
    call_recorded: int | None = None
    root_name: str | None = None
    where: str | None = None
    _watch: Watch | None = None
    _stopped: Watch | None = None  # the watch of the call about to run
    _busy: bool = False
    _resume: bool = False  # reopen the watch after optimizer.step()
    _scopes: list[dict[str, Any]] = field(default_factory=list)
    steps: bool = True
    optimizer_step: OptimizerStep | None = None
    _grads_before: dict[int, torch.Tensor | None] | None = None  # set: a step may follow
    _labels: dict[int, str] = field(default_factory=dict)
    _stepping: StepWatcher | None = None

    def _wanted(self, number: int) -> bool:
        return self.call is None or number == self.call

    def _open_watch(self) -> None:
        """Watch the next forward pass, unless the script watches it itself."""
        if self.watched and self._watch is None and not _ACTIVE:
            self._watch = Watch()
            self._watch.__enter__()

    def _end_watch(self) -> Watch | None:
        watch, self._watch = self._watch, None
        if watch is not None:
            _close(watch)
        return watch

    def _scope(self) -> dict[str, Any]:
        """The calling script's globals and locals; notes where backward was called."""
        frame = _caller()
        if frame is None:
            return {}
        self.where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
        scope = {**frame.f_globals, **frame.f_locals}
        del frame
        return scope

    def _stop_watch(self) -> None:
        """End the forward pass's watch, its tensors named as the calling scope names them.

        ``tensor.backward()`` runs inside the watch's torch-function mode, where the mode
        cannot be left: so ``Tensor.backward`` ends the watch before PyTorch sees the call.
        """
        if self._watch is not None:
            self._watch.explicit = dict(names_in(self._scope()))
            self._stopped = self._end_watch()

    def _optimizer_starts(self, optimizer: torch.optim.Optimizer, *_: Any) -> None:
        """``optimizer.step()`` is not the next forward pass: it is left out of the frames.
        The first step after the recorded call is looked at, before and after."""
        if self._watch is not None:
            self._end_watch()
            self._resume = True
        if self._grads_before is not None and self._stepping is None:
            # the look before the step is the optimizer's last pre-hook, registered now so
            # that it follows the script's own (a gradient clipping hook, say)
            self._stepping = StepWatcher(optimizer, self._labels, self._grads_before)
            self._stepping.attach()
            if self.recording is not None:  # the drawing shows the values backward used
                settle_values(self.recording.graph.tensors)

    def _forget_step(self) -> None:
        """No step to look at (a new backward began, or the script ends)."""
        if self._stepping is not None:
            self._stepping.detach()
        self._grads_before = self._stepping = None

    def _optimizer_ended(self, optimizer: torch.optim.Optimizer, *_: Any) -> None:
        watcher = self._stepping
        if watcher is not None and watcher.optimizer is optimizer and self.recording is not None:
            self._forget_step()
            self.optimizer_step = as_public(watcher.finish(self.recording), OptimizerStep)
        if self._resume:
            self._resume = False
            self._open_watch()

    @contextmanager
    def running(self) -> Iterator[None]:
        """Replace ``torch.autograd.backward`` and ``Tensor.backward`` while the script
        runs; restore them after."""
        original = torch.autograd.backward
        tensor_backward = torch.Tensor.backward

        watch_enter = Watch.__enter__

        def enter_own_watch(watch: Watch) -> Watch:
            if watch is not self._watch:
                self._end_watch()  # the script watches this forward pass itself
            return watch_enter(watch)

        def backward_method(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> None:
            if not self._busy:
                self._stop_watch()
            tensor_backward(tensor, *args, **kwargs)  # type: ignore[no-untyped-call]

        def backward(
            tensors: Any,
            grad_tensors: Any = None,
            retain_graph: bool | None = None,
            create_graph: bool = False,
            grad_variables: Any = None,
            inputs: Any = None,
        ) -> None:
            plain = (tensors, grad_tensors, retain_graph, create_graph, grad_variables, inputs)
            roots = (tensors,) if isinstance(tensors, torch.Tensor) else tuple(tensors)
            drawable = roots and all(isinstance(t, torch.Tensor) for t in roots)
            own = self._busy or _called_by_gradviz()
            if own or not drawable or isinstance(inputs, dict):
                original(*plain)  # record()'s own call, gradient edges and the like
                return
            self.calls += 1
            number = self.calls
            self._forget_step()  # a step now belongs to this call
            if not self._wanted(number):
                self._end_watch()
                self._stopped = None
                original(*plain)
            else:
                gradient = grad_tensors if grad_tensors is not None else grad_variables
                self._record(number, roots, original, plain, gradient=gradient,
                             retain_graph=retain_graph, create_graph=create_graph,
                             inputs=inputs)  # fmt: skip
            if self._wanted(number + 1):
                self._open_watch()

        if self._wanted(1):
            self._open_watch()
        torch.autograd.backward = backward
        setattr(torch.Tensor, "backward", backward_method)  # noqa: B010 (a method swap)
        setattr(Watch, "__enter__", enter_own_watch)  # noqa: B010
        optimizer_hooks = [
            register_optimizer_step_pre_hook(self._optimizer_starts),
            register_optimizer_step_post_hook(self._optimizer_ended),
        ]
        try:
            yield
        finally:
            for handle in optimizer_hooks:
                handle.remove()
            if self._stepping is not None:
                self._stepping.detach()  # a step that raised: its pre-hook goes too
            torch.autograd.backward = original
            setattr(torch.Tensor, "backward", tensor_backward)  # noqa: B010
            setattr(Watch, "__enter__", watch_enter)  # noqa: B010
            self._end_watch()
            self._stopped = None

    def _record(
        self,
        number: int,
        roots: tuple[torch.Tensor, ...],
        original: Any,
        plain: tuple[Any, ...],
        **options: Unpack[RecordKeywords],
    ) -> None:
        from gradviz.objects import record

        self._stop_watch()  # torch.autograd.backward(...) called directly
        watch, self._stopped = self._stopped, None
        scope = self._scope()
        names, params = names_in(scope), params_in(scope)
        self._busy = True
        self.optimizer_step = None
        if self.steps:  # what .grad held before this backward, for the step after it
            self._grads_before = leaf_grads(roots)
            self._labels = {id(t): name for name, t in params}
        try:
            if watch is not None and not watch.errors:
                recording = watch.record(*roots, names=names, params=params or None, **options)
            else:
                recording = record(*roots, names=names, params=params or None, **options)
        except (NotOnGraph, GraphFreed):
            # nothing ran yet: PyTorch's own backward raises its own error, as without gradviz
            self._busy = False
            self._grads_before = None
            original(*plain)
            return
        except BackwardFailed as failed:
            cause = failed.__cause__
            if cause is not None and not isinstance(cause, GradvizError):
                # the script's own exception (from its hook, say) reaches its own except
                raise cause from None
            raise
        finally:
            self._busy = False
        self.recording, self.call_recorded = recording, number
        self.root_name = next((n for n, t in names.items() if t is roots[0]), None)
