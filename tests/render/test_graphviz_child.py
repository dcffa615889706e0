"""The Graphviz child process is bounded: a ``dot`` that runs its work in a child of its own
is ended with it at the time limit (its whole process group), and its memory is capped, an
out-of-memory death reported as ``GraphvizOutOfMemory``.

A fake ``dot`` (a shell script first on PATH) plays each Graphviz. Every wait is on a state
(a file written, a process gone, a call returned), bounded generously; nothing is timed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz import GradvizWarning, GraphvizTimeout
from gradviz.errors import GraphvizOutOfMemory
from gradviz.render import backend

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fake dot is a shell script")

BOUND = 60.0  # seconds: how long any wait here may take on a loaded machine before failing


@pytest.fixture(autouse=True)
def _backend_follows_the_environment() -> Iterator[None]:
    gradviz.use_graphviz(None)
    yield
    gradviz.use_graphviz(None)


def fake_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    folder = tmp_path / "fakebin"
    folder.mkdir(exist_ok=True)
    script = folder / "dot"
    script.write_text(f"#!/bin/sh\ncat > /dev/null\n{body}\n", encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("GRADVIZ_GRAPHVIZ", "system")


def _until(done: Callable[[], bool]) -> bool:
    """Whether ``done()`` becomes true within BOUND seconds (checked every 50 ms)."""
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(0.05)
    return done()


def _gone(pid: int) -> bool:
    """Dead: no such process, or a zombie waiting to be reaped by whoever adopted it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


def test_a_dot_whose_layout_runs_in_a_child_is_stopped_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the grandchild keeps dot's stdout and stderr open: waiting for them to close waited
    # for it, and a 2 s limit did not return for as long as it ran
    pid_file = tmp_path / "grandchild"
    fake_dot(tmp_path, monkeypatch, f"sleep 600 &\necho $! > {pid_file}\nwait")
    raised: list[BaseException] = []

    def call() -> None:
        try:
            backend.run_graphviz("digraph { a -> b }", seconds=0.5)
        except BaseException as error:  # handed to the test's thread
            raised.append(error)

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    try:
        assert _until(lambda: pid_file.exists() and pid_file.read_text().strip() != "")
        grandchild = int(pid_file.read_text())
        caller.join(BOUND)
        assert not caller.is_alive(), "run_graphviz did not return after its time limit"
        assert len(raised) == 1 and isinstance(raised[0], GraphvizTimeout)
        assert _until(lambda: _gone(grandchild)), "the layout's grandchild still runs"
    finally:
        if pid_file.exists() and pid_file.read_text().strip():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
        caller.join(BOUND)


def _allocating_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dot that asks for 16 GiB of address space (never touched) and says so if refused."""
    allocate = (
        "import ctypes, sys; m = ctypes.CDLL(None).malloc; m.restype = ctypes.c_void_p; "
        "m.argtypes = [ctypes.c_size_t]; sys.exit(0 if m(1 << 34) else 'dot: out of memory')"
    )
    fake_dot(tmp_path, monkeypatch, f'exec "{sys.executable}" -c "{allocate}"')
    monkeypatch.setattr(backend, "MEMORY_LIMIT", 512 * 2**20)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the cap is set with prlimit")
def test_graphviz_memory_is_capped_and_running_out_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _allocating_dot(tmp_path, monkeypatch)
    with pytest.raises(
        GraphvizOutOfMemory, match=r"ran out of memory \(gradviz caps it at 0\.5 GiB"
    ):
        backend.run_graphviz("digraph { a -> b }", seconds=BOUND)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the cap is set with prlimit")
def test_a_graphviz_killed_for_memory_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_dot(tmp_path, monkeypatch, "kill -KILL $$")  # as the out-of-memory killer does
    with pytest.raises(GraphvizOutOfMemory, match=r"signal 9"):
        backend.run_graphviz("digraph { a -> b }", seconds=BOUND)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the cap is set with prlimit")
def test_a_view_too_big_for_the_memory_cap_gets_the_layered_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _allocating_dot(tmp_path, monkeypatch)
    real = backend.run_graphviz

    def embedded_for_nop(
        text: str, fmt: str = "svg", engine: str = "dot", seconds: object = None
    ) -> bytes:
        if engine == "nop":  # the layered layout's drawing: the real Graphviz
            gradviz.use_graphviz("embedded")
            try:
                return real(text, fmt, engine, seconds)  # type: ignore[arg-type]
            finally:
                gradviz.use_graphviz(None)
        return real(text, fmt, engine, seconds)  # type: ignore[arg-type]

    monkeypatch.setattr(backend, "run_graphviz", embedded_for_nop)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    graph = gradviz.trace((x * x).sum(), names={"x": x})
    with pytest.warns(GradvizWarning, match="ran out of memory") as told:
        svg = backend.run_dot(graph.to_dot(), seconds=BOUND)
    assert len(told) == 1
    assert f'id="{graph.prefix}_{graph.nodes[0].id}"'.encode() in svg
