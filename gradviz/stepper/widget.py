"""The notebook stepper: an anywidget over the same front end as the offline page.

The SVGs, schedule and panel data go to the browser once, as traits; after that only
``step`` (and ``view``) travel, in both directions, so stepping never waits on the kernel.
``import gradviz`` does not load this module: ``gradviz.Stepper`` imports it on first use.

Steps are numbered as everywhere in gradviz: 0 is the seed and 1..N the backward steps; a
recording made under ``gradviz.watch()`` also has one forward frame per forward op before
the seed, steps -F..-1 (``goto(-F)`` reaches the first op), and the stepper opens on the
first of them, so a lecture sees the graph grow before the backward pass runs.

A ``watch(model)`` recording of more than a handful of nodes also has module views
(``gradviz.replay.modules.module_views``): ``view = "collapsed-1"`` draws each module at depth 1
as one box, ``"modules"`` draws them as clusters; clicking a box in the browser expands it.
"""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets

from gradviz.escape import wire_safe
from gradviz.model.recording import Recording
from gradviz.replay.frames import (
    ForwardFrame,
    Frame,
    first_step,
    forward_frame,
    make_frame,
    step_svg,
    steps_text,
)
from gradviz.replay.modules import view_options
from gradviz.stepper.page import asset_text, static_html, stepper_payload

__all__ = ["Stepper"]


class Stepper(anywidget.AnyWidget):
    """Step through a recorded backward pass; ``step`` is synced with the browser."""

    _esm = asset_text("stepper.js")
    _css = asset_text("stepper.css")

    step = traitlets.Int(0).tag(sync=True)
    view = traitlets.Unicode("backward").tag(sync=True)
    svgs = traitlets.Dict().tag(sync=True)
    data = traitlets.Dict().tag(sync=True)
    css = traitlets.Dict().tag(sync=True)

    def __init__(
        self,
        recording: Recording,
        step: int | None = None,
        view: str = "backward",
        **options: Any,
    ) -> None:
        payload = stepper_payload(recording, **options)
        self.recording = recording
        self._options = options
        super().__init__(
            svgs=payload["svgs"],
            data=wire_safe(payload["data"]),  # names may hold anything
            css=payload["css"],
            step=first_step(recording) if step is None else step,
            view=view,
        )

    @property
    def first(self) -> int:
        """The first step: -F under ``watch()`` (the first forward op), else 0 (the seed)."""
        return first_step(self.recording)

    @property
    def last(self) -> int:
        """The last step's index (backward frames run from 0, the seed, to ``last``)."""
        return len(self.recording.steps)

    def _no_step(self, index: int) -> str:
        return f"step {index} does not exist: this recording has {steps_text(self.recording)}"

    @traitlets.validate("step")
    def _check_step(self, proposal: Any) -> int:
        value = int(proposal["value"])
        if not self.first <= value <= self.last:
            raise traitlets.TraitError(self._no_step(value))
        return value

    @traitlets.validate("view")
    def _check_view(self, proposal: Any) -> str:
        value = str(proposal["value"])
        if value not in self.svgs and self.svgs:
            raise traitlets.TraitError(f"view must be one of {sorted(self.svgs)}, not {value!r}")
        return value

    def next(self) -> int:
        """One step on (stays at the last step); returns the new step."""
        self.step = min(self.step + 1, self.last)
        return int(self.step)

    def prev(self) -> int:
        """One step back (stays at the first step); returns the new step."""
        self.step = max(self.step - 1, self.first)
        return int(self.step)

    def goto(self, step: int) -> int:
        """Jump to ``step``: -F..-1 the forward frames (under ``watch()``), 0 the seed, 1..N
        the backward steps, as everywhere in gradviz; returns the new step."""
        if not self.first <= step <= self.last:
            raise IndexError(self._no_step(step))
        self.step = step
        return int(self.step)

    @property
    def frame(self) -> Frame | ForwardFrame:
        """The replay state at the current step (a ``ForwardFrame`` before the seed)."""
        if self.step < 0:
            return forward_frame(self.recording, self.step)
        return make_frame(self.recording, self.step)

    def svg(self) -> str:
        """The current step in the current view as a standalone SVG (what the Download
        button saves); module views (``collapsed-1``, ``modules``) draw as in the browser."""
        return step_svg(self.recording, self.step, **{**self._options, **view_options(self.view)})

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The widget view, plus a static final step for places where widgets do not run."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        data = dict(data)
        data["text/plain"] = f"Stepper over {self.recording!r}"
        data["text/html"] = static_html(self.recording, **self._options)
        return data, metadata
