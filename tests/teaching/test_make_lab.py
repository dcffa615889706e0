"""``make lab``, one of the README's commands: the command line the Makefile builds starts
JupyterLab (also as root, where JupyterLab wants --allow-root) and serves the notebooks."""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.executable).parent.parent  # the venv running the tests, as make's VENV
START_LIMIT = 300  # seconds for JupyterLab to answer; a few, minutes on a busy machine


def lab_command() -> list[str]:
    """What ``make lab`` would run, from ``make -n`` (nothing is executed)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    if not (VENV / "bin" / "jupyter").exists():
        pytest.skip("JupyterLab is not installed in this environment")
    dry = subprocess.run(
        ["make", "-n", "lab", f"VENV={VENV}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    line = next(line for line in dry.splitlines() if line.startswith(f"{VENV}/bin/jupyter lab"))
    return shlex.split(line)


def test_make_lab_allows_root_only_as_root() -> None:
    command = lab_command()
    assert ("--allow-root" in command) == (os.geteuid() == 0)
    assert command[-1] == "notebooks/" and "--ServerApp.ip=127.0.0.1" in command


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.slow
def test_make_lab_starts_jupyterlab_on_the_notebooks(tmp_path: Path) -> None:
    port, token = free_port(), secrets.token_hex(16)
    command = [
        *lab_command(),
        "--no-browser",
        f"--ServerApp.port={port}",
        f"--IdentityProvider.token={token}",
    ]
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "IPYTHONDIR": str(tmp_path / "ipython"),
    }
    log = (tmp_path / "lab.log").open("w")
    lab = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + START_LIMIT
        answer = None
        while answer is None and time.monotonic() < deadline:
            assert lab.poll() is None, (tmp_path / "lab.log").read_text()[-2000:]
            try:
                url = f"http://127.0.0.1:{port}/api/contents?token={token}"
                with urllib.request.urlopen(url, timeout=30) as response:
                    answer = response.read().decode("utf-8")
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        assert answer is not None, "JupyterLab did not answer in time"
        assert "00-tour.ipynb" in answer  # it serves notebooks/
        lab_page = f"http://127.0.0.1:{port}/lab?token={token}"
        with urllib.request.urlopen(lab_page, timeout=120) as response:
            assert response.status == 200 and "JupyterLab" in response.read().decode("utf-8")
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        try:
            lab.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(lab.pid, signal.SIGKILL)
            lab.wait(timeout=30)
        log.close()
