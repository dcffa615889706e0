"""``Recording.save`` takes what each format can use, and says so when it cannot."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.errors import InvalidArgument


@pytest.fixture(scope="module")
def recording() -> gradviz.Recording:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    return gradviz.record((x * x).sum())


@pytest.mark.parametrize(
    ("name", "keywords", "says"),
    [
        ("a.svg", {"title": "t"}, "title= is for .html"),
        ("a.svg", {"views": ["backward"]}, "views= is for .html"),
        ("a.pdf", {"compress": True}, "compress= is for .html"),
        ("a.html", {"health": True}, "health= is for .svg"),
        ("a.json", {"theme": "dark"}, "does not take theme"),
    ],
)
def test_a_keyword_the_format_cannot_use_is_named(
    recording: gradviz.Recording, tmp_path: Path, name: str, keywords: dict[str, object], says: str
) -> None:
    with pytest.raises(InvalidArgument, match=says):
        recording.save(tmp_path / name, **keywords)  # type: ignore[arg-type]
    assert not (tmp_path / name).exists()


def test_svg_takes_the_step_and_the_health_overlay(
    recording: gradviz.Recording, tmp_path: Path
) -> None:
    first = recording.save(tmp_path / "first.svg", step=1)
    assert first.read_text(encoding="utf-8") == recording.svg(1)
    healthy = recording.save(tmp_path / "health.svg", health=True)
    assert healthy.read_text(encoding="utf-8") == recording.svg(health=True)
    assert recording.svg(health=True) != recording.svg()


def test_an_unknown_suffix_or_render_option_is_an_invalid_argument(
    recording: gradviz.Recording, tmp_path: Path
) -> None:
    with pytest.raises(InvalidArgument, match=r"use \.svg, \.html"):
        recording.save(tmp_path / "a.txt")
    with pytest.raises(TypeError, match="unknown render option"):  # still a TypeError
        recording.save(tmp_path / "a.svg", colour="red")  # type: ignore[call-arg]
    with pytest.raises(InvalidArgument, match="view must be"):
        recording.svg(view="sideways")  # type: ignore[arg-type]
