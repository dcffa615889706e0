"""Breakpoints in a recorded backward pass: the steps where something worth stopping at happens.

A debugger's "run to": the first gradient that is NaN or Inf, the first whose norm is above
or below a threshold, the next step in a module (under ``gradviz.watch(model)``) or the next
node of a type. A step matches a gradient condition through any gradient it received
(``grad_outputs``) or sent (``grad_inputs``), so the step that made a gradient is the first
to match it. Conditions combine: a step matches when it meets every one given.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from gradviz.errors import InvalidArgument
from gradviz.model.recording import GradValue, Recording, Step, as_summary, summaries_once
from gradviz.model.values import Summary

__all__ = ["DEFAULT_NORM_ABOVE", "DEFAULT_NORM_BELOW", "breakpoint_data", "find_steps"]

# the thresholds the page's breakpoints use, as the gradient-health bands do
DEFAULT_NORM_ABOVE = 1e3
DEFAULT_NORM_BELOW = 1e-6


@dataclass(frozen=True)
class _Query:
    nonfinite: bool
    norm_above: float | None
    norm_below: float | None
    modules: frozenset[int] | None  # the module scopes a step's node must be made in
    type_name: str | None
    start: int


def find_steps(
    recording: Recording,
    *,
    nonfinite: bool = False,
    norm_above: float | None = None,
    norm_below: float | None = None,
    module: str | None = None,
    type: str | None = None,
    start: int = 1,
) -> list[Step]:
    """Breakpoints: the steps from ``start`` on (inclusive; 1..N), in the engine's order,
    that meet every condition given. ``nonfinite=True``: a gradient it received or sent is
    NaN or Inf; ``norm_above=`` / ``norm_below=``: one's L2 norm is strictly above / below
    the number (a NaN norm is neither); ``module="encoder.layer.3"``: its node was made in
    that module or a submodule (under ``gradviz.watch(model)``); ``type="MulBackward0"``:
    its node's type. ``rec.find(nonfinite=True)[0]`` is the first NaN or Inf;
    ``rec.find(module=m, start=s + 1)`` the next step in ``m`` after step ``s``
    (``Recording.find`` is this function)."""
    query = _query(recording, nonfinite, norm_above, norm_below, module, type, start)
    with summaries_once():
        return [
            step for step in recording.steps[query.start - 1 :] if _matches(recording, step, query)
        ]


def breakpoint_data(recording: Recording) -> dict[str, Any]:
    """What the stepper's "Run to" control needs: the first step of each fixed breakpoint
    (None: no such step), per step 0..N the smallest and largest gradient norm (None: no
    gradient with a norm; NaN norms left out, an Inf one kept, written "Infinity" in the
    page's JSON) and the steps with a NaN or Inf gradient, so the page finds other
    thresholds itself. Step 0 (the seed) shows the seeds' norms. The norms are the ones
    ``find`` compares, unrounded, so that the page stops where ``find`` does for any
    threshold. Under ``gradviz.watch(model)`` also ``scopes`` (each module call's path and
    the index of the call around it) and ``step_scopes`` (per step 0..N the innermost call
    its node was made in, or None), for "next step in a module"."""
    rows: list[tuple[float | None, float | None, bool]] = []
    with summaries_once():
        rows.append(_norm_row(recording.seeds.values()))
        rows.extend(_norm_row(_gradients(step)) for step in recording.steps)
    steps = range(1, len(rows))  # the breakpoints stop at backward steps, never the seed
    bad = [i for i in steps if rows[i][2]]
    above = next((i for i in steps if _above(rows[i][1], DEFAULT_NORM_ABOVE)), None)
    below = next((i for i in steps if _below(rows[i][0], DEFAULT_NORM_BELOW)), None)
    data: dict[str, Any] = {
        "nonfinite": bad[0] if bad else None,
        "norm_above": {"threshold": DEFAULT_NORM_ABOVE, "step": above},
        "norm_below": {"threshold": DEFAULT_NORM_BELOW, "step": below},
        "norms": [[low, high] for low, high, _ in rows],
        "nonfinite_steps": bad,
    }
    forward = recording.graph.forward
    if forward is not None and forward.modules:
        data["scopes"] = [[scope.path, scope.parent] for scope in forward.modules]
        data["step_scopes"] = [None] + [
            forward.node_modules.get(step.node_id) for step in recording.steps
        ]
    return data


# -- the conditions --------------------------------------------------------------------
def _gradients(step: Step) -> Iterable[GradValue]:
    return (v for v in (*step.grad_outputs, *step.grad_inputs) if v is not None)


def _is_nonfinite(summary: Summary) -> bool:
    return summary.nan or summary.inf


def _above(norm: float | None, threshold: float) -> bool:
    return norm is not None and norm > threshold


def _below(norm: float | None, threshold: float) -> bool:
    return norm is not None and norm < threshold


def _matches(recording: Recording, step: Step, query: _Query) -> bool:
    if query.type_name is not None and step.type_name != query.type_name:
        return False
    if query.modules is not None:
        forward = recording.graph.forward
        scope = None if forward is None else forward.node_modules.get(step.node_id)
        chain = set() if forward is None else {m.index for m in forward.module_chain(scope)}
        if not chain & query.modules:
            return False
    summaries = [as_summary(value) for value in _gradients(step)]
    if query.nonfinite and not any(_is_nonfinite(s) for s in summaries):
        return False
    if query.norm_above is not None:
        threshold = query.norm_above
        if not any(_above(s.norm, threshold) for s in summaries):
            return False
    if query.norm_below is not None:
        threshold = query.norm_below
        if not any(_below(s.norm, threshold) for s in summaries):
            return False
    return True


def _norm_row(values: Iterable[GradValue]) -> tuple[float | None, float | None, bool]:
    """The smallest and largest norm among the gradients (NaN norms left out, Inf kept: it
    is above every threshold, as in ``find``), and whether one was NaN or Inf."""
    summaries = [as_summary(value) for value in values]
    norms = [s.norm for s in summaries if s.norm is not None and not math.isnan(s.norm)]
    bad = any(_is_nonfinite(s) for s in summaries)
    return (min(norms) if norms else None, max(norms) if norms else None, bad)


# -- checking the arguments --------------------------------------------------------------
def _query(
    recording: Recording,
    nonfinite: object,
    norm_above: object,
    norm_below: object,
    module: object,
    type_name: object,
    start: object,
) -> _Query:
    if not isinstance(nonfinite, bool):
        raise InvalidArgument(f"nonfinite= takes True or False, not {nonfinite!r}")
    above = _threshold("norm_above", norm_above)
    below = _threshold("norm_below", norm_below)
    if not (nonfinite or above is not None or below is not None or module or type_name):
        raise InvalidArgument(
            "find() needs something to look for: nonfinite=True, norm_above=, norm_below=, "
            "module= or type= (e.g. rec.find(nonfinite=True))"
        )
    if isinstance(start, bool) or not isinstance(start, int):
        raise InvalidArgument(f"start= takes a step number (1..N), not {start!r}")
    if not 1 <= start <= max(len(recording.steps), 1):
        raise InvalidArgument(
            f"start={start} is outside the backward steps 1..{len(recording.steps)}"
        )
    return _Query(
        nonfinite,
        above,
        below,
        None if module is None else _modules(recording, module),
        None if type_name is None else _type(recording, type_name),
        start,
    )


def _threshold(name: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise InvalidArgument(f"{name}= takes a number (a gradient norm), not {value!r}")
    if value < 0:
        raise InvalidArgument(f"{name}= is compared with a norm, which is never negative: {value}")
    return float(value)


def _type(recording: Recording, type_name: object) -> str:
    if not isinstance(type_name, str):
        raise InvalidArgument(
            f"type= takes a node type name such as 'MulBackward0', not {type_name!r}"
        )
    known = sorted({step.type_name for step in recording.steps})
    if type_name not in known:
        raise InvalidArgument(
            f"no step of this recording runs a {type_name!r} node{_close(type_name, known)}"
        )
    return type_name


def _modules(recording: Recording, module: object) -> frozenset[int]:
    """The scopes (every call) of the module with this path; its submodules' nodes match
    through their chains."""
    if not isinstance(module, str):
        raise InvalidArgument(f"module= takes a module's path such as 'encoder.0', not {module!r}")
    forward = recording.graph.forward
    if forward is None or not forward.modules:
        raise InvalidArgument(
            "module= needs the modules of the forward pass: record it under "
            "gradviz.watch(model) (with gradviz.watch(model) as w: ...; rec = w.record(loss))"
        )
    found = frozenset(scope.index for scope in forward.modules if scope.path == module)
    if not found:
        known = sorted({scope.path for scope in forward.modules if scope.path})
        raise InvalidArgument(f"the watched model has no module {module!r}{_close(module, known)}")
    return found


def _close(wanted: str, known: list[str]) -> str:
    near = get_close_matches(wanted, known, n=5, cutoff=0.5)
    if near:
        return f"; did you mean {', '.join(map(repr, near))}?"
    shown = ", ".join(map(repr, known[:10])) + (", ..." if len(known) > 10 else "")
    return f"; it has {shown}" if known else ""
