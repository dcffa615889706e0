"""The leaves of ``gradviz.explore``: the user's function run on them, and a float64 check.

``explore(fn, a=2.0, b=3.0)`` runs ``fn(a=tensor(2.), b=tensor(3.))`` for the loss. Each
leaf is a fresh tensor that requires grad (a user's own tensor is copied, never changed), so
a run can be repeated with other values. The finite differences run ``fn`` again in float64
on copies: they say whether the chain rule's numbers and the function's slope agree.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import torch

from gradviz.errors import InvalidArgument, InvalidInput

__all__ = [
    "EDITABLE_ELEMENTS",
    "Estimate",
    "LeafFacts",
    "LeafValue",
    "check_function",
    "leaf_facts",
    "leaf_tensors",
    "run_loss",
]

# what a leaf may be given as: a number, a list of numbers, or a floating tensor
LeafValue: TypeAlias = float | Sequence[float] | torch.Tensor

# A leaf of at most this many elements gets a field per element and finite differences;
# a bigger one is shown but not editable (each element costs two more runs of fn).
EDITABLE_ELEMENTS = 8
RELATIVE_STEP = 1e-6  # the finite difference's h: RELATIVE_STEP * max(1, |x|)

LeafFunction = Callable[..., Any]


@dataclass(frozen=True)
class Estimate:
    """A central difference ``(f(x+h) - f(x-h)) / 2h`` of one element, and its ``h``;
    ``dtype``: what fn's result came out as (float64 unless a constant of fn's set it)."""

    value: float
    step: float
    dtype: str


@dataclass(frozen=True)
class LeafFacts:
    """One leaf as the explorer shows it: its values, autograd's gradient of each element
    (None: the loss does not reach the leaf) and, for a small leaf, each finite difference."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    values: tuple[float, ...]
    grads: tuple[float | None, ...]
    estimates: tuple[Estimate | None, ...]
    editable: bool

    def agrees(self, index: int) -> bool | None:
        """Autograd's gradient and the finite difference agree within what the recorded
        dtype allows (sqrt of its epsilon, relative); None where one is missing."""
        estimate = self.estimates[index]
        grad = self.grads[index]
        if estimate is None:
            return None
        got = 0.0 if grad is None else grad  # a leaf the loss does not reach: slope 0
        eps = torch.finfo(getattr(torch, self.dtype)).eps
        return abs(got - estimate.value) <= math.sqrt(eps) * max(1.0, abs(estimate.value))

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the widget."""
        return {
            "name": self.name,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "values": list(self.values),
            "grads": list(self.grads),
            "estimates": [
                None if e is None else {"value": e.value, "h": e.step, "dtype": e.dtype}
                for e in self.estimates
            ],
            "agree": [self.agrees(i) for i in range(len(self.values))],
            "editable": self.editable,
        }


def check_function(fn: object, names: list[str]) -> None:
    """``fn`` is callable and takes every leaf by keyword, and needs no other argument."""
    if not callable(fn):
        raise InvalidArgument(
            f"explore takes a function first, not a {type(fn).__name__}: "
            "gradviz.explore(lambda a, b: (a * b) ** 2, a=2.0, b=3.0)"
        )
    if not names:
        raise InvalidArgument(
            "explore needs the leaves as keywords, with their values: "
            "gradviz.explore(fn, a=2.0, b=3.0) runs fn(a=..., b=...)"
        )
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: the call will tell
        return
    parameters = signature.parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return
    by_keyword = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    unknown = [name for name in names if name not in by_keyword]
    if unknown:
        raise InvalidArgument(
            f"{_name(fn)} takes no argument {unknown[0]!r} (it takes {sorted(by_keyword)}): "
            "name each leaf after a parameter of fn"
        )
    missing = [
        p.name
        for p in parameters
        if p.default is p.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and p.name not in names
    ]
    if missing:
        raise InvalidArgument(
            f"{_name(fn)} needs {missing[0]!r} too: give its value, "
            f"gradviz.explore(fn, ..., {missing[0]}=1.0), or a default in fn"
        )


def leaf_tensors(values: Mapping[str, object]) -> dict[str, torch.Tensor]:
    """Each value as a fresh leaf that requires grad: a float (or int) as a 0-dim tensor of
    the default dtype, a list of numbers as a 1-dim one, a floating tensor copied with its
    dtype and shape (the caller's tensor is never changed)."""
    made: dict[str, torch.Tensor] = {}
    for name, value in values.items():
        if isinstance(value, torch.Tensor):
            if not value.is_floating_point():
                raise InvalidInput(
                    f"leaf {name!r} is a {value.dtype} tensor: gradients need a floating "
                    f"dtype, e.g. {name}=torch.tensor(..., dtype=torch.float64)"
                )
            made[name] = value.detach().clone().requires_grad_(True)
            continue
        try:
            if isinstance(value, bool | str):
                raise TypeError
            tensor = torch.tensor(value, dtype=torch.get_default_dtype())
        except (TypeError, ValueError, RuntimeError):
            raise InvalidInput(
                f"leaf {name!r} is {value!r:.60}: give a number ({name}=2.0), a list of "
                f"numbers or a floating-point tensor"
            ) from None
        made[name] = tensor.requires_grad_(True)
    return made


def run_loss(fn: LeafFunction, leaves: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """``fn(**leaves)``, checked to be a loss autograd can run backward from."""
    loss = fn(**leaves)
    if not isinstance(loss, torch.Tensor):
        raise InvalidInput(
            f"{_name(fn)} returned a {type(loss).__name__}, not a tensor: return the loss "
            "as a scalar tensor computed from the leaves"
        )
    if loss.numel() != 1:
        raise InvalidInput(
            f"{_name(fn)} returned a tensor of shape {tuple(loss.shape)}: explore needs a "
            "scalar loss (one element); reduce it, e.g. return y.sum()"
        )
    if loss.grad_fn is None:
        raise InvalidInput(
            f"{_name(fn)}'s result has no grad_fn: it was not computed from the leaves with "
            "autograd on (torch.no_grad? .detach()? .item()?), so there is no graph to show"
        )
    return loss


def leaf_facts(
    fn: LeafFunction, leaves: Mapping[str, torch.Tensor], check: bool = True
) -> list[LeafFacts]:
    """Each leaf's values and ``.grad`` (after the backward ran), and for a leaf of up to
    ``EDITABLE_ELEMENTS`` elements, when ``check``, a float64 central difference each."""
    facts = []
    for name, leaf in leaves.items():
        small = leaf.numel() <= EDITABLE_ELEMENTS
        values = tuple(float(v) for v in leaf.detach().reshape(-1).tolist())
        grad = leaf.grad
        grads: tuple[float | None, ...] = (
            (None,) * len(values)
            if grad is None
            else tuple(float(v) for v in grad.detach().reshape(-1).tolist())
        )
        estimates: tuple[Estimate | None, ...] = (None,) * len(values)
        if small and check:
            estimates = tuple(_central(fn, leaves, name, i) for i in range(len(values)))
        dtype = str(leaf.dtype).removeprefix("torch.")
        facts.append(LeafFacts(name, tuple(leaf.shape), dtype, values, grads, estimates, small))
    return facts


def _central(
    fn: LeafFunction, leaves: Mapping[str, torch.Tensor], name: str, index: int
) -> Estimate:
    """The central difference of the loss in element ``index`` of leaf ``name``, in float64."""
    point = {n: t.detach().to(torch.float64) for n, t in leaves.items()}
    x = float(point[name].reshape(-1)[index])
    h = RELATIVE_STEP * max(1.0, abs(x))
    ends = []
    for sign in (1.0, -1.0):
        moved = {n: t.clone() for n, t in point.items()}
        moved[name].view(-1)[index] = x + sign * h
        with torch.no_grad():
            loss = fn(**moved)
        ends.append(loss)
    dtype = str(ends[0].dtype).removeprefix("torch.")
    value = (float(ends[0]) - float(ends[1])) / (2 * h)
    return Estimate(value, h, dtype)


def _name(fn: object) -> str:
    return getattr(fn, "__name__", None) or "fn"
