"""Real-model replay pages in Chromium: the camera keeps the active node readable, the minimap,
search, stepping by module, incremental classes, page weight and a 3,000-node page.

Latencies are printed as measurements (``make bench`` records them); none is asserted.
"""

from __future__ import annotations

import random
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz import GradvizWarning
from gradviz.model.recording import Recording
from gradviz.replay.frames import classes_at, replay_born
from gradviz.stepper.page import unpack_state
from tests.support.browser import SEED, open_local, readable_steps

sys.path.insert(0, str(Path(__file__).resolve().parent / "benchmarks"))
from workloads import GPT, synthetic

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot, pytest.mark.slow]

PAGE_BYTES_PER_1000_NODES = 1.5e6


def _gpt_recording() -> Recording:
    torch.manual_seed(0)
    model = GPT(vocab=64, d_model=32, layers=4, seq=8)
    ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(0))
    with gradviz.watch(model) as w:
        loss = model(ids).square().mean()
    return w.record(loss)


@pytest.fixture(scope="module")
def gpt_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recording, Path]:
    recording = _gpt_recording()
    with warnings.catch_warnings():
        # a costly view may get a cheaper dot setting, and says so (that notice is
        # tested in test_graphviz_backends.py); here only the page matters
        warnings.filterwarnings("ignore", "this view has", GradvizWarning)
        path = recording.save(tmp_path_factory.mktemp("gpt") / "replay.html")
    return recording, path


def _open(browser: Any, path: Path) -> tuple[Any, Any, list[str]]:
    page, requests, errors = open_local(browser, path)
    page.set_viewport_size({"width": 1600, "height": 900})
    page.wait_for_selector(".gv-stepper svg")
    assert all(url.startswith(("file:", "data:", "blob:")) for url in requests)
    return page, page.query_selector(".gv-stepper"), errors


def test_gpt_page_weight_and_opening_view(gpt_page: tuple[Recording, Path]) -> None:
    recording, path = gpt_page
    nodes = len(recording.graph.nodes)
    size = path.stat().st_size
    print(f"\n[gpt page] {nodes} nodes, {size / 1e3:.0f} kB, {size / nodes:.0f} B/node")
    assert size <= PAGE_BYTES_PER_1000_NODES * nodes / 1000
    state = unpack_state(path.read_text(encoding="utf-8"))
    assert nodes > 150 and state["view"] == "collapsed-auto"  # the frontier's boxes
    assert {"backward", "combined", "modules"} <= set(state["svgs"])


def test_camera_keeps_the_active_node_on_screen_and_readable(
    browser: Any, gpt_page: tuple[Recording, Path]
) -> None:
    _, path = gpt_page
    page, root, errors = _open(browser, path)
    for view in ("collapsed-auto", "backward"):
        choice = "collapsed" if view.startswith("collapsed") else view
        root.query_selector(".gv-view").select_option(choice)  # as a user picks it
        page.evaluate(SEED, root)  # the backward pass starts
        assert root.get_attribute("data-view") == view
        assert readable_steps(page, root, 40) > 5
    drawn = page.evaluate(
        """(r) => { const c = r.querySelector('.gv-minimap:not([hidden]) canvas');
        if (!c) return 0; const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }""",
        root,
    )
    assert drawn > 100  # the overview shows the graph's nodes
    assert errors == []
    page.close()


def test_manual_pan_pauses_following_and_the_button_resumes(
    browser: Any, gpt_page: tuple[Recording, Path]
) -> None:
    _, path = gpt_page
    page, root, errors = _open(browser, path)
    page.evaluate("(r) => r.querySelector('.gv-last').click()", root)
    canvas = page.query_selector(".gv-canvas").bounding_box()
    x, y = canvas["x"] + canvas["width"] / 2, canvas["y"] + canvas["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 300, y + 200, steps=5)
    page.mouse.up()
    assert root.get_attribute("data-follow") == "off"
    box = page.evaluate("(r) => r.dataset.camera", root)
    page.evaluate("(r) => r.querySelector('.gv-first').click()", root)
    assert (
        page.evaluate("(r) => r.dataset.camera", root) == box
    )  # paused: the view stays where the user put it
    page.evaluate("(r) => r.querySelector('.gv-follow').click()", root)
    assert root.get_attribute("data-follow") == "on"
    assert errors == []
    page.close()


def test_search_finds_highlights_and_jumps(browser: Any, gpt_page: tuple[Recording, Path]) -> None:
    recording, path = gpt_page
    page, root, errors = _open(browser, path)
    page.evaluate("(r) => r.querySelector('.gv-first').click()", root)
    page.fill(".gv-search-input", "norm1.weight")  # one per block
    found = root.get_attribute("data-found")
    assert found is not None
    node = recording.graph.node(found)
    names = [t.name for t in recording.graph.tensors if t.node_id == found]
    assert node.type_name == "AccumulateGrad" and any("norm" in n for n in names)
    ran = recording.step_for(found)
    assert ran is not None and root.get_attribute("data-step") == str(ran.index)
    assert page.evaluate("(r) => r.querySelectorAll('svg .gv-match').length", root) >= 1
    count = page.text_content(".gv-search-count")
    assert count is not None and count.startswith("1 / ")
    page.press(".gv-search-input", "Enter")
    assert page.text_content(".gv-search-count").startswith("2 / ")  # type: ignore[union-attr]
    page.fill(".gv-search-input", "no such thing anywhere")
    assert page.text_content(".gv-search-count") == "no match"
    assert errors == []
    page.close()


def test_step_over_and_out_move_by_module(browser: Any, gpt_page: tuple[Recording, Path]) -> None:
    recording, path = gpt_page
    forward = recording.graph.forward
    assert forward is not None

    def chain(step: int) -> list[int]:
        if step <= 0:
            return []
        node = recording.steps[step - 1].node_id
        return [m.index for m in forward.module_chain(forward.node_modules.get(node))]

    page, root, errors = _open(browser, path)
    page.evaluate("(r) => r.querySelector('.gv-last').click()", root)
    page.evaluate("(r) => r.querySelector('.gv-first').click()", root)
    for _ in range(len(recording.forward_ops) + 1):  # to the seed, then into the model
        page.evaluate("(r) => r.querySelector('.gv-next').click()", root)
    overs = 0
    while overs < 30:
        here = int(root.get_attribute("data-step") or 0)
        inner = chain(here)
        page.evaluate("(r) => r.querySelector('.gv-over').click()", root)
        there = int(root.get_attribute("data-step") or 0)
        if there == here:
            break
        overs += 1
        if inner:  # every step between was inside the module it stepped over
            assert all(inner[-1] in chain(s) for s in range(here, there))
            assert inner[-1] not in chain(there) or there == len(recording.steps)
    assert overs >= 3
    page.evaluate("(r) => r.querySelector('.gv-first').click()", root)
    for _ in range(len(recording.forward_ops) + 3):
        page.evaluate("(r) => r.querySelector('.gv-next').click()", root)
    here = int(root.get_attribute("data-step") or 0)
    inner = chain(here)
    page.evaluate("(r) => r.querySelector('.gv-out').click()", root)
    there = int(root.get_attribute("data-step") or 0)
    if len(inner) >= 2:
        assert inner[-2] not in chain(there) or there == len(recording.steps)
        assert all(inner[-2] in chain(s) for s in range(here, there))
    page.evaluate("(r) => r.querySelector('.gv-back').click()", root)
    assert int(root.get_attribute("data-step") or 0) < there
    assert errors == []
    page.close()


def test_incremental_classes_match_python_after_any_jump(
    browser: Any, gpt_page: tuple[Recording, Path]
) -> None:
    recording, path = gpt_page
    state = unpack_state(path.read_text(encoding="utf-8"))
    schedule = state["data"]["schedule"]
    born = replay_born(recording, ["backward"])
    schedule = {**schedule, "born": born}
    page, root, errors = _open(browser, path)
    page.evaluate(
        "(r) => { const s = r.querySelector('.gv-view'); s.value = 'backward'; "
        "s.dispatchEvent(new Event('change')); }",
        root,
    )
    rng = random.Random(0)
    first, last = state["data"].get("first", 0), state["data"]["count"] - 1
    read = """([r, ids]) => { const out = {}; for (const id of ids) {
        const el = r.querySelector(`svg [id="${id}"]`); if (!el) continue;
        const c = [...el.classList].filter((x) => x.startsWith("gv_") && !["gv_node","gv_edge",
          "gv_link","gv_tensor","gv_leaf","gv_branch","gv_root","gv_constant","gv_marked",
          "gv_merged","gv_constlink","gv_bmodule","gv_fmodule"].includes(x));
        if (c.length) out[id] = c.sort().join(" "); } return out; }"""
    for _ in range(12):
        target = rng.randint(first, last)
        page.evaluate(
            "([r, t]) => { const s = r.querySelector('.gv-slider'); s.value = String(t); "
            "s.dispatchEvent(new Event('input')); }",
            [root, target],
        )
        wanted = classes_at(schedule, target, "backward")
        shown = page.evaluate(read, [root, list(wanted)])
        expected = {k: " ".join(sorted(v.split())) for k, v in wanted.items() if k in shown}
        assert {k: shown[k] for k in expected} == expected, target
    assert errors == []
    page.close()


@pytest.mark.filterwarnings("ignore::gradviz.errors.GradvizWarning")  # biglayout's notice
def test_a_3000_node_page_is_interactive(browser: Any, tmp_path: Path) -> None:
    forward = synthetic(3000)
    recording = gradviz.record(forward())
    nodes = len(recording.graph.nodes)
    path = recording.save(tmp_path / "big.html")
    size = path.stat().st_size
    assert size <= PAGE_BYTES_PER_1000_NODES * nodes / 1000
    started = time.perf_counter()
    page, root, errors = _open(browser, path)
    ready = time.perf_counter() - started
    times = page.evaluate(
        """async (r) => { const out = [];
        for (let i = 0; i < 60; i++) { const t = performance.now();
          r.querySelector('.gv-next').click();
          void getComputedStyle(r.querySelector('svg .gv_active') || r).opacity;
          out.push(performance.now() - t); }
        return out; }""",
        root,
    )
    times.sort()
    print(
        f"\n[{nodes} nodes] page {size / 1e6:.2f} MB, interactive after {ready:.2f} s, "
        f"step median {times[len(times) // 2]:.1f} ms, max {times[-1]:.1f} ms"
    )
    assert root.get_attribute("data-step") == "60"
    assert errors == []
    page.close()
