"""The film strip widget in a real JupyterLab: the slider, clicked and moved with the arrow
keys, recolours the backward layout by that step's norms and tells the kernel; the kernel
moves it back; a click on the non-finite mark opens that step's replay below the strip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gradviz
from gradviz.stepper.filmlayout import colour_class, paint_map
from tests.support.jupyterlab import KERNEL_EXEC, assert_none_of_ours, kernel_sees, lab_page

TRAIN = """import torch
from torch import nn
import gradviz

def diverge(keep=()):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1.2)
    with gradviz.watch_training(model, opt, keep_steps=keep) as run:
        for _ in range(12):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
    return run
"""
CELLS = [
    TRAIN,
    "run = diverge([diverge().first_nonfinite().step])\nstrip = run.widget()\nstrip",
]

PAINTED = """(root) => {
  const svg = root.querySelector(".gv-layout svg");
  const prefix = svg.querySelector("g.graph").id + "_";
  return Object.fromEntries([...svg.querySelectorAll("g.node.gv-painted")].map(
    (g) => [g.id.slice(prefix.length), g.dataset.colour]));
}"""


def diverge(keep: list[int]) -> gradviz.TrainingRun:
    """The kernel's run, here (the same seed on the CPU: bitwise the same numbers)."""
    namespace: dict[str, Any] = {}
    exec(TRAIN, namespace)
    run: gradviz.TrainingRun = namespace["diverge"](keep)
    return run


def colours(run: gradviz.TrainingRun, row: int) -> dict[str, str]:
    paint = paint_map(run.graph, list(run.params), run.modules)
    norms = {"p": [run.grad_norm(p)[row] for p in run.params]}
    norms["m"] = [run.module_norm(m)[row] for m in run.modules]
    return {d: colour_class(norms[k][i], 1e-6, 1e3) for d, (k, i) in paint.items()}


@pytest.mark.browser
@pytest.mark.needs_dot
@pytest.mark.slow
def test_the_film_strip_widget_in_jupyterlab(tmp_path: Path) -> None:
    bad = diverge([]).first_nonfinite()
    assert bad is not None
    run = diverge([bad.step])
    with lab_page(tmp_path, CELLS, width=1600) as (page, errors):
        page.wait_for_selector(".gv-strip .gv-layout svg g.gv-painted")
        root = page.query_selector(".gv-strip")
        assert page.evaluate(PAINTED, root) == colours(run, 0)

        # a real click on the slider's left end, then two steps right with the keyboard
        slider = root.query_selector(".gv-slider")
        slider.scroll_into_view_if_needed()
        box = slider.bounding_box()
        page.mouse.click(box["x"] + 3, box["y"] + box["height"] / 2)
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        page.wait_for_function("(root) => root.dataset.step === '2'", arg=root)
        assert page.evaluate(PAINTED, root) == colours(run, 2)
        assert kernel_sees(page, "print(strip.step)", "2") == "2"

        # the kernel moves the strip
        page.evaluate(KERNEL_EXEC, "strip.step = 7")
        page.wait_for_function("(root) => root.dataset.step === '7'", arg=root)
        assert set(page.evaluate(PAINTED, root).values()) == {"gv-c-bad"}

        # a click on the loss row's non-finite mark opens that step's replay below
        mark = root.query_selector('.gv-row[data-name="loss"] .gv-mark-nonfinite')
        assert mark.get_attribute("data-step") == str(bad.step)
        mark.scroll_into_view_if_needed()
        box = mark.bounding_box()
        page.mouse.click(box["x"], box["y"] + box["height"] / 2)
        frame_element = page.wait_for_selector(f'.gv-replay-frame[data-step="{bad.step}"]')
        frame = frame_element.content_frame()
        frame.wait_for_selector(".gv-stepper svg")
        assert f"training step {bad.step}" in frame.title()
        assert root.get_attribute("data-step") == str(bad.step)
        assert kernel_sees(page, "print(strip.opened)", str(bad.step)) == str(bad.step)
    assert_none_of_ours(errors)
