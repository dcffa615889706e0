"""A slide's picture is drawn for the box it fills on the slide (twice its pixels at
96 dpi), not at the graph's own size: a big graph costs no more pixels than a small one."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.replay import slides

pytestmark = pytest.mark.needs_dot

PIXELS_PER_POINT = 2 * 96 / 72


def _chain(length: int) -> gradviz.Recording:
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    y = x
    for index in range(length):
        y = y.sin() if index % 2 else y * 1.5
    return gradviz.record(y.sum(), names={"x": x})


def _pixels(png: bytes) -> tuple[int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return image.size


def _box() -> tuple[float, float]:
    """The picture's box on a slide, in points (the slide less margins and title)."""
    width = slides.PAGE_WIDTH - 2 * slides.MARGIN
    return width, slides.PAGE_HEIGHT - 2 * slides.MARGIN - 40.0


@pytest.mark.parametrize("length", [2, 60])
def test_the_picture_has_the_pixels_of_its_box_whatever_the_graph(length: int) -> None:
    recording = _chain(length)
    svg = recording.svg()
    box_width, box_height = _box()
    png, width, height = slides._picture(svg, box_width, box_height)
    scale = min(box_width / width, box_height / height)
    placed = (width * scale * PIXELS_PER_POINT, height * scale * PIXELS_PER_POINT)
    got = _pixels(png)
    assert got[0] <= math.ceil(box_width * PIXELS_PER_POINT) + 1
    assert got[1] <= math.ceil(box_height * PIXELS_PER_POINT) + 1
    # the box's long side is filled: the picture is as sharp as the box needs, no more
    assert max(abs(got[0] - placed[0]), abs(got[1] - placed[1])) <= 2, (got, placed)


def test_every_slide_picture_in_a_deck_fits_its_box(tmp_path: Path) -> None:
    from pptx import Presentation

    path = _chain(3).save(tmp_path / "deck.pptx")
    deck = Presentation(str(path))
    pictures = [s for slide in deck.slides for s in slide.shapes if s.shape_type == 13]
    assert len(pictures) == len(deck.slides)
    for picture in pictures:
        pixels = _pixels(picture.image.blob)
        # the shape's size in points (12,700 EMU each) times the pixels per point
        wanted = (
            picture.width / 12700 * PIXELS_PER_POINT,
            picture.height / 12700 * PIXELS_PER_POINT,
        )
        assert abs(pixels[0] - wanted[0]) <= 2 and abs(pixels[1] - wanted[1]) <= 2
