"""What each step means, in words, with the recorded numbers."""

from __future__ import annotations

from typing import Any

from gradviz.recording import Recording, Step, value_text

__all__ = ["describe_step", "narrate"]


def _targets(recording: Recording, step: Step) -> list[tuple[str, str]]:
    """(where a gradient went, its value) for each slot of the step that sent one."""
    graph = recording.graph
    out = []
    for edge in graph.out_edges(step.node_id):
        value = step.grad_inputs[edge.slot] if step.grad_inputs else None
        if edge.dst is None:
            continue
        out.append((graph.node(edge.dst).type_name, value_text(value)))
    return out


def narrate(recording: Recording, index: int) -> str:
    """One or two sentences for frame ``index``."""
    if index == 0:
        seeds = ", ".join(value_text(v) for v in recording.seeds.values())
        roots = ", ".join(recording.graph.node(n).type_name for n, _ in recording.seeds)
        return f"The seed gradient {seeds} enters the root's node {roots}."
    step = recording.steps[index - 1]
    received = ", ".join(value_text(g) for g in step.grad_outputs)
    if step.type_name == "AccumulateGrad":
        text = (
            f"AccumulateGrad received {received} and added it to .grad: "
            f"{value_text(step.leaf_grad_before)} → {value_text(step.leaf_grad_after)}."
        )
    else:
        sent = "; ".join(f"sends {v} to {t}" for t, v in _targets(recording, step))
        text = f"{step.type_name} received {received}" + (f"; {sent}." if sent else ".")
    if not step.flow_ok:
        text += f" Flow check: {step.flow_note}."
    return text


def describe_step(recording: Recording, index: int) -> dict[str, Any]:
    """The side panel's data for frame ``index``: plain strings only."""
    if index == 0:
        return {
            "index": 0,
            "node": None,
            "type": "seed",
            "narration": narrate(recording, 0),
            "received": [],
            "sent": [],
            "flow_ok": True,
        }
    step = recording.steps[index - 1]
    graph = recording.graph
    sent = []
    for edge in graph.out_edges(step.node_id):
        value = step.grad_inputs[edge.slot] if step.grad_inputs else None
        target = "off the graph" if edge.dst is None else graph.node(edge.dst).type_name
        sent.append({"slot": edge.slot, "to": target, "value": value_text(value)})
    return {
        "index": index,
        "node": step.node_id,
        "type": step.type_name,
        "narration": narrate(recording, index),
        "received": [value_text(g) for g in step.grad_outputs],
        "sent": sent,
        "flow_ok": step.flow_ok,
    }
