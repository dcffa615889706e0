"""Words for one recorded optimizer step: the rule, each parameter's change, and what
``zero_grad`` (or its absence) does to the next step."""

from __future__ import annotations

from gradviz.model.optstep import OptimizerStep, ParamStep
from gradviz.model.values import Summary, format_number

__all__ = ["describe_step", "update_rule"]

_RULES = {
    "SGD": "w ← w − lr·g (g += weight_decay·w first); with momentum μ: buf ← μ·buf + g "
    "(buf = g on the first step), w ← w − lr·buf",
    "Adam": "m ← β1·m + (1−β1)·g, v ← β2·v + (1−β2)·g², w ← w − lr·m̂/(√v̂ + eps) with "
    "m̂ = m/(1−β1^t), v̂ = v/(1−β2^t) (weight_decay adds weight_decay·w to g)",
    "AdamW": "w ← w − lr·weight_decay·w (decoupled), then Adam's update: m ← β1·m + (1−β1)·g, "
    "v ← β2·v + (1−β2)·g², w ← w − lr·m̂/(√v̂ + eps)",
}


def update_rule(optimizer: str) -> str:
    """The update the optimizer applies, in one line ("" for one gradviz does not know)."""
    return _RULES.get(optimizer, "")


def _state_text(state: dict[str, Summary | float | int | bool | str]) -> str:
    if not state:
        return "none yet"
    parts = []
    for key, value in state.items():
        if isinstance(value, Summary):
            parts.append(f"{key} {value.text(30)}")
        else:
            parts.append(f"{key}={format_number(value)}")
    return ", ".join(parts)


def _param_text(item: ParamStep) -> str:
    if item.skipped:
        return f"{item.name}: .grad is None, so the optimizer skipped it (unchanged)."
    ratio = item.ratio
    ratio_text = "n/a (zero weight)" if ratio is None else f"{ratio:.3g}"
    grad = "" if item.grad_norm is None else f"‖g‖={item.grad_norm:.4g}, "
    lines = [
        f"{item.name}: {grad}‖w‖={item.weight_norm:.4g}, ‖Δw‖={item.update_norm:.4g}, "
        f"update/weight={ratio_text}",
        f"  before {item.before.text(40)}  after {item.after.text(40)}",
        f"  state before: {_state_text(item.state_before)}",
        f"  state after:  {_state_text(item.state_after)}",
    ]
    if item.accumulated:
        lines.append(
            "  .grad already held a gradient before this backward: the step used the sum "
            "(accumulation)"
        )
    return "\n".join(lines)


def describe_step(step: OptimizerStep) -> str:
    """The whole step as text: the rule, every parameter, and the next step's ``.grad``."""
    settings = step.settings
    head = [f"{settings.optimizer} step over {len(step.params)} parameters."]
    rule = update_rule(settings.optimizer)
    if rule:
        head.append(f"Rule: {rule}.")
    for index, group in enumerate(settings.groups):
        shown = ", ".join(
            f"{k}={format_number(v)}"
            for k, v in group.items()
            if k in ("lr", "momentum", "betas", "eps", "weight_decay", "nesterov", "dampening")
        )
        head.append(f"Group {index}: {shown}.")
    body = [_param_text(p) for p in step.params]
    if step.accumulated:
        tail = (
            "Some .grad held gradients before this backward (zero_grad() was not called), "
            "so this step used the sum of several backward passes: gradient accumulation."
        )
    else:
        tail = "Every .grad was empty before this backward: the step used this loss alone."
    tail += (
        " After step(), .grad still holds these gradients: call optimizer.zero_grad() "
        "(sets .grad to None) before the next backward, or that backward adds to them."
    )
    notes = [f"Note: {note}." for note in step.notes]
    return "\n".join(head + body + [tail] + notes)
