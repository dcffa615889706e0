"""The classroom in Chromium: presentation mode fills a 1600x900 screen, clicker keys step
without a click first and keep working after First/Last, "." blanks, Escape leaves."""

from __future__ import annotations

from pathlib import Path

import pytest

import gradviz
from gradviz.explain.steps import describe_step
from gradviz.teaching.lessons import lesson
from tests.support.browser import chromium, open_local
from tests.support.person import NEXT_FRAMES, choose, click, focus_on, has_class, type_into

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot]

DRAWN_SIZE = """root => {
  const r = root.querySelector('.gv-canvas > svg > g').getBoundingClientRect();
  return [r.width, r.height];
}"""


def test_presentation_mode_fills_the_screen_and_clickers_step(tmp_path: Path) -> None:
    built = lesson("05-ten-ops").build()
    recording = gradviz.record(*built.roots, names=built.names)
    last = len(recording.steps)
    page_file = recording.save(tmp_path / "replay.html")
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_file)
        page.set_viewport_size({"width": 1600, "height": 900})
        root = page.wait_for_selector(".gv-stepper")
        # the keys work at once: no click on the page first
        page.keyboard.press("PageDown")
        assert root.get_attribute("data-step") == "1"
        # the stage uses the window's height and a small graph fills it (no 640 px cap)
        width, height = page.evaluate(DRAWN_SIZE, root)
        print("page: graph drawn", width, height)
        assert width >= 0.5 * 1600 or height >= 0.6 * 900, (width, height)

        page.keyboard.press("f")
        assert has_class(page, root, "gv-present")
        page.evaluate(NEXT_FRAMES)  # the view is refit to the full-screen stage by then
        drawn_w, drawn_h = page.evaluate(DRAWN_SIZE, root)
        print("presenting: graph drawn", drawn_w, drawn_h)
        assert drawn_w >= 0.8 * 1600 or drawn_h >= 0.8 * 900, (drawn_w, drawn_h)
        caption = root.query_selector(".gv-caption")
        assert caption.is_visible()
        expected = " ".join(str(describe_step(recording, 1)["narration"]).split())
        assert " ".join(caption.inner_text().split()) == expected
        assert page.evaluate("c => parseFloat(getComputedStyle(c).fontSize)", caption) >= 24

        # a clicker: PageDown / Space / arrows step, PageUp goes back
        page.keyboard.press("PageDown")
        page.keyboard.press(" ")
        page.keyboard.press("ArrowRight")
        assert root.get_attribute("data-step") == "4"
        page.keyboard.press("PageUp")
        assert root.get_attribute("data-step") == "3"
        # "." blanks the screen, the next step shows it again
        page.keyboard.press(".")
        assert "gv-blank" in (root.get_attribute("class") or "")
        page.keyboard.press("PageDown")
        assert "gv-blank" not in (root.get_attribute("class") or "")
        assert root.get_attribute("data-step") == "4"
        page.keyboard.press("Escape")
        assert has_class(page, root, "gv-present", False)

        # First and Last disable themselves (dropping focus); the keys keep working
        click(page, root.query_selector(".gv-last"))
        assert root.get_attribute("data-step") == str(last)
        page.keyboard.press("PageUp")
        assert root.get_attribute("data-step") == str(last - 1)
        click(page, root.query_selector(".gv-first"))
        page.keyboard.press("PageDown")
        assert root.get_attribute("data-step") == "1"
        # the Present button and the text-size control
        click(page, root.query_selector(".gv-present-btn"))
        assert has_class(page, root, "gv-present")
        page.keyboard.press("+")
        assert page.evaluate("r => r.style.getPropertyValue('--gv-text-scale')", root) == "1.25"
        page.screenshot(path=str(tmp_path / "present.png"))
        page.keyboard.press("Escape")
        assert not errors, errors


GRAD_FIELD = """([root, id]) => {
  const box = root.querySelector('.gv-canvas svg [id="' + id + '"]');
  const texts = [...box.querySelectorAll('text')];
  return texts[texts.findIndex(t => t.textContent === 'grad') + 1].textContent;
}"""

NODE = '.gv-canvas svg [id="{}"]'


def _watched_ten_ops() -> gradviz.Recording:
    with gradviz.watch() as watching:
        built = lesson("05-ten-ops").build()
    return built.record(watching)


def test_combined_view_grad_field_updates_when_accumulategrad_runs(tmp_path: Path) -> None:
    recording = _watched_ten_ops()
    built_c = next(t for t in recording.graph.tensors if t.name == "c")
    accumulate = next(s for s in recording.steps if s.node_id == built_c.node_id)
    assert accumulate.type_name == "AccumulateGrad"
    page_file = recording.save(tmp_path / "replay.html", view="combined")
    prefix = recording.graph.prefix
    box = f"{prefix}_{built_c.id}"
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_file)
        page.set_viewport_size({"width": 1600, "height": 900})
        root = page.wait_for_selector(".gv-stepper")
        if root.get_attribute("data-view") != "combined":
            choose(page, root.query_selector(".gv-view"), "combined")
            focus_on(page, root, "its stage")  # the keys go to the stepper, not the list
        seen = []
        while root.get_attribute("data-step") != str(len(recording.steps)):
            step = int(root.get_attribute("data-step") or "0")
            if step >= 0:
                seen.append((step, page.evaluate(GRAD_FIELD, [root, box])))
            page.keyboard.press("PageDown")
        seen.append((len(recording.steps), page.evaluate(GRAD_FIELD, [root, box])))
        # the recorded step of c's AccumulateGrad is where the field changes: None -> c.grad
        c = built_c.tensor
        final = str(int(c.grad.item())) if c is not None else "36"
        for step, text in seen:
            assert text == ("None" if step < accumulate.index else final), (step, text)
        assert not errors, errors


def test_quiz_grades_against_the_recorded_order(tmp_path: Path) -> None:
    built = lesson("05-ten-ops").build()
    recording = gradviz.record(*built.roots, names=built.names)
    prefix = recording.graph.prefix
    page_file = recording.save(tmp_path / "replay.html")
    order = [s.node_id for s in recording.steps]
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_file)
        page.set_viewport_size({"width": 1600, "height": 900})
        root = page.wait_for_selector(".gv-stepper")
        click(page, root.query_selector(".gv-quiz-toggle"))
        # step 1, the right node and the right number (what the engine sent, from torch)
        page.keyboard.press("PageDown")
        assert root.get_attribute("data-step") == "0"  # asked first, not revealed
        assert root.get_attribute("data-quiz") == "asking"
        click(page, root.query_selector(NODE.format(f"{prefix}_{order[0]}")))
        sent = next(g for g in recording.steps[0].grad_inputs if g is not None)
        type_into(page, root.query_selector(".gv-quiz-number"), f"{float(sent):g}")
        click(page, root.query_selector(".gv-quiz-reveal"))
        assert root.get_attribute("data-step") == "1"
        assert root.get_attribute("data-quiz") == "right"
        assert "highest sequence number" in root.query_selector(".gv-quiz-verdict").inner_text()
        # step 2: a wrong node (the one that runs last)
        page.keyboard.press("PageDown")
        click(page, root.query_selector(NODE.format(f"{prefix}_{order[-1]}")))
        type_into(page, root.query_selector(".gv-quiz-number"), "0.5")
        click(page, root.query_selector(".gv-quiz-reveal"))
        assert root.get_attribute("data-step") == "2"
        assert root.get_attribute("data-quiz") == "wrong"
        verdict = root.query_selector(".gv-quiz-verdict").inner_text()
        assert "Wrong node" in verdict and recording.steps[1].type_name in verdict
        assert root.query_selector(".gv-quiz-score").inner_text() == "score 1 / 2"
        page.screenshot(path=str(tmp_path / "quiz.png"))
        assert not errors, errors


HIDDEN_FUTURE = """root => [...root.querySelectorAll('.gv-canvas svg .gv_future')].map(e => {
  const s = getComputedStyle(e);
  return s.visibility === 'hidden' || Number(s.opacity) === 0;
})"""


def test_forward_frames_grow_the_graph_without_a_ghost(tmp_path: Path) -> None:
    recording = _watched_ten_ops()
    page_file = recording.save(tmp_path / "replay.html")
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_file)
        root = page.wait_for_selector(".gv-stepper")
        # the first frame that draws something (the first three make constants only)
        opened = int(root.get_attribute("data-step") or "0")
        assert -len(recording.forward_ops) < opened < 0
        for _ in range(3):
            hidden = page.evaluate(HIDDEN_FUTURE, root)
            assert hidden and all(hidden)  # not made yet: not drawn at all
            page.keyboard.press("PageDown")
        assert not errors, errors
