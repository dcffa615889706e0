"""The stepper in marimo, through ``mo.ui.anywidget``: a marimo app served by ``marimo run``
and opened in Chromium draws the stepper in marimo's light or dark theme (set in marimo's
own settings), a click on Next steps it, the step reaches the Python side (a cell that reads
the widget's value runs again and shows it), and the console holds no warning or error from
gradviz or anywidget."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.browser import chromium
from tests.support.jupyterlab import CHECKOUT
from tests.support.person import click
from tests.support.servers import free_port, local_server

pytest.importorskip("marimo")
pytestmark = [pytest.mark.browser, pytest.mark.needs_dot, pytest.mark.slow]

APP = """
import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
    import torch

    import gradviz

    t = torch.ones(3, requires_grad=True)
    stepper = mo.ui.anywidget(gradviz.Stepper(gradviz.record((t * 2).exp().sum())))
    stepper
    return (mo, stepper)


@app.cell
def _(mo, stepper):
    mo.md(f"kernel step: {stepper.value['step']}")
    return


if __name__ == "__main__":
    app.run()
"""


@contextmanager
def marimo_app(tmp: Path, theme: str) -> Iterator[str]:
    """``marimo run`` serving APP on a free port, in ``theme`` (marimo's display setting);
    yields its URL. Stopped on exit."""
    app = tmp / "app.py"
    app.write_text(APP, encoding="utf-8")
    settings = tmp / "config" / "marimo"
    settings.mkdir(parents=True)
    (settings / "marimo.toml").write_text(f'[display]\ntheme = "{theme}"\n', encoding="utf-8")
    port = free_port()
    env = {
        **os.environ,
        "HOME": str(tmp),  # marimo's own settings are the test's
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")])),
    }
    command = [sys.executable, "-m", "marimo", "run", str(app), "--headless"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--no-token"]
    url = f"http://127.0.0.1:{port}/"
    with local_server("marimo", command, env, url, tmp / "marimo.log", cwd=tmp):
        yield url


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_stepper_steps_in_marimo(tmp_path: Path, theme: str) -> None:
    with marimo_app(tmp_path, theme) as url, chromium(tmp_path / "profile") as context:
        page = context.new_page()
        said: list[str] = []
        page.on("console", lambda m: said.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda error: said.append(f"pageerror: {error}"))
        page.goto(url)
        root = page.wait_for_selector(".gv-stepper .gv-canvas svg").evaluate_handle(
            "(svg) => svg.closest('.gv-stepper')"
        )
        root = root.as_element()
        assert root is not None
        page.get_by_text("kernel step: 0").wait_for()
        assert page.evaluate("() => document.body.dataset.theme") == theme  # marimo's mark
        dark = "true" if theme == "dark" else "false"
        page.wait_for_function(
            f"(r) => String(r.classList.contains('gv-dark')) === '{dark}'", arg=root
        )
        before = int(root.get_attribute("data-step") or "0")
        click(page, root.query_selector(".gv-next"))
        page.wait_for_function(f"(r) => r.dataset.step === '{before + 1}'", arg=root)
        page.get_by_text(f"kernel step: {before + 1}").wait_for()
        ours = [
            s
            for s in said
            if s.startswith(("warning", "error", "pageerror"))
            and ("gradviz" in s.lower() or "anywidget" in s.lower() or "gv-" in s)
        ]
        assert ours == [], ours
