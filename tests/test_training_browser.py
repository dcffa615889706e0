"""The film strip page in a real browser: the slider is dragged with the mouse and moved
with the keyboard, and the step and values shown follow the run's own numbers."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import gradviz
from tests.support.browser import open_local

READ = """(root) => ({
  step: root.dataset.step,
  readout: root.querySelector(".gv-readout").textContent,
  values: Object.fromEntries([...root.querySelectorAll(".gv-row")].map(
    (r) => [r.dataset.name, r.querySelector(".gv-value").textContent])),
  marks: [...root.querySelectorAll(".gv-mark")].map(
    (m) => [m.closest(".gv-row").dataset.name, m.getAttribute("class"), m.dataset.step]),
})"""


def js_number(value: float | None) -> str:
    """JavaScript's ``toExponential(3)``, as the page writes values."""
    if value is None:
        return "–"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.3e}".split("e")
    return f"{mantissa}e{int(exponent):+d}"


@pytest.fixture(scope="module")
def diverged() -> gradviz.TrainingRun:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1.2)
    with gradviz.watch_training(model, opt) as run:
        for _ in range(30):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
    assert run.first_nonfinite() is not None
    return run


def expected_values(run: gradviz.TrainingRun, row: int) -> dict[str, str]:
    out = {"loss": js_number(run.loss(row))}
    for module, norms in run.module_norms().items():
        out[module or "(top module)"] = js_number(norms[row])
    return out


@pytest.mark.browser
def test_the_slider_scrubs_the_training_steps(
    diverged: gradviz.TrainingRun, browser: Any, tmp_path: Path
) -> None:
    page_file = diverged.save(tmp_path / "training.html", exploding_above=10.0)
    page, requests, errors = open_local(browser, page_file)
    root = page.wait_for_selector(".gv-strip .gv-slider")
    root = page.query_selector(".gv-strip")
    last = len(diverged) - 1

    def shown(row: int) -> None:
        state = page.evaluate(READ, root)
        assert state["step"] == str(diverged.steps[row])
        assert state["readout"].startswith(f"step {diverged.steps[row]} ")
        assert state["values"] == expected_values(diverged, row)

    shown(0)
    first_bad = diverged.first_nonfinite()
    assert first_bad is not None
    marks = page.evaluate(READ, root)["marks"]
    assert ["loss", "gv-mark gv-mark-nonfinite", str(first_bad.step)] in marks
    exploding = diverged.exploding(10.0)
    assert exploding  # it grows past 10 before the NaN
    drawn = {(m[0], m[2]) for m in marks if m[1] == "gv-mark gv-mark-exploding"}
    assert drawn == {(module or "(top module)", str(o.step)) for module, o in exploding.items()}

    # drag the thumb with the mouse from the left end to three quarters of the track
    box = page.query_selector(".gv-slider").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + 2, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=5)
    page.mouse.move(box["x"] + box["width"] * 0.75, y, steps=5)
    page.mouse.up()
    dragged = int(page.evaluate(READ, root)["step"])
    assert last // 2 < dragged < last
    shown(dragged)

    # the keyboard moves it one step, and to either end (the drag left the focus on it)
    assert page.evaluate("() => document.activeElement.classList.contains('gv-slider')")
    page.keyboard.press("ArrowRight")
    shown(dragged + 1)
    page.keyboard.press("End")
    shown(last)
    assert "NaN" in page.evaluate(READ, root)["values"].values()
    page.keyboard.press("Home")
    shown(0)

    assert errors == []
    assert all(url.startswith("file:") for url in requests), requests
