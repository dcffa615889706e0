"""Every error gradviz raises, in one place, each saying what to do next."""

from __future__ import annotations

__all__ = [
    "BackwardFailed",
    "GradvizError",
    "GradvizWarning",
    "GraphFreed",
    "GraphvizNotFound",
    "InvalidInput",
    "NotOnGraph",
    "WatchNestingError",
]

GRAPHVIZ_INSTALL_HINT = (
    "Install the Graphviz 'dot' program:\n"
    "  Debian/Ubuntu: sudo apt-get install graphviz\n"
    "  macOS:         brew install graphviz\n"
    "  conda:         conda install -c conda-forge graphviz\n"
    "(the Python package 'graphviz' only drives it)."
)


class GradvizError(Exception):
    """Base class: catch this to catch anything gradviz raises on purpose."""


class GradvizWarning(UserWarning):
    """Something worked, but not the way the user probably expects."""


class InvalidInput(GradvizError, ValueError):
    """A theme or a loaded ``.json`` holds a value gradviz will not draw; the message names
    the field and what it must be."""


class NotOnGraph(GradvizError, TypeError):
    """A root is not a tensor, or a tensor that autograd does not track."""


class GraphFreed(GradvizError, RuntimeError):
    """The part of the graph that was asked for was freed by an earlier backward."""


class GraphvizNotFound(GradvizError, RuntimeError):
    """The Graphviz ``dot`` program is not installed or not on PATH."""

    def __init__(self, detail: str = "") -> None:
        message = "Graphviz was not found. " + GRAPHVIZ_INSTALL_HINT
        if detail:
            message += f"\n(detail: {detail})"
        super().__init__(message)


class BackwardFailed(GradvizError, RuntimeError):
    """The recorded backward raised. Every hook was removed; ``recording`` holds the steps
    that ran and ``node_id`` the node that failed (None when it failed before any node)."""

    def __init__(self, message: str, recording: object, node_id: str | None) -> None:
        super().__init__(message)
        self.recording = recording
        self.node_id = node_id


class WatchNestingError(GradvizError, RuntimeError):
    """``gradviz.watch()`` blocks cannot be nested."""
