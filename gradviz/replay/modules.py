"""Module views of a ``watch(model)`` recording: one cluster per module call, or every
module below a depth drawn as one box that expands on a click; ``collapsed-auto`` draws the
modules ``gradviz.render.frontier`` picks by what the view shows (or those ``collapse=``
names), at mixed depths."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gradviz.model.recording import Recording
from gradviz.render import layered as biglayout
from gradviz.render.frontier import auto_frontier
from gradviz.render.theme import Theme
from gradviz.render.watched import collapsed_members

__all__ = [
    "AUTO_VIEW",
    "MAX_COLLAPSED_LAYOUTS",
    "MODULE_VIEW_MIN_NODES",
    "box_class",
    "module_css",
    "module_depths",
    "module_views",
    "view_collapse",
    "view_options",
    "view_render_options",
]


# -- module views: clusters, and modules below a depth drawn as one box -----------------------
MODULE_VIEW_MIN_NODES = 8  # smaller graphs read at a glance: no module views for them
MAX_COLLAPSED_LAYOUTS = 4  # collapse depths 0..3 at most, one layout each
AUTO_VIEW = "collapsed-auto"  # the modules the frontier picks (or collapse= names) as boxes


def module_depths(recording: Recording) -> list[int]:
    """The collapse depths that draw at least one module as a box: 0 .. deepest - 1."""
    forward = recording.graph.forward
    if forward is None or not forward.node_modules:
        return []
    deepest = max(len(forward.module_chain(m)) for m in set(forward.node_modules.values()))
    return list(range(min(deepest, MAX_COLLAPSED_LAYOUTS)))


def module_views(recording: Recording) -> list[str]:
    """The stepper's module views for this recording, in order: ``collapsed-0`` ..
    ``collapsed-D`` and ``modules`` (clusters; left out above biglayout's node limit, as it
    is the whole graph again). Empty without module data or for a handful of nodes."""
    if len(recording.graph.nodes) <= MODULE_VIEW_MIN_NODES:
        return []
    depths = module_depths(recording)
    if not depths:
        return []
    views = [f"collapsed-{d}" for d in depths]
    if auto_frontier(recording.graph):  # empty: every module opened, the "modules" view
        views.insert(0, AUTO_VIEW)
    if len(recording.graph.nodes) <= biglayout.LARGE_GRAPH_NODES:
        views.append("modules")
    return views


def view_options(view: str, collapse: object = None) -> dict[str, Any]:
    """Render options of a stepper view: ``backward``, ``combined``, ``modules``,
    ``collapsed-D`` (modules deeper than ``D`` as one box each, in their parents' clusters)
    or ``collapsed-auto`` (the modules ``collapse`` names, when a list, else those
    ``gradviz.render.frontier.auto_frontier`` picks)."""
    if view == "modules":
        return {"view": "backward", "modules": True}
    if view == AUTO_VIEW:
        names = tuple(collapse) if isinstance(collapse, list | tuple) else "auto"
        return {"view": "backward", "modules": True, "collapse": names}
    if view.startswith("collapsed-"):
        return {"view": "backward", "modules": True, "collapse_depth": int(view[10:])}
    return {"view": view}


def view_render_options(options: Mapping[str, Any], view: str) -> dict[str, Any]:
    """A page's or stepper's keywords for one view: its ``collapse=`` chooses the boxes of
    ``collapsed-auto`` (or the view it opens on) and draws no other view collapsed."""
    rest = {key: value for key, value in options.items() if key != "collapse"}
    return {**rest, **view_options(view, options.get("collapse"))}


def view_collapse(view: str, collapse: object = None) -> int | str | tuple[str, ...]:
    """What a collapsed view draws as boxes: its depth, ``"auto"`` or module paths."""
    chosen = view_options(view, collapse)
    found: int | str | tuple[str, ...] = chosen.get("collapse", chosen.get("collapse_depth", 0))
    return found


def _boxes(
    recording: Recording, prefix: str, depths: Sequence[int | str | tuple[str, ...]]
) -> dict[str, list[int]]:
    """Box id -> the steps at which a node inside it runs (sorted; empty: none runs).

    A module's box has one id in every view that draws it, its members the same."""
    ran_at = {step.node_id: step.index for step in recording.steps}
    boxes: dict[str, list[int]] = {}
    for depth in depths:
        for module, members in collapsed_members(recording.graph, depth).items():
            steps = sorted(ran_at[n] for n in members if n in ran_at)
            boxes[f"{prefix}_bm{module}"] = steps
    return boxes


def box_class(steps: Sequence[int], index: int) -> str:
    """A collapsed module's class at step ``index`` from its members' steps (sorted)."""
    if index < 0:
        return ""  # a forward frame, as for nodes
    if not steps:
        return "gv_notrun"
    if index < steps[0]:
        return "gv_pending"
    if index > steps[-1]:
        return "gv_done"
    return "gv_active" if index in steps else "gv_partial"


def module_css(theme: Theme, scope: str = "") -> str:
    """How a collapsed module looks part-way: some nodes inside have run, none runs now."""
    step = theme.step
    s = f"{scope} " if scope else ""
    return (
        f"{s}.gv_bmodule.gv_active>polyline{{stroke:{step.active_border};"
        f"stroke-width:{step.active_width}px}}"
        f"{s}.gv_partial>polygon{{stroke:{step.active_border};stroke-dasharray:5 3}}"
        f"{s}.gv_bmodule.gv_done>polygon:first-of-type{{fill:{step.active_border};"
        "fill-opacity:0.12}"
    )
