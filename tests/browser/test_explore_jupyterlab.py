"""``gradviz.explore`` in the real JupyterLab, on the ten-op lesson: a person types a new value
into a leaf's field and presses Enter; the kernel runs the function again, and the stepper,
still at the step it showed and where the person had panned it, draws the gradient PyTorch
computes for the new value."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gradviz.model.values import format_number
from gradviz.teaching.lessons import ten_ops
from tests.support.jupyterlab import KERNEL_EXEC, assert_none_of_ours, kernel_sees, lab_page
from tests.support.person import click, focus_on

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot, pytest.mark.slow]

CELLS = [
    "import gradviz\n"
    "from gradviz.teaching.lessons import ten_ops\n"
    "explorer = gradviz.explore(ten_ops, c=4.0, h=2.0)\n"
    "explorer"
]
# the stepper's drawn gradient of leaf `name`: the text on the link into its tensor record
DRAWN_GRAD = """(name) => {
  const root = document.querySelector('.gv-stepper');
  if (!root) return null;
  for (const box of root.querySelectorAll('g.node.gv_tensor')) {
    const text = box.querySelector('text');
    if (!text || text.textContent !== name) continue;
    const link = root.querySelector('#' + CSS.escape(box.id.replace(/_(t\\d+)$/, '_l_$1')));
    const label = link && link.querySelector('text');
    return label ? label.textContent.trim() : null;
  }
  return null;
}"""
STEP = "() => { const r = document.querySelector('.gv-stepper'); return r && r.dataset.step; }"


CAMERA = "() => document.querySelector('.gv-stepper').dataset.camera"


def pytorch_grads(c: float, h: float) -> tuple[float, float]:
    """The gradients PyTorch computes for the lesson's function, in a run of its own."""
    x = torch.tensor(c, requires_grad=True)
    y = torch.tensor(h, requires_grad=True)
    gc, gh = torch.autograd.grad(ten_ops(x, y), [x, y])
    return float(gc), float(gh)


def test_typing_a_leaf_value_redraws_the_gradient_pytorch_computes(tmp_path: Path) -> None:
    with lab_page(tmp_path, CELLS, width=1400) as (page, errors):
        # the fields turn on once the kernel answers (an exported page has none to answer)
        field = page.wait_for_selector('.gv-leaves[data-live] .gv-leaf-field[data-leaf="c"]')
        assert field.is_enabled()
        root = page.wait_for_selector(".gv-stepper .gv-canvas svg").evaluate_handle(
            "(svg) => svg.closest('.gv-stepper')"
        )
        old_c, _ = pytorch_grads(4.0, 2.0)
        assert page.evaluate(DRAWN_GRAD, "c") == f"grad {format_number(old_c)}"

        # the last step, where every gradient is drawn, from the keyboard
        focus_on(page, root, "its stage")
        page.keyboard.press("End")
        last = root.get_attribute("data-step")
        assert last is not None and int(last) > 0
        assert kernel_sees(page, "print(explorer.step)", last) == last
        # and a drag on the stage's corner pans the camera (it stops following)
        box = root.query_selector(".gv-stage").bounding_box()
        page.mouse.move(box["x"] + 8, box["y"] + 8)
        page.mouse.down()
        page.mouse.move(box["x"] + 60, box["y"] + 40, steps=5)
        page.mouse.up()
        assert root.get_attribute("data-follow") == "off"
        panned = page.evaluate(CAMERA)

        # a person types a new value for c and presses Enter
        click(page, field)
        page.keyboard.press("Control+A")
        page.keyboard.type("5.5")
        page.keyboard.press("Enter")

        new_c, new_h = pytorch_grads(5.5, 2.0)
        drawn = f"grad {format_number(new_c)}"
        page.wait_for_function(f"() => ({DRAWN_GRAD})('c') === {drawn!r}")
        assert page.evaluate(DRAWN_GRAD, "h") == f"grad {format_number(new_h)}"
        assert page.evaluate(STEP) == last  # the same step ...
        assert page.evaluate(CAMERA) == panned  # ... on the same layout, seen from the same place
        took = page.wait_for_selector(".gv-leaves[data-edit-ms]").get_attribute("data-edit-ms")
        print(f"\nthe edit was shown {took} ms after Enter (a figure, not a check)")
        shown = page.eval_on_selector(
            ".gv-leaves .gv-leaf-grad >> nth=0", "(e) => Number(e.dataset.value)"
        )
        assert shown == new_c  # the panel's gradient is PyTorch's, exactly
        check = page.eval_on_selector(".gv-leaves .gv-leaf-check >> nth=0", "(e) => e.textContent")
        assert "float64" in check and "agrees" in check
        notice = page.eval_on_selector(".gv-leaves-notice", "(e) => e.hidden")
        assert notice is True  # the same structure: no "laid out again"
        seen = page.evaluate(KERNEL_EXEC, "print(explorer.values['c'], explorer.step)")
        assert seen == f"[5.5] {last}"
    assert_none_of_ours(errors)
