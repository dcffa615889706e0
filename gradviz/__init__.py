"""gradviz: see what PyTorch autograd really does.

``trace`` walks the real backward graph; ``Graph`` draws it with Graphviz. Nothing here
imports IPython or ipywidgets: the notebook side loads them when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradviz.errors import (
    BackwardFailed,
    GradvizError,
    GradvizWarning,
    GraphFreed,
    GraphvizFailed,
    GraphvizNotFound,
    GraphvizTimeout,
    NotOnGraph,
)
from gradviz.forward import Forward
from gradviz.graph import Edge, Graph, Node, Role, Summary, TensorRecord
from gradviz.graphviz_run import use_graphviz
from gradviz.inplace import InplaceReport, explain_inplace
from gradviz.record import record, record_grad
from gradviz.recording import Recording, Step
from gradviz.theme import THEMES, Theme
from gradviz.trace import trace
from gradviz.watch import Watch, WatchNestingError, watch

if TYPE_CHECKING:
    from gradviz.widget import Stepper

__version__ = "0.1.0"

__all__ = [
    "THEMES",
    "BackwardFailed",
    "Edge",
    "Forward",
    "GradvizError",
    "GradvizWarning",
    "Graph",
    "GraphFreed",
    "GraphvizFailed",
    "GraphvizNotFound",
    "GraphvizTimeout",
    "InplaceReport",
    "Node",
    "NotOnGraph",
    "Recording",
    "Role",
    "Step",
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
    "use_graphviz",
    "watch",
]


def __getattr__(name: str) -> Any:
    """``Stepper`` loads anywidget, so it is imported on first use, not with gradviz."""
    if name == "Stepper":
        from gradviz.widget import Stepper

        return Stepper
    raise AttributeError(f"module 'gradviz' has no attribute {name!r}")
