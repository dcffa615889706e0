"""A diff of two recordings as a steppable page: recording A replayed on the union layout.

The union graph (A's nodes and B's unmatched ones) is stepped in A's order, with the
diff's per-node numbers (``gradviz.replay.overlays.diff_data``) added to the stepper's data:
the front end marks the nodes found in one run only, shows both runs' gradient norms and
their ratio for the active node, and jumps to the first differing step. Below it, the
summary and the table of changes as plain HTML (readable without script).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gradviz.analysis.diff import RecordingDiff
from gradviz.model.recording import Recording
from gradviz.render.reports import diff_changes_html, diff_summary_html
from gradviz.replay.overlays import diff_data
from gradviz.stepper.page import replay_html

__all__ = ["diff_html", "union_recording"]


def union_recording(diff: RecordingDiff) -> Recording:
    """Recording A's steps over the union graph (B's extra nodes never run in it)."""
    a = diff.a
    union = diff.union
    union.saved_storages = a.graph.saved_storages
    steps = []
    for step in a.steps:  # an edge to a node only in B: a slot A never sent through
        slots = max((e.slot + 1 for e in union.out_edges(step.node_id)), default=0)
        padding = (None,) * (slots - len(step.grad_inputs)) if step.grad_inputs else ()
        steps.append(replace(step, grad_inputs=step.grad_inputs + padding) if padding else step)
    recording = Recording(union, steps, a.seeds, a.keep, a.mode, a.input_nodes)
    recording.graph_retained = a.graph_retained
    return recording


def _table(diff: RecordingDiff) -> str:
    """The diff's summary and table of changes below the stepper."""
    table = f"{diff_summary_html(diff)}{diff_changes_html(diff)}"
    return f'<div style="font:13px sans-serif">\n{table}</div>\n'


def diff_html(diff: RecordingDiff, title: str = "gradviz diff", **options: Any) -> str:
    """The steppable page (see the module docstring); ``options`` as for ``replay_html``."""
    options.setdefault("explain", True)
    options.pop("views", None)
    return replay_html(
        union_recording(diff),
        title=title,
        views=["backward"],
        extra_data={"diff": diff_data(diff)},
        after=_table(diff),
        **options,
    )
