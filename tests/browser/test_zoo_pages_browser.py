"""Replay pages of zoo models (architectures nobody on the team wrote) in Chromium at
1600×900, used as a practitioner would: the page opens on a first view of between
``MIN_THINGS`` and ``MAX_THINGS`` things, at the seed gradient, and stepping the whole
backward pass with the keyboard keeps the active element on screen with text of at least
12 px at every step."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz import GradvizWarning
from gradviz.render.frontier import MAX_THINGS, MIN_THINGS
from gradviz.stepper.page import unpack_state
from tests.support.browser import ACTIVE, open_local
from tests.support.person import focus_on
from tests.support.zoo import ZOO

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot, pytest.mark.slow]

# the hand-built ones, so the test runs wherever torch does: a mixture of experts (the
# biggest graph) and a state-space model (FFT convolutions, few modules)
MODELS = [entry for entry in ZOO if entry.name in ("moe", "s4d")]

# the things a first view draws: backward nodes, tensors and module boxes, legend aside
DRAWN = """(root) => [...root.querySelectorAll(".gv-canvas > svg g.node")]
  .filter((g) => !g.id.includes("_legend")).length"""


def saved_page(name: str, folder: Path) -> Path:
    (entry,) = [e for e in MODELS if e.name == name]
    torch.manual_seed(0)
    model, loss_of = entry.build()
    with gradviz.watch(model) as w:
        loss = loss_of()
    recording = w.record(loss)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GradvizWarning)  # a cheaper dot setting is noted
        return recording.save(folder / f"{name}.html")


@pytest.mark.parametrize("name", [e.name for e in MODELS])
def test_a_zoo_page_opens_readable_and_every_step_stays_readable(
    name: str, browser: Any, tmp_path: Path
) -> None:
    path = saved_page(name, tmp_path)
    state = unpack_state(path.read_text(encoding="utf-8"))
    page, _, errors = open_local(browser, path)
    page.set_viewport_size({"width": 1600, "height": 900})
    root = page.wait_for_selector(".gv-stepper")
    page.wait_for_selector(".gv-stepper .gv-canvas > svg")
    drawn = page.evaluate(DRAWN, root)
    assert MIN_THINGS <= drawn <= MAX_THINGS, (state["view"], drawn)
    assert root.get_attribute("data-view") == state["view"]
    # where the story starts: the seed gradient entering the loss's node
    assert root.get_attribute("data-step") == "0"
    assert root.query_selector(".gv-panel").inner_text().startswith("seed")

    focus_on(page, root, "its stage")
    steps, seen = 0, 0
    while not root.query_selector(".gv-next").is_disabled():
        before = int(root.get_attribute("data-step"))
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            "([r, s]) => r.dataset.step === String(s)", arg=[root, before + 1], timeout=10_000
        )
        where = page.evaluate(ACTIVE, root)
        steps += 1
        if where["active"] is None:
            continue
        seen += 1
        assert where["inside"], (steps, where)
        assert where["textPx"] >= 12 - 1e-6, (steps, where)
    assert steps >= len(state["data"]["steps"]) - 1
    assert seen >= steps * 0.9, (seen, steps)  # nearly every step draws its active element
    assert not errors
