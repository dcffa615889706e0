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

import operator
from collections.abc import Sequence
from typing import Any

import anywidget
import traitlets
from typing_extensions import Unpack

from gradviz.errors import InvalidArgument, StepNotFound
from gradviz.escape import wire_safe
from gradviz.model.graph import Graph
from gradviz.model.optstep import OptimizerStep
from gradviz.model.recording import Recording
from gradviz.render.options import StyleKeywords
from gradviz.render.pagesvg import page_svg
from gradviz.replay.frames import (
    ForwardFrame,
    Frame,
    first_step,
    forward_frame,
    make_frame,
    step_svg,
    steps_text,
)
from gradviz.replay.modules import view_render_options
from gradviz.replay.optstep import optimizer_data
from gradviz.stepper.embed import fallback_bundle
from gradviz.stepper.page import (
    asset_text,
    chosen_views,
    default_view,
    layout_view,
    stepper_payload,
)

__all__ = ["Stepper"]


def _step_number(value: object, where: str) -> int:
    """A step number given as an int (numpy ints too), or an ``InvalidArgument``."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise InvalidArgument(
            f"{where} takes a step number, an int such as 3 or -1; got "
            f"{type(value).__name__} {value!r:.40}"
        )
    return operator.index(value)


class Stepper(anywidget.AnyWidget):
    """Step through a recorded backward pass; ``step`` is synced with the browser."""

    _esm = asset_text("stepper-widget.js")  # an ES module: export default { render }
    _css = asset_text("stepper.css") + asset_text("explain.css")

    step = traitlets.Int(0).tag(sync=True)
    view = traitlets.Unicode("backward").tag(sync=True)
    svgs = traitlets.Dict().tag(sync=True)
    data = traitlets.Dict().tag(sync=True)
    css = traitlets.Dict().tag(sync=True)
    # the token of the static picture published beside the widget (see _repr_mimebundle_)
    fallback = traitlets.Unicode("").tag(sync=True)

    born = traitlets.Dict().tag(sync=True)  # per view laid out on request: when elements appear

    def __init__(
        self,
        recording: Recording | OptimizerStep,
        step: int | None = None,
        view: str | None = None,
        views: Sequence[str] | None = None,
        explain: bool | None = None,
        **options: Unpack[StyleKeywords],
    ) -> None:
        """``view``: the view to open on (default: ``page.default_view``, the module boxes
        ``collapsed-auto`` picks for a big watched model, else ``backward``; ``collapse=`` a
        depth or module paths chooses other boxes); ``views`` leaves views out;
        ``explain``: the Memory and Health toggles (default: graphs of up to 150 nodes).
        Only the opening view is laid out now: the browser asks for another one the first
        time it is chosen (``view`` set from Python does the same)."""
        extra: dict[str, Any] = {}
        if isinstance(recording, OptimizerStep):  # the backward, then the step's panel
            extra = {"optimizer": optimizer_data(recording)}
            recording = recording.recording
        if not isinstance(recording, Recording):
            what = (
                "a Graph (from gradviz.trace)"
                if isinstance(recording, Graph)
                else f"a {type(recording).__name__}"
            )
            raise InvalidArgument(
                f"Stepper steps through a recording, not {what}: "
                "gradviz.Stepper(gradviz.record(loss)) runs the backward pass and records it"
            )
        if step is not None:
            step = _step_number(step, "Stepper(step=)")
        chosen = chosen_views(recording, views)
        opening = view or default_view(recording, chosen, options.get("collapse"))
        if opening not in chosen:
            raise InvalidArgument(f"view={opening!r}: this stepper has the views {list(chosen)}")
        payload = stepper_payload(recording, views=chosen, lazy=True, explain=explain, **options)
        self.recording = recording
        self._options = options
        super().__init__(
            svgs=payload["svgs"],
            data=wire_safe({**payload["data"], **extra}),  # names may hold anything
            css=payload["css"],
            step=payload["start"] if step is None else step,  # where the page opens too
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

    def goto(self, step: int) -> int:
        """Jump to ``step``: -F..-1 the forward frames (under ``watch()``), 0 the seed, 1..N
        the backward steps, as everywhere in gradviz; returns the new step."""
        given = _step_number(step, "goto()")
        if not self.first <= given <= self.last:
            raise StepNotFound(f"goto({given}): {self._no_step(given)}")
        self.step = given
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
        return step_svg(self.recording, self.step, **view_render_options(self._options, self.view))

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The widget view, plus the fallback (``gradviz.stepper.embed``: an offline stepper
        in the view shown, and its picture) for places where the widget cannot run.

        Inside a kernel the fallback is its own output, published just before the widget's
        with a display id, and updated when a view is picked in the widget (the notebook
        saves the view the stepper shows): an HTML export (nbconvert) of a notebook saved
        with widget state picks the widget view over any ``text/html`` beside it in the same
        output, and draws nothing without the widget's JavaScript. The live widget hides
        that output.
        """
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        data = dict(data)
        data["text/plain"] = f"Stepper over {self.recording!r}"
        if not self.fallback:
            self.fallback = f"gv-{self.model_id}"
        if _in_kernel():
            self._fallback_display = f"gradviz-fallback-{self.model_id}"
            _publish(self._fallback(), transient={"display_id": self._fallback_display})
            data.pop("text/html", None)
        else:
            shown = self._fallback()
            data.update({k: v for k, v in shown.items() if k != "text/plain"})
        return data, metadata

    _fallback_display = ""  # the display id of the fallback published in a kernel

    def _fallback(self) -> dict[str, str]:
        """The fallback bundle as the widget stands: its view, its step, its views laid out."""
        state = {
            "svgs": self.svgs,
            "data": self.data,
            "css": self.css,
            "view": self.view,
            "step": self.step,
            "born": self.born,
        }
        final = step_svg(self.recording, self.last, **view_render_options(self._options, self.view))
        return fallback_bundle(state, page_svg(final), self.fallback, len(self.recording.steps))

    @traitlets.observe("view")
    def _view_changed(self, _: Any) -> None:
        """A view picked (in the browser or from Python): the published fallback follows."""
        if self._fallback_display:
            _publish(
                self._fallback(), transient={"display_id": self._fallback_display}, update=True
            )


def _in_kernel() -> bool:
    """Whether a Jupyter kernel runs us (where outputs can be published and updated)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - anywidget depends on IPython
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _publish(data: dict[str, str], transient: dict[str, str], update: bool = False) -> None:
    """Publish ``data`` as an output (``update``: replace the one with the same display id)."""
    from IPython.display import publish_display_data

    publish_display_data(data, transient=transient, update=update)  # type: ignore[no-untyped-call]
