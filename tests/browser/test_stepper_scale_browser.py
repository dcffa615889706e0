"""The stepper on big real-model pages in Chromium: a 3,000-node page reaches its ready
state, keeps only what is near the camera in the DOM yet every element's classes right, the
active node lit and on screen after each step, and the whole graph in a downloaded step; a
watched GPT's collapsed view marks the module box an op runs in during forward frames.

No timing is asserted here: ``tests/bench/replay_bench.py`` measures the latencies.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz import GradvizWarning
from gradviz.model.recording import Recording
from gradviz.replay.frames import classes_at
from gradviz.stepper.page import unpack_state
from tests.support.browser import open_local
from tests.support.person import click, click_to_step, move_slider_to
from tests.support.workloads import GPT, synthetic

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot, pytest.mark.slow]

# The active element's id and whether its centre is inside the canvas.
ACTIVE_ON_SCREEN = """(root) => {
  const el = root.querySelector("svg .gv_active");
  if (!el) return null;
  const c = root.querySelector(".gv-canvas").getBoundingClientRect();
  const r = el.getBoundingClientRect();
  const x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
  return { id: el.id, inside: x >= c.left && x <= c.right && y >= c.top && y <= c.bottom };
}"""


def _normal(classes: dict[str, str]) -> dict[str, str]:
    return {k: " ".join(sorted(v.split())) for k, v in classes.items() if v}


@pytest.fixture(scope="module")
def big_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recording, Path]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GradvizWarning)  # biglayout's notice
        recording = gradviz.record(synthetic(3000)())
        path = recording.save(tmp_path_factory.mktemp("big") / "replay.html")
    return recording, path


def _open(browser: Any, path: Path) -> tuple[Any, Any, list[str]]:
    page, requests, errors = open_local(browser, path)
    page.set_viewport_size({"width": 1600, "height": 900})
    page.wait_for_selector('.gv-stepper[data-ready="1"]', timeout=300_000)
    assert all(url.startswith(("file:", "data:", "blob:")) for url in requests)
    return page, page.query_selector(".gv-stepper"), errors


def test_a_3000_node_page_steps_with_the_active_node_lit_and_on_screen(
    browser: Any, big_page: tuple[Recording, Path]
) -> None:
    recording, path = big_page
    state = unpack_state(path.read_text(encoding="utf-8"))
    schedule = state["data"]["schedule"]
    page, root, errors = _open(browser, path)
    opened = page.evaluate("(r) => r.gvState()", root)
    assert opened["view"] == "backward" and opened["elements"] > 3000
    # far from the camera, nodes and edges wait outside the DOM
    assert 0 < opened["attached"] < opened["elements"] / 4
    assert page.evaluate("(r) => r.querySelectorAll('svg g.node').length", root) < 3000
    move_slider_to(page, root, 0)
    for step in range(1, 26):
        click_to_step(page, root, ".gv-next", step)
        where = page.evaluate(ACTIVE_ON_SCREEN, root)
        assert where is not None, step
        assert where["id"] == f"{state['data']['prefix']}_{state['data']['steps'][step]['node']}"
        assert where["inside"], (step, where)
    # every element's classes, in the DOM or not, are the Python reference's
    for step in (25, 1700, 40, len(recording.steps)):
        move_slider_to(page, root, step)
        shown = page.evaluate("(r) => r.gvState()", root)
        assert shown["step"] == step
        assert _normal(shown["classes"]) == _normal(classes_at(schedule, step)), step
    assert errors == []
    page.close()


def test_fit_brings_everything_in_and_a_download_holds_the_whole_graph(
    browser: Any, big_page: tuple[Recording, Path]
) -> None:
    recording, path = big_page
    page, root, errors = _open(browser, path)
    click_to_step(page, root, ".gv-next", 1)
    before = page.evaluate("(r) => r.gvState().attached", root)
    click(page, root.query_selector(".gv-fit"))
    fitted = page.evaluate("(r) => r.gvState()", root)
    assert fitted["attached"] > before
    assert page.evaluate("(r) => r.querySelectorAll('svg g.node').length", root) >= len(
        recording.graph.nodes
    )
    click(page, root.query_selector(".gv-follow"))  # back near the node
    assert page.evaluate("(r) => r.gvState().attached", root) < fitted["attached"]
    with page.expect_download() as download:
        click(page, root.query_selector(".gv-download"))
    svg = Path(download.value.path()).read_text(encoding="utf-8")
    assert len(re.findall(r'class="node[ "]', svg)) >= len(recording.graph.nodes)
    assert "transform: translate" not in svg  # the camera's placement stays in the page
    assert errors == []
    page.close()


@pytest.fixture(scope="module")
def gpt_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recording, Path]:
    torch.manual_seed(0)
    model = GPT(vocab=64, d_model=32, layers=4, seq=8)
    ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(0))
    with gradviz.watch(model) as w:
        loss = model(ids).square().mean()
    recording = w.record(loss)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GradvizWarning)  # a cheaper dot setting's notice
        path = recording.save(tmp_path_factory.mktemp("gpt") / "replay.html")
    return recording, path


def test_collapsed_view_marks_the_module_an_op_runs_in_during_forward_frames(
    browser: Any, gpt_page: tuple[Recording, Path]
) -> None:
    _, path = gpt_page
    state = unpack_state(path.read_text(encoding="utf-8"))
    data = state["data"]
    prefix, chains = data["prefix"], data["nav"]["chains"]
    page, root, errors = _open(browser, path)
    assert root.get_attribute("data-view") == state["view"] == "collapsed-auto"
    marked = 0
    for frame in range(data["first"], 0):
        move_slider_to(page, root, frame)
        op = data["forward"][frame - data["first"]]
        here = page.evaluate(
            "(r) => [...r.querySelectorAll('svg .gv-here')].map((e) => e.id)", root
        )
        nodes = op.get("nodes") or []
        direct = nodes and page.evaluate(
            '([r, id]) => !!r.querySelector(`svg [id="${id}"]`)', [root, f"{prefix}_{nodes[0]}"]
        )
        if not nodes or direct:
            assert here == [], frame
            continue
        # the box drawn for the innermost module of the op's node that this view shows
        boxes = [f"{prefix}_bm{m}" for m in chains.get(nodes[0], [])]
        assert len(here) == 1 and here[0] in boxes, (frame, here, boxes)
        marked += 1
        assert page.evaluate(ACTIVE_ON_SCREEN.replace(".gv_active", ".gv-here"), root)["inside"]
    assert marked > 10  # most ops of a 4-layer GPT run inside a collapsed block
    move_slider_to(page, root, 3)  # backward: the mark goes, backward classes take over
    assert page.evaluate("(r) => r.querySelectorAll('svg .gv-here').length", root) == 0
    assert errors == []
    page.close()
