"""A watched GPT in the JupyterLab widget: what the offline page does for real models holds
in the notebook too (the collapsed module view first, a view laid out by the kernel when it
is first chosen, the camera keeping the active node readable, search, stepping by module,
presentation mode), and Python and the browser agree on the step."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.browser import ACTIVE, readable_steps
from tests.support.jupyterlab import KERNEL_EXEC, assert_none_of_ours, kernel_sees, lab_page
from tests.support.person import NEXT_FRAMES, choose, focus_on, has_class, move_slider_to, type_into

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot, pytest.mark.slow]

SUPPORT = Path(__file__).resolve().parents[1] / "support"
CELLS = [
    "import sys, warnings\n"
    "import torch\n"
    "import gradviz\n"
    f"sys.path.insert(0, {str(SUPPORT)!r})\n"
    "from workloads import GPT\n"
    "torch.manual_seed(0)\n"
    "model = GPT(vocab=64, d_model=32, layers=4, seq=8)\n"
    "ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(0))\n"
    "with gradviz.watch(model) as w:\n"
    "    loss = model(ids).square().mean()\n"
    "rec = w.record(loss)\n"
    "warnings.simplefilter('ignore')  # a costly view may get a cheaper dot setting\n"
    "stepper = gradviz.Stepper(rec)\n"
    "stepper",
]


def test_a_watched_gpt_in_the_jupyterlab_widget(tmp_path: Path) -> None:
    with lab_page(tmp_path, CELLS, width=1600) as (page, errors):
        root = page.wait_for_selector(".gv-stepper .gv-canvas svg").evaluate_handle(
            "(svg) => svg.closest('.gv-stepper')"
        )
        nodes = int(page.evaluate(KERNEL_EXEC, "print(len(rec.graph.nodes))"))
        assert nodes > 150
        # a big model with module data: the widget opens on the frontier's module boxes
        assert root.get_attribute("data-view") == "collapsed-auto"
        move_slider_to(page, root, 0)
        assert readable_steps(page, root, 12) > 3
        step = root.get_attribute("data-step")
        assert kernel_sees(page, "print(stepper.step)", str(step)) == str(step)

        # the backward view is laid out by the kernel the first time it is chosen
        assert page.evaluate(KERNEL_EXEC, "print('backward' in stepper.svgs)") == "False"
        choose(page, root.query_selector(".gv-view"), "backward")
        page.wait_for_function(
            "(r) => r.dataset.view === 'backward' && r.querySelector('.gv-canvas svg')", arg=root
        )
        assert kernel_sees(page, "print('backward' in stepper.svgs)", "True") == "True"
        move_slider_to(page, root, 0)  # the backward pass again, in this view
        assert readable_steps(page, root, 12) > 3

        # search jumps to a parameter's AccumulateGrad, and the kernel agrees on the step
        search = root.query_selector(".gv-search-input")
        type_into(page, search, "norm1.weight")
        found = root.get_attribute("data-found")
        assert found is not None
        code = f"print(rec.graph.node({found!r}).type_name, rec.step_for({found!r}).index)"
        expected = f"AccumulateGrad {root.get_attribute('data-step')}"
        assert kernel_sees(page, code, expected) == expected

        # presentation mode from the keyboard, with JupyterLab's own shortcuts around it
        focus_on(page, root, "its stage")
        before = int(root.get_attribute("data-step") or 0)
        page.keyboard.press("f")
        assert has_class(page, root, "gv-present")
        page.evaluate(NEXT_FRAMES)  # the view is refit to the full-screen stage by then
        page.keyboard.press("PageDown")
        assert root.get_attribute("data-step") == str(before + 1)
        # a real model does not fit readably on the screen: the camera keeps following
        where = page.evaluate(ACTIVE, root)
        assert where["active"] is not None and where["inside"], where
        assert where["textPx"] >= 12 - 1e-6, where
        page.screenshot(path=str(tmp_path / "present.png"))
        page.keyboard.press("Escape")
        assert has_class(page, root, "gv-present", False)
        expected = str(before + 1)
        assert kernel_sees(page, "print(stepper.step)", expected) == expected
    assert_none_of_ours(errors)
