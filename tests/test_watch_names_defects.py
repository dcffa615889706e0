"""Issue #12's watch() defects: thread scope, names in functions, loops and cells, names
bound only to the tensor really assigned, and what the forward view calls things.

Expected names come from the code each test runs (the variables it binds), and values
from PyTorch itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
import torch

import gradviz
from gradviz.watch import _ACTIVE


# -- watch() belongs to the thread that entered it ----------------------------------------
def _in_threads(*jobs: Callable[[threading.Barrier], Any]) -> list[Any]:
    """Run each job in its own thread, the jobs meeting at a barrier inside their blocks."""
    barrier = threading.Barrier(len(jobs), timeout=60)
    results: list[Any] = [None] * len(jobs)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            results[index] = jobs[index](barrier)
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    if errors:
        raise errors[0]
    return results


def test_two_threads_watch_at_once_each_sees_only_its_own_ops_and_modules() -> None:
    def plain(barrier: threading.Barrier) -> gradviz.Watch:
        with gradviz.watch() as w:
            barrier.wait()  # both blocks are open now
            a = torch.tensor(2.0, requires_grad=True)
            b = a * 3
            barrier.wait()  # the other thread ran its model meanwhile
            del b
        return w

    def with_model(barrier: threading.Barrier) -> gradviz.Watch:
        model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh())
        with gradviz.watch(model) as w:
            barrier.wait()
            model(torch.ones(3)).sum()
            barrier.wait()
        return w

    first, second = _in_threads(plain, with_model)
    assert first.forward.modules == []
    assert [op.name for op in first.forward.ops] == ["tensor", "mul"]
    assert [m.type_name for m in second.forward.modules] == ["Sequential", "Linear", "Tanh"]
    assert "mul" not in [op.name for op in second.forward.ops]
    assert first.errors == [] and second.errors == []
    assert not _ACTIVE


def test_nesting_in_one_thread_is_still_refused_while_another_thread_watches() -> None:
    def outer(barrier: threading.Barrier) -> str:
        with gradviz.watch():
            barrier.wait()
            try:
                with gradviz.watch():
                    pass
            except gradviz.WatchNestingError as error:
                message = str(error)
            barrier.wait()
        return message

    def other(barrier: threading.Barrier) -> bool:
        with gradviz.watch():
            barrier.wait()
            barrier.wait()
        return True

    message, ok = _in_threads(outer, other)
    assert "nested" in message and "this thread" in message
    assert ok and not _ACTIVE
