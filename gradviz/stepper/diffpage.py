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
from gradviz.escape import html_text, json_text
from gradviz.model.recording import Recording
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
    rows = "".join(
        f"<tr><td>{html_text(c.type_name, None)}</td><td>{html_text(c.node_a)}</td>"
        f"<td>{'' if c.step_a is None else c.step_a}</td>"
        f"<td>{'n/a' if c.ratio is None else f'{c.ratio:.4g}'}</td>"
        f"<td>{'same' if c.same else 'differs'}</td></tr>"
        for c in diff.changes
    )
    summary = "<br>".join(html_text(line, None) for line in diff.summary_text().split("\n"))
    data = json_text(diff.to_dict(), compact=True).replace("</", "<\\/")
    return (
        f'<p class="gv-diff-summary" style="font:13px sans-serif">{summary}</p>\n'
        '<table class="gv-diff-table" style="font:13px sans-serif"><tr><th>node</th>'
        "<th>id in A</th><th>step in A</th>"
        f"<th>‖B‖/‖A‖</th><th></th></tr>{rows}</table>\n"
        f'<script type="application/json" class="gv-diff-data">{data}</script>\n'
    )


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
