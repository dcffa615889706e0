"""The optimizer step's panel data: what ``optimizer.step()`` did, as compact JSON.

An optimizer step's page (``gradviz.stepper.optpage``) is the backward replay plus this
data under ``data["optimizer"]``; the front end shows it at the last step (button
"optimizer.step()", key ``s``) and marks the parameters' leaf boxes there. Numbers go to
four significant digits and tensors as one line of text, so a GPT's step adds a few kB.
"""

from __future__ import annotations

from typing import Any

from gradviz.explain.optstep import update_rule
from gradviz.model.optstep import OptimizerStep, ParamStep
from gradviz.model.recording import Recording
from gradviz.model.values import Role, Summary, format_number

__all__ = ["optimizer_data"]

_SHOWN = ("lr", "momentum", "dampening", "nesterov", "betas", "eps", "weight_decay", "amsgrad")


def _short(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.4g}")


def _state(values: dict[str, Any]) -> list[list[str]]:
    return [
        [key, value.text(48) if isinstance(value, Summary) else format_number(value)]
        for key, value in values.items()
    ]


def _leaf_boxes(recording: Recording) -> dict[str, str]:
    """Each named leaf's tensor box id (without the prefix), by name."""
    return {
        record.name: record.id
        for record in recording.graph.tensors
        if record.role is Role.LEAF and record.name
    }


def _param(item: ParamStep, boxes: dict[str, str]) -> list[Any]:
    """``[name, box, group, ‖w‖, ‖w'‖, ‖Δw‖, ratio, ‖g‖, accumulated, g, Δw, state
    before, state after]`` (``box``: the leaf's tensor id, None when not drawn)."""
    return [
        item.name,
        boxes.get(item.name),
        item.group,
        _short(item.weight_norm),
        _short(item.after_norm),
        _short(item.update_norm),
        _short(item.ratio),
        _short(item.grad_norm),
        int(item.accumulated),
        None if item.grad is None else item.grad.text(48),
        item.update.text(48),
        _state(item.state_before),
        _state(item.state_after),
    ]


def optimizer_data(step: OptimizerStep) -> dict[str, Any]:
    """The optimizer, its rule, each group's hyper-parameters and each parameter's row."""
    boxes = _leaf_boxes(step.recording)
    return {
        "optimizer": step.settings.optimizer,
        "rule": update_rule(step.settings.optimizer),
        "groups": [
            [[key, format_number(group[key])] for key in _SHOWN if key in group]
            for group in step.settings.groups
        ],
        "params": [_param(item, boxes) for item in step.params],
        "accumulated": int(step.accumulated),
    }
