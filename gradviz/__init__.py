"""gradviz: see what PyTorch autograd really does.

``trace`` walks the real backward graph; ``Graph`` draws it with Graphviz. Nothing here
imports IPython or ipywidgets: the notebook side loads them when first used. The layers
under this curated face are described in docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradviz.analysis.diff import NodeChange
from gradviz.analysis.health import EdgeHealth, ModuleNorm
from gradviz.analysis.inplace import InplaceFinding
from gradviz.analysis.memory import MemoryStep, MemoryTimeline
from gradviz.capture.record import RecordKeywords
from gradviz.errors import (
    BackwardFailed,
    GradvizError,
    GradvizWarning,
    GraphFreed,
    GraphvizFailed,
    GraphvizNotFound,
    GraphvizTimeout,
    InvalidArgument,
    InvalidInput,
    NotOnGraph,
    StepNotFound,
    UnsupportedFormat,
    WatchNestingError,
)
from gradviz.model.forward import FOp, Forward, FTensor, ModuleScope, SourceLine
from gradviz.model.graph import Edge, Node, SavedValue, TensorRecord
from gradviz.model.optstep import ParamStep
from gradviz.model.recording import HookChange, Step
from gradviz.model.training import NonFinite, Onset
from gradviz.model.values import Role, Summary
from gradviz.objects import (
    Graph,
    OptimizerStep,
    Recording,
    SaveKeywords,
    TrainingRun,
    TrainingWatch,
    Watch,
    explain_inplace,
    explore,
    record,
    record_grad,
    record_step,
    trace,
    watch,
    watch_training,
    why_no_grad,
)
from gradviz.render.backend import use_graphviz
from gradviz.render.options import RenderKeywords, RenderOptions, StyleKeywords
from gradviz.render.theme import THEMES, Theme
from gradviz.replay.frames import ForwardFrame, Frame
from gradviz.reports import GradientHealth, InplaceReport, NoGradReport, RecordingDiff

if TYPE_CHECKING:
    from gradviz.stepper.widget import Stepper

__version__ = "0.1.0"

__all__ = [
    "THEMES",
    "BackwardFailed",
    "Edge",
    "EdgeHealth",
    "FOp",
    "FTensor",
    "Forward",
    "ForwardFrame",
    "Frame",
    "GradientHealth",
    "GradvizError",
    "GradvizWarning",
    "Graph",
    "GraphFreed",
    "GraphvizFailed",
    "GraphvizNotFound",
    "GraphvizTimeout",
    "HookChange",
    "InplaceFinding",
    "InplaceReport",
    "InvalidArgument",
    "InvalidInput",
    "MemoryStep",
    "MemoryTimeline",
    "ModuleNorm",
    "ModuleScope",
    "NoGradReport",
    "Node",
    "NodeChange",
    "NonFinite",
    "NotOnGraph",
    "Onset",
    "OptimizerStep",
    "ParamStep",
    "RecordKeywords",
    "Recording",
    "RecordingDiff",
    "RenderKeywords",
    "RenderOptions",
    "Role",
    "SaveKeywords",
    "SavedValue",
    "SourceLine",
    "Step",
    "StepNotFound",
    "Stepper",
    "StyleKeywords",
    "Summary",
    "TensorRecord",
    "Theme",
    "TrainingRun",
    "TrainingWatch",
    "UnsupportedFormat",
    "Watch",
    "WatchNestingError",
    "__version__",
    "explain_inplace",
    "explore",
    "record",
    "record_grad",
    "record_step",
    "trace",
    "use_graphviz",
    "watch",
    "watch_training",
    "why_no_grad",
]


def __getattr__(name: str) -> Any:
    """``Stepper`` loads anywidget, so it is imported on first use, not with gradviz."""
    if name == "Stepper":
        from gradviz.stepper.widget import Stepper

        return Stepper
    raise AttributeError(f"module 'gradviz' has no attribute {name!r}")
