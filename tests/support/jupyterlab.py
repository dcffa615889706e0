"""JupyterLab for the browser tests: a server with every Jupyter folder temporary, one
notebook of given cells, and a way to run code in its kernel from the page."""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbformat

from tests.support.servers import free_port, local_server

KERNEL = "gradviz-browser-test"
# Upper bounds on waits for a state (seconds), generous: on a busy machine JupyterLab takes
# minutes to start, and a kernel seconds to answer.
KERNEL_LIMIT = 120
CHECKOUT = Path(__file__).resolve().parents[2]  # the repository these tests belong to

# Run code in the notebook's kernel from the page and return what it printed.
KERNEL_EXEC = """async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({ code });
  let out = "";
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === "stream") out += msg.content.text;
  };
  await future.done;
  return out.trim();
}"""


@contextmanager
def lab_server(tmp: Path) -> Iterator[tuple[str, Path]]:
    """JupyterLab on 127.0.0.1 (a free port, a token of its own) with every Jupyter folder
    temporary and a kernel of this interpreter; yields the URL of ``/lab/tree`` (with the
    token: add a notebook's path after it) and the folder it serves. Stopped on exit."""
    dirs = {name: tmp / name for name in ("config", "data", "runtime", "settings", "ws", "root")}
    for folder in dirs.values():
        folder.mkdir(parents=True)
    spec = dirs["data"] / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "gradviz", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(dirs["config"]),
        "JUPYTER_DATA_DIR": str(dirs["data"]),
        "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
        "JUPYTERLAB_SETTINGS_DIR": str(dirs["settings"]),
        "JUPYTERLAB_WORKSPACES_DIR": str(dirs["ws"]),
        "JUPYTER_PLATFORM_DIRS": "1",
        "IPYTHONDIR": str(tmp / "ipython"),
        # the kernel imports the gradviz under test, not another checkout's installed one
        "PYTHONPATH": os.pathsep.join(filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")])),
    }
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1"]
    command += [f"--port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}"]
    command += ["--LabApp.expose_app_in_browser=True"]
    command += ["--allow-root"] if os.geteuid() == 0 else []
    command += [f"--ServerApp.root_dir={dirs['root']}"]
    base = f"http://127.0.0.1:{port}"
    probe = f"{base}/api/status?token={token}"
    with local_server("JupyterLab", command, env, probe, tmp / "lab.log"):
        yield f"{base}/lab/tree/{{}}?token={token}", dirs["root"]


def add_notebook(root: Path, name: str, notebook: Any) -> str:
    """Write ``notebook`` (nbformat) as ``root/name``, set to run in the test's kernel."""
    notebook.metadata["kernelspec"] = {
        "name": KERNEL,
        "display_name": "gradviz",
        "language": "python",
    }
    nbformat.write(notebook, root / name)
    return name


@contextmanager
def jupyterlab(tmp: Path, cells: Sequence[str]) -> Iterator[str]:
    """JupyterLab (lab_server) with one notebook of ``cells``; yields the notebook's URL."""
    with lab_server(tmp) as (url, root):
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        yield url.format(add_notebook(root, "stepper.ipynb", notebook))


def kernel_sees(page: Any, code: str, expected: str) -> str:
    """What the kernel prints for ``code`` once it has caught up with the front end.

    ipywidgets holds back a model's updates while earlier ones are in flight, so a request
    sent right after fast clicks can overtake the last update: ask again until it agrees.
    """
    deadline = time.monotonic() + KERNEL_LIMIT
    seen = page.evaluate(KERNEL_EXEC, code)
    while seen != expected and time.monotonic() < deadline:
        page.wait_for_timeout(100)  # the poll's interval, not a wait for anything
        seen = page.evaluate(KERNEL_EXEC, code)
    return str(seen)


def run_all_cells(page: Any, url: str) -> None:
    """Open the notebook at ``url``, wait for its kernel, and run every cell."""
    page.goto(url)
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget &&"
        " window.jupyterapp.shell.currentWidget.sessionContext &&"
        " window.jupyterapp.shell.currentWidget.sessionContext.session &&"
        " window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")


@contextmanager
def lab_page(
    tmp: Path, cells: Sequence[str], width: int = 1600, height: int = 900
) -> Iterator[tuple[Any, list[str]]]:
    """A notebook of ``cells`` in a JupyterLab of its own, opened in Chromium at
    ``width`` x ``height`` and run; yields the page and the page errors seen so far."""
    from tests.support.browser import chromium

    errors: list[str] = []
    with jupyterlab(tmp / "lab", cells) as url, chromium(tmp / "profile") as context:
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(f"{error}\n{error.stack}"))
        page.set_viewport_size({"width": width, "height": height})
        page.set_default_timeout(180_000)
        run_all_cells(page, url)
        yield page, errors


def assert_none_of_ours(errors: list[str]) -> None:
    """JupyterLab's own page errors are printed, not failed on; gradviz's code runs from a
    blob: URL, so an error of ours names one."""
    if errors:
        print("\npage errors:", *errors, sep="\n  ")
    assert not [e for e in errors if "blob:" in e], errors


# The notebook open in front has a connected kernel with nothing to do.
KERNEL_READY = """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const s = w && w.sessionContext && w.sessionContext.session;
  return !!(s && s.kernel && s.kernel.connectionStatus === 'connected'
    && s.kernel.status === 'idle'); }"""
# ... and every code cell with source has run.
ALL_RAN = """() => { const w = window.jupyterapp.shell.currentWidget;
  const s = w && w.sessionContext && w.sessionContext.session;
  return !!(s && s.kernel) && s.kernel.status === 'idle' && w.content.widgets.every(
    (c) => c.model.type !== 'code' || c.model.executionCount !== null
      || !c.model.sharedModel.getSource().trim()); }"""
