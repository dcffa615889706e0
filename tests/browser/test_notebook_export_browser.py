"""A notebook exported with ``jupyter nbconvert --to html --execute`` stays steppable: its
stepper output carries an offline stepper that opens in the view picked in the widget, steps
under the real keyboard and mouse, and fetches nothing. Reopened in JupyterLab without its
widget state, the notebook shows that stepper where the widget was, not an error; with the
kernel running, the live widget alone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.browser import LOCAL_SCHEMES, chromium, open_local
from tests.support.person import click, focus_on, step_of

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbconvert")
pytest.importorskip("anywidget")

pytestmark = [pytest.mark.slow, pytest.mark.needs_dot, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
EXPORT_LIMIT_S = 600  # the kernel's start, the lesson's layout and the export, on a busy CI

CELLS = [
    """import gradviz
from gradviz.teaching.lessons import lesson
with gradviz.watch() as watching:
    built = lesson("02-chain").build()
stepper = gradviz.Stepper(built.record(watching))
stepper""",
    'stepper.view = "combined"  # what picking the view in the widget sends',
]
STEPPER = ".gv-static[data-gv-fallback] .gv-stepper[data-step]"


def _converted(folder: Path, kernel: str, to: str = "html") -> Path:
    """The lesson notebook run in a fresh kernel by ``jupyter nbconvert --execute --to``
    ``to`` (html: the page; notebook: the notebook as it would be saved)."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    path = folder / "lesson.ipynb"
    nbformat.write(notebook, path)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", to, "--execute",
         f"--ExecutePreprocessor.kernel_name={kernel}", "--ExecutePreprocessor.timeout=300",
         str(path)],
        cwd=folder, env=env, capture_output=True, text=True, timeout=EXPORT_LIMIT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return folder / ("lesson.html" if to == "html" else "lesson.nbconvert.ipynb")


def _outside_gradviz(page: str) -> str:
    """The exported page without gradviz's fallbacks: nbconvert's own template and outputs."""
    return re.sub(
        r'<div class="gv-static" data-gv-fallback=.*?</script></div>', "", page, flags=re.S
    )


def test_the_exported_notebook_steps_in_the_chosen_view_offline(
    tmp_path: Path,
    kernel_name: str,
) -> None:
    exported = _converted(tmp_path, kernel_name)
    text = exported.read_text(encoding="utf-8")
    assert text.count('class="gv-static" data-gv-fallback=') == 1  # one stepper, one fallback
    with chromium(tmp_path / "profile") as context:
        # nothing leaves the machine: what nbconvert's template asks the network for fails
        context.route(
            "**/*",
            lambda route: (
                route.continue_() if route.request.url.startswith(LOCAL_SCHEMES) else route.abort()
            ),
        )
        page, requests, errors = open_local(context, exported)
        page.set_viewport_size({"width": 1280, "height": 720})
        root = page.wait_for_selector(STEPPER)
        assert root.get_attribute("data-view") == "combined"
        assert not root.evaluate(
            "r => r.closest('.gv-static').querySelector('.gv-picture').checkVisibility()"
        )
        first = step_of(root)
        focus_on(page, root, "the stepper")
        page.keyboard.press("ArrowRight")
        page.wait_for_function("([r, s]) => Number(r.dataset.step) === s", arg=[root, first + 1])
        click(page, root.query_selector(".gv-next"))
        page.wait_for_function("([r, s]) => Number(r.dataset.step) === s", arg=[root, first + 2])
        page.keyboard.press("End")
        page.wait_for_function(
            "(r) => r.dataset.step === r.querySelector('.gv-slider').max", arg=root
        )
        assert root.get_attribute("data-view") == "combined"
        page.mouse.wheel(0, -100_000)  # back to the top: the cell and its stepper
        page.wait_for_function("() => scrollY === 0")
        page.screenshot(path=str(tmp_path / "exported-stepped.png"))
    assert [e for e in errors if "gv" in e or "gradviz" in e] == []
    outside = _outside_gradviz(text)
    fetched = [url for url in requests if not url.startswith(LOCAL_SCHEMES)]
    assert [url for url in fetched if url not in outside] == []  # only nbconvert's own links


# The widget's output once JupyterLab gave up on it: a notebook saved without widget state
# has no model for it ("Error displaying widget: model not found", its text only).
DEAD_WIDGET = ".jp-OutputArea-output.jupyter-widgets"


def test_a_notebook_reopened_without_widget_state_shows_the_stepper_not_an_error(
    tmp_path: Path,
    kernel_name: str,
) -> None:
    from nbformat.sign import NotebookNotary

    from tests.support.jupyterlab import add_notebook, lab_server

    saved = nbformat.read(_converted(tmp_path, kernel_name, "notebook"), as_version=4)
    saved.metadata.pop("widgets", None)  # JupyterLab saves no widget state by default
    with lab_server(tmp_path / "lab") as (url, root):
        add_notebook(root, "saved.ipynb", saved)
        # the user's own notebook: signed when saved, so trusted when reopened
        NotebookNotary(data_dir=str(tmp_path / "lab" / "data")).sign(saved)
        with chromium(tmp_path / "profile") as context:
            page = context.new_page()
            page.set_viewport_size({"width": 1280, "height": 720})
            page.goto(url.format("saved.ipynb"))
            root = page.wait_for_selector(STEPPER)
            dead = page.wait_for_selector(DEAD_WIDGET, state="attached")
            assert "model not found" in dead.text_content()
            assert not dead.is_visible()
            assert root.get_attribute("data-view") == "combined"
            first = step_of(root)
            focus_on(page, root, "the stepper")
            page.keyboard.press("ArrowRight")
            page.wait_for_function(
                "([r, s]) => Number(r.dataset.step) === s", arg=[root, first + 1]
            )


def test_with_its_kernel_the_live_widget_shows_and_the_fallback_never_mounts(
    tmp_path: Path,
) -> None:
    from tests.support.jupyterlab import jupyterlab, run_all_cells

    with jupyterlab(tmp_path / "lab", CELLS) as url, chromium(tmp_path / "profile") as context:
        page = context.new_page()
        run_all_cells(page, url)
        widget = page.wait_for_selector(".jp-OutputArea-output:not([data-mime-type]) .gv-stepper")
        page.wait_for_function("(r) => r.dataset.view === 'combined'", arg=widget)
        holder = page.wait_for_selector(".gv-static[data-gv-fallback]", state="attached")
        assert not holder.is_visible()
        script = holder.query_selector("script.gv-replay-data")
        assert script is not None and script.get_attribute("data-gv-mounted") is None
        assert len(page.query_selector_all(".gv-stepper")) == 1
