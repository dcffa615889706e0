"""Lesson 12 in a real JupyterLab, run from its Run menu: the browser's console stays clean
(no warning or error from gradviz or anywidget, such as anywidget's deprecation warning for
a module that exports ``render`` directly), every stepper draws, and no picture runs past
its output: the health drawing, many times the output's width, sits in a box a person
scrolls sideways with the mouse wheel until its right end (the legend) shows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from tests.support.browser import chromium
from tests.support.jupyterlab import ALL_RAN, KERNEL_READY, add_notebook, lab_server
from tests.support.person import click

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot, pytest.mark.slow]

LESSON = "12-why-is-my-grad-none-and-other-questions"
NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / f"{LESSON}.ipynb"
# Every stepper in the notebook drawn (a canvas with its SVG): how many there are.
STEPPERS_DRAWN = """(wanted) => {
  const roots = [...document.querySelectorAll('.jp-NotebookPanel .gv-stepper')];
  return roots.length === wanted && roots.every((r) => r.querySelector('.gv-canvas svg'));
}"""
# Each picture in an output (gradviz's steppers aside): how far its visible part runs past
# the output area's right edge (a scrolling box around it clips it), and its scrolling box.
OVERRUNS = """() => {
  const out = [];
  const area = '.jp-OutputArea-output';
  for (const pic of document.querySelectorAll(`${area} img, ${area} svg`)) {
    if (pic.closest('.gv-stepper') || pic.parentElement.closest('svg')) continue;
    const edge = pic.closest(area).getBoundingClientRect().right;
    let right = pic.getBoundingClientRect().right;
    for (let e = pic.parentElement; e && !e.matches(area); e = e.parentElement) {
      if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(e).overflowX)) {
        right = Math.min(right, e.getBoundingClientRect().right);
      }
    }
    out.push(Math.max(0, right - edge));
  }
  return out;
}"""
WIDEST = """() => { let best = null;
  for (const box of document.querySelectorAll('.jp-OutputArea-output .gv-picture')) {
    if (!best || box.scrollWidth > best.scrollWidth) best = box;
  }
  return best; }"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with lab_server(tmp_path_factory.mktemp("lab")) as (url, root):
        add_notebook(root, f"{LESSON}.ipynb", nbformat.read(NOTEBOOK, as_version=4))
        yield url


def _steppers() -> int:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    return sum(c.source.count("gradviz.Stepper(") for c in notebook.cells if c.cell_type == "code")


def test_lesson_12_runs_with_a_clean_console_and_every_picture_in_its_output(
    lab: str, tmp_path: Path
) -> None:
    with chromium(tmp_path / "profile") as context:
        page = context.new_page()
        said: list[str] = []
        page.on("console", lambda m: said.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda error: said.append(f"pageerror: {error}"))
        page.set_viewport_size({"width": 1400, "height": 900})
        page.goto(lab.format(f"{LESSON}.ipynb").replace("/lab/tree/", "/lab/workspaces/n12/tree/"))
        page.wait_for_function(KERNEL_READY)
        click(page, page.get_by_role("menuitem", name="Run", exact=True))
        run_all = page.locator('.lm-Menu-item[data-command="runmenu:run-all"]')
        run_all.wait_for()
        click(page, run_all)
        page.wait_for_function(ALL_RAN, timeout=400_000)
        page.wait_for_function(STEPPERS_DRAWN, arg=_steppers())

        overruns = page.evaluate(OVERRUNS)
        assert len(overruns) >= 10 and max(overruns) < 1, overruns
        box = page.evaluate_handle(WIDEST).as_element()
        assert box is not None
        box.scroll_into_view_if_needed()
        sizes = box.evaluate("(b) => [b.scrollWidth, b.clientWidth]")
        assert sizes[0] > 3 * sizes[1], sizes  # the health drawing, at its own size
        box.hover()  # the pointer over it once it holds still (the notebook lays out around it)
        page.mouse.wheel(sizes[0], 0)  # a sideways wheel, as far as it goes
        page.wait_for_function("(b) => b.scrollLeft + b.clientWidth >= b.scrollWidth - 1", arg=box)

        loud = [s for s in said if s.startswith(("warning", "error", "pageerror"))]
        assert loud == [], loud  # anywidget's deprecation warnings are console warnings
