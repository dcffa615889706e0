"""gradviz's own tensor ops (tracing, recording, summaries) are not the user's forward pass.

``watch()`` sees every torch op its thread runs; while gradviz works inside a watch block
(``gradviz.record()`` called there, say), ``watch`` asks ``running()`` and lets those ops
through unrecorded. Per thread, as torch's function-mode stack is.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["own_ops", "running"]

_state = threading.local()


@contextmanager
def own_ops() -> Iterator[None]:
    """Mark the ops the block runs as gradviz's own (nests)."""
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1


def running() -> bool:
    """Whether this thread is inside ``own_ops()``."""
    return getattr(_state, "depth", 0) > 0
