"""Every error gradviz raises, in one place, each saying what to do next."""

from __future__ import annotations

__all__ = [
    "BackwardFailed",
    "GradvizError",
    "GradvizWarning",
    "GraphFreed",
    "GraphvizFailed",
    "GraphvizNotFound",
    "GraphvizTimeout",
    "NotOnGraph",
    "WatchNestingError",
]

GRAPHVIZ_INSTALL_HINT = (
    "gradviz draws with an embedded Graphviz (pip install graphviz-pure, which\n"
    "pip install torch-gradviz installs), or with the Graphviz 'dot' program:\n"
    "  Debian/Ubuntu: sudo apt-get install graphviz\n"
    "  macOS:         brew install graphviz\n"
    "  conda:         conda install -c conda-forge graphviz\n"
    "GRADVIZ_GRAPHVIZ=embedded|system (or gradviz.use_graphviz) chooses between them."
)


class GradvizError(Exception):
    """Base class: catch this to catch anything gradviz raises on purpose."""


class GradvizWarning(UserWarning):
    """Something worked, but not the way the user probably expects."""


class NotOnGraph(GradvizError, TypeError):
    """A root is not a tensor, or a tensor that autograd does not track."""


class GraphFreed(GradvizError, RuntimeError):
    """The part of the graph that was asked for was freed by an earlier backward."""


class GraphvizNotFound(GradvizError, RuntimeError):
    """Neither the embedded Graphviz nor the ``dot`` program can run here."""

    def __init__(self, detail: str = "") -> None:
        message = "Graphviz cannot run here. " + GRAPHVIZ_INSTALL_HINT
        if detail:
            message += f"\n(detail: {detail})"
        super().__init__(message)
        self.detail = detail


class GraphvizFailed(GradvizError, RuntimeError):
    """Graphviz ran but failed, or returned output that is not a drawing."""


class GraphvizTimeout(GraphvizFailed):
    """A Graphviz call did not finish within its time limit and was stopped."""


class BackwardFailed(GradvizError, RuntimeError):
    """The recorded backward raised. Every hook was removed; ``recording`` holds the steps
    that ran and ``node_id`` the node that failed (None when it failed before any node)."""

    def __init__(self, message: str, recording: object, node_id: str | None) -> None:
        super().__init__(message)
        self.recording = recording
        self.node_id = node_id


class WatchNestingError(GradvizError, RuntimeError):
    """``gradviz.watch()`` blocks cannot be nested."""
