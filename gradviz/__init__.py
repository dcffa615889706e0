"""gradviz: see what PyTorch autograd really does.

``trace`` walks the real backward graph; ``Graph`` draws it with Graphviz. Nothing here
imports IPython or ipywidgets: the notebook side loads them when first used. The layers
under this curated face are described in docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradviz.analysis.inplace import InplaceFinding, InplaceReport
from gradviz.errors import (
    BackwardFailed,
    GradvizError,
    GradvizWarning,
    GraphFreed,
    GraphvizNotFound,
    InvalidArgument,
    InvalidInput,
    NotOnGraph,
    StepNotFound,
    WatchNestingError,
)
from gradviz.model.forward import FOp, Forward, FTensor, ModuleScope, SourceLine
from gradviz.model.graph import Edge, Node, SavedValue, TensorRecord
from gradviz.model.recording import HookChange, Step
from gradviz.model.values import Role, Summary
from gradviz.objects import (
    Graph,
    Recording,
    Watch,
    explain_inplace,
    record,
    record_grad,
    trace,
    watch,
)
from gradviz.render.options import RenderKeywords, RenderOptions
from gradviz.render.theme import THEMES, Theme
from gradviz.replay.frames import ForwardFrame, Frame

if TYPE_CHECKING:
    from gradviz.stepper.widget import Stepper

__version__ = "0.1.0"

__all__ = [
    "THEMES",
    "BackwardFailed",
    "Edge",
    "FOp",
    "FTensor",
    "Forward",
    "ForwardFrame",
    "Frame",
    "GradvizError",
    "GradvizWarning",
    "Graph",
    "GraphFreed",
    "GraphvizNotFound",
    "HookChange",
    "InplaceFinding",
    "InplaceReport",
    "InvalidArgument",
    "InvalidInput",
    "ModuleScope",
    "Node",
    "NotOnGraph",
    "Recording",
    "RenderKeywords",
    "RenderOptions",
    "Role",
    "SavedValue",
    "SourceLine",
    "Step",
    "StepNotFound",
    "Stepper",
    "Summary",
    "TensorRecord",
    "Theme",
    "Watch",
    "WatchNestingError",
    "__version__",
    "explain_inplace",
    "record",
    "record_grad",
    "trace",
    "watch",
]


def __getattr__(name: str) -> Any:
    """``Stepper`` loads anywidget, so it is imported on first use, not with gradviz."""
    if name == "Stepper":
        from gradviz.stepper.widget import Stepper

        return Stepper
    raise AttributeError(f"module 'gradviz' has no attribute {name!r}")
