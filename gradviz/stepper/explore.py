"""The explorer: the stepper with a field per leaf; an edit runs the user's function again.

``gradviz.explore(fn, a=2.0)`` hands this widget a ``run``: new leaf values in, a new
recording and the leaves' facts (values, gradients, finite differences) out. The browser
sets ``values``; the kernel runs ``fn`` with real PyTorch, records again and sends the new
data. The same structure keeps its layout (``relabel.same_layout``) and the stepper stays
at its step; a graph that changed is laid out again and ``notice`` says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import traitlets

from gradviz.capture.leaves import LeafFacts
from gradviz.errors import InvalidArgument
from gradviz.escape import wire_safe
from gradviz.model.recording import Recording
from gradviz.stepper.page import chosen_views, layout_view, stepper_payload
from gradviz.stepper.relabel import same_layout
from gradviz.stepper.widget import Stepper

__all__ = ["CHANGED", "KERNEL_NOTE", "Explorer", "structure"]

Run = Callable[[Mapping[str, Sequence[float]]], tuple[Recording, list[LeafFacts]]]
CHANGED = "the graph changed: laid out again"
KERNEL_NOTE = (
    "Made by gradviz.explore: editing the leaves needs a running kernel; "
    "this page shows the values it was saved with."
)
# the leaves panel sits above the stepper, outside its scoped stylesheet
LEAVES_CSS = """
.gv-leaves{font:13px sans-serif;margin:0 0 6px;display:flex;flex-direction:column;gap:3px}
.gv-leaves-head{font-weight:600}
.gv-leaves-timing{font-weight:400;opacity:.6}
.gv-leaf{display:flex;flex-wrap:wrap;align-items:center;gap:8px}
.gv-leaf-name{min-width:3em;font-family:monospace}
.gv-leaf-field{width:8em}
.gv-leaf-slider{width:12em}
.gv-leaf-grad{font-family:monospace;font-weight:600}
.gv-leaf-check{opacity:.75}
.gv-leaf-check.gv-leaf-bad{color:#b3261e;opacity:1;font-weight:600}
.gv-leaves-notice{margin:2px 0;color:#8a4b00;font-weight:600}
.gv-leaves[data-busy] .gv-leaf-grad{opacity:.5}
"""


def structure(recording: Recording) -> tuple[str, tuple[str, ...]]:
    """What must match for an edit to keep the layout: the graph's nodes, edges and tensor
    records (its SVG id prefix hashes them) and the order the steps ran in."""
    return recording.graph.structure_prefix(), tuple(s.node_id for s in recording.steps)


class Explorer(Stepper):
    """A ``Stepper`` whose leaves can be edited: set ``values`` (or call ``set``)."""

    _css = Stepper._css + LEAVES_CSS

    # per leaf, LeafFacts.to_dict(): its values, gradients and finite differences
    leaves: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    values = traitlets.Dict().tag(sync=True)  # editable leaf -> its elements, flat
    notice = traitlets.Unicode("").tag(sync=True)
    revision = traitlets.Int(0).tag(sync=True)  # bumped once a new recording is shown
    answered = traitlets.Int(0).tag(sync=True)  # bumped once an edit is handled, run or failed
    update_ms = traitlets.Float(0.0).tag(sync=True)  # the last edit's run + record + data

    def __init__(self, run: Run, recording: Recording, facts: list[LeafFacts]) -> None:
        recording.page_note = KERNEL_NOTE
        self._run = run
        self._quiet = False
        super().__init__(recording)
        self._facts(facts)
        self.observe(self._edited, names="values")

    def _on_message(self, widget: Any, content: Any, buffers: Any = None) -> None:
        """The leaves panel's hello: answering it enables its fields (no kernel, no answer)."""
        if isinstance(content, dict) and content.get("type") == "explore-hello":
            self.send({"type": "explore-alive"})
            return
        super()._on_message(widget, content, buffers)

    def set(self, **leaves: float | Sequence[float]) -> None:
        """Give leaves new values, as the browser's fields do: ``explorer.set(a=3.0)``."""
        given = {
            n: [float(v)] if isinstance(v, int | float) else list(v) for n, v in leaves.items()
        }
        for name, elements in given.items():
            if name not in self.values:
                raise InvalidArgument(
                    f"set({name}=...): the editable leaves are {sorted(self.values)} "
                    "(a leaf of more than 8 elements is shown, not edited)"
                )
            if len(elements) != len(self.values[name]):
                raise InvalidArgument(
                    f"set({name}=...): {name} has {len(self.values[name])} elements, "
                    f"given {len(elements)}; give them flat, in order"
                )
        self.values = {**self.values, **given}

    def _facts(self, facts: list[LeafFacts]) -> None:
        self._quiet = True
        try:
            self.leaves = wire_safe([f.to_dict() for f in facts])
            self.values = {f.name: list(f.values) for f in facts if f.editable}
        finally:
            self._quiet = False

    def _edited(self, change: dict[str, Any]) -> None:
        if not self._quiet:
            self.update(change["new"])

    def update(self, values: Mapping[str, Sequence[float]]) -> None:
        """Run the function on ``values``, record, and show the result at the same step."""
        started = time.perf_counter()
        try:
            recording, facts = self._run(values)
        except Exception as error:  # the user's own code failed: shown, not raised
            with self.hold_sync():
                self._facts_kept()
                self.notice = (
                    f"{type(error).__name__}: {error} (the stepper still shows the values before)"
                )
                self.answered += 1
            return
        recording.page_note = KERNEL_NOTE
        changed = structure(recording) != structure(self.recording)
        svgs, born, data, relaid = self._laid_out(recording, changed)
        with self.hold_sync():
            self.recording = recording
            self.svgs = svgs
            self.born = born
            self.data = data
            self.step = min(max(self.step, self.first), self.last)
            if self.view not in data["views"]:
                self.view = data["views"][0]
            self._facts(facts)
            self.notice = CHANGED if changed or relaid else ""
            self.update_ms = (time.perf_counter() - started) * 1000
            self.revision += 1
            self.answered += 1

    def _facts_kept(self) -> None:
        """After a failed run the fields show the values the stepper still shows."""
        self._quiet = True
        try:
            self.values = {
                leaf["name"]: list(leaf["values"]) for leaf in self.leaves if leaf["editable"]
            }
        finally:
            self._quiet = False

    def _laid_out(
        self, recording: Recording, changed: bool
    ) -> tuple[dict[str, str], dict[str, Any], dict[str, Any], bool]:
        """The new recording's views (those the browser has), on the old layout where the
        structure is the same; its born frames, its data, and whether a view that kept its
        structure still had to be laid out again (its texts did not match one to one)."""
        step = min(max(self.step, -len(recording.forward_ops)), len(recording.steps))
        views = chosen_views(recording, None)
        payload = stepper_payload(recording, step=step, views=views, lazy=True)
        svgs: dict[str, str] = dict(payload["svgs"])
        born: dict[str, Any] = {}
        schedule = payload["data"]["schedule"]
        for name in self.svgs:
            if name not in svgs and name in views:
                svgs[name], made = layout_view(recording, name, schedule, step, **self._options)
                if made:
                    born[name] = wire_safe(made)
        relaid = False
        if not changed:
            for name, svg in list(svgs.items()):
                old = self.svgs.get(name)
                kept = None if old is None else same_layout(old, svg)
                relaid = relaid or (kept is None and old is not None)
                svgs[name] = svg if kept is None else kept
        return svgs, born, wire_safe(payload["data"]), relaid
