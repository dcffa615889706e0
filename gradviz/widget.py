"""The notebook stepper: an anywidget over the same front end as the offline page.

The SVGs, schedule and panel data go to the browser once, as traits; after that only
``step`` (and ``view``) travel, in both directions, so stepping never waits on the kernel.
``import gradviz`` does not load this module: ``gradviz.Stepper`` imports it on first use.

Steps are numbered as in ``gradviz.replay``: 0 is the seed and 1..N the backward steps; a
recording made under ``gradviz.watch()`` also has one forward frame per forward op before
the seed, steps -F..-1 (``goto_forward(j)`` reaches the j-th op), and the stepper opens on
the first of them, so a lecture sees the graph grow before the backward pass runs.

A ``watch(model)`` recording of more than a handful of nodes also has module views
(``gradviz.replay.module_views``): ``view = "collapsed-1"`` draws each module at depth 1
as one box, ``"modules"`` draws them as clusters; clicking a box in the browser expands it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anywidget
import traitlets

from gradviz.errors import GradvizError
from gradviz.escape import wire_safe
from gradviz.html import (
    asset_text,
    chosen_views,
    default_view,
    layout_view,
    static_html,
    stepper_payload,
)
from gradviz.recording import Recording
from gradviz.replay import (
    ForwardFrame,
    Frame,
    first_step,
    forward_frame,
    step_svg,
    steps_text,
    view_options,
)

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

    born = traitlets.Dict().tag(sync=True)  # per view laid out on request: when elements appear

    def __init__(
        self,
        recording: Recording,
        step: int | None = None,
        view: str | None = None,
        views: Sequence[str] | None = None,
        **options: Any,
    ) -> None:
        """``view``: the view to open on (default: the collapsed module view above
        ``COLLAPSED_DEFAULT_NODES`` nodes, else ``backward``); ``views`` leaves views out.
        Only the opening view is laid out now: the browser asks for another one the first
        time it is chosen (``view`` set from Python does the same)."""
        chosen = chosen_views(recording, views)
        opening = view or default_view(recording, chosen)
        if opening not in chosen:
            raise GradvizError(f"view={opening!r}: this stepper has the views {list(chosen)}")
        payload = stepper_payload(recording, views=chosen, lazy=True, **options)
        self.recording = recording
        self._options = options
        super().__init__(
            svgs=payload["svgs"],
            data=wire_safe(payload["data"]),  # names may hold anything
            css=payload["css"],
            step=first_step(recording) if step is None else step,
            view=payload["view"],
        )
        self.on_msg(self._on_message)
        if opening != self.view:
            self.view = opening

    def _on_message(self, _: Any, content: Any, buffers: Any = None) -> None:
        """The browser chose a view that is not laid out yet: lay it out and send it."""
        if isinstance(content, dict) and content.get("type") == "view":
            self.ensure_view(str(content.get("name", "")))

    def ensure_view(self, name: str) -> None:
        """Lay out view ``name`` if it is not yet, and send it to the browser."""
        if name in self.svgs or name not in self.data.get("views", []):
            return
        schedule = self.data["schedule"]
        svg, born = layout_view(self.recording, name, schedule, self.step, **self._options)
        if born:
            self.born = {**self.born, name: wire_safe(born)}
        self.svgs = {**self.svgs, name: svg}

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
        known = self.data.get("views") or list(self.svgs)
        if value not in known and self.svgs:
            raise traitlets.TraitError(f"view must be one of {sorted(known)}, not {value!r}")
        self.ensure_view(value)
        return value

    def next(self) -> int:
        """One step on (stays at the last step); returns the new step."""
        self.step = min(self.step + 1, self.last)
        return int(self.step)

    def prev(self) -> int:
        """One step back (stays at the first step); returns the new step."""
        self.step = max(self.step - 1, self.first)
        return int(self.step)

    def goto(self, index: int) -> int:
        """Jump to backward step ``index`` (0: the seed); negative counts from the end, like
        a list. Forward frames: ``goto_forward``, or set ``step`` to -F..-1."""
        if index < 0:
            index += self.last + 1
        if not 0 <= index <= self.last:
            raise IndexError(self._no_step(index))
        self.step = index
        return int(self.step)

    def goto_forward(self, index: int) -> int:
        """Jump to forward frame ``index`` (1: the first forward op ran); returns the step."""
        self.step = forward_frame(self.recording, index).step
        return int(self.step)

    @property
    def frame(self) -> Frame | ForwardFrame:
        """The replay state at the current step (a ``ForwardFrame`` before the seed)."""
        if self.step < 0:
            return forward_frame(self.recording, self.step - self.first + 1)
        return self.recording.frame(self.step)

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
