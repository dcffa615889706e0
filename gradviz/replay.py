"""Frames of a recorded backward pass, and one laid-out SVG restyled per frame.

Frame ``i`` is the state after step ``i`` (frame 0: the seed gradient entering the roots).
The schedule of which element changes at which step is shared with the browser stepper
(``replay_data``), so the static SVG of a step and the stepper always agree.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradviz.explain import describe_step, narrate
from gradviz.graph import Role
from gradviz.layout import SvgTemplate, run_dot, step_css
from gradviz.recording import Recording, short_text, value_text
from gradviz.render import RenderOptions, to_dot

__all__ = ["Frame", "make_frame", "make_frames", "replay_data", "save_steps", "step_svg"]


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


def _check_index(recording: Recording, index: int) -> None:
    if not 0 <= index <= len(recording.steps):
        raise IndexError(
            f"step {index} does not exist: this recording has steps 0 (the seed) to "
            f"{len(recording.steps)}"
        )


def make_frame(recording: Recording, index: int) -> Frame:
    _check_index(recording, index)
    graph = recording.graph
    ran = recording.steps[:index]
    done = tuple(step.node_id for step in ran[:-1]) if index else ()
    active = ran[-1].node_id if index else None
    ran_ids = {step.node_id for step in ran}
    not_run = tuple(recording.not_run)
    pending = tuple(n.id for n in graph.nodes if n.id not in ran_ids and n.id not in not_run)
    edge_grads: dict[str, str] = {}
    leaf_grads = {
        t.id: value_text(None if t.grad is None else t.grad)
        for t in graph.tensors
        if t.role is Role.LEAF
    }
    retained: dict[str, str] = {}
    for step in ran:
        for edge in graph.out_edges(step.node_id):
            value = step.grad_inputs[edge.slot] if step.grad_inputs else None
            if value is not None:
                edge_grads[edge.key] = value_text(value)
        if step.leaf_grad_after is not None:
            for record in graph.tensors_at(step.node_id):
                if record.role is Role.LEAF:
                    leaf_grads[record.id] = value_text(step.leaf_grad_after)
        for tensor_id, value in step.retained.items():
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
    return [make_frame(recording, i) for i in range(len(recording))]


# -- the schedule: at which step each element changes ----------------------------------------
def _schedule(recording: Recording, prefix: str) -> dict[str, Any]:
    """Element ids and the step at which they change, for Python and the browser alike."""
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
    return {"nodes": nodes, "edges": edges, "links": links}


def classes_at(schedule: dict[str, Any], index: int) -> dict[str, str]:
    """The replay classes of every scheduled element at frame ``index``."""
    classes: dict[str, str] = {}
    for element_id, ran in schedule["nodes"].items():
        if ran is None:
            classes[element_id] = "gv_notrun"
        elif ran < index:
            classes[element_id] = "gv_done"
        elif ran == index:
            classes[element_id] = "gv_active"
        else:
            classes[element_id] = "gv_pending"
    for group in ("edges", "links"):
        for element_id, at in schedule[group].items():
            if at > index:
                classes[element_id] = "gv_hidegrad"
            elif at == index:
                classes[element_id] = "gv_flowing"
    return classes


# -- one layout, restyled per step ---------------------------------------------------------
def replay_options(recording: Recording, **options: Any) -> RenderOptions:
    """Render options with every gradient that will flow laid out from the start."""
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
    return RenderOptions.make(edge_labels=edge_labels, link_labels=link_labels, **options)


def replay_layout(recording: Recording, **options: Any) -> tuple[SvgTemplate, RenderOptions]:
    """Lay the replay out once per set of options (cached on the recording)."""
    render_options = replay_options(recording, **options)
    dot = to_dot(recording.graph, render_options)
    cache: dict[str, SvgTemplate] = recording.__dict__.setdefault("_layouts", {})
    key = hashlib.sha1(dot.encode()).hexdigest()
    if key not in cache:
        prefix = render_options.prefix or recording.graph.prefix
        labelled = {f"{prefix}_e_{k.replace('.', '_')}" for k in render_options.edge_labels}
        labelled |= {f"{prefix}_l_{t}" for t in render_options.link_labels}
        cache[key] = SvgTemplate(run_dot(dot, "svg").decode("utf-8"), labelled)
    return cache[key], render_options


def step_svg(recording: Recording, index: int, **options: Any) -> str:
    _check_index(recording, index)
    template, render_options = replay_layout(recording, **options)
    prefix = render_options.prefix or recording.graph.prefix
    schedule = _schedule(recording, prefix)
    return template.render(classes_at(schedule, index), step_css(render_options.theme))


def save_steps(recording: Recording, folder: Path, **options: Any) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for index in range(len(recording)):
        path = folder / f"step-{index:03d}.svg"
        path.write_text(step_svg(recording, index, **options), encoding="utf-8")
        written.append(path)
    return written


def replay_data(recording: Recording, prefix: str | None = None) -> dict[str, Any]:
    """Everything the browser stepper needs besides the SVG, as plain JSON data."""
    prefix = prefix or recording.graph.prefix
    steps = [describe_step(recording, i) for i in range(len(recording))]
    return {
        "prefix": prefix,
        "count": len(recording),
        "schedule": _schedule(recording, prefix),
        "steps": steps,
    }
