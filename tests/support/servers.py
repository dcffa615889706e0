"""A local server for the browser tests (JupyterLab, marimo): started on 127.0.0.1 at a free
port, polled until it answers within a bound, and stopped (then killed) on exit."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

START_LIMIT = 300  # seconds for a server to answer, on a loaded CI machine


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def local_server(
    name: str,
    command: Sequence[str],
    env: Mapping[str, str],
    probe: str,
    log_path: Path,
    cwd: Path | None = None,
) -> Iterator[None]:
    """Run ``command`` until the ``with`` block ends; enter the block once ``probe`` (a URL)
    answers. Its output goes to ``log_path``, whose end is told if it exits early."""
    log = log_path.open("wb")
    server = subprocess.Popen(
        list(command), env=dict(env), stdout=log, stderr=subprocess.STDOUT, cwd=cwd
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        deadline = time.monotonic() + START_LIMIT
        while True:  # polled until it answers
            if server.poll() is not None:
                raise RuntimeError(f"{name} exited: {log_path.read_text()[-2000:]}")
            try:
                opener.open(probe, timeout=30).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name} did not start within {START_LIMIT} s") from None
                time.sleep(0.1)
        yield
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
