"""The stepper's explanation overlays as compact data: memory, gradient health, a diff.

The browser (``frontend/src/overlays/``) draws them as toggles on the replay; everything here is
plain JSON of numbers, aligned with the replay's schedule so that no element id is sent
twice (page weight: a 4-layer GPT page stays under 1.5 MB per 1,000 nodes).

- ``memory``: what each node's saved tensors hold and, per step, what is freed, what is in
  flight and in ``.grad`` (``gradviz.analysis.memory``); the browser sums them up.
- ``health``: log10‖g‖ of each scheduled edge, in ``schedule["edges"]`` order, with the
  vanishing and exploding thresholds (``gradviz.analysis.health``), and per module the
  norm of its parameters' gradients after each step that added to it.
- ``diff``: per node of recording A, the norms of what it sent in A and in B, whether they
  are equal, and the nodes found in one run only (``gradviz.analysis.diff``).
- ``optimizer``: an optimizer step's panel (``gradviz.replay.optstep``).

``OVERLAYS`` is where every overlay is registered: the stepper ships the explanations'
front end where the data has one of their keys, makes the data of those every replay
carries, and the front end's build finds each one's module by its key
(``frontend/src/overlays/<key>.js``, its default export; ``frontend/build.mjs``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gradviz.analysis.diff import RecordingDiff
from gradviz.analysis.health import gradient_health
from gradviz.analysis.memory import saved_memory
from gradviz.model.recording import Recording
from gradviz.model.values import Role

__all__ = [
    "OVERLAYS",
    "Overlay",
    "diff_data",
    "explained",
    "health_data",
    "memory_data",
    "overlay_data",
    "replay_overlay_keys",
]


def _short(value: float) -> float:
    """Four significant digits: what a panel or a bar can show."""
    return float(f"{value:.4g}")


def memory_data(recording: Recording) -> dict[str, Any] | None:
    """Saved bytes per node, and per step what was freed, in flight and in ``.grad``
    (None when the graph saved nothing, or was not traced live)."""
    timeline = saved_memory(recording)
    nodes = {node: size for node, size in timeline.node_bytes.items() if size}
    if not nodes:
        return None
    grads: list[list[int]] = []
    for step in timeline.steps:
        if not grads or grads[-1][1] != step.grads:
            grads.append([step.index, step.grads])
    return {
        "nodes": nodes,
        "saved": timeline.saved_total,
        "freed": [[s.index, s.freed] for s in timeline.steps if s.freed],
        "flight": [s.in_flight for s in timeline.steps],
        "grads": grads,
        "peak": timeline.peak,
        "peak_step": timeline.peak_step,
        "owned": timeline.leaf_owned,
        "retained": timeline.retained,
        **({"ckpt": list(timeline.checkpointed)} if timeline.checkpointed else {}),
        **({"ckpt_whole": list(timeline.reentrant)} if timeline.reentrant else {}),
    }


def _log(norm: float | None, band: str) -> float | str | None:
    if band == "zero":
        return "z"
    if band == "nonfinite":
        return "n"
    if norm is None or norm <= 0 or math.isinf(norm) or math.isnan(norm):
        return None
    return round(math.log10(norm), 2)


def health_data(recording: Recording, schedule: dict[str, Any], prefix: str) -> dict[str, Any]:
    """log10‖g‖ per scheduled edge ("z": zero, "n": NaN/Inf, None: unknown) and the
    per-module norms of the parameters' gradients as the steps add to them; per leaf when
    no leaf belongs to a module (a lesson's ``w`` and ``b``), where one "(top level)" row
    would say nothing."""
    health = gradient_health(recording)
    logs: dict[str, float | str | None] = {}
    for key, edge in health.edges.items():
        logs[f"{prefix}_e_{key.replace('.', '_')}"] = _log(edge.norm, edge.band)
    hits_by_leaf: list[tuple[str, int, float]] = []
    for record in recording.graph.tensors:
        norm = health.leaf_norms.get(record.name or "")
        if record.role is not Role.LEAF or norm is None or record.node_id is None:
            continue
        step = recording.step_for(record.node_id)
        if step is not None:
            hits_by_leaf.append((record.name or "", step.index, norm))
    by_leaf = all("." not in name for name, _, _ in hits_by_leaf)
    per_module: dict[str, list[tuple[int, float]]] = {}
    for name, index, norm in hits_by_leaf:
        row = name if by_leaf else name.rpartition(".")[0]
        per_module.setdefault(row, []).append((index, norm))
    modules: list[tuple[str, list[tuple[int, float]]]] = []
    for module, hits in per_module.items():
        series: list[tuple[int, float]] = []
        squares = 0.0
        for index, norm in sorted(hits):
            squares += norm * norm
            if series and series[-1][0] == index:
                series.pop()
            series.append((index, _short(math.sqrt(squares))))
        modules.append((module or "(top level)", series))
    modules.sort(key=lambda m: m[1][0][0])  # in the order backward reaches them
    return {
        "v": round(math.log10(health.vanishing_below), 3),
        "x": round(math.log10(health.exploding_above), 3),
        "edges": [logs.get(element) for element in schedule["edges"]],
        "modules": modules,
        "by": "leaf" if by_leaf else "module",
    }


def diff_data(diff: RecordingDiff) -> dict[str, Any]:
    """Per node of A ``[‖A‖, ‖B‖, same, step in B]`` (norms to 6 digits, None unknown),
    the nodes in one run only (B's as ``b_<id>``, as in the union graph), and the first
    differing step of A with its node."""

    def norm(value: float | None) -> float | None:  # six digits: the ratio's four hold
        return None if value is None else float(f"{value:.6g}")

    first = diff.first_difference
    return {
        "nodes": {
            c.node_a: [norm(c.norm_a), norm(c.norm_b), int(c.same), c.step_b] for c in diff.changes
        },
        "only_a": list(diff.only_a),
        "only_b": [f"b_{n}" for n in diff.only_b],
        "first": None if first is None else first.step_a,
        "first_node": None if first is None else first.node_a,
        "steps_b": len(diff.b.steps),
    }


# what an overlay every replay carries makes of it: (recording, schedule, id prefix) -> its
# data, or None where it has nothing to show
OverlayData = Callable[[Recording, dict[str, Any], str], dict[str, Any] | None]


@dataclass(frozen=True)
class Overlay:
    """An explanation drawn over the replay: ``key`` is the key of its data in the page's
    data and the name of its front-end module (``frontend/src/overlays/<key>.js``);
    ``data`` makes that data for every replay, None where the page that has it adds it
    itself (a diff's page, an optimizer step's)."""

    key: str
    data: OverlayData | None = None


def _memory(recording: Recording, schedule: dict[str, Any], prefix: str) -> dict[str, Any] | None:
    return memory_data(recording)


# every overlay, in the order the front end makes them (their toggles, their panel rows)
OVERLAYS = (
    Overlay("diff"),
    Overlay("memory", _memory),
    Overlay("health", health_data),
    Overlay("optimizer"),
)


def explained(data: Mapping[str, Any]) -> bool:
    """Whether a page's data has an overlay's: the page then ships the explanations' front
    end (their code only where they have data)."""
    return any(overlay.key in data for overlay in OVERLAYS)


def replay_overlay_keys() -> tuple[str, ...]:
    """The keys of the overlays every replay carries (a page's Memory and Health toggles),
    which a page too heavy with them leaves out."""
    return tuple(overlay.key for overlay in OVERLAYS if overlay.data is not None)


def overlay_data(recording: Recording, schedule: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The data of every overlay a replay carries (each only where it has something)."""
    data: dict[str, Any] = {}
    for overlay in OVERLAYS:
        made = None if overlay.data is None else overlay.data(recording, schedule, prefix)
        if made is not None:
            data[overlay.key] = made
    return data
