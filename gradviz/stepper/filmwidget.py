"""The film strip in a notebook: an anywidget over the same front end as the offline page.

The run's data goes to the browser once; after that only ``step`` (the training step shown)
travels, both ways. The kept steps' replays ride along as whole offline pages and open in a
frame below the strip when their mark or link is clicked (``opened`` says which). ``import
gradviz`` does not load this module: ``TrainingRun.widget()`` imports it on first use.
"""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets

from gradviz.errors import InvalidArgument
from gradviz.escape import wire_safe
from gradviz.model.training import EXPLODING_ABOVE, VANISHING_BELOW, TrainingRun
from gradviz.stepper.filmstrip import filmstrip_data
from gradviz.stepper.page import asset_text, replay_html

__all__ = ["FilmStrip"]


class FilmStrip(anywidget.AnyWidget):
    """A training run's film strip; ``step`` (a training step) is synced with the browser."""

    _esm = asset_text("filmstrip-widget.js")  # an ES module: export default { render }
    _css = asset_text("filmstrip.css")

    step = traitlets.Int(0).tag(sync=True)
    data = traitlets.Dict().tag(sync=True)
    replays = traitlets.Dict().tag(sync=True)  # str(step) -> that step's replay page
    opened = traitlets.Int(-1).tag(sync=True)  # the step whose replay is open (-1: none)

    def __init__(
        self,
        run: TrainingRun,
        vanishing_below: float = VANISHING_BELOW,
        exploding_above: float = EXPLODING_ABOVE,
        replays: bool = True,
    ) -> None:
        """``replays=False`` leaves the kept steps' replay pages out (they can be large)."""
        if not isinstance(run, TrainingRun):
            raise InvalidArgument(
                f"FilmStrip shows a TrainingRun, not a {type(run).__name__}: "
                "with gradviz.watch_training(model, optimizer) as run: ..., then run.widget()"
            )
        kept = sorted(run.recordings) if replays else []
        data = filmstrip_data(
            run, vanishing_below, exploding_above, {step: f"#replay-{step}" for step in kept}
        )
        pages = {
            str(step): replay_html(run.recordings[step], title=f"training step {step}")
            for step in kept
        }
        self.run = run
        super().__init__(
            data=wire_safe(data),
            replays=pages,
            step=data["steps"][0] if data["steps"] else 0,
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        return {**data, "text/plain": f"FilmStrip over {self.run.summary_text()}"}, metadata
