"""Run to and the source row in the real JupyterLab widget: the n key stops at the step the
kernel's ``rec.find(nonfinite=True)`` names, and the panel names the cell (with its execution
count) and line that made the node, with no editor link (a cell is no file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.jupyterlab import KERNEL_EXEC, lab_page
from tests.support.person import focus_on, step_of

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot, pytest.mark.slow]

CELLS = [
    "import torch\n"
    "import gradviz\n"
    "class LogNet(torch.nn.Module):\n"
    "    def forward(self, x):\n"
    "        return (torch.log(x * 2) * 0).sum()  # log(0): its backward makes a NaN\n"
    "model = LogNet()\n"
    "with gradviz.watch(model) as w:\n"
    "    loss = model(torch.tensor([0.0, 1.0, 2.0], requires_grad=True))\n"
    "rec = w.record(loss)\n"
    "gradviz.Stepper(rec)",
]
CELL_COUNT = "() => window.jupyterapp.shell.currentWidget.content.widgets[0].model.executionCount"
STEP_IS = "([r, n]) => Number(r.dataset.step) === n"


def test_n_and_the_source_row_in_the_jupyterlab_widget(tmp_path: Path) -> None:
    with lab_page(tmp_path, CELLS, width=1600) as (page, errors):
        root = page.wait_for_selector(".gv-stepper .gv-canvas svg").evaluate_handle(
            "(svg) => svg.closest('.gv-stepper')"
        )
        first = int(page.evaluate(KERNEL_EXEC, "print(rec.find(nonfinite=True)[0].index)"))
        kind = page.evaluate(KERNEL_EXEC, f"print(rec.steps[{first - 1}].type_name)")
        assert kind == "LogBackward0"
        focus_on(page, root, "the stepper")
        page.keyboard.press("Home")
        page.keyboard.press("n")
        page.wait_for_function(STEP_IS, arg=[root, first])
        assert step_of(root) == first
        count = page.evaluate(CELL_COUNT)
        assert isinstance(count, int) and count > 0
        where = root.query_selector(".gv-panel .gv-source-where")
        assert where.text_content() == f"cell [{count}] line 5"
        code = root.query_selector(".gv-panel .gv-source-line").text_content()
        assert code == "return (torch.log(x * 2) * 0).sum()  # log(0): its backward makes a NaN"
        assert root.query_selector(".gv-panel a.gv-source-link") is None
        assert not errors, errors
