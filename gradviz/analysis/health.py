"""Gradient health: how large each gradient is (log10 of its L2 norm) as backward runs.

Vanishing gradients shrink by orders of magnitude on the way to the first layers; exploding
ones grow. Every edge's gradient is recorded, so its norm per step, a band (vanishing /
healthy / exploding / zero / non-finite) and a per-module summary of the parameters'
gradients come from the recording alone. The drawing maps log10‖g‖ to the edge's width
and the band to its colour (``gradviz.render.reports.health_edge_styles``, colours from
the theme).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gradviz.errors import GradvizError
from gradviz.model.public import built
from gradviz.model.recording import GradValue, Recording, as_summary
from gradviz.model.values import Role

__all__ = ["EdgeHealth", "GradientHealth", "ModuleNorm", "gradient_health"]

VANISHING_BELOW = 1e-6  # a gradient norm under this is in the vanishing band
EXPLODING_ABOVE = 1e3  # over this, in the exploding band


@dataclass(frozen=True)
class EdgeHealth:
    """One edge's gradient: sent at ``step``, its norm, log10 of it, and its band."""

    key: str
    step: int
    norm: float | None  # None: the values were not available
    log10: float | None  # None for a zero or non-finite norm
    band: str  # "vanishing", "healthy", "exploding", "zero", "nonfinite", "unknown"


@dataclass(frozen=True)
class ModuleNorm:
    """The L2 norm over a module's parameter gradients (this backward's contribution)."""

    module: str  # "" for parameters not inside a named module
    params: tuple[str, ...]
    norm: float
    step: int  # the step at which its last parameter received its gradient


@dataclass
class GradientHealth:
    """Every edge's gradient norm and band, and the per-module norms of one recording."""

    recording: Recording
    edges: dict[str, EdgeHealth]
    modules: list[ModuleNorm]
    vanishing_below: float
    exploding_above: float
    leaf_norms: dict[str, float] = field(default_factory=dict)  # parameter name -> norm

    def at(self, step: int) -> dict[str, EdgeHealth]:
        """The edges whose gradient has been sent by ``step``."""
        return {k: e for k, e in self.edges.items() if e.step <= step}

    def band(self, name: str) -> list[EdgeHealth]:
        return [e for e in self.edges.values() if e.band == name]

    def to_dict(self) -> dict[str, Any]:
        return {
            "vanishing_below": self.vanishing_below,
            "exploding_above": self.exploding_above,
            "edges": {
                k: {"step": e.step, "norm": e.norm, "log10": e.log10, "band": e.band}
                for k, e in self.edges.items()
            },
            "modules": [
                {"module": m.module, "params": list(m.params), "norm": m.norm, "step": m.step}
                for m in self.modules
            ],
        }


def _band(norm: float | None, low: float, high: float) -> str:
    if norm is None:
        return "unknown"
    if math.isnan(norm) or math.isinf(norm):
        return "nonfinite"
    if norm == 0:
        return "zero"
    if norm < low:
        return "vanishing"
    return "exploding" if norm > high else "healthy"


def _norm(value: GradValue) -> float | None:
    summary = as_summary(value)
    if summary.nan or summary.inf:
        return math.inf if not summary.nan else math.nan
    return summary.norm


def gradient_health(
    recording: Recording,
    vanishing_below: float = VANISHING_BELOW,
    exploding_above: float = EXPLODING_ABOVE,
) -> GradientHealth:
    """Norms and bands of every gradient the recording saw (see the module docstring)."""
    if not 0 < vanishing_below < exploding_above:
        raise GradvizError(
            "gradient_health needs 0 < vanishing_below < exploding_above, e.g. "
            f"(1e-6, 1e3); got ({vanishing_below}, {exploding_above})"
        )
    graph = recording.graph
    edges: dict[str, EdgeHealth] = {}
    for number, step in enumerate(recording.steps, start=1):
        for edge in graph.out_edges(step.node_id):
            if edge.slot >= len(step.grad_inputs):
                continue
            value = step.grad_inputs[edge.slot]
            if value is None:
                continue
            norm = _norm(value)
            band = _band(norm, vanishing_below, exploding_above)
            healthy_range = band in ("vanishing", "healthy", "exploding")
            log = math.log10(norm) if norm is not None and healthy_range else None
            edges[edge.key] = EdgeHealth(edge.key, number, norm, log, band)
    leaf_norms: dict[str, float] = {}
    leaf_steps: dict[str, int] = {}
    for record in graph.tensors:
        if record.role is not Role.LEAF or not record.name or record.node_id is None:
            continue
        found = recording.step_for(record.node_id)
        if found is None or not found.grad_outputs or found.grad_outputs[0] is None:
            continue
        norm = _norm(found.grad_outputs[0])
        if norm is not None:
            leaf_norms[record.name] = norm
            leaf_steps[record.name] = found.index
    grouped: dict[str, list[str]] = {}
    for name in leaf_norms:
        grouped.setdefault(name.rpartition(".")[0], []).append(name)
    modules = [
        ModuleNorm(
            module,
            tuple(names),
            math.sqrt(sum(leaf_norms[n] ** 2 for n in names)),
            max(leaf_steps[n] for n in names),
        )
        for module, names in grouped.items()
    ]
    return built(GradientHealth)(
        recording, edges, modules, vanishing_below, exploding_above, leaf_norms
    )
