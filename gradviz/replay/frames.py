"""Frames of a recorded backward pass, and one laid-out SVG restyled per frame.

Frame ``i`` is the state after step ``i`` (frame 0: the seed gradient entering the roots).
The schedule of which element changes at which step is shared with the browser stepper
(``replay_data``), so the static SVG of a step and the stepper always agree.

Under ``gradviz.watch()`` the replay starts earlier, with one frame per forward op: the
stepper's step numbers run from ``-F`` to ``N``, where ``F`` is the number of forward ops
(``len(recording.forward_ops)``) and ``N`` the number of backward steps. Step ``-F`` shows
the first forward op, step ``-1`` the last, step ``0`` the seed and ``1``..``N`` the backward
steps, exactly as without ``watch()``. The forward frame ``j`` (counted from 1, as the panel
says "forward j / F") is step ``j - F - 1``: ``forward_frame(recording, j - F - 1)``. Every
public call takes these step numbers (docs/architecture.md, "Step numbers"); a recording
without ``watch()`` has no negative steps at all.

Module views (``watch(model)`` recordings of more than ``MODULE_VIEW_MIN_NODES`` nodes):
``"modules"`` draws the backward graph in one cluster per module call, ``"collapsed-D"``
draws each module deeper than ``D`` as one box (``bm<index>``) with the edges into and out
of it. A box is pending until a node inside it runs, active at every step one does,
``gv_partial`` between two of them (some inside have run, none runs now) and done once all
have run; an edge that merges several graph edges reveals its gradient when the first flows.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from typing_extensions import Unpack

from gradviz.analysis.breakpoints import breakpoint_data
from gradviz.explain.lookup import narrating
from gradviz.explain.steps import describe_step, narrate
from gradviz.model.recording import Recording, short_text, value_text
from gradviz.model.values import Role
from gradviz.render.backend import layout_plan, run_dot
from gradviz.render.layered import estimate
from gradviz.render.options import RenderKeywords, RenderOptions
from gradviz.render.sidebyside import side_by_side_svg
from gradviz.render.theme import Theme
from gradviz.replay.folded import fold_schedule
from gradviz.replay.forwardframes import (
    ForwardFrame,
    _op_times,
    box_steps,
    describe_forward,
    describe_forwards,
    forward_frame,
    forward_frames,
)
from gradviz.replay.layouts import layout_batch, pending_svgs, view_dot
from gradviz.replay.modules import _boxes, box_class, module_css, view_render_options
from gradviz.replay.overlays import overlay_data
from gradviz.replay.sources import source_lines
from gradviz.replay.styles import SvgTemplate, step_css

__all__ = [
    "ForwardFrame",
    "Frame",
    "classes_at",
    "describe_forward",
    "first_step",
    "forward_css",
    "forward_frame",
    "forward_frames",
    "make_frame",
    "make_frames",
    "replay_data",
    "step_files",
    "step_svg",
]


@dataclass(frozen=True)
class Frame:
    """What the replay shows after step ``index``."""

    index: int
    active: str | None  # the node that just ran (None in frame 0)
    done: tuple[str, ...]
    pending: tuple[str, ...]
    not_run: tuple[str, ...]
    edge_grads: dict[str, str]  # edge key -> the gradient it carried, once it did
    leaf_grads: dict[str, str]  # leaf tensor id -> its .grad so far
    retained_grads: dict[str, str]  # tensor id -> .grad of a retain_grad() tensor so far
    narration: str


def steps_text(recording: Recording) -> str:
    """The steps a recording has, for error messages."""
    text = f"steps 0 (the seed) to {len(recording.steps)}"
    count = len(recording.forward_ops)
    if count:
        text += f", and forward frames {-count} to -1 before the seed (one per forward op)"
    return text


def _check_index(recording: Recording, index: int) -> None:
    if not 0 <= index <= len(recording.steps):
        hint = " (forward steps: recording.forward_frame(step))" if index < 0 else ""
        raise IndexError(
            f"step {index} does not exist: this recording has {steps_text(recording)}{hint}"
        )


def first_step(recording: Recording) -> int:
    """The stepper's first step: ``-F`` under ``watch()`` (the first forward op), else 0."""
    return -len(recording.forward_ops)


def _check_step(recording: Recording, index: int) -> None:
    """A step of the whole replay, forward frames (negative) included."""
    if not first_step(recording) <= index <= len(recording.steps):
        raise IndexError(f"step {index} does not exist: this recording has {steps_text(recording)}")


def make_frame(recording: Recording, step: int) -> Frame:
    """The state after backward step ``step`` (0: the seed gradient entering the roots,
    ``len(recording)``: the last step); forward steps (-F..-1): ``forward_frame``
    (``Recording.frame`` is this function)."""
    index = step
    _check_index(recording, index)
    graph = recording.graph
    ran = recording.steps[:index]
    done = tuple(ran_step.node_id for ran_step in ran[:-1]) if index else ()
    active = ran[-1].node_id if index else None
    ran_ids = {ran_step.node_id for ran_step in ran}
    not_run = tuple(recording.not_run)
    pending = tuple(n.id for n in graph.nodes if n.id not in ran_ids and n.id not in not_run)
    edge_grads: dict[str, str] = {}
    leaf_grads = {
        t.id: value_text(None if t.grad is None else t.grad)
        for t in graph.tensors
        if t.role is Role.LEAF
    }
    retained: dict[str, str] = {}
    for ran_step in ran:
        for edge in graph.out_edges(ran_step.node_id):
            value = ran_step.grad_inputs[edge.slot] if ran_step.grad_inputs else None
            if value is not None:
                edge_grads[edge.key] = value_text(value)
        if ran_step.leaf_grad_after is not None:
            for record in graph.tensors_at(ran_step.node_id):
                if record.role is Role.LEAF:
                    leaf_grads[record.id] = value_text(ran_step.leaf_grad_after)
        for tensor_id, value in ran_step.retained.items():
            retained[tensor_id] = value_text(value)
    return Frame(
        index=index,
        active=active,
        done=done,
        pending=pending,
        not_run=not_run,
        edge_grads=edge_grads,
        leaf_grads=leaf_grads,
        retained_grads=retained,
        narration=narrate(recording, index),
    )


def make_frames(recording: Recording) -> list[Frame]:
    """Every backward frame, 0 (the seed) to N (``Recording.frames`` is this function)."""
    return [make_frame(recording, i) for i in range(len(recording.steps) + 1)]


# -- the schedule: at which step each element changes ----------------------------------------
def _schedule(
    recording: Recording,
    prefix: str,
    born: dict[str, dict[str, int]] | None = None,
    depths: Sequence[int | str | tuple[str, ...]] = (),
    fold: bool | int = False,
) -> dict[str, Any]:
    """Element ids and the step at which they change, for Python and the browser alike.

    ``born`` (under ``watch()``): per view, the forward-frame step at which each element
    appears (``_born``); before it the element is ``gv_future``, at it ``gv_born``.
    ``depths``: collapse depths (or ``collapse=`` values) whose module boxes to schedule
    (``boxes``: id -> the steps at which a node inside runs; ``box_class`` turns them into
    a class). ``fold``: the render option; each folded run of blocks is scheduled as such a
    box (``gradviz.replay.folded``).
    """
    graph = recording.graph
    ran_at = {step.node_id: step.index for step in recording.steps}
    nodes = {f"{prefix}_{n.id}": ran_at.get(n.id) for n in graph.nodes}
    edges: dict[str, int] = {}
    for step in recording.steps:
        for edge in graph.out_edges(step.node_id):
            if step.grad_inputs and step.grad_inputs[edge.slot] is not None:
                edges[f"{prefix}_e_{edge.src}_{edge.slot}"] = step.index
    links: dict[str, int] = {}
    for record in graph.tensors:
        if record.node_id is None:
            continue
        if record.is_root:
            links[f"{prefix}_l_{record.id}"] = 0
        elif record.role is Role.LEAF and record.node_id in ran_at:
            links[f"{prefix}_l_{record.id}"] = ran_at[record.node_id]
    schedule: dict[str, Any] = {"nodes": nodes, "edges": edges, "links": links}
    nonfinite = _nonfinite(recording, prefix)
    if nonfinite:
        schedule["nonfinite"] = nonfinite
    if depths:
        schedule["boxes"] = _boxes(recording, prefix, depths)
    folds = fold_schedule(recording, prefix, fold)
    if folds.boxes:
        schedule["boxes"] = {**schedule.get("boxes", {}), **folds.boxes}
        edges.update(folds.edges)
    if born:
        schedule["born"] = born
    return schedule


def _nonfinite(recording: Recording, prefix: str) -> dict[str, int]:
    """Where NaN or Inf first appeared: the node and the edges that carried it, with the
    step from which on they are marked ``gv_nonfinite``."""
    marked: dict[str, int] = {}
    for step in recording.nonfinite_origins():
        marked[f"{prefix}_{step.node_id}"] = step.index
        for slot, _ in step.nonfinite_origin:
            marked[f"{prefix}_e_{step.node_id}_{slot}"] = step.index
    return marked


def classes_at(schedule: dict[str, Any], index: int, view: str = "backward") -> dict[str, str]:
    """The replay classes of every scheduled element at step ``index`` in ``view``.

    Several classes are joined by a space, the backward one first (``gv_hidegrad gv_born``).
    During forward frames (negative steps) nodes carry no backward class: they only appear.
    """
    classes: dict[str, str] = {}
    for element_id, ran in schedule["nodes"].items():
        if index < 0:
            continue  # a forward frame: backward has not started, nodes just exist (or not)
        if ran is None:
            classes[element_id] = "gv_notrun"
        elif ran < index:
            classes[element_id] = "gv_done"
        elif ran == index:
            classes[element_id] = "gv_active"
        else:
            classes[element_id] = "gv_pending"
    for element_id, steps in schedule.get("boxes", {}).items():
        if index >= 0:
            classes[element_id] = box_class(steps, index)
    for group in ("edges", "links"):
        for element_id, at in schedule[group].items():
            if at > index:
                classes[element_id] = "gv_hidegrad"
            elif at == index:
                classes[element_id] = "gv_flowing"
    for element_id, at in schedule.get("born", {}).get(view, {}).items():
        extra = "gv_future" if index < at else "gv_born" if index == at else ""
        if extra:
            had = classes.get(element_id)
            classes[element_id] = f"{had} {extra}" if had else extra
    for element_id, at in schedule.get("nonfinite", {}).items():
        if index >= at:  # from the step that made the NaN or Inf on
            had = classes.get(element_id)
            classes[element_id] = f"{had} gv_nonfinite" if had else "gv_nonfinite"
    return classes


# -- when each drawn element appears during the forward frames --------------------------------
_NODE_LINE = re.compile(r'^\s*(\w+) \[id="([^"]+)"')
_EDGE_LINE = re.compile(r'^\s*(\w+) -> (\w+) \[(?:dir="back" )?id="([^"]+)"')


def _born(recording: Recording, dot: str) -> dict[str, int]:
    """Element id -> the (negative) step at which its forward op ran, from one view's DOT.

    DOT node names say what an element is: ``op7`` (forward op 7), ``s7_1`` (its scalar),
    ``f3`` / ``f3_s1`` (a forward tensor box, a later state of it: ``box_steps``), ``m2`` /
    ``bm2`` (a collapsed module), ``n4`` (a backward node: when the op that created it ran),
    ``t1`` (a tensor record: with its node) and ``c_n4_0`` (a None slot: with its node). Edges
    appear with their later end. Anything else (made before the watch, the legend) always shows.
    """
    forward = recording.graph.forward
    if forward is None or not forward.replayed:
        return {}
    graph = recording.graph
    op_time, node_time = _op_times(recording)
    boxes = box_steps(forward, op_time)
    first_seen: dict[str, int | None] = {}
    for op in forward.replayed:
        for arg in op.inputs:
            if arg.tensor is not None:
                first_seen.setdefault(arg.tensor, None)  # existed before this op
        for tensor_id in [*op.outputs, *(b.tensor for b in op.bumps)]:
            first_seen.setdefault(tensor_id, op_time[op.index])
    module_time: dict[int, int] = {}
    for op in forward.replayed:
        for scope in forward.module_chain(op.module):
            module_time.setdefault(scope.index, op_time[op.index])
    records = {r.id: r for r in graph.tensors}
    ftensor_time = {t: time for t, time in first_seen.items() if time is not None}

    def time_of(name: str) -> int | None:
        if name in node_time:
            return node_time[name]
        if name in records:
            record = records[name]
            if record.node_id is not None and record.node_id in node_time:
                return node_time[record.node_id]
            linked = forward.tensor_links.get(name)
            return None if linked is None else ftensor_time.get(linked)
        if name.startswith("c_"):
            return node_time.get(name[2:].rsplit("_", 1)[0])
        match = re.fullmatch(r"op(\d+)|s(\d+)_\w+", name)
        if match:
            return op_time.get(int(match.group(1) or match.group(2)))
        match = re.fullmatch(r"b?m(\d+)", name)
        if match:
            return module_time.get(int(match.group(1)))
        if name in boxes:
            return boxes[name]
        return None

    born: dict[str, int] = {}
    named: dict[str, int | None] = {}
    lines = dot.splitlines()
    for line in lines:
        node = _NODE_LINE.match(line)
        if node and node.group(1) not in ("graph", "node", "edge"):
            time = time_of(node.group(1))
            named[node.group(1)] = time
            if time is not None:
                born[node.group(2)] = time
    for line in lines:
        edge = _EDGE_LINE.match(line)
        if edge:
            ends = [named.get(edge.group(1)), named.get(edge.group(2))]
            known = [t for t in ends if t is not None]
            if known:
                born[edge.group(3)] = max(known)
    return born


def forward_css(theme: Theme, scope: str = "") -> str:
    """How forward frames look: the graph grows op by op (elements not made yet are not drawn,
    not even as a faded ghost), the op just run outlined."""
    step = theme.step
    s = f"{scope} " if scope else ""
    return (
        f"{s}.gv_future{{opacity:0;visibility:hidden}}"
        f"{s}.gv_future .gv_grad{{visibility:hidden}}"
        f"{s}.gv_born{{opacity:1}}"
        f"{s}.gv_born>path,{s}.gv_born>polygon,{s}.gv_born>ellipse{{stroke:{step.active_border};"
        f"stroke-width:{step.active_width}px}}"
    )


# -- one layout, restyled per step ---------------------------------------------------------
def replay_options(recording: Recording, **options: Any) -> RenderOptions:
    """Render options with every gradient that will flow laid out from the start."""
    edge_labels, link_labels = _replay_labels(recording)
    return RenderOptions.make(edge_labels=edge_labels, link_labels=link_labels, **options)


def _replay_labels(recording: Recording) -> tuple[dict[str, str], dict[str, str]]:
    """Every gradient label of the replay, summarised once per recording: summaries of big
    tensors take seconds, and every view shows the same ones."""
    cached = _LABELS.get(recording)
    if cached is not None:
        return dict(cached[0]), dict(cached[1])
    graph = recording.graph
    edge_labels: dict[str, str] = {}
    for step in recording.steps:
        for edge in graph.out_edges(step.node_id):
            value = step.grad_inputs[edge.slot] if step.grad_inputs else None
            if value is not None:
                edge_labels[edge.key] = short_text(value)
    link_labels: dict[str, str] = {}
    for record in graph.tensors:
        if record.is_root and record.node_id is not None and record.output_nr is not None:
            seed = recording.seeds.get((record.node_id, record.output_nr))
            if seed is not None:
                link_labels[record.id] = short_text(seed)
        elif record.role is Role.LEAF and record.node_id is not None:
            leaf_step = recording.step_for(record.node_id)
            if leaf_step is not None and leaf_step.leaf_grad_after is not None:
                link_labels[record.id] = "grad " + short_text(leaf_step.leaf_grad_after)
    _LABELS[recording] = (edge_labels, link_labels)
    return dict(edge_labels), dict(link_labels)


# every gradient label of a recording, summarised once; dropped with the recording
_LABELS: weakref.WeakKeyDictionary[Recording, tuple[dict[str, str], dict[str, str]]] = (
    weakref.WeakKeyDictionary()
)

# one Graphviz layout per recording and DOT text; dropped with the recording
_LAYOUTS: weakref.WeakKeyDictionary[Recording, dict[str, tuple[SvgTemplate, dict[str, int]]]] = (
    weakref.WeakKeyDictionary()
)


def replay_layout(
    recording: Recording, **options: Unpack[RenderKeywords]
) -> tuple[SvgTemplate, RenderOptions]:
    """Lay the replay out once per set of options (cached on the recording)."""
    template, render_options, _ = _layout(recording, **options)
    return template, render_options


def _layout(
    recording: Recording, **options: Unpack[RenderKeywords]
) -> tuple[SvgTemplate, RenderOptions, dict[str, int]]:
    """The cached layout, its options, and when each element appears (``_born``)."""
    render_options = replay_options(recording, **options)
    prefix = render_options.prefix or recording.graph.prefix
    view = view_dot(recording, render_options, repr(sorted(options.items())))
    cache = _LAYOUTS.setdefault(recording, {})
    if view.key not in cache:
        labelled = {f"{prefix}_e_{k.replace('.', '_')}" for k in render_options.edge_labels}
        labelled |= {f"{prefix}_l_{t}" for t in render_options.link_labels}
        laid = pending_svgs(recording, view.key)  # started by start_layouts, else laid out now
        if view.sides is not None:
            theme = render_options.theme
            svg = side_by_side_svg(
                view.sides,
                prefix,
                theme.background,
                theme.text,
                theme.step.grad_text,
                laid=None if laid is None else (laid[0], laid[1]),
            )
        else:
            svg = laid[0] if laid is not None else run_dot(view.dot, "svg").decode("utf-8")
        cache[view.key] = (SvgTemplate(svg, labelled), _born(recording, view.dot))
    template, born = cache[view.key]
    return template, render_options, born


def start_layouts(
    recording: Recording, option_sets: Sequence[dict[str, Any]]
) -> AbstractContextManager[list[int]]:
    """Inside the block, every view (one set of options each) is being laid out at once;
    the block gets the views' positions in the order they should be ready."""
    views = [(replay_options(recording, **o), repr(sorted(o.items()))) for o in option_sets]
    return layout_batch(recording, views, _LAYOUTS.setdefault(recording, {}))


def beyond_dot(recording: Recording, view_options: dict[str, Any]) -> bool:
    """True when neither Graphviz ``dot`` within its budget nor gradviz's layered layout
    would draw this view whole (``render.backend.layout_plan``: the layered layout leaves
    module boxes out). Its DOT is written once per open ``start_layouts`` batch, so weighing
    it costs nothing more when it is laid out after."""
    render_options = replay_options(recording, **view_options)
    view = view_dot(recording, render_options, repr(sorted(view_options.items())))
    costs = [estimate(text) for text in view.texts]
    return any(layout_plan(cost) == "layered" and not cost.flat for cost in costs)


def step_svg(recording: Recording, index: int, **options: Unpack[RenderKeywords]) -> str:
    """One step as a standalone SVG; negative steps are forward frames (under ``watch()``)."""
    _check_step(recording, index)
    template, render_options, born = _layout(recording, **options)
    prefix = render_options.prefix or recording.graph.prefix
    view = str(render_options.view)
    depth: int | str | tuple[str, ...] | None = render_options.collapse_depth
    if render_options.collapse is not None:
        depth = render_options.collapse
    depths = [depth] if depth is not None and recording.graph.forward is not None else []
    born_in = {view: born} if born else None
    schedule = _schedule(recording, prefix, born_in, depths, render_options.fold)
    css = step_css(render_options.theme)
    if depths or "boxes" in schedule:
        css += module_css(render_options.theme)
    if born:
        css += forward_css(render_options.theme)
    return template.render(classes_at(schedule, index, view), css)


def step_files(
    recording: Recording, **options: Unpack[RenderKeywords]
) -> Iterator[tuple[str, str]]:
    """``step-000.svg`` (the seed) to ``step-N.svg``; under ``watch()`` first
    ``forward-001.svg`` to ``forward-F.svg``, one per forward op, in the stepper's order:
    each file's name and SVG, for ``gradviz.export`` to write."""
    count = len(recording.forward_ops)
    for forward_index in range(1, count + 1):
        yield (
            f"forward-{forward_index:03d}.svg",
            step_svg(recording, forward_index - count - 1, **options),
        )
    for index in range(len(recording.steps) + 1):
        yield f"step-{index:03d}.svg", step_svg(recording, index, **options)


def classroom_data(recording: Recording, prefix: str) -> dict[str, Any]:
    """The classroom's keys: ``grads`` (each leaf's .grad field per step) and ``quiz``."""
    from gradviz.replay.classroom import grad_updates, quiz_answers

    return {"grads": grad_updates(recording, prefix), "quiz": quiz_answers(recording, prefix)}


def replay_data(
    recording: Recording,
    prefix: str | None = None,
    born: dict[str, dict[str, int]] | None = None,
    depths: Sequence[int | str | tuple[str, ...]] = (),
    explain: bool = False,
    fold: bool | int = False,
) -> dict[str, Any]:
    """Everything the browser stepper needs besides the SVG, as plain JSON data.

    ``explain``: add the memory and gradient-health overlays (``gradviz.replay.overlays``).

    ``born``: per view, when each element appears (``_born``); ``replay_born`` computes it.
    ``depths``: the collapse depths of the module views shipped (their boxes' schedule).
    ``fold``: the render option ``fold``; each step inside a folded block says which
    repetition it runs in, and ``folded`` maps its node to the box drawn for it.
    Under ``watch()`` the data also holds ``first`` (-F) and ``forward`` (the panel of each
    forward frame, in order); without it, neither key exists. ``breakpoints``: what a "Run
    to" control needs (``gradviz.analysis.breakpoints.breakpoint_data``). Under ``watch()``
    ``sources``: the source line that made each step's and frame's node
    (``gradviz.replay.sources.source_lines``).
    """
    prefix = prefix or recording.graph.prefix
    with narrating(recording.graph):
        steps = [describe_step(recording, i) for i in range(len(recording.steps) + 1)]
    data: dict[str, Any] = {
        "prefix": prefix,
        "count": len(recording.steps) + 1,
        "schedule": _schedule(recording, prefix, born, depths, fold),
        "steps": steps,
    }
    folds = fold_schedule(recording, prefix, fold)
    if folds.drawn_as:
        data["folded"] = folds.drawn_as
        for step in steps:
            where = folds.where.get(step["node"] or "")
            if where is not None:
                step["narration"] = f"In {where}: {step['narration']}"
    data.update(classroom_data(recording, prefix))
    data["breakpoints"] = breakpoint_data(recording)
    if explain:
        data.update(overlay_data(recording, data["schedule"], prefix))
    count = len(recording.forward_ops)
    if count:
        data["first"] = -count
        data["forward"] = describe_forwards(recording)
    sources = source_lines(recording)
    if sources is not None:
        data["sources"] = sources
    return data


def replay_born(
    recording: Recording, views: Sequence[str], **options: Unpack[RenderKeywords]
) -> dict[str, dict[str, int]]:
    """Per view (any name ``view_options`` knows), when each element appears during the
    forward frames (empty without them)."""
    if not recording.forward_ops:
        return {}
    return {view: _layout(recording, **view_render_options(options, view))[2] for view in views}
