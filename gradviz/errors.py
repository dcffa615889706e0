"""Every error gradviz raises, in one place, each saying what to do next."""

from __future__ import annotations

import threading

__all__ = [
    "BackwardFailed",
    "GradvizError",
    "GradvizWarning",
    "GraphFreed",
    "GraphvizFailed",
    "GraphvizNotFound",
    "GraphvizOutOfMemory",
    "GraphvizTimeout",
    "InvalidArgument",
    "InvalidInput",
    "NotOnGraph",
    "StepNotFound",
    "UnsupportedFormat",
    "WatchNestingError",
    "backward_failed",
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


class InvalidInput(GradvizError, ValueError):
    """A theme or a loaded ``.json`` holds a value gradviz will not draw; the message names
    the field and what it must be."""


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


class GraphvizOutOfMemory(GraphvizFailed):
    """Graphviz ran out of memory (the cap gradviz sets on its process, or the machine's)."""


class BackwardFailed(GradvizError, RuntimeError):
    """The recorded backward raised. Every hook was removed; ``recording`` holds the steps
    that ran and ``node_id`` the node that failed (None when it failed before any node)."""

    def __init__(self, message: str, recording: object, node_id: str | None) -> None:
        super().__init__(message)
        self.recording = recording
        self.node_id = node_id


class WatchNestingError(GradvizError, RuntimeError):
    """``gradviz.watch()`` blocks cannot be nested."""


class InvalidArgument(GradvizError, ValueError, TypeError):
    """An argument gradviz cannot use (checked before anything runs). A ``ValueError`` and
    a ``TypeError`` too, so that ``except`` clauses written for PyTorch's errors still work."""


class UnsupportedFormat(InvalidArgument):
    """A file name whose suffix the object cannot be saved as; the message lists those it
    can."""


_failure_types: dict[type[BaseException], type[BackwardFailed]] = {}
_failure_types_lock = threading.Lock()


def backward_failed(
    message: str, error: Exception, recording: object, node_id: str | None
) -> Exception:
    """What ``record()`` raises when the backward raised ``error``.

    PyTorch's own ``RuntimeError`` becomes a ``BackwardFailed``. Any other type (the user's
    own exception, from their hook or their ``autograd.Function``) becomes an instance of a
    subclass of both ``BackwardFailed`` and that type, with the error's attributes: the
    user's ``except`` still catches it, and it still carries the partial recording. When
    no such subclass can exist (incompatible layouts, types that format their own fields),
    the user's exception itself is returned, with gradviz's message as a note.
    """
    kind = type(error)
    if kind is RuntimeError or isinstance(error, BackwardFailed):
        return BackwardFailed(message, recording=recording, node_id=node_id)
    try:
        failed_type = _failure_type(kind)
        failed = failed_type.__new__(failed_type, message)
        for name, value in vars(error).items():
            if name not in ("recording", "node_id"):
                setattr(failed, name, value)
        BackwardFailed.__init__(failed, message, recording=recording, node_id=node_id)
        readable = message in str(failed)  # not so for types that format their own fields
    except Exception:  # a type that cannot be combined with BackwardFailed, or built so
        readable = False
    if not readable:
        error.add_note(f"gradviz: {message}")
        return error
    return failed


def _failure_type(kind: type[BaseException]) -> type[BackwardFailed]:
    """``BackwardFailed`` and ``kind`` in one class, made once per type."""
    with _failure_types_lock:
        made = _failure_types.get(kind)
        if made is None:
            made = type(f"BackwardFailed[{kind.__name__}]", (BackwardFailed, kind), {})
            made.__module__ = __name__
            _failure_types[kind] = made
        return made


class StepNotFound(GradvizError, IndexError):
    """A step number outside the recording's steps."""
