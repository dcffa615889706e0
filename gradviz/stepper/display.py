"""How a ``Recording`` shows in Jupyter: the stepper widget, or a static step without one.

It sits above ``page`` and ``widget`` so that neither imports the other's caller; anywidget
is imported only when a recording is displayed.
"""

from __future__ import annotations

from typing import Any

from gradviz.errors import GradvizError
from gradviz.model.optstep import OptimizerStep
from gradviz.model.recording import Recording
from gradviz.stepper.page import static_html

__all__ = ["notebook_bundle"]


def notebook_bundle(shown: Recording | OptimizerStep) -> tuple[dict[str, Any], dict[str, Any]]:
    """How a ``Recording`` (or an optimizer step: its backward, then the step's panel)
    displays: the stepper widget, or the static step without one."""
    recording = shown.recording if isinstance(shown, OptimizerStep) else shown
    try:
        from gradviz.stepper.widget import Stepper
    except ImportError:  # no notebook extra: the static picture still shows
        text = f"{recording!r}\n(install torch-gradviz[notebook] for the stepper)"
        return {"text/plain": text, "text/html": static_html(recording)}, {}
    try:
        bundle = Stepper(shown)._repr_mimebundle_()
    except GradvizError as error:  # Graphviz missing: say why instead of failing
        return {"text/plain": f"{recording!r}\n(no diagram: {error})"}, {}
    assert bundle is not None
    return bundle
