"""Where NaN and Inf first appear in a recorded backward pass.

A step is an origin when it sent a non-finite gradient although everything it received
was finite: the op itself made the NaN or Inf (``sqrt`` at 0, ``log`` of 0, 0/0, or a NaN
in a saved input). It is one too when it received a non-finite gradient although every
gradient sent into it was finite: the engine's sum of them overflowed (two float16
gradients of 40,000 add up to Inf). Later steps only pass it on. Summaries carry the fact
(``Summary.nan``, ``Summary.inf``), so this works for ``keep="summary"`` as well as for
full copies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from gradviz.analysis.flow import sent_into
from gradviz.model.summarize import dtype_name
from gradviz.model.values import Summary

if TYPE_CHECKING:
    from gradviz.model.recording import GradValue, Recording, Step

__all__ = ["find_origins", "nonfinite_kind", "sum_overflow_text"]


def nonfinite_kind(value: GradValue | None) -> str | None:
    """'' when every value is finite, 'NaN', 'Inf' or 'NaN and Inf'; None when the values
    are not available (a meta tensor). ``None`` (no gradient) counts as finite."""
    if value is None:
        return ""
    if isinstance(value, Summary):
        if not value.available:
            return None
        return _kind(value.nan, value.inf)
    data = value.detach()
    if data.is_meta:
        return None
    if data.layout == torch.sparse_coo:
        data = data.coalesce().values()
    elif data.layout != torch.strided:
        data = data.values()
    if bool(torch.isfinite(data).all()):  # one pass in the usual case
        return ""
    return _kind(bool(torch.isnan(data).any()), bool(torch.isinf(data).any()))


def _kind(nan: bool, inf: bool) -> str:
    return " and ".join(word for word, present in (("NaN", nan), ("Inf", inf)) if present)


def find_origins(recording: Recording) -> None:
    """Set ``step.nonfinite_origin`` to the (slot, kind) of each non-finite gradient a step
    sent while all it received was finite (known to be: unknown values never count).

    Every kept tensor (sent and received) is checked once, in ``_suspects``'s batch: one
    ``isfinite`` pass per received tensor took ResNet-50's ``keep="all"`` longer than its
    backward pass."""
    kept = {
        id(v): v
        for step in recording.steps
        for values in (step.grad_inputs, step.grad_outputs)
        for v in values
        if isinstance(v, torch.Tensor)
    }
    suspects = _suspects(list(kept.values()))

    def kind_of(value: GradValue | None) -> str | None:
        if _batchable(value) and id(value) not in suspects:
            return ""  # its norm is finite: so is every value
        return nonfinite_kind(value)

    if _all_finite(recording.steps, kind_of):  # the usual case: nothing to look for
        for step in recording.steps:
            step.nonfinite_origin = step.nonfinite_sum = ()
        return
    for step in recording.steps:
        sent = [(slot, kind_of(value)) for slot, value in enumerate(step.grad_inputs)]
        bad = tuple((slot, kind) for slot, kind in sent if kind)
        if bad and all(kind_of(value) == "" for value in step.grad_outputs):
            step.nonfinite_origin = bad
        else:
            step.nonfinite_origin = ()
        step.nonfinite_sum = _overflowed_sums(recording, step, kind_of)


def _all_finite(steps: list[Step], kind_of: Callable[[GradValue | None], str | None]) -> bool:
    """Whether no step sent or received a value known to hold NaN or Inf."""
    for step in steps:
        for values in (step.grad_inputs, step.grad_outputs):
            for value in values:
                if isinstance(value, Summary):
                    if value.nan or value.inf:
                        return False
                elif value is not None and kind_of(value):
                    return False
    return True


def _overflowed_sums(
    recording: Recording, step: Step, kind_of: Callable[[GradValue | None], str | None]
) -> tuple[tuple[int, str], ...]:
    """(output, kind) of each non-finite gradient the step received where two or more
    finite ones were sent into it (and no hook changed it): the engine's sum overflowed.
    ``kind_of``: ``nonfinite_kind``, answered from the batched norms where they tell."""
    hooked = {change.slot for change in step.hook_changes if change.where == "received"}
    found = []
    for nr, received in enumerate(step.grad_outputs):
        if nr in hooked or received is None:
            continue
        kind = kind_of(received)
        if not kind:
            continue
        parts = sent_into(recording, step, nr)
        if len(parts) >= 2 and all(kind_of(part) == "" for part in parts):
            found.append((nr, kind))
    return tuple(found)


def sum_overflow_text(step: Step) -> str:
    """'Inf first appears here: the engine added the finite gradients sent into
    AccumulateGrad (output 0), and their sum overflowed float16.'"""
    parts = []
    for nr, kind in step.nonfinite_sum:
        value = step.grad_outputs[nr]
        dtype = dtype_name(value.dtype) if isinstance(value, torch.Tensor) else ""
        if isinstance(value, Summary):
            dtype = value.dtype
        parts.append(f"{kind} (output {nr}, {dtype})")
    return (
        f"{' and '.join(parts)} first appears here: the gradients sent into {step.type_name} "
        "were all finite, but the engine's sum of them overflowed."
    )


def _batchable(value: GradValue | None) -> bool:
    """A dense tensor with values whose finiteness ``_suspects`` can tell in a batch."""
    return (
        isinstance(value, torch.Tensor)
        and value.layout == torch.strided
        and not value.is_meta
        and (value.is_floating_point() or value.is_complex())
    )


def _suspects(tensors: list[torch.Tensor]) -> set[int]:
    """The ids of the tensors that may hold NaN or Inf: those whose norm is not finite.

    One ``_foreach_norm`` per device and dtype instead of three calls per tensor (the check
    cost more than a tenth of recording a 500-node MLP). A huge finite tensor whose norm
    overflows is a false suspect: the exact check that follows clears it.
    """
    groups: dict[tuple[torch.device, torch.dtype], list[torch.Tensor]] = {}
    for tensor in tensors:
        if not _batchable(tensor):
            continue
        groups.setdefault((tensor.device, tensor.dtype), []).append(tensor)
    suspects: set[int] = set()
    for group in groups.values():
        try:
            with torch.no_grad():  # create_graph=True keeps gradients with graphs of their own
                norms = torch.stack(torch._foreach_norm(group))
        except (RuntimeError, AttributeError):  # no batched norm here: check each exactly
            suspects.update(id(tensor) for tensor in group)
            continue
        bad = ~torch.isfinite(norms)
        if bool(bad.any()):
            suspects.update(id(group[i]) for i in bad.nonzero().flatten().tolist())
    return suspects
