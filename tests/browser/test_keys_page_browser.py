"""The stepper's one key map on the offline page (a saved replay), pressed with the real
keyboard after real clicks: every key steps the stepper as it says - on load, with the focus on
the stepper, on a button, on its stage, and in presentation mode - and the page itself does not
scroll. The quiz takes a real click, and a tap on a touch screen, on a node."""

from __future__ import annotations

from pathlib import Path

import pytest

import gradviz
from gradviz.teaching.lessons import lesson
from tests.support.browser import chromium, open_local
from tests.support.person import (
    FOCUS_PLACES,
    answer_quiz,
    focus_on,
    present_keys,
    press_moves,
    press_toggles,
)

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot]

SCROLL = "() => [Math.round(window.scrollX), Math.round(window.scrollY)]"


def _replay(tmp_path: Path) -> tuple[gradviz.Recording, Path]:
    built = lesson("05-ten-ops").build()
    recording = gradviz.record(*built.roots, names=built.names)
    return recording, recording.save(tmp_path / "replay.html")


def test_every_key_steps_the_stepper_on_the_offline_page(tmp_path: Path) -> None:
    _, page_file = _replay(tmp_path)
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_file)
        page.set_viewport_size({"width": 1280, "height": 720})
        root = page.wait_for_selector(".gv-stepper")
        scroll = page.evaluate(SCROLL)

        def still() -> str | None:
            now = page.evaluate(SCROLL)
            return None if now == scroll else f"the page scrolled {scroll} -> {now}"

        wrong = press_moves(page, root, "on load", still)
        for where in FOCUS_PLACES:
            focus_on(page, root, where)
            scroll = page.evaluate(SCROLL)
            wrong += press_moves(page, root, where, still)
            wrong += press_toggles(page, root, where)
        wrong += present_keys(page, root)
        assert not wrong, "\n".join(wrong)
        assert not errors, errors


@pytest.mark.parametrize("touch", [False, True], ids=["click", "tap"])
def test_the_quiz_takes_a_real_click_or_tap_on_the_offline_page(
    tmp_path: Path, touch: bool
) -> None:
    recording, page_file = _replay(tmp_path)
    prefix = recording.graph.prefix

    def node_for(step: int) -> str:
        return f"{prefix}_{recording.steps[step - 1].node_id}"

    with chromium(tmp_path / "profile", has_touch=touch) as context:
        page, _, errors = open_local(context, page_file)
        page.set_viewport_size({"width": 1280, "height": 720})
        root = page.wait_for_selector(".gv-stepper")
        verdict = answer_quiz(page, root, node_for, tap=touch)
        page.screenshot(path=str(tmp_path / "quiz.png"))
        assert verdict.startswith("Right node."), verdict
        assert not errors, errors
