"""gradviz: see what PyTorch autograd really does.

``trace`` walks the real backward graph; ``Graph`` draws it with Graphviz. Nothing here
imports IPython or ipywidgets: the notebook side loads them when first used.
"""

from __future__ import annotations

from gradviz.errors import (
    BackwardFailed,
    GradvizError,
    GradvizWarning,
    GraphFreed,
    GraphvizNotFound,
    NotOnGraph,
)
from gradviz.graph import Edge, Graph, Node, Role, Summary, TensorRecord
from gradviz.record import record, record_grad
from gradviz.recording import Recording, Step
from gradviz.theme import THEMES, Theme
from gradviz.trace import trace

__version__ = "0.1.0"

__all__ = [
    "THEMES",
    "BackwardFailed",
    "Edge",
    "GradvizError",
    "GradvizWarning",
    "Graph",
    "GraphFreed",
    "GraphvizNotFound",
    "Node",
    "NotOnGraph",
    "Recording",
    "Role",
    "Step",
    "Summary",
    "TensorRecord",
    "Theme",
    "__version__",
    "record",
    "record_grad",
    "trace",
]
