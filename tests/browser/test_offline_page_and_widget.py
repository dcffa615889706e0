"""The stepper in a real browser: the offline page, and the widget inside JupyterLab.

Chromium is driven as ``tests/support/browser.py`` describes, and acted on as a person does
(``tests/support/person.py``). Each test prints the per-step latency it saw, from a mouse
click until the step was shown (the driver's round trips included); none asserts on time:
``make bench`` measures and judges the step's own latency.
"""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz.escape import MAX_LABEL_CHARS
from gradviz.model.recording import Recording
from gradviz.replay.frames import classes_at, forward_frames, replay_born, replay_data
from gradviz.teaching.lessons import lesson
from tests.support.browser import chromium, open_local
from tests.support.jupyterlab import KERNEL_EXEC, jupyterlab, kernel_sees, run_all_cells
from tests.support.person import choose, click, click_to_step, focus_on

# The class each scheduled element carries, read inside one stepper only.
READ_CLASSES = """([root, ids]) => {
  const replay = ["gv_done","gv_active","gv_pending","gv_notrun","gv_hidegrad","gv_flowing",
    "gv_future","gv_born","gv_partial"];
  const out = {};
  for (const id of ids) {
    const el = root.querySelector(`svg [id="${id}"]`);
    if (!el) { out[id] = "missing"; continue; }
    const cls = replay.filter((c) => el.classList.contains(c));
    if (cls.length) out[id] = cls.join(" ");
  }
  return out;
}"""

# Which gradient labels show: id -> visible, for edges and links that carry one.
READ_LABELS = """(root) => {
  const out = {};
  for (const text of root.querySelectorAll("svg .gv_grad")) {
    const id = text.closest("g[id]").id;
    out[id] = getComputedStyle(text).visibility !== "hidden" &&
      getComputedStyle(text).display !== "none";
  }
  return out;
}"""


def timed_click(page: Any, root: Any, selector: str, step: int) -> float:
    """Click a control with the mouse and wait until ``step`` is shown (what a lecturer waits
    for after a click); returns the milliseconds that took, seen from the test."""
    started = time.perf_counter()
    click_to_step(page, root, selector, step)
    return (time.perf_counter() - started) * 1000


def report_latency(where: str, samples: list[float]) -> None:
    """Print the per-step latency (a figure for the log, never an assertion)."""
    print(
        f"\n[{where}] per-step latency, mouse click to step shown: median "
        f"{statistics.median(samples):.1f} ms, max {max(samples):.1f} ms over {len(samples)} steps"
    )


# -- 1. the standalone page ------------------------------------------------------------------
@pytest.fixture(scope="module")
def ten_ops() -> Recording:
    built = lesson("ten-ops").build()
    return gradviz.record(*built.roots, names=built.names)


@pytest.mark.browser
@pytest.mark.needs_dot
def test_standalone_replay(ten_ops: Recording, tmp_path: Path) -> None:
    page_file = ten_ops.save(tmp_path / "replay.html")
    data = replay_data(ten_ops)
    schedule, prefix, last = data["schedule"], data["prefix"], len(ten_ops.steps)
    ids = [*schedule["nodes"], *schedule["edges"], *schedule["links"]]
    with chromium(tmp_path / "profile") as context:
        page, requests, errors = open_local(context, page_file)
        root = page.wait_for_selector(".gv-stepper")

        def check(index: int) -> None:
            assert root.get_attribute("data-step") == str(index)
            assert page.evaluate(READ_CLASSES, [root, ids]) == classes_at(schedule, index)
            labels = page.evaluate(READ_LABELS, root)
            flowed = {**schedule["edges"], **schedule["links"]}
            assert labels == {k: at <= index for k, at in flowed.items()}, index
            assert root.query_selector(".gv-counter").inner_text() == f"step {index} / {last}"

        check(0)
        timings = []
        for index, node_id in enumerate(ten_ops.order, start=1):
            timings.append(timed_click(page, root, ".gv-next", index))
            active = root.query_selector_all("svg .gv_active")
            assert [a.get_attribute("id") for a in active] == [f"{prefix}_{node_id}"]
            assert (
                ten_ops.steps[index - 1].type_name in root.query_selector(".gv-panel").inner_text()
            )
            check(index)
        assert root.query_selector(".gv-next").is_disabled()
        for index in range(last - 1, -1, -1):  # Prev undoes, step by step
            timings.append(timed_click(page, root, ".gv-prev", index))
            check(index)
        focus_on(page, root, "its stage")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        check(3)

        with page.expect_download() as download:
            click(page, root.query_selector(".gv-download"))
        svg = Path(download.value.path()).read_text(encoding="utf-8")
        active_id = f"{prefix}_{ten_ops.order[2]}"
        assert re.search(rf'id="{active_id}" class="[^"]*\bgv_active\b', svg)
        assert ".gv_active" in svg and svg.lstrip().startswith("<svg")

        labels = root.query_selector(".gv-labels input")
        click(page, labels)  # off
        assert not labels.is_checked()
        assert not any(page.evaluate(READ_LABELS, root).values())
        click(page, labels)  # on again
        assert labels.is_checked()
        click(page, root.query_selector(".gv-fit"))  # the camera chose the view so far
        home = root.get_attribute("data-camera")
        click(page, root.query_selector(".gv-btn[title^='Zoom in']"))
        assert root.get_attribute("data-camera") != home
        click(page, root.query_selector(".gv-fit"))
        assert root.get_attribute("data-camera") == home

        choose(page, root.query_selector(".gv-view"), "combined")
        check(3)
        assert [a.get_attribute("id") for a in root.query_selector_all("svg .gv_active")] == [
            active_id
        ]
        choose(page, root.query_selector(".gv-speed"), "4")
        click(page, root.query_selector(".gv-play"))  # plays to the end, then stops by itself
        page.wait_for_function(f"(root) => root.dataset.step === '{last}'", arg=root)
        page.wait_for_function("(root) => !root.classList.contains('gv-playing')", arg=root)
        check(last)
    assert not errors
    local = ("file:", "data:", "blob:")  # blob: is the download, made in the page itself
    assert [url for url in requests if not url.startswith(local)] == []
    report_latency("standalone page", timings)


@pytest.fixture(scope="module")
def ten_ops_watched() -> Recording:
    with gradviz.watch() as w:
        built = lesson("ten-ops").build()
    return w.record(*built.roots)


# Which elements carry the NaN/Inf highlight.
READ_NONFINITE = (
    """(root) => [...root.querySelectorAll("svg .gv_nonfinite")].map((e) => e.id).sort()"""
)


@pytest.mark.browser
@pytest.mark.needs_dot
def test_standalone_replay_marks_where_inf_first_appears(tmp_path: Path) -> None:
    """sqrt at 0 sends Inf: the page marks that node and edge from its step on, exactly
    where gradviz.replay.frames.classes_at does."""
    x = torch.tensor([0.0, 1.0, 4.0], requires_grad=True)
    recording = gradviz.record((x.sqrt() * 3).sum())
    (origin,) = recording.nonfinite_origins()
    schedule = replay_data(recording)["schedule"]
    page_file = recording.save(tmp_path / "nan.html")
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_file)
        root = page.wait_for_selector(".gv-stepper")
        for index in range(len(recording) + 1):
            want = sorted(k for k, v in classes_at(schedule, index).items() if "gv_nonfinite" in v)
            assert page.evaluate(READ_NONFINITE, root) == want, index
            assert bool(want) == (index >= origin.index)
            if index == origin.index:
                assert "first appears here" in root.query_selector(".gv-panel").inner_text()
            if index < len(recording):
                click_to_step(page, root, ".gv-next", index + 1)
        assert not errors


@pytest.mark.browser
@pytest.mark.needs_dot
def test_standalone_replay_grows_the_forward_pass_first(
    ten_ops_watched: Recording, tmp_path: Path
) -> None:
    """Under watch(): forward frames -12..-1 (one per op), then the seed and the backward
    steps; in both views the classes at every frame are gradviz.replay.frames.classes_at's."""
    recording = ten_ops_watched
    page_file = recording.save(tmp_path / "replay.html")
    views = ("backward", "combined")
    data = replay_data(recording, born=replay_born(recording, views))
    schedule, prefix, last = data["schedule"], data["prefix"], len(recording.steps)
    frames = forward_frames(recording)
    first = -len(frames)
    assert first == data["first"] == -len(recording.forward_ops)
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_file)
        root = page.wait_for_selector(".gv-stepper")

        def check(index: int, view: str) -> None:
            ids = [*schedule["nodes"], *schedule["edges"], *schedule["links"]]
            ids += [i for i in schedule["born"][view] if i not in ids]
            assert root.get_attribute("data-step") == str(index)
            seen = page.evaluate(READ_CLASSES, [root, ids])
            assert seen == classes_at(schedule, index, view), (index, view)
            counter = root.query_selector(".gv-counter").inner_text()
            panel = root.query_selector(".gv-panel").inner_text()
            if index < 0:
                frame = frames[index - first]
                assert counter == f"forward {frame.index} / {len(frames)}"
                assert frame.narration in panel.replace("\n", " ")
                born = {k for k, v in seen.items() if "gv_born" in v}
                assert {f"{prefix}_{n}" for n in frame.nodes} <= born
            else:
                assert counter == f"step {index} / {last}"

        for view in views:
            choose(page, root.query_selector(".gv-view"), view)
            if not root.query_selector(".gv-first").is_disabled():
                click_to_step(page, root, ".gv-first", first)
            check(first, view)  # the page opens on the first forward op
            assert root.query_selector(".gv-prev").is_disabled()
            for index in range(first + 1, last + 1):  # forward frames, the seed, backward
                click_to_step(page, root, ".gv-next", index)
                check(index, view)
            assert root.query_selector(".gv-next").is_disabled()

        # the combined view at "i = g / h": DivBackward0 and the box of i appear together
        div = frames[9]
        assert div.op.name == "div"
        focus_on(page, root, "its stage")
        page.keyboard.press("Home")
        for _ in range(9):
            page.keyboard.press("ArrowRight")
        check(div.step, "combined")
        i_box = f"{prefix}_{recording.graph.tensor('i').id}"
        born = sorted(a.get_attribute("id") for a in root.query_selector_all("svg .gv_born"))
        assert f"{prefix}_op{div.op.index}" in born and i_box in born
        assert f"{prefix}_{div.nodes[0]}" in born
        assert "i = g / h" in root.query_selector(".gv-panel").inner_text()
        with page.expect_download() as download:
            click(page, root.query_selector(".gv-download"))
        assert download.value.suggested_filename == "gradviz-forward-010.svg"
    assert not errors


@pytest.mark.browser
@pytest.mark.needs_dot
def test_module_views_collapse_and_expand(tmp_path: Path) -> None:
    """A watch(model) replay: in the collapsed views and the clustered one the classes at
    every frame are classes_at's; clicking a box opens it in the next depth's layout at the
    same step, where the node that runs is active inside its cluster."""
    from gradviz.render.watched import collapsed_members
    from gradviz.stepper.page import stepper_payload
    from tests.render.test_module_views import residual_mlp

    recording = residual_mlp()
    payload = stepper_payload(recording)
    data, prefix = payload["data"], payload["prefix"]
    schedule, modules = data["schedule"], data["modules"]
    assert modules["default"] == "collapsed-1"
    first, last = data["first"], len(recording.steps)
    page_file = recording.save(tmp_path / "replay.html")
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_file)
        root = page.wait_for_selector(".gv-stepper")
        assert not root.query_selector(".gv-depthbox").is_visible()

        def check(index: int, view: str) -> None:
            assert root.get_attribute("data-step") == str(index)
            assert root.get_attribute("data-view") == view
            svg = payload["svgs"][view]
            expected = {
                k: v for k, v in classes_at(schedule, index, view).items() if f'id="{k}"' in svg
            }
            ids = [k for k in {**schedule["nodes"], **schedule["boxes"], **schedule["edges"],
                               **schedule["links"], **schedule["born"][view]}
                   if f'id="{k}"' in svg]  # fmt: skip
            assert page.evaluate(READ_CLASSES, [root, ids]) == expected, (index, view)

        choose(page, root.query_selector(".gv-view"), "collapsed")
        assert root.query_selector(".gv-depthbox").is_visible()
        for view in (*modules["collapsed"], "modules"):
            if view in modules["collapsed"]:
                choose(page, root.query_selector(".gv-view"), "collapsed")
                choose(page, root.query_selector(".gv-depth"), view)
            else:
                choose(page, root.query_selector(".gv-view"), view)
            if not root.query_selector(".gv-first").is_disabled():
                click_to_step(page, root, ".gv-first", first)
            check(first, view)
            for index in range(first + 1, last + 1):
                click_to_step(page, root, ".gv-next", index)
                check(index, view)

        # collapsed at depth 1: step to the first node inside Residual; its box is active
        forward = recording.graph.forward
        assert forward is not None
        residual = next(m.index for m in forward.modules if m.type_name == "Residual")
        inside = next(
            s
            for s in recording.steps
            if residual
            in [m.index for m in forward.module_chain(forward.node_modules.get(s.node_id))]
        )
        choose(page, root.query_selector(".gv-view"), "collapsed")
        choose(page, root.query_selector(".gv-depth"), "collapsed-1")
        focus_on(page, root, "its stage")
        page.keyboard.press("Home")
        for _ in range(inside.index - first):
            page.keyboard.press("ArrowRight")
        check(inside.index, "collapsed-1")
        box = f"{prefix}_bm{residual}"
        assert _active(root) == [box]
        assert "1 (Residual)" in root.query_selector(".gv-panel").inner_text()

        click(page, root.query_selector(f'svg [id="{box}"]'))  # expand it
        check(inside.index, "collapsed-2")  # the same step, in the layout where it is open
        assert root.get_attribute("data-expanded") == "1 (Residual)"
        cluster = root.query_selector(f'svg [id="{prefix}_b_m{residual}"]')
        assert "gv-expanded" in (cluster.get_attribute("class") or "")
        active = _active(root)
        assert len(active) == 1 and active[0] is not None
        inside_cluster = """([root, outer, inner]) => {
          const a = root.querySelector(`svg [id="${outer}"]`).getBBox();
          const b = root.querySelector(`svg [id="${inner}"]`).getBBox();
          return a.x <= b.x && a.y <= b.y && b.x + b.width <= a.x + a.width &&
            b.y + b.height <= a.y + a.height;
        }"""  # Graphviz draws clusters and their nodes as sibling groups
        assert page.evaluate(inside_cluster, [root, f"{prefix}_b_m{residual}", active[0]])
        deeper = {n: m for m, ns in collapsed_members(recording.graph, 2).items() for n in ns}
        opened = deeper.get(inside.node_id)  # drawn as itself, or inside a box one level down
        assert active == [
            f"{prefix}_{inside.node_id}" if opened is None else f"{prefix}_bm{opened}"
        ]
        assert root.query_selector(".gv-depth").input_value() == "collapsed-2"
        click_to_step(page, root, ".gv-next", inside.index + 1)  # on in the expanded layout
        check(inside.index + 1, "collapsed-2")
        choose(page, root.query_selector(".gv-depth"), "collapsed-1")  # collapse it again
        check(inside.index + 1, "collapsed-1")
        choose(page, root.query_selector(".gv-view"), "backward")
        assert not root.query_selector(".gv-depthbox").is_visible()
        check(inside.index + 1, "backward")
    assert not errors


# -- 2. the widget in JupyterLab -------------------------------------------------------------
NOTEBOOK_CELLS = [
    "import gradviz\n"
    "from gradviz.teaching.lessons import lesson\n"
    "built = lesson('ten-ops').build()\n"
    "recording = gradviz.record(*built.roots, names=built.names)\n"
    "stepper = gradviz.Stepper(recording)\n"
    "stepper",
    "recording  # a Recording displays as a second stepper of the same graph",
    # names a user could write: markup, a quote-breaker, a direction override, 10,000 chars
    "import torch\n"
    "HOSTILE = ['<script>alert(1)</script>', '<img src=x onerror=alert(1)>',\n"
    "           '\"\\'></text>]]><!--', 'a\\u202eb', 'L' * 10_000]\n"
    "leaves = {n: torch.tensor([i + 1.0], requires_grad=True) for i, n in enumerate(HOSTILE)}\n"
    "hostile = gradviz.Stepper(gradviz.record(\n"
    "    sum((t * t).sum() for t in leaves.values()), names=leaves))\n"
    "hostile",
]
# Anything a name injected into the page: elements that run code, or handler attributes.
INJECTED = """() => [...document.querySelectorAll('.gv-stepper *')].filter((e) =>
  ['IMG', 'SCRIPT', 'IFRAME'].includes(e.tagName.toUpperCase()) ||
  [...e.attributes].some((a) => a.name.toLowerCase().startsWith('on'))).length"""


def _active(root: Any) -> list[str | None]:
    return [a.get_attribute("id") for a in root.query_selector_all("svg .gv_active")]


@pytest.mark.browser
@pytest.mark.needs_dot
@pytest.mark.slow
def test_jupyterlab_stepper(ten_ops: Recording, tmp_path: Path) -> None:
    prefix, order = ten_ops.graph.prefix, ten_ops.order
    errors: list[str] = []
    dialogs: list[str] = []
    with (
        jupyterlab(tmp_path / "lab", NOTEBOOK_CELLS) as url,
        chromium(tmp_path / "profile") as context,
    ):
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(f"{error}\n{error.stack}"))
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        run_all_cells(page, url)
        page.wait_for_function("() => document.querySelectorAll('.gv-stepper').length === 3")
        first, second, hostile = page.query_selector_all(".gv-stepper")
        assert first.get_attribute("data-step") == "0" and _active(first) == []

        timings = [timed_click(page, first, ".gv-next", 1)]
        assert _active(first) == [f"{prefix}_{order[0]}"]
        assert second.get_attribute("data-step") == "0" and _active(second) == []  # no collision
        assert kernel_sees(page, "print(stepper.step)", "1") == "1"
        for step in range(2, 5):
            timings.append(timed_click(page, first, ".gv-next", step))
        assert _active(first) == [f"{prefix}_{order[3]}"]
        code, expected = "print(stepper.step, stepper.frame.active)", f"4 {order[3]}"
        assert kernel_sees(page, code, expected) == expected

        page.evaluate(KERNEL_EXEC, "stepper.step = 6")  # Python moves the front end
        page.wait_for_function("(root) => root.dataset.step === '6'", arg=first)
        assert _active(first) == [f"{prefix}_{order[5]}"]
        page.evaluate(KERNEL_EXEC, "stepper.prev()")
        page.wait_for_function("(root) => root.dataset.step === '5'", arg=first)

        # while the kernel sleeps, the front end still steps; the kernel catches up after
        page.evaluate(
            "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
            ".requestExecute({code: 'import time; time.sleep(2)'})"
        )
        started = time.perf_counter()
        click(page, first.query_selector(".gv-next"))
        assert first.get_attribute("data-step") == "6"  # at once: it does not wait for the kernel
        timings.append((time.perf_counter() - started) * 1000)
        assert kernel_sees(page, "print(stepper.step)", "6") == "6"

        page.evaluate(
            "() => window.jupyterapp.commands.execute('apputils:change-theme',"
            " {theme: 'JupyterLab Dark'})"
        )
        page.wait_for_function("(root) => root.classList.contains('gv-dark')", arg=first)

        # the hostile names stay text: stepping through shows each whole in the panel
        panels = []
        while hostile.query_selector(".gv-next").is_enabled():
            click_to_step(page, hostile, ".gv-next", int(hostile.get_attribute("data-step")) + 1)
            panels.append(hostile.query_selector(".gv-panel").text_content() or "")
        seen = "\n".join(panels)
        for name in ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "L" * 10_000):
            assert name in seen, name[:40]
        labels = [t.text_content() or "" for t in hostile.query_selector_all("svg text")]
        long_labels = [t for t in labels if t.startswith("LLLL")]  # shortened on screen
        assert long_labels and all(len(t) <= MAX_LABEL_CHARS for t in long_labels)
        assert page.evaluate(INJECTED) == 0
        assert dialogs == []
    if errors:  # JupyterLab's own errors are shown, not failed on; ours come from a blob:
        print("\npage errors:", *errors, sep="\n  ")
    assert not [e for e in errors if "blob:" in e], errors  # anywidget loads our ESM as a blob
    report_latency("JupyterLab widget", timings)


# -- 3. a big graph stays instant to step --------------------------------------------------------
@pytest.mark.browser
@pytest.mark.needs_dot
@pytest.mark.slow
def test_stepping_a_3000_node_replay(tmp_path: Path) -> None:
    """Steps only toggle classes, so a 3,000-node replay steps as fast as a small one."""
    from tests.support.workloads import synthetic  # the benchmark's residual-style graph

    recording = gradviz.record(synthetic(3000)())
    assert len(recording.graph.nodes) >= 3000
    page_file = recording.save(tmp_path / "big.html")  # every view, no warning: laid out routed
    prefix = recording.graph.prefix
    with chromium(tmp_path / "profile") as context:
        page = context.new_page()
        page.goto(page_file.as_uri())
        root = page.wait_for_selector(".gv-stepper")
        timings = []
        for step, node_id in enumerate(recording.order[:40], start=1):
            timings.append(timed_click(page, root, ".gv-next", step))
            active = root.query_selector_all("svg .gv_active")
            assert [a.get_attribute("id") for a in active] == [f"{prefix}_{node_id}"]
        timings.append(timed_click(page, root, ".gv-last", len(recording.steps)))
    report_latency(f"standalone page, {len(recording.graph.nodes)} nodes", timings)
