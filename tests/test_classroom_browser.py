"""Issue #17 in Chromium: presentation mode fills a 1600x900 screen, clicker keys step without
a click first and keep working after First/Last, B blanks, Escape leaves."""

from __future__ import annotations

from pathlib import Path

import pytest

import gradviz
from gradviz.explain.steps import describe_step
from gradviz.teaching.lessons import lesson
from tests.support.browser import chromium, open_local

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
        assert "gv-present" in (root.get_attribute("class") or "")
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
        # B blanks the screen, the next step shows it again
        page.keyboard.press("b")
        assert "gv-blank" in (root.get_attribute("class") or "")
        page.keyboard.press("PageDown")
        assert "gv-blank" not in (root.get_attribute("class") or "")
        assert root.get_attribute("data-step") == "4"
        page.keyboard.press("Escape")
        assert "gv-present" not in (root.get_attribute("class") or "")

        # First and Last disable themselves (dropping focus); the keys keep working
        root.query_selector(".gv-last").click()
        assert root.get_attribute("data-step") == str(last)
        page.keyboard.press("PageUp")
        assert root.get_attribute("data-step") == str(last - 1)
        root.query_selector(".gv-first").click()
        page.keyboard.press("PageDown")
        assert root.get_attribute("data-step") == "1"
        # the Present button and the text-size control
        root.query_selector(".gv-present-btn").click()
        assert "gv-present" in (root.get_attribute("class") or "")
        page.keyboard.press("+")
        assert page.evaluate("r => r.style.getPropertyValue('--gv-text-scale')", root) == "1.25"
        page.screenshot(path=str(tmp_path / "present.png"))
        page.keyboard.press("Escape")
        assert not errors, errors
