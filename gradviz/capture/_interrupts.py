"""Ctrl-C held back while gradviz adds or removes its hooks.

An interrupt between registering a hook and storing its handle, or halfway through
removing them, would leave hooks behind in the user's graph. These loops take
milliseconds, so the interrupt is held for that long and then delivered as usual.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["deferred_interrupts"]


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Run the block with SIGINT held; one that arrived meanwhile is handled at the end.

    Only the main thread receives signals (and may set handlers): elsewhere a no-op. A
    handler set outside Python (``None``) is left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[FrameType | None] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(frame)

    previous = signal.getsignal(signal.SIGINT)
    if previous is None:
        yield
        return
    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held and callable(previous):
            previous(signal.SIGINT, held[0])  # the usual handler raises KeyboardInterrupt
