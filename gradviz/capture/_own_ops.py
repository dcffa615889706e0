"""gradviz's own tensor ops (tracing, recording, summaries) are not the user's forward pass.

``watch()`` sees every torch op its thread runs; while gradviz works inside a watch block
(``gradviz.record()`` called there, say), ``watch`` asks ``running()`` and lets those ops
through unrecorded. Per thread, as torch's function-mode stack is.
"""

from __future__ import annotations

import threading

__all__ = ["own_ops", "running"]

_state = threading.local()


class own_ops:
    """Mark the ops the block runs as gradviz's own (nests). A class, not a generator
    context manager: a traced node's saved values enter it once each when read."""

    __slots__ = ()

    def __enter__(self) -> None:
        _state.depth = getattr(_state, "depth", 0) + 1

    def __exit__(self, *exc: object) -> None:
        _state.depth -= 1


def running() -> bool:
    """Whether this thread is inside ``own_ops()``."""
    return getattr(_state, "depth", 0) > 0
