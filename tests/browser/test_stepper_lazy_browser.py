"""Big views are parsed lazily: above 1,500 nodes and edges the stepper parses a view's
shell at once and each node or edge the first time the camera comes near it. Checked in
Chromium: start-up parses only a small part; elements parsed later carry the classes of the
step shown (the Python reference's); and what is parsed late is sanitized as the rest is.

No timing is asserted here: ``tests/bench/replay_bench.py`` measures start-up.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import pytest

import gradviz
from gradviz import GradvizWarning
from gradviz.replay.frames import classes_at
from gradviz.stepper.page import _page, stepper_payload, unpack_state
from tests.support.browser import open_local
from tests.support.person import click, move_slider_to, type_into
from tests.support.workloads import synthetic

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot, pytest.mark.slow]

REPLAY = {
    "gv_done",
    "gv_active",
    "gv_pending",
    "gv_notrun",
    "gv_hidegrad",
    "gv_flowing",
    "gv_future",
    "gv_born",
    "gv_partial",
    "gv_nonfinite",
}

# Every element with an id in the stepper's SVG and its classes.
DOM_CLASSES = """(r) => Object.fromEntries([...r.querySelectorAll('.gv-canvas svg [id]')]
  .map((e) => [e.id, e.getAttribute('class') || '']))"""

# What a hostile SVG could run: an inline handler, a script, a javascript: link.
HOSTILE = (
    ' onclick="window.gvPwned = 1"><script>window.gvPwned = 2</script>'
    '<a href="javascript:window.gvPwned = 3"><text x="0" y="0">x</text></a'
)


def _replay(classes: str) -> str:
    return " ".join(sorted(c for c in classes.split() if c in REPLAY))


def _opened(browser: Any, path: Path) -> tuple[Any, list[str], list[str], Any]:
    """The page in a 1600x900 window once the stepper is ready: page, requests, errors, root."""
    page, requests, errors = open_local(browser, path)
    page.set_viewport_size({"width": 1600, "height": 900})
    page.wait_for_selector('.gv-stepper[data-ready="1"]', timeout=300_000)
    return page, requests, errors, page.query_selector(".gv-stepper")


@pytest.fixture(scope="module")
def lazy_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A 1,200-node replay (about 2,900 nodes and edges in its view), its last node given a
    handler, a script and a javascript: link."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GradvizWarning)  # biglayout's notice
        recording = gradviz.record(synthetic(1200)())  # above LAZY_NODES: the page ships lazy.js
        payload = stepper_payload(recording, views=["backward"])
    svg = payload["svgs"]["backward"]
    last = list(re.finditer(r'<g id="([^"]+_n\d+)" class="node[^"]*"', svg))[-1]
    end = last.end()
    payload["svgs"]["backward"] = svg[:end] + HOSTILE + svg[end:]
    path = tmp_path_factory.mktemp("lazy") / "replay.html"
    path.write_text(_page(recording, payload, None, None, ""), encoding="utf-8")
    return path, last.group(1)


def test_a_big_view_parses_only_what_the_camera_needs_and_later_parts_get_the_steps_classes(
    browser: Any, lazy_page: tuple[Path, str]
) -> None:
    path, _ = lazy_page
    schedule = unpack_state(path.read_text(encoding="utf-8"))["data"]["schedule"]
    page, requests, errors, root = _opened(browser, path)
    opened = page.evaluate("(r) => r.gvState()", root)
    assert opened["elements"] > 2000
    assert 0 < opened["parsed"] < opened["elements"] / 4
    for step in (600, 0, 5, 40):  # parts parsed later get the step shown then
        move_slider_to(page, root, step)
        click(page, root.query_selector(".gv-fit"))  # all of it in
        dom = page.evaluate(DOM_CLASSES, root)
        click(page, root.query_selector(".gv-follow"))
        want = classes_at(schedule, step)
        assert len(dom) >= opened["elements"] - 1
        wrong = {k: v for k, v in dom.items() if _replay(v) != _replay(want.get(k, ""))}
        assert wrong == {}, step
    assert page.evaluate("(r) => r.gvState().parsed", root) > opened["parsed"]
    assert all(url.startswith(("file:", "data:", "blob:")) for url in requests)
    assert errors == []
    page.close()


def test_a_node_parsed_late_is_sanitized(browser: Any, lazy_page: tuple[Path, str]) -> None:
    path, hostile = lazy_page
    page, _, errors, root = _opened(browser, path)
    found = f"(r) => r.querySelector('.gv-canvas svg [id=\"{hostile}\"]')"
    assert page.evaluate(f"(r) => !({found})(r)", root)  # far away: not parsed at start
    click(page, root.query_selector(".gv-fit"))
    node = page.evaluate_handle(found, root).as_element()
    assert page.evaluate("(n) => n.hasAttribute('onclick')", node) is False
    assert page.evaluate("(n) => n.querySelectorAll('script').length", node) == 0
    assert page.evaluate("(n) => n.querySelector('a').getAttribute('href')", node) is None
    click(page, node)  # a click on the node, then on its link: neither runs anything
    click(page, node.query_selector("a"))
    assert page.evaluate("() => window.gvPwned === undefined")
    assert errors == []
    page.close()


PARSES = """() => { const parse = DOMParser.prototype.parseFromString; window.gvParses = 0;
  DOMParser.prototype.parseFromString = function (...args) { window.gvParses++;
  return parse.apply(this, args); }; }"""


def test_a_search_parses_its_matches_together(browser: Any, lazy_page: tuple[Path, str]) -> None:
    path, _ = lazy_page
    page, _, errors, root = _opened(browser, path)
    page.evaluate(PARSES)
    type_into(page, root.query_selector(".gv-search-input"), "backward")  # nearly every node
    # the matches in one DOMParser call, then what the camera shows at the first of them
    assert page.evaluate("() => window.gvParses") <= 2
    click(page, root.query_selector(".gv-fit"))  # all of it in the DOM
    marked = page.evaluate("(r) => r.querySelectorAll('.gv-canvas svg .gv-match').length", root)
    assert marked == 400
    assert errors == []
    page.close()
