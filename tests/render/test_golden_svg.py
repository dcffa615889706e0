"""Golden SVG of the lesson graphs, beside the golden DOT: the embedded Graphviz draws the same
bytes on every machine, so a change in layout or styling shows up as a diff here.

Regenerate only on purpose: ``pytest tests/render/test_golden_svg.py --update-golden``, then review.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import gradviz
from gradviz.render.backend import run_dot
from gradviz.teaching.lessons import LESSONS, Lesson
from tests.conftest import check_golden


@pytest.fixture(autouse=True)
def _embedded() -> Iterator[None]:
    gradviz.use_graphviz("embedded")  # the system dot's output differs between versions
    yield
    gradviz.use_graphviz(None)


@pytest.mark.parametrize("view", ["backward", "combined"])
@pytest.mark.parametrize("item", LESSONS, ids=lambda item: item.slug)
def test_golden_svg(item: Lesson, view: str, update_golden: bool) -> None:
    built = item.build()
    dot = gradviz.trace(*built.roots, names=built.names).to_dot(view=view)
    svg = run_dot(dot, "svg").decode("utf-8")
    check_golden(f"{item.slug}.{view}.svg", svg, update_golden)
