"""Stopping background layouts: a save interrupted by Ctrl-C (or failing) stops the Graphviz
children of the views still being laid out, instead of leaving them to run to their time
limit (Python would wait for them before it exits)."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import wait
from pathlib import Path

import pytest
import torch
from torch import nn

import gradviz
from gradviz.errors import GradvizError
from gradviz.render import backend


def _sleeping_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A system ``dot`` that notes its pid in the returned file, then sleeps for minutes."""
    folder = tmp_path / "fakebin"
    folder.mkdir()
    pids = tmp_path / "pids"
    script = folder / "dot"
    script.write_text(f"#!/bin/sh\ncat > /dev/null\necho $$ >> {pids}\nexec sleep 600\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("GRADVIZ_GRAPHVIZ", "system")
    monkeypatch.setattr(backend, "LAYOUT_WORKERS", 2)
    monkeypatch.setattr(backend, "_pool", None)  # a fresh pool of two layout threads
    return pids


def _started(pids: Path, count: int) -> list[int]:
    """The pids of the first ``count`` fake dots, once they have started."""
    for _ in range(600):
        if pids.exists() and len(lines := pids.read_text().split()) >= count:
            return [int(line) for line in lines]
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} layouts started within 30 s")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _all_gone(pids: list[int]) -> bool:
    for _ in range(600):
        if not any(_alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def test_cancelling_a_started_layout_stops_its_graphviz(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = _sleeping_dot(tmp_path, monkeypatch)
    pending = backend.start_dot("digraph { a -> b }", seconds=300)
    [pid] = _started(pids, 1)
    pending.cancel()
    done, _ = wait([pending._future], timeout=30)
    assert done, "the cancelled layout still runs"
    assert not _alive(pid)
    with pytest.raises(GradvizError, match="cancelled"):
        pending.result()


def test_ctrl_c_during_a_save_stops_every_layout_still_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 1))
    with gradviz.watch(model) as watched:
        loss = model(torch.randn(3, 5)).square().mean()
    recording = watched.record(loss)
    pids = _sleeping_dot(tmp_path, monkeypatch)

    def interrupted(self: backend.PendingSvg) -> bytes:
        _started(pids, backend.LAYOUT_WORKERS)  # both workers are laying out
        raise KeyboardInterrupt

    monkeypatch.setattr(backend.PendingSvg, "result", interrupted)
    with pytest.raises(KeyboardInterrupt):
        recording.save(tmp_path / "replay.html")
    started = _started(pids, backend.LAYOUT_WORKERS)
    assert _all_gone(started), "a layout of the interrupted save still runs"
    assert _workers_free(), "a layout queued before the interrupt runs"
    assert len(pids.read_text().split()) == len(started)  # no new dot started


def _workers_free() -> bool:
    """Whether every layout thread comes to a task submitted now (a state, not a pause):
    the pool takes tasks in order, so each layout queued before was left out or has ended."""
    free = threading.Barrier(backend.LAYOUT_WORKERS + 1, timeout=60)
    for _ in range(backend.LAYOUT_WORKERS):
        backend._workers().submit(free.wait)
    try:
        free.wait()
    except threading.BrokenBarrierError:
        return False
    return True
