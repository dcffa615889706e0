"""`make demo`'s gallery in a real Chromium, opened from file:// as a lecturer would.

Every preview image loads, nothing is fetched from anywhere but the disk, and each lesson's
replay page steps through the nodes in the order the recorded backward pass ran them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gradviz import watch
from gradviz.teaching.gallery import render_lessons
from gradviz.teaching.lessons import LESSONS, Lesson
from tests.support.browser import LOCAL_SCHEMES, open_local
from tests.support.person import click

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot]

# Every <img> of the page: its src, whether it finished loading, and its natural size.
READ_IMAGES = """() => [...document.images].map((img) => ({
  src: img.getAttribute("src"), complete: img.complete, width: img.naturalWidth,
}))"""


@pytest.fixture(scope="module")
def gallery(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "out"
    render_lessons(out)
    return out


def test_gallery_previews_every_svg_offline(gallery: Path, browser: Any) -> None:
    index = gallery / "index.html"
    page, requests, errors = open_local(browser, index)
    try:
        page.wait_for_function("() => [...document.images].every((img) => img.complete)")
        images = page.evaluate(READ_IMAGES)
        links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
    finally:
        page.close()
    broken = [img["src"] for img in images if not (img["complete"] and img["width"] > 0)]
    assert broken == []
    previewed = {img["src"] for img in images}
    svgs = {p.relative_to(gallery).as_posix() for p in gallery.rglob("*.svg")}
    assert previewed == svgs  # every SVG the demo wrote is on the page, and nothing else
    for item in LESSONS:
        assert f"{item.slug}/replay.html" in links
    assert not errors
    assert requests and all(url.startswith(LOCAL_SCHEMES) for url in requests), requests


def _recorded(item: Lesson) -> tuple[str, list[str], int]:
    """The lesson's backward pass recorded afresh, as the demo does: the graph's prefix,
    the order the engine ran its nodes in, and how many forward ops watch() saw."""
    with watch() as w:
        built = item.build()
    recording = built.record(w)
    return recording.graph.prefix, recording.order, len(recording.forward_ops)


def _next(page: Any, root: Any) -> int:
    """Press Next and wait until the stepper has moved one step; the step it is at."""
    before = int(root.get_attribute("data-step"))
    click(page, root.query_selector(".gv-next"))
    page.wait_for_function(
        "([root, step]) => root.dataset.step === step", arg=[root, str(before + 1)]
    )
    return before + 1


@pytest.mark.parametrize("item", LESSONS, ids=lambda item: item.slug)
def test_each_replay_steps_in_the_recorded_order(item: Lesson, gallery: Path, browser: Any) -> None:
    prefix, order, forward_ops = _recorded(item)
    page, requests, errors = open_local(browser, gallery / item.slug / "replay.html")
    try:
        root = page.wait_for_selector(".gv-stepper")
        first = int(root.get_attribute("data-step"))
        # The replay opens at the seed (step 0), or, where it also replays the forward
        # pass that watch() saw, at its first forward op that draws something.
        assert first == 0 or -forward_ops <= first < 0, first
        while int(root.get_attribute("data-step")) < 0:
            _next(page, root)
        active: list[list[str | None]] = []
        for _ in order:
            _next(page, root)
            ids = [a.get_attribute("id") for a in root.query_selector_all("svg .gv_active")]
            active.append(ids)
        assert root.query_selector(".gv-next").is_disabled()
        counter = root.query_selector(".gv-counter").inner_text()
    finally:
        page.close()
    assert active == [[f"{prefix}_{node_id}"] for node_id in order]
    assert re.search(rf"\bstep {len(order)} / {len(order)}\b", counter), counter
    assert not errors
    assert all(url.startswith(LOCAL_SCHEMES) for url in requests), requests
