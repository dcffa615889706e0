"""What one ``optimizer.step()`` did, as plain data (stdlib only, JSON round-trip).

For each parameter: its value before and after, the gradient the step used (and whether
``.grad`` already held one before this backward, so that the step used their sum), the
optimizer state it read and wrote (SGD's ``momentum_buffer``, Adam's ``exp_avg`` and
``exp_avg_sq``, ``step``), and the size of the update against the weight.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gradviz.model.recording import Recording
from gradviz.model.values import Scalar, Summary

__all__ = ["OPTSTEP_FORMAT", "OptimizerStep", "ParamStep", "StepSettings"]

OPTSTEP_FORMAT = "gradviz.optimizer-step/1"


def _summary(data: Mapping[str, Any] | None) -> Summary | None:
    return None if data is None else Summary.from_dict(data)


def _dict(summary: Summary | None) -> dict[str, Any] | None:
    return None if summary is None else summary.to_dict()


@dataclass(frozen=True)
class ParamStep:
    """One parameter through one step; norms are L2 norms computed in float64."""

    name: str
    group: int
    before: Summary
    after: Summary
    grad: Summary | None  # the .grad the step used (None: the optimizer skipped it)
    grad_before_backward: Summary | None  # .grad left over from before: accumulated
    update: Summary  # after - before
    weight_norm: float  # ||before||
    update_norm: float  # ||after - before||
    grad_norm: float | None
    state_before: dict[str, Summary | Scalar] = field(default_factory=dict)
    state_after: dict[str, Summary | Scalar] = field(default_factory=dict)
    after_norm: float | None = None  # ||after|| (None: not measured, an older file)

    @property
    def ratio(self) -> float | None:
        """The update-to-weight ratio ||Δw|| / ||w|| (None for an all-zero weight)."""
        return None if self.weight_norm == 0 else self.update_norm / self.weight_norm

    @property
    def accumulated(self) -> bool:
        return self.grad_before_backward is not None

    @property
    def skipped(self) -> bool:
        return self.grad is None

    def to_dict(self) -> dict[str, Any]:
        def state(values: Mapping[str, Summary | Scalar]) -> dict[str, Any]:
            return {
                k: {"summary": v.to_dict()} if isinstance(v, Summary) else {"value": v}
                for k, v in values.items()
            }

        return {
            "name": self.name,
            "group": self.group,
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "grad": _dict(self.grad),
            "grad_before_backward": _dict(self.grad_before_backward),
            "update": self.update.to_dict(),
            "weight_norm": self.weight_norm,
            "update_norm": self.update_norm,
            "grad_norm": self.grad_norm,
            "ratio": self.ratio,
            "state_before": state(self.state_before),
            "state_after": state(self.state_after),
            "after_norm": self.after_norm,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ParamStep:
        def state(values: Mapping[str, Any]) -> dict[str, Summary | Scalar]:
            return {
                k: Summary.from_dict(v["summary"]) if "summary" in v else v["value"]
                for k, v in values.items()
            }

        before = _summary(data["before"])
        after = _summary(data["after"])
        update = _summary(data["update"])
        assert before is not None and after is not None and update is not None
        return cls(
            name=data["name"],
            group=data["group"],
            before=before,
            after=after,
            grad=_summary(data["grad"]),
            grad_before_backward=_summary(data["grad_before_backward"]),
            update=update,
            weight_norm=data["weight_norm"],
            update_norm=data["update_norm"],
            grad_norm=data["grad_norm"],
            state_before=state(data["state_before"]),
            state_after=state(data["state_after"]),
            after_norm=data.get("after_norm"),
        )


@dataclass(frozen=True)
class StepSettings:
    """The optimizer's class and each parameter group's hyperparameters (lr, momentum...)."""

    optimizer: str
    groups: tuple[dict[str, Scalar], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer, "groups": [dict(g) for g in self.groups]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepSettings:
        return cls(data["optimizer"], tuple(dict(g) for g in data["groups"]))


@dataclass(eq=False)
class OptimizerStep:
    """A recorded backward pass followed by one ``optimizer.step()``.

    ``recording`` is the backward pass (stepped like any recording), ``params`` what the
    step did to each parameter, ``zero_grad`` whether ``.grad`` was cleared before the
    backward (``False``: the step used the gradients of several backward passes, summed).
    ``notes`` say what gradviz could not observe of the step (a closure's own backward
    passes, a layout it cannot read), so the numbers are never taken for more than they are.
    """

    recording: Recording
    settings: StepSettings
    params: list[ParamStep]
    notes: list[str] = field(default_factory=list)

    def param(self, name: str) -> ParamStep:
        for item in self.params:
            if item.name == name:
                return item
        raise KeyError(f"no parameter {name!r}; the step has: {[p.name for p in self.params]}")

    @property
    def accumulated(self) -> bool:
        """True when some ``.grad`` held a gradient before this backward (no zero_grad)."""
        return any(p.accumulated for p in self.params)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": OPTSTEP_FORMAT,
            "settings": self.settings.to_dict(),
            "params": [p.to_dict() for p in self.params],
            "notes": list(self.notes),
            "recording": self.recording.to_dict(),
        }
