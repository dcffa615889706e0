"""An optimizer step as a steppable page: the backward replay, then ``optimizer.step()``.

The backward pass is stepped like any replay; its data carries the step's numbers
(``gradviz.replay.optstep.optimizer_data``) under ``optimizer``, which the front end
(``frontend/src/overlays/``) shows at the last step: each parameter's ‖w‖ before and after,
‖Δw‖, the update-to-weight ratio, the gradient and the optimizer state it used, the
hyper-parameters and the update rule, with the parameters' leaf boxes marked. Below the
stepper, ``describe_step``'s text as plain HTML (readable without script).
"""

from __future__ import annotations

from typing import Any

from gradviz.escape import html_text
from gradviz.explain.optstep import describe_step
from gradviz.model.optstep import OptimizerStep
from gradviz.replay.optstep import optimizer_data
from gradviz.stepper.page import replay_html

__all__ = ["step_html"]


def _text(step: OptimizerStep) -> str:
    lines = "<br>".join(html_text(line, None) for line in describe_step(step).split("\n"))
    return (
        '<details class="gv-optstep-text" style="font:13px sans-serif">'
        f"<summary>optimizer.step() as text</summary><p>{lines}</p></details>\n"
    )


def step_html(done: OptimizerStep, /, title: str | None = None, **options: Any) -> str:
    """The page (see the module docstring); ``options`` as for ``replay_html`` (``step``
    is the backward step the page opens on)."""
    name = title or (
        f"gradviz: {len(done.recording.steps)} backward steps, then "
        f"{done.settings.optimizer}.step() over {len(done.params)} parameters"
    )
    return replay_html(
        done.recording,
        title=name,
        extra_data={"optimizer": optimizer_data(done)},
        after=_text(done),
        **options,
    )
