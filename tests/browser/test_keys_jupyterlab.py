"""The stepper in a real JupyterLab: the lesson notebooks run through the UI (Run All from the
menu), then a person's keyboard and mouse. Every key of the stepper's key map steps the
stepper - with the focus on it, on one of its buttons, on its stage, with the pointer over it
while the focus is in the notebook, and in presentation mode - and JupyterLab acts on none of
them: the notebook keeps its cells, its active cell, its scroll position and its rendered
markdown. The quiz takes a real click on a node."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.support.browser import chromium
from tests.support.jupyterlab import ALL_RAN, KERNEL_EXEC, KERNEL_READY, add_notebook, lab_server
from tests.support.person import (
    FOCUS_PLACES,
    answer_quiz,
    click,
    focus_on,
    present_keys,
    press_moves,
    press_toggles,
)

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot, pytest.mark.slow]

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
LESSONS = ("00-tour", "05-the-bigger-graph", "12-why-is-my-grad-none-and-other-questions")
LAST_STEPPER = (
    "t = torch.ones(3, requires_grad=True)\ngradviz.Stepper(gradviz.record((t * 2).exp().sum()))"
)

# What JupyterLab would change if it took a key: the notebook's cells, its active cell, its
# scroll position, which markdown cells are rendered and which cells a heading hides.
NOTEBOOK_STATE = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const nb = panel.content;
  const cells = nb.widgets;
  const scroller = panel.node.querySelector('.jp-WindowedPanel-outer') || nb.node;
  return {
    cells: cells.length,
    active: nb.activeCellIndex,
    scroll: Math.round(scroller.scrollTop),
    rendered: cells.filter((c) => c.model.type === 'markdown' && c.rendered).length,
    hidden: cells.filter((c) => c.isHidden).length,
    markdown: cells.filter((c) => c.model.type === 'markdown').length,
  };
}"""
STEPPER = """() => { const r = document.querySelector(
  '.jp-NotebookPanel:not(.lm-mod-hidden) .gv-stepper');
  return r && r.querySelector('.gv-canvas svg') ? r : null; }"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One JupyterLab for the module, serving copies of the lessons; yields the URL pattern."""
    with lab_server(tmp_path_factory.mktemp("lab")) as (url, root):
        for name in LESSONS:
            notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
            if name == LESSONS[2]:  # its answers are text and pictures: a stepper at its end
                notebook.cells.append(nbformat.v4.new_code_cell(LAST_STEPPER))
            add_notebook(root, f"{name}.ipynb", notebook)
        yield url


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("profile")) as context:
        yield context


def run_lesson(context: Any, url: str, name: str, size: tuple[int, int]) -> tuple[Any, Any]:
    """Open a lesson, Run All from JupyterLab's Run menu, wait for the kernel to be idle with
    every cell run and a stepper drawn; returns the page and the first stepper."""
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.set_viewport_size({"width": size[0], "height": size[1]})
    # a workspace of its own: the server's default one would reopen the lessons before it
    page.goto(url.format(f"{name}.ipynb").replace("/lab/tree/", f"/lab/workspaces/{name}/tree/"))
    page.wait_for_function(KERNEL_READY)
    click(page, page.get_by_role("menuitem", name="Run", exact=True))
    click(page, page.locator('.lm-Menu-item[data-command="runmenu:run-all"]'))
    page.wait_for_function(ALL_RAN, timeout=240_000)
    root = page.wait_for_function(STEPPER).as_element()
    assert root is not None
    root.scroll_into_view_if_needed()
    return page, root


def unchanged(page: Any, before: dict[str, int]) -> Any:
    """A check that the notebook is as ``before``: None, or what changed."""

    def check() -> str | None:
        now = page.evaluate(NOTEBOOK_STATE)
        return None if now == before else f"notebook {before} -> {now}"

    return check


def test_every_key_steps_the_stepper_and_jupyterlab_takes_none(
    lab: str, browser_context: Any, tmp_path: Path
) -> None:
    page, root = run_lesson(browser_context, lab, LESSONS[1], (1600, 900))
    wrong: list[str] = []

    # the pointer over the stepper, the focus in the notebook (its cell selected by a click)
    prompt = root.evaluate_handle("(r) => r.closest('.jp-Cell').querySelector('.jp-InputPrompt')")
    click(page, prompt.as_element())
    root.scroll_into_view_if_needed()
    page.mouse.move(*_inside(root, ".gv-panel"))
    assert not page.evaluate("(r) => r.contains(document.activeElement)", root)
    state = page.evaluate(NOTEBOOK_STATE)
    assert state["rendered"] == state["markdown"] > 0, state
    wrong += press_moves(page, root, "pointer over it", unchanged(page, state))
    wrong += press_toggles(page, root, "pointer over it")

    # the focus on the stepper itself (a click on its panel), on a button, on its stage
    for where in FOCUS_PLACES:
        focus_on(page, root, where)
        state = page.evaluate(NOTEBOOK_STATE)
        wrong += press_moves(page, root, where, unchanged(page, state))
        wrong += press_toggles(page, root, where)
        if page.evaluate(NOTEBOOK_STATE) != state:
            wrong.append(f"{where}: notebook {state} -> {page.evaluate(NOTEBOOK_STATE)}")

    # presentation mode
    state = page.evaluate(NOTEBOOK_STATE)
    wrong += present_keys(page, root, unchanged(page, state))
    page.screenshot(path=str(tmp_path / "keys.png"))
    assert not wrong, "\n".join(wrong)

    page.close()


def _inside(root: Any, selector: str) -> tuple[float, float]:
    box = root.query_selector(selector).bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + min(box["height"] / 2, 40)


@pytest.mark.parametrize("name", [LESSONS[0], LESSONS[2]])
def test_the_other_lessons_step_by_key_after_a_click(
    lab: str, browser_context: Any, name: str
) -> None:
    page, root = run_lesson(browser_context, lab, name, (1600, 900))
    click(page, root.query_selector(".gv-next"))
    state = page.evaluate(NOTEBOOK_STATE)
    wrong = press_moves(page, root, "its Next button", unchanged(page, state))
    wrong += present_keys(page, root, unchanged(page, state))
    assert not wrong, "\n".join(wrong)
    page.close()


NODE_FOR_STEP = "s = rec.steps[{}]\nprint(f'{{rec.graph.prefix}}_{{s.node_id}}')"


@pytest.mark.parametrize("size", [(1920, 1080), (1280, 720)])
def test_the_quiz_takes_a_real_click_on_a_node(
    lab: str, browser_context: Any, size: tuple[int, int], tmp_path: Path
) -> None:
    page, root = run_lesson(browser_context, lab, LESSONS[1], size)
    click(page, root.query_selector(".gv-first"))

    def node_for(step: int) -> str:
        return str(page.evaluate(KERNEL_EXEC, NODE_FOR_STEP.format(step - 1)))

    verdict = answer_quiz(page, root, node_for)
    page.screenshot(path=str(tmp_path / f"quiz-{size[0]}x{size[1]}.png"))
    assert verdict.startswith("Right node."), verdict
    page.close()
