"""The flow check: did every gradient arrive and leave as the graph computed it?

``record()`` runs it once the backward pass has finished. A step whose received or sent
gradient differs from what the graph implies was changed by a user's hook; the step gets a
``HookChange`` with the value before and after (see docs/architecture.md, "the flow check").
"""

from __future__ import annotations

import cmath
import math

import torch

from gradviz.model.recording import (
    GradValue,
    HookChange,
    Recording,
    Step,
    as_summary,
    value_text,
)

__all__ = ["check_flow", "same_sum", "sent_into", "sum_text"]


# -- the flow check ------------------------------------------------------------------------
def check_flow(recording: Recording) -> None:
    """Mark steps where a gradient is not what the graph computed: a user's hook changed it.

    Received gradient at output ``nr`` = seed + the sum of every edge into it with that
    ``input_nr``; what a node sent = what its op computed (recorded before the user's node
    hooks); at ``AccumulateGrad``, ``.grad`` must change by what was received. Each
    mismatch becomes a ``HookChange`` on the step, with the value before and after. Where
    the kept values cannot show it (meta tensors, NaN sums, complex statistics), the step is
    marked not verifiable (``flow_checked``) and ``flow_note`` says why.
    """
    for step in recording.steps:
        changes: list[HookChange] = []
        unverifiable: list[str] = []
        for nr, received in enumerate(step.grad_outputs):
            sent = sent_into(recording, step, nr)
            same = same_sum(received, sent)
            if same is None:
                unverifiable.append(f"output {nr}: {_why_unverifiable([received, *sent])}")
            elif not same:
                changes.append(HookChange("received", nr, *sum_text(sent), received))
        if step.sent_by_op is not None:
            for slot, (op_value, value) in enumerate(
                zip(step.sent_by_op, step.grad_inputs, strict=False)
            ):
                same = same_sum(value, [] if op_value is None else [op_value])
                if same is None:
                    unverifiable.append(f"slot {slot}: {_why_unverifiable([value, op_value])}")
                elif not same:
                    changes.append(HookChange("sent", slot, op_value, value_text(op_value), value))
        if step.finished and step.leaf_grad_after is not None and step.grad_outputs:
            before = step.leaf_grad_before
            received = step.grad_outputs[0]
            accumulated = _accumulated(before, received, step.leaf_grad_after)
            if accumulated is None:
                why = _why_unverifiable([before, received, step.leaf_grad_after])
                unverifiable.append(f".grad: {why}")
            elif not accumulated:
                parts = [received] if before is None else [before, received]
                total, text = sum_text(parts)  # type: ignore[arg-type]
                changes.append(HookChange("grad", 0, total, text, step.leaf_grad_after))
        step.hook_changes = changes
        step.flow_ok = not changes
        step.flow_checked = not unverifiable
        notes = [change.text() for change in changes]
        if unverifiable:
            notes.append("not verifiable at " + ", ".join(unverifiable))
        step.flow_note = "; ".join(notes)


def sent_into(recording: Recording, step: Step, nr: int) -> list[GradValue]:
    """What was sent into output ``nr`` of the step's node, in the order the engine added
    it up: the seed first, then each producer's gradient in the order the producers ran (a
    producer's slots in order). The engine's input buffer accumulates gradients as they
    arrive, ((seed + a) + b) + c, and floating-point sums depend on that order."""
    parts: list[tuple[int, int, GradValue]] = []
    seed = recording.seeds.get((step.node_id, nr))
    if seed is not None:
        parts.append((0, 0, seed))
    for edge in recording.graph.in_edges(step.node_id):
        if edge.input_nr != nr:
            continue
        producer = recording.step_for(edge.src)
        if producer is None or producer.index > step.index:
            continue
        value = producer.grad_inputs[edge.slot] if producer.grad_inputs else None
        if value is not None:
            parts.append((producer.index, edge.slot, value))
    parts.sort(key=lambda part: (part[0], part[1]))
    return [value for _, _, value in parts]


def sum_text(values: list[GradValue]) -> tuple[GradValue | None, str]:
    """What ``values`` add up to (None when only summaries of several are known), and the
    sum in words: '2 + 3 = 5', or 'nothing'."""
    total = _sum_of(values)
    text = " + ".join(value_text(v) for v in values) or "nothing"
    if total is not None and len(values) > 1:
        text += f" = {value_text(total)}"
    return total, text


def _sum_of(values: list[GradValue]) -> GradValue | None:
    """The total of what was sent, when gradviz can know it (tensors, or a single value),
    added up in the order given, in the gradients' own dtype, as the engine does."""
    if len(values) == 1:
        return values[0]
    if values and all(isinstance(v, torch.Tensor) for v in values):
        total = values[0].detach()  # type: ignore[union-attr]
        for value in values[1:]:
            total = total + value.detach()  # type: ignore[union-attr]
        return total
    return None


def _unavailable(value: GradValue | None) -> bool:
    if isinstance(value, torch.Tensor):
        return value.is_meta
    return value is not None and not value.available


def _why_unverifiable(values: list[GradValue | None]) -> str:
    """Why the kept values cannot show whether the gradients add up."""
    if any(_unavailable(v) for v in values):
        return "the values are not available (meta and fake tensors hold no data)"
    summaries = [as_summary(v) for v in values if v is not None]
    if any(s.finite is False for s in summaries):
        return "NaN or Inf in the summaries, whose sums cannot be compared"
    return "complex summaries keep no sum (record with keep='all' to check)"


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether ``a`` equals ``b`` as the engine computed it: bitwise in the usual case
    (gradviz adds in the engine's order, in the same dtype, so each add rounds alike);
    else within two units in the last place of the coarser dtype (1e-3 for float16),
    never more: a hook that scales a gradient by 1% is a change."""
    if a.shape != b.shape:
        return False
    if a.layout != torch.strided or b.layout != torch.strided:
        return _close_sparse(a, b)
    if a is b or torch.equal(a, b):  # the usual case, and one pass instead of allclose's many
        return True
    wide = torch.complex128 if a.is_complex() or b.is_complex() else torch.float64
    a_wide, b_wide = a.detach().to(wide), b.detach().to(wide)
    eps, tiny = _rounding(a.dtype, b.dtype)
    tolerance = 2 * (eps * b_wide.abs() + tiny)
    difference = (a_wide - b_wide).abs()
    both_nan = torch.isnan(a_wide) & torch.isnan(b_wide)  # nan on both sides: diverged alike
    return bool(((difference <= tolerance) | both_nan | (a_wide == b_wide)).all())


def _rounding(*dtypes: torch.dtype) -> tuple[float, float]:
    """The machine epsilon and smallest subnormal of the coarsest of the float dtypes
    (0, 0 for integers, which add exactly)."""
    eps = tiny = 0.0
    for dtype in dtypes:
        if dtype.is_floating_point or dtype.is_complex:
            info = torch.finfo(dtype)
            eps, tiny = max(eps, info.eps), max(tiny, info.smallest_normal * info.eps)
    return eps, tiny


def _close_sparse(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Sparse gradients (``nn.Embedding(sparse=True)``): compared through their stored
    values, never made dense (an embedding table's gradient can be huge)."""
    a, b = a.detach().to_sparse(), b.detach().to_sparse()
    difference = (a - b).coalesce().values()
    scale = torch.cat(
        [a.coalesce().values().abs().reshape(-1), b.coalesce().values().abs().reshape(-1)]
    )
    tolerance = 1e-7 + 1e-5 * (float(scale.max()) if scale.numel() else 0.0)
    return difference.numel() == 0 or bool(difference.abs().max() <= tolerance)


def _total(value: GradValue) -> complex | None:
    """The sum of all values, from the summary; None when it cannot say."""
    summary = as_summary(value)
    if not summary.available:
        return None
    if summary.complete:
        try:
            return sum((complex(v) for v in summary.values), 0j)
        except (TypeError, ValueError):
            return None
    return None if summary.mean is None else summary.mean * summary.numel


def _scale(values: list[GradValue]) -> float:
    scale = 0.0
    for value in values:
        summary = as_summary(value)
        if summary.min is None and summary.norm is not None:  # complex: |sum| <= sqrt(n)·norm
            scale += summary.norm * math.sqrt(max(summary.numel, 1))
            continue
        scale += max(abs(summary.min or 0.0), abs(summary.max or 0.0)) * max(summary.numel, 1)
    return scale


def same_sum(received: GradValue | None, sent: list[GradValue]) -> bool | None:
    """Whether ``received`` is the sum of ``sent``; None when the kept values cannot say."""
    if len(sent) == 1 and sent[0] is received:  # stored once: the producer's own value
        return True
    if received is None:
        return not sent or all(_is_zero(v) for v in sent)
    if any(_unavailable(v) for v in [received, *sent]):
        return None
    if not sent:
        return _is_zero(received)
    if all(isinstance(v, torch.Tensor) for v in [received, *sent]):
        return _close(received, _sum_of(sent))  # type: ignore[arg-type]
    return _sums_agree([received], sent)


def _sums_agree(left: list[GradValue], right: list[GradValue]) -> bool | None:
    """Whether the summed values of ``left`` and ``right`` agree, from summaries.

    A side holding NaN or Inf (a diverged model) has no total to compare (inf - inf is
    nan): against another non-finite side it cannot be told (None); against a finite one
    it is a change, unless the finite values are big enough for their sum to overflow
    their dtype (two float16 gradients of 40,000): then it cannot be told either."""
    totals: list[complex] = []
    for value in [*left, *right]:
        total = _total(value)
        if total is None:
            return None
        totals.append(total)
    lhs, rhs = sum(totals[: len(left)], 0j), sum(totals[len(left) :], 0j)
    if not cmath.isfinite(lhs) or not cmath.isfinite(rhs):
        if not cmath.isfinite(lhs) and not cmath.isfinite(rhs):
            return None
        return None if _may_overflow(right if cmath.isfinite(rhs) else left) else False
    # summaries hold float64 statistics of values the engine added in their own dtype:
    # each of the n terms may be off by its dtype's epsilon (float16: 1e-3, bfloat16: 8e-3)
    values = [*left, *right]
    eps = max([_summary_eps(value) for value in values] + [1e-4 / len(values)])
    return abs(lhs - rhs) <= len(values) * eps * _scale(values) + 1e-6


def _may_overflow(values: list[GradValue]) -> bool:
    """Whether adding up these finite values may overflow their dtype."""
    bound = 0.0
    largest = math.inf
    for value in values:
        summary = as_summary(value)
        if summary.min is None or summary.max is None:
            return True  # complex: no bound known
        bound += max(abs(summary.min), abs(summary.max))
        dtype = getattr(torch, summary.dtype, None)
        if isinstance(dtype, torch.dtype) and dtype.is_floating_point:
            largest = min(largest, float(torch.finfo(dtype).max))
    return len(values) > 1 and bound > largest


def _summary_eps(value: GradValue) -> float:
    dtype = getattr(torch, as_summary(value).dtype, None)
    if isinstance(dtype, torch.dtype) and (dtype.is_floating_point or dtype.is_complex):
        return float(torch.finfo(dtype).eps)
    return 0.0


def _is_zero(value: GradValue) -> bool:
    summary = as_summary(value)
    if summary.min is None:  # complex, or not available
        return summary.norm == 0
    return summary.min == 0 and summary.max == 0


def _accumulated(
    before: GradValue | None, received: GradValue | None, after: GradValue
) -> bool | None:
    """Whether ``.grad`` went from ``before`` to ``before + received``; None: cannot say."""
    if received is None or (before is None and after is received):
        return True
    if any(_unavailable(v) for v in (before, received, after)):
        return None
    if isinstance(after, torch.Tensor) and isinstance(received, torch.Tensor):
        expected = received.detach()
        if isinstance(before, torch.Tensor):
            expected = before.detach() + expected
        return _close(after, expected)
    parts = [received] if before is None else [before, received]
    return _sums_agree([after], parts)
