"""The torch function mode behind ``gradviz.watch()``: it sees each Python-level torch call
(ops, attribute reads and sets) and reports it to its ``Watch``, never changing a result."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

import torch
from torch.overrides import TorchFunctionMode

from gradviz.capture import op_values
from gradviz.capture._own_ops import running as own_ops_running
from gradviz.capture.moments import Seen

if TYPE_CHECKING:
    from gradviz.capture.watch import Watch

__all__ = ["WatchMode"]

_NN_INIT = os.path.join(os.path.dirname(torch.nn.__file__), "init.py")
# the methods that build a module and fill its parameters (in place, before any lesson)
_BUILDERS = frozenset(("__init__", "reset_parameters", "_reset_parameters", "_init_weights"))

_get_sequence_nr: Callable[[], int] = torch._C._autograd._get_sequence_nr


# a module's call: an op below it runs in some forward (or in a module built inside one)
_MODULE_CALLS = (torch.nn.Module._call_impl.__code__, torch.nn.Module._wrapped_call_impl.__code__)


def _building_a_module() -> bool:
    """True inside ``nn.Module`` construction or ``torch.nn.init``: weight initialisation
    is not part of the forward pass, and its in-place fills would mark every fresh
    parameter as changed in place. The walk stops at the innermost module call: a deep
    model's op would otherwise walk its whole stack, every op."""
    frame: FrameType | None = sys._getframe(2)
    first_call, second_call = _MODULE_CALLS
    while frame is not None:
        code = frame.f_code
        if code is first_call or code is second_call:
            return False
        if code.co_filename == _NN_INIT:
            return True
        if code.co_name in _BUILDERS and code.co_argcount:
            owner = frame.f_locals.get(code.co_varnames[0])
            if isinstance(owner, torch.nn.Module):
                return True
        frame = frame.f_back
    return False


class WatchMode(TorchFunctionMode):
    """Sees every Python-level torch call of the watched thread and tells its ``Watch``:
    each op (with its inputs as it found them), ``requires_grad``, ``.grad`` and ``.data``
    set, and each backward pass (it writes ``.grad`` no op names)."""

    def __init__(self, owner: Watch[Any, Any]) -> None:
        super().__init__()
        self.owner = owner

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if own_ops_running():  # gradviz's own work (record() inside the block)
            return func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if _building_a_module():
            return func(*args, **kwargs)
        if name == "__get__":
            attribute = getattr(getattr(func, "__self__", None), "__name__", "")
            if attribute != "data" or not args or not isinstance(args[0], torch.Tensor):
                return func(*args, **kwargs)
            # ``.data`` cuts the graph as detach() does: recorded, so why_no_grad finds it
            seq_start = _get_sequence_nr()
            before = [op_values.version(args[0])]
            out = func(*args, **kwargs)
            self.owner._guard(
                self.owner._op, func, args[:1], {}, out, [args[0]], before, seq_start,
                _get_sequence_nr(), "data",
            )  # fmt: skip
            return out
        if name == "__set__":
            attribute = getattr(getattr(func, "__self__", None), "__name__", "")
            if not args or not isinstance(args[0], torch.Tensor):
                return func(*args, **kwargs)
            first: list[Seen | None] = [None]
            if attribute == "requires_grad":
                first = self.owner._before([args[0]], [op_values.version(args[0])])
            out = func(*args, **kwargs)
            if attribute == "requires_grad":
                self.owner._guard(self.owner._requires_grad_set, args[0], bool(args[1]), first)
            elif attribute in ("data", "grad"):  # .data: new values, the same version
                self.owner._guard(self.owner._attribute_set, args[0], attribute == "data")
            return out
        inputs = op_values.flat_tensors(args)
        if kwargs:
            inputs += op_values.flat_tensors(list(kwargs.values()))
        before = [op_values.version(t) for t in inputs]
        first = self.owner._before(inputs, before)
        seq_start = _get_sequence_nr()
        out = func(*args, **kwargs)
        seq_end = _get_sequence_nr()
        self.owner._guard(
            self.owner._op, func, args, kwargs, out, inputs, before, seq_start, seq_end, None,
            first,
        )  # fmt: skip
        if name == "backward":  # it wrote .grad of tensors no op of it names
            self.owner._guard(self.owner._observe_all)
        return out
