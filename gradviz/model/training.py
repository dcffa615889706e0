"""A training run as plain data: per training step, each parameter's gradient norm, the size
of its update, the loss and each parameter group's learning rate (stdlib only).

Memory is bounded and known: every kept step costs ``8 * (2 * P + G + 2)`` bytes, P the
parameter tensors and G the parameter groups (float64 in ``array``s: P gradient norms, P
update norms, the loss, the step's number and G learning rates), plus the full recordings of
the steps asked for. A norm is stored as PyTorch computed it (``torch.linalg.vector_norm`` of
``.grad``, widened to float64 without rounding); a module's norm is derived from its
parameters' as ``sqrt(sum(norm**2))`` in float64, equal to the norm over the module's
concatenated gradients up to rounding (relative 1e-6 for float32 gradients).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from gradviz.errors import GradvizError, InvalidArgument

__all__ = [
    "EXPLODING_ABOVE",
    "NO_GRAD",
    "TRAINING_FORMAT",
    "VANISHING_BELOW",
    "NonFinite",
    "Onset",
    "TrainingRun",
    "owner_of",
]

TRAINING_FORMAT = "gradviz.training-run/1"
VANISHING_BELOW = 1e-6  # the same bands as a single backward's health (analysis.health)
EXPLODING_ABOVE = 1e3
NO_GRAD = -1.0  # stored for a parameter whose .grad was None at that step (norms are >= 0)


def owner_of(name: str) -> str:
    """The module path that owns parameter ``name`` (``"enc.0.weight"`` -> ``"enc.0"``;
    a parameter of the top module -> ``""``)."""
    return name.rpartition(".")[0]


@dataclass(frozen=True)
class NonFinite:
    """The first training step whose loss or some gradient norm was NaN or Inf.

    ``loss`` is the step's loss (None: not known); ``params`` the parameters whose
    gradient norm was not finite at that step, ``modules`` their owners (both in the
    model's parameter order). A norm can also overflow although every element is finite
    (float32 elements above ~1e19): that counts too, as a plain ``p.grad.norm()`` would."""

    step: int
    loss: float | None
    loss_nonfinite: bool
    params: tuple[str, ...]
    modules: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "loss": _json_float(self.loss),
            "loss_nonfinite": self.loss_nonfinite,
            "params": list(self.params),
            "modules": list(self.modules),
        }


@dataclass(frozen=True)
class Onset:
    """The first kept step at which a module's gradient norm crossed a threshold."""

    module: str
    step: int
    norm: float
    threshold: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "step": self.step,
            "norm": _json_float(self.norm),
            "threshold": self.threshold,
        }


@dataclass
class TrainingRun:
    """What ``watch_training`` kept: one row per kept training step.

    ``params`` names the parameter tensors (module paths, ``fc1.weight``), ``groups`` the
    optimizer's parameter group of each (-1: not in the optimizer). Rows: ``steps`` (the
    training step numbers, 0-based: the number of ``optimizer.step()`` calls before it),
    ``losses`` (NaN when unknown: see ``has_loss``), ``grad_norms`` and ``update_norms``
    (``len(params)`` per row, ``NO_GRAD`` where ``.grad`` was None or nothing was measured:
    a step recorded without an optimizer step after it, or ``updates=False``), ``lrs``
    (one per group). ``recordings`` maps a step to its full recording, for the steps
    asked for; ``edge_norms`` (with ``edges=True``) maps a step to the norm of
    the gradient each backward edge sent, by the edge keys of a recording of that graph
    (``"n3.0"``: slot 0 of node n3), about 100 bytes per edge per step as Python dicts;
    ``graph`` the first watched backward's graph (plain data, drawn once by the film
    strip and recoloured per step)."""

    params: list[str]
    groups: list[int]
    n_groups: int
    every: int = 1
    steps: array[int] = field(default_factory=lambda: array("q"))
    losses: array[float] = field(default_factory=lambda: array("d"))
    has_loss: array[int] = field(default_factory=lambda: array("b"))
    grad_norms: array[float] = field(default_factory=lambda: array("d"))
    update_norms: array[float] = field(default_factory=lambda: array("d"))
    lrs: array[float] = field(default_factory=lambda: array("d"))
    recordings: dict[int, Any] = field(default_factory=dict)
    edge_norms: dict[int, dict[str, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # the first watched backward's graph as plain data (``Graph``, no live torch objects):
    # the layout the film strip recolours per step; None before any backward
    graph: Any = field(default=None, repr=False, compare=False)
    # set by the capture while training runs: brings pending rows in before a query
    _settle: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    _log: Callable[[Any], None] | None = field(default=None, repr=False, compare=False)

    # -- building ------------------------------------------------------------------------
    def add_row(
        self,
        step: int,
        loss: float | None,
        grad_norms: Sequence[float],
        update_norms: Sequence[float],
        lrs: Sequence[float],
    ) -> None:
        """Append one training step's row (the capture's job)."""
        self.steps.append(step)
        self.losses.append(math.nan if loss is None else loss)
        self.has_loss.append(0 if loss is None else 1)
        self.grad_norms.extend(grad_norms)
        self.update_norms.extend(update_norms)
        self.lrs.extend(lrs)

    def log(self, loss: Any) -> None:
        """Give the loss of the current step yourself, when the tensor ``backward()`` runs
        on is not it (a scaled loss under AMP, a sum of several); only inside the block."""
        if self._log is None:
            raise GradvizError("run.log(loss) works only inside the watch_training block")
        self._log(loss)

    def _ready(self) -> None:
        if self._settle is not None:
            self._settle()

    # -- reading -------------------------------------------------------------------------
    def __len__(self) -> int:
        self._ready()
        return len(self.steps)

    @property
    def modules(self) -> list[str]:
        """The owning modules, in the order of their first parameter."""
        return list(dict.fromkeys(owner_of(name) for name in self.params))

    def summary_text(self) -> str:
        """One line: the kept steps, the parameters, the recordings, the first non-finite."""
        bad = self.first_nonfinite()
        return (
            f"a training run of {len(self)} kept steps, {len(self.params)} parameter tensors, "
            f"recorded in full: {sorted(self.recordings) or 'none'}, first non-finite: "
            f"{'none' if bad is None else f'step {bad.step}'}"
        )

    def bytes_per_step(self) -> int:
        """The memory one kept step costs (the arrays' items), recordings not counted."""
        return 8 * (2 * len(self.params) + self.n_groups + 2) + 1

    def loss(self, row: int) -> float | None:
        self._ready()
        return self.losses[row] if self.has_loss[row] else None

    def _row(self, values: array[float], row: int) -> list[float | None]:
        width = len(self.params)
        return [None if v == NO_GRAD else v for v in values[row * width : (row + 1) * width]]

    def grad_norm(self, param: str) -> list[float | None]:
        """``param``'s gradient norm at every kept step (None: no gradient that step)."""
        self._ready()
        index = self._index(param)
        width = len(self.params)
        return [_known(v) for v in self.grad_norms[index::width]]

    def update_norm(self, param: str) -> list[float | None]:
        """‖Δw‖ of ``param`` at every kept step (None: not measured)."""
        self._ready()
        index = self._index(param)
        width = len(self.params)
        return [_known(v) for v in self.update_norms[index::width]]

    def lr(self, group: int = 0) -> list[float]:
        """The learning rate group ``group`` stepped with at every kept step."""
        self._ready()
        return list(self.lrs[group :: self.n_groups]) if self.n_groups else []

    def module_norm(self, module: str) -> list[float | None]:
        """The norm over the gradients of the parameters ``module`` owns directly, at every
        kept step: ``sqrt(sum(norm**2))`` in float64 (None: none of them had a gradient)."""
        self._ready()
        members = [i for i, name in enumerate(self.params) if owner_of(name) == module]
        if not members:
            raise InvalidArgument(
                f"no parameter is owned by module {module!r}; modules: {self.modules}"
            )
        return [self._module_value(row, members) for row in range(len(self.steps))]

    def _module_value(self, row: int, members: list[int]) -> float | None:
        width = len(self.params)
        values = [self.grad_norms[row * width + i] for i in members]
        present = [v for v in values if v != NO_GRAD]
        if not present:
            return None
        return math.sqrt(math.fsum(v * v for v in present))

    def module_norms(self) -> dict[str, list[float | None]]:
        return {module: self.module_norm(module) for module in self.modules}

    def _index(self, param: str) -> int:
        try:
            return self.params.index(param)
        except ValueError:
            raise InvalidArgument(f"no parameter {param!r}; parameters: {self.params}") from None

    # -- what went wrong, and when -------------------------------------------------------
    def first_nonfinite(self) -> NonFinite | None:
        """The first kept step whose loss or some parameter's gradient norm was NaN or Inf
        (None: every value was finite)."""
        self._ready()
        width = len(self.params)
        for row, step in enumerate(self.steps):
            loss = self.losses[row] if self.has_loss[row] else None
            norms = self.grad_norms[row * width : (row + 1) * width]
            bad = [i for i, v in enumerate(norms) if not math.isfinite(v)]
            loss_bad = loss is not None and not math.isfinite(loss)
            if bad or loss_bad:
                names = tuple(self.params[i] for i in bad)
                owners = tuple(dict.fromkeys(owner_of(n) for n in names))
                return NonFinite(step, loss, loss_bad, names, owners)
        return None

    def vanishing(self, threshold: float = VANISHING_BELOW) -> dict[str, Onset]:
        """Per module, the first kept step whose gradient norm was below ``threshold``
        (modules that never were are left out); a zero norm counts, a missing one not."""
        return self._onsets(threshold, lambda norm: norm < threshold)

    def exploding(self, threshold: float = EXPLODING_ABOVE) -> dict[str, Onset]:
        """Per module, the first kept step whose gradient norm was above ``threshold``
        (Inf counts; NaN does not: see ``first_nonfinite``)."""
        return self._onsets(threshold, lambda norm: norm > threshold)

    def _onsets(self, threshold: float, crossed: Callable[[float], bool]) -> dict[str, Onset]:
        if not (isinstance(threshold, int | float) and threshold > 0):
            raise InvalidArgument(f"threshold must be a positive number, not {threshold!r}")
        found: dict[str, Onset] = {}
        for module, norms in self.module_norms().items():
            for row, norm in enumerate(norms):
                if norm is not None and crossed(norm):
                    found[module] = Onset(module, self.steps[row], norm, float(threshold))
                    break
        return found

    # -- as data -------------------------------------------------------------------------
    def rows(self) -> Iterator[dict[str, Any]]:
        """Each kept step as a dict (what ``to_dict`` lists)."""
        self._ready()
        for row, step in enumerate(self.steps):
            yield {
                "step": step,
                "loss": _json_float(self.loss(row)),
                "lr": list(self.lrs[row * self.n_groups : (row + 1) * self.n_groups]),
                "grad_norms": [_json_float(v) for v in self._row(self.grad_norms, row)],
                "update_norms": [_json_float(v) for v in self._row(self.update_norms, row)],
            }

    def to_dict(self) -> dict[str, Any]:
        """The run as JSON-ready data: NaN and Inf as the strings "NaN", "Infinity" and
        "-Infinity", a missing value as null; ``bytes_per_step`` states the memory."""
        nonfinite = self.first_nonfinite()
        return {
            "format": TRAINING_FORMAT,
            "params": list(self.params),
            "modules": {name: owner_of(name) for name in self.params},
            "groups": list(self.groups),
            "every": self.every,
            "bytes_per_step": self.bytes_per_step(),
            "steps": list(self.rows()),
            "recorded_steps": sorted(self.recordings),
            "edge_norms": {
                str(step): {k: _json_float(v) for k, v in norms.items()}
                for step, norms in self.edge_norms.items()
            },
            "first_nonfinite": None if nonfinite is None else nonfinite.to_dict(),
            "vanishing": {m: o.to_dict() for m, o in self.vanishing().items()},
            "exploding": {m: o.to_dict() for m, o in self.exploding().items()},
            "notes": list(self.notes),
        }


def _known(value: float) -> float | None:
    return None if value == NO_GRAD else value


def _json_float(value: float | None) -> float | str | None:
    """NaN and Inf as strings: JSON has no literal for them."""
    if value is None or math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"
