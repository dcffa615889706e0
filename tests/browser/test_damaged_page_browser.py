"""A replay page whose file is damaged (one character of its packed data changed, or the
file cut short) says so on the page, visibly, and what to do: save it again. A whole page
shows no such notice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz.stepper.page import replay_html

pytestmark = [pytest.mark.browser, pytest.mark.needs_dot]

DATA_START = 'data-encoding="gzip+7bit">'
MODULE_START = '<script type="module">'


@pytest.fixture(scope="module")
def packed_page() -> str:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)
    recording = gradviz.record((x * w).tanh().sum(), names={"x": x, "w": w})
    page = replay_html(recording, compress=True)
    assert DATA_START in page and MODULE_START in page
    return page


def _data_span(page: str) -> tuple[int, int]:
    start = page.index(DATA_START) + len(DATA_START)
    return start, page.index("</script>", start)


def _changed(page: str) -> str:
    """One character in the middle of the packed data replaced by another 7-bit one."""
    start, end = _data_span(page)
    middle = (start + end) // 2
    other = "A" if page[middle] != "A" else "B"
    return page[:middle] + other + page[middle + 1 :]


def _cut_in_data(page: str) -> str:
    start, end = _data_span(page)
    return page[: (start + end) // 2]


def _cut_in_module(page: str) -> str:
    start = page.index(MODULE_START) + len(MODULE_START)
    return page[: start + (page.index("</script>", start) - start) // 2]


def _open(browser: Any, path: Path, text: str) -> tuple[Any, list[str]]:
    from tests.support.browser import open_local

    path.write_text(text, encoding="utf-8")
    page, _requests, errors = open_local(browser, path)
    return page, errors


@pytest.mark.parametrize(
    "damage",
    [_changed, _cut_in_data, _cut_in_module],
    ids=["one-character-changed", "cut-in-its-data", "cut-in-its-script"],
)
def test_a_damaged_page_says_so_and_what_to_do(
    browser: Any, packed_page: str, tmp_path: Path, damage: Any
) -> None:
    page, _errors = _open(browser, tmp_path / "damaged.html", damage(packed_page))
    notice = page.wait_for_selector(".gv-damaged", state="visible")
    text = notice.inner_text()
    assert "damaged" in text and "Save it again" in text, text
    box = notice.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 10
    assert page.query_selector(".gv-stepper") is None
    page.close()


def test_a_whole_page_shows_no_notice(browser: Any, packed_page: str, tmp_path: Path) -> None:
    page, errors = _open(browser, tmp_path / "whole.html", packed_page)
    page.wait_for_selector(".gv-stepper")
    page.wait_for_function("() => document.readyState === 'complete'")
    assert page.query_selector(".gv-damaged") is None
    assert errors == []
    page.close()
