"""A replay saved with ``fold=True`` steps like any other: the box drawn for a run of
identical blocks is active while a node inside it runs, the camera follows it, and each
step inside says which repetition of the block it runs in."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from torch import nn

import gradviz
from gradviz.model.recording import Recording
from gradviz.replay.frames import classes_at, step_svg
from gradviz.stepper.page import unpack_state
from tests.support.browser import ACTIVE, chromium, open_local
from tests.support.person import click, focus_on

pytestmark = pytest.mark.needs_dot

# distinct ops after the blocks: a tall chain the backward pass walks before the fold
TAIL = (torch.sin, torch.cos, torch.sigmoid, torch.exp, torch.neg, torch.atan, torch.sinh)
TAIL += (torch.erf, torch.square, torch.asinh, torch.abs, torch.cosh)


def layered(tail: bool = False) -> Recording:
    torch.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(4, 4), nn.Tanh())])
    y = model(torch.randn(2, 4))
    for op in TAIL if tail else ():
        y = op(y)
    return gradviz.record(y.sum())


def _ids(svg: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', svg))


def test_a_folded_page_schedules_what_its_drawing_holds(tmp_path: Path) -> None:
    rec = layered()
    state = unpack_state(rec.save(tmp_path / "fold.html", fold=True).read_text("utf-8"))
    data, drawn = state["data"], _ids(state["svgs"]["backward"])
    folds: dict[str, str] = data["folded"]
    assert folds, "the six Linear + Tanh layers fold"
    boxes = data["schedule"]["boxes"]
    assert set(boxes) == {f"{data['prefix']}_{box}" for box in folds.values()}
    assert set(boxes) <= drawn  # the drawing and the schedule name the same elements
    fold_edges = [e for e in data["schedule"]["edges"] if "_e_fold" in e]
    assert fold_edges and set(fold_edges) <= drawn
    for index, step in enumerate(data["steps"]):
        box = folds.get(step["node"] or "")
        if box is None:
            continue
        classes = classes_at(data["schedule"], index)
        assert classes[f"{data['prefix']}_{box}"] == "gv_active"
        assert re.match(r"In block \d of \d ", step["narration"]), step["narration"]
        svg = step_svg(rec, index, fold=True)  # the static step says the same
        assert re.search(rf'id="{data["prefix"]}_{box}" class="[^"]*\bgv_active\b', svg)
    told = [s["narration"] for s in data["steps"] if s["node"] in folds]
    # the backward pass meets the forward's last block first
    assert told[0].startswith("In block 5 of 5") and told[-1].startswith("In block 1 of 5")


@pytest.mark.browser
def test_a_folded_page_steps_in_the_browser(tmp_path: Path) -> None:
    rec = layered(tail=True)
    page_file = rec.save(tmp_path / "fold.html", fold=True)
    data = unpack_state(page_file.read_text("utf-8"))["data"]
    first_in_fold = next(i for i, s in enumerate(data["steps"]) if s["node"] in data["folded"])
    box = f"{data['prefix']}_{data['folded'][data['steps'][first_in_fold]['node']]}"
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_file)
        root = page.wait_for_selector(".gv-stepper")
        focus_on(page, root, "its stage")
        while root.get_attribute("data-step") != str(first_in_fold):
            page.keyboard.press("ArrowRight")
        active = [a.get_attribute("id") for a in root.query_selector_all("svg .gv_active")]
        assert active == [box]
        assert "In block 5 of 5" in root.query_selector(".gv-panel").inner_text()
        click(page, root.query_selector(".gv-fit"))  # the whole graph: its text too small to read
        assert page.evaluate(ACTIVE, root)["textPx"] < 12
        page.keyboard.press("c")  # follow again: the camera goes to the fold's box
        page.wait_for_function("(root) => root.dataset.follow === 'on'", arg=root)
        seen = page.evaluate(ACTIVE, root)
        assert seen["active"] == box and seen["inside"] and seen["textPx"] >= 12
    assert not errors
