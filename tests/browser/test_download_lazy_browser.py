"""Downloading a step of a big, lazily parsed view writes its unparsed nodes and edges
from the stored SVG text instead of parsing every element first (~0.4 s at 3,000 nodes):
Chromium parses nothing more than what could act (sanitized as the rest is), and the file
holds every element with the classes of the step shown, as the parsed view gives them."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from gradviz.replay.frames import classes_at
from gradviz.stepper.page import unpack_state
from tests.browser import test_stepper_lazy_browser as lazy_tests
from tests.browser.test_stepper_lazy_browser import PARSES, _opened, _replay
from tests.support.person import click, move_slider_to

lazy_page = lazy_tests.lazy_page  # the same page: a 1,200-node replay with a hostile node

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot, pytest.mark.slow]


def _download(page: Any, root: Any) -> str:
    with page.expect_download() as download:
        click(page, root.query_selector(".gv-download"))
    return Path(download.value.path()).read_text(encoding="utf-8")


def _classes(svg: str) -> dict[str, str]:
    tree = ET.fromstring(svg)
    return {e.get("id", ""): e.get("class", "") for e in tree.iter() if e.get("id")}


def test_a_download_writes_the_unparsed_view_from_its_text(
    browser: Any, lazy_page: tuple[Path, str]
) -> None:
    path, hostile = lazy_page
    schedule = unpack_state(path.read_text(encoding="utf-8"))["data"]["schedule"]
    page, _, errors, root = _opened(browser, path)
    opened = page.evaluate("(r) => r.gvState()", root)
    move_slider_to(page, root, 40)
    page.evaluate(PARSES)
    parsed_before = page.evaluate("(r) => r.gvState().parsed", root)
    svg = _download(page, root)
    # one parse at most: the node whose text holds a handler, a script and a link
    assert page.evaluate("() => window.gvParses") <= 1
    assert page.evaluate("(r) => r.gvState().parsed", root) <= parsed_before + 1
    classes = _classes(svg)
    assert len(classes) >= opened["elements"] - 1  # every node and edge is in the file
    want = classes_at(schedule, 40)
    wrong = {k: v for k, v in classes.items() if _replay(v) != _replay(want.get(k, ""))}
    assert wrong == {}
    # what could act was sanitized, as the parsed view is
    assert hostile in classes
    assert "<script" not in svg and "javascript:" not in svg
    assert not re.search(r"\son\w*\s*=", svg.split("<style", 1)[0] + svg.split("</style>", 1)[1])
    # the same file as the parsed view gives, once every element is parsed (Fit)
    click(page, root.query_selector(".gv-fit"))
    parsed = _classes(_download(page, root))
    assert {k: _replay(v) for k, v in parsed.items()} == {k: _replay(v) for k, v in classes.items()}
    assert {k: set(v.split()) for k, v in parsed.items()} == {
        k: set(v.split()) for k, v in classes.items()
    }
    assert errors == []
    page.close()
