"""``gradviz.explore`` in the real JupyterLab: a person types a new value into a leaf's field
and presses Enter; the kernel runs the function again, and the stepper, still at the step it
showed, draws the gradient PyTorch computes for the new value."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gradviz.model.values import format_number
from tests.support.browser import chromium
from tests.support.jupyterlab import KERNEL_EXEC, jupyterlab, kernel_sees, run_all_cells
from tests.support.person import click, focus_on

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot, pytest.mark.slow]

SOURCE = "def f(a, b):\n    return (a * b).sin() * a + b * b\n"
MAKE = "explorer = gradviz.explore(f, a=2.0, b=3.0)\nexplorer"
CELLS = [f"import torch\nimport gradviz\n{SOURCE}{MAKE}"]
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


def pytorch_grads(a: float, b: float) -> tuple[float, float]:
    """The gradients PyTorch computes for the cell's function, in a run of its own."""
    namespace: dict[str, object] = {"torch": torch}
    exec(SOURCE, namespace)  # the notebook's own source, so both run the same code
    x = torch.tensor(a, requires_grad=True)
    y = torch.tensor(b, requires_grad=True)
    ga, gb = torch.autograd.grad(namespace["f"](x, y), [x, y])  # type: ignore[operator]
    return float(ga), float(gb)


def test_typing_a_leaf_value_redraws_the_gradient_pytorch_computes(tmp_path: Path) -> None:
    errors: list[str] = []
    with (
        jupyterlab(tmp_path / "lab", CELLS) as url,
        chromium(tmp_path / "profile") as context,
    ):
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(f"{error}\n{error.stack}"))
        page.set_viewport_size({"width": 1400, "height": 900})
        page.set_default_timeout(180_000)
        run_all_cells(page, url)
        field = page.wait_for_selector('.gv-leaves .gv-leaf-field[data-leaf="a"]')
        root = page.wait_for_selector(".gv-stepper .gv-canvas svg").evaluate_handle(
            "(svg) => svg.closest('.gv-stepper')"
        )
        old_a, _ = pytorch_grads(2.0, 3.0)
        assert page.evaluate(DRAWN_GRAD, "a") == f"grad {format_number(old_a)}"

        # the last step, where every gradient is drawn, from the keyboard
        focus_on(page, root, "its stage")
        page.keyboard.press("End")
        last = root.get_attribute("data-step")
        assert last is not None and int(last) > 0
        assert kernel_sees(page, "print(explorer.step)", last) == last

        # a person types a new value for a and presses Enter
        click(page, field)
        page.keyboard.press("Control+A")
        page.keyboard.type("-1.25")
        page.keyboard.press("Enter")

        new_a, new_b = pytorch_grads(-1.25, 3.0)
        drawn = f"grad {format_number(new_a)}"
        page.wait_for_function(f"() => ({DRAWN_GRAD})('a') === {drawn!r}")
        assert page.evaluate(DRAWN_GRAD, "b") == f"grad {format_number(new_b)}"
        assert page.evaluate(STEP) == last  # the same step
        shown = page.eval_on_selector(
            ".gv-leaves .gv-leaf-grad >> nth=0", "(e) => Number(e.dataset.value)"
        )
        assert shown == new_a  # the panel's gradient is PyTorch's, exactly
        check = page.eval_on_selector(".gv-leaves .gv-leaf-check >> nth=0", "(e) => e.textContent")
        assert "float64" in check and "agrees" in check
        notice = page.eval_on_selector(".gv-leaves-notice", "(e) => e.hidden")
        assert notice is True  # the same structure: no "laid out again"
        seen = page.evaluate(KERNEL_EXEC, "print(explorer.values['a'], explorer.step)")
        assert seen == f"[-1.25] {last}"
    if errors:  # JupyterLab's own errors are shown, not failed on; ours come from a blob:
        print("\npage errors:", *errors, sep="\n  ")
    assert not [e for e in errors if "blob:" in e], errors
