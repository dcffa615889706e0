"""The film strip page in a real browser: the slider is dragged with the mouse and moved
with the keyboard, the step and values shown and the backward layout's colours follow the
run's own numbers, and a click on a mark opens the kept step's replay."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import gradviz
from gradviz.stepper.filmlayout import BINS, colour_class, paint_map
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


# Every painted element of the backward layout: its graph id, colour class and drawn fill.
PAINTED = """(root) => {
  const svg = root.querySelector(".gv-layout svg");
  const prefix = svg.querySelector("g.graph").id + "_";
  return [...svg.querySelectorAll("g.node.gv-painted")].map((g) => {
    const shape = g.querySelector(":scope > path, :scope > polygon, :scope > ellipse");
    return [g.id.slice(prefix.length), g.dataset.colour, getComputedStyle(shape).fill];
  });
}"""


def palette() -> dict[str, str]:
    """Each colour class's colour in the page's style sheet, as computed styles write it."""
    css = Path(__file__).resolve().parents[2].joinpath("assets", "filmstrip.css").read_text()
    found = dict(re.findall(r"\.gv-strip \.(gv-c[\w-]+)\{--gv-c:#([0-9a-f]{6})\}", css))
    assert len(found) == BINS + 4
    return {
        k: "rgb({}, {}, {})".format(*(int(v[i : i + 2], 16) for i in (0, 2, 4)))
        for k, v in found.items()
    }


def expected_colours(run: gradviz.TrainingRun, row: int, low: float, high: float) -> dict[str, str]:
    """What the layout must show at ``row``, from the run's own numbers."""
    paint = paint_map(run.graph, list(run.params), run.modules)
    norms = {"p": [run.grad_norm(p)[row] for p in run.params]}
    norms["m"] = [run.module_norm(m)[row] for m in run.modules]
    return {drawn: colour_class(norms[kind][i], low, high) for drawn, (kind, i) in paint.items()}


@pytest.fixture(scope="module")
def kept(diverged: gradviz.TrainingRun) -> gradviz.TrainingRun:
    """The same training again (same seed: bitwise the same), its first non-finite step
    recorded in full, as a person does once the strip has shown where it went wrong."""
    first_bad = diverged.first_nonfinite()
    assert first_bad is not None
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1.2)
    with gradviz.watch_training(model, opt, keep_steps=[first_bad.step]) as run:
        for _ in range(30):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
    assert run.first_nonfinite() == first_bad
    return run


@pytest.mark.browser
@pytest.mark.needs_dot
def test_scrubbing_recolours_the_backward_layout_by_each_steps_norms(
    kept: gradviz.TrainingRun, browser: Any, tmp_path: Path
) -> None:
    low, high = 1e-6, 10.0
    page_file = kept.save(tmp_path / "training.html", exploding_above=high)
    page, requests, errors = open_local(browser, page_file)
    page.wait_for_selector(".gv-strip .gv-layout svg g.gv-painted")
    root = page.query_selector(".gv-strip")
    colours = palette()

    def painted_at(row: int) -> set[str]:
        page.wait_for_function(
            "([root, step]) => root.dataset.step === step", arg=[root, str(kept.steps[row])]
        )
        drawn = page.evaluate(PAINTED, root)
        expected = expected_colours(kept, row, low, high)
        assert {d[0]: d[1] for d in drawn} == expected
        assert all(fill == colours[cls] for _, cls, fill in drawn), drawn
        return {cls for _, cls, _ in drawn}

    at_start = painted_at(0)
    # a real click on the slider's left end, then the arrow keys step through training
    box = page.query_selector(".gv-slider").bounding_box()
    page.mouse.click(box["x"] + 3, box["y"] + box["height"] / 2)
    painted_at(0)
    page.keyboard.press("ArrowRight")
    painted_at(1)
    page.keyboard.press("ArrowRight")
    painted_at(2)
    # a drag to three quarters: past the first non-finite step, every norm is NaN
    page.mouse.move(box["x"] + 3 + box["width"] * 2 / 29, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.75, box["y"] + box["height"] / 2, steps=6)
    page.mouse.up()
    dragged = int(root.get_attribute("data-index") or "0")
    assert dragged > kept.first_nonfinite().step  # type: ignore[union-attr]
    after = painted_at(dragged)
    assert after == {"gv-c-bad"} and "gv-c-bad" not in at_start
    assert errors == []
    assert all(url.startswith("file:") for url in requests), requests


@pytest.mark.browser
@pytest.mark.needs_dot
def test_clicking_the_non_finite_mark_opens_that_steps_replay(
    kept: gradviz.TrainingRun, browser: Any, tmp_path: Path
) -> None:
    first_bad = kept.first_nonfinite()
    assert first_bad is not None
    page_file = kept.save(tmp_path / "training.html")
    replay = tmp_path / f"training-step{first_bad.step}.html"
    assert replay.is_file()
    page, _, errors = open_local(browser, page_file)
    page.wait_for_selector(".gv-strip .gv-layout svg")
    mark = page.query_selector('.gv-row[data-name="loss"] .gv-mark-nonfinite')
    assert mark.get_attribute("data-step") == str(first_bad.step)
    mark.scroll_into_view_if_needed()
    box = mark.bounding_box()  # a vertical line: no width; its hit area is 11 px wide
    page.mouse.click(box["x"], box["y"] + box["height"] / 2)
    page.wait_for_url(replay.as_uri())
    page.wait_for_selector(".gv-stepper svg")
    assert f"training step {first_bad.step}" in page.title()
    assert errors == []
