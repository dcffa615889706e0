"""gradviz's own tensor ops (tracing, recording, summaries) are not the user's forward pass;
and its own work pauses the cyclic collector (``gc_paused``).

``watch()`` sees every torch op its thread runs; while gradviz works inside a watch block
(``gradviz.record()`` called there, say), ``watch`` asks ``running()`` and lets those ops
through unrecorded. Per thread, as torch's function-mode stack is.
"""

from __future__ import annotations

import gc
import threading

__all__ = ["gc_paused", "own_ops", "running"]

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


_gc_lock = threading.Lock()
_gc_pauses = 0  # gc_paused() blocks running now, in any thread
_gc_was_enabled = False  # the collector's state before the first of them began


class gc_paused:  # named as a function: used as one, with gc_paused(): ...
    """The walk allocates many small objects and frees none; the cyclic collector would
    rescan them over and over (it took half the time of a 100,000-node walk).

    Counted, so that overlapping blocks (two threads recording at once) keep it paused
    until the last one ends, which restores the state from before the first one began.
    A class, not a generator context manager: a trace enters it once, and the generator's
    machinery cost more than the pause itself on a small graph.
    """

    __slots__ = ()

    def __enter__(self) -> None:
        global _gc_pauses, _gc_was_enabled
        with _gc_lock:
            if _gc_pauses == 0:
                _gc_was_enabled = gc.isenabled()
                gc.disable()
            _gc_pauses += 1

    def __exit__(self, *exc: object) -> None:
        global _gc_pauses
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()
