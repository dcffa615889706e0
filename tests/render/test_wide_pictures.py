"""A drawing shown in a notebook never runs past the output area: ``svg()`` gives SVG text
that Jupyter, VS Code, Colab and marimo show at its own size in a box that scrolls sideways
when the drawing is wider (its legend, at the right end, reached by scrolling), and that
``SVG(...)``, files and string code still take as the text it is."""

from __future__ import annotations

import base64
import re

import torch
from IPython.display import SVG

import gradviz
from gradviz.render.picture import Picture


def _deep_sigmoids() -> gradviz.Recording:
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for _ in range(12):
        layers += [torch.nn.Linear(16, 16), torch.nn.Sigmoid()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(16, 1))
    return gradviz.record(model(torch.randn(32, 16)).pow(2).mean(), params=model)


def _shown(picture: object) -> tuple[str, str]:
    """The notebook's HTML for a picture, and the SVG text inside it."""
    html = picture._repr_html_()  # type: ignore[attr-defined]
    data = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', html)
    assert data, html[:200]
    return html, base64.b64decode(data.group(1)).decode("utf-8")


def test_every_drawing_shows_in_a_box_that_scrolls_when_wider() -> None:
    recording = _deep_sigmoids()
    with gradviz.watch() as w:
        x = torch.randn(3, requires_grad=True)
        h = x.detach() * 2
        loss = (h * x).sum()
    drawings = {
        "health": recording.svg(health=True, direction="left-right"),
        "step": recording.svg(step=3),
        "graph": recording.graph.svg(),
        "why_no_grad": w.why_no_grad(x, loss).svg(),
        "diff": recording.diff(recording).svg(),
    }
    for name, svg in drawings.items():
        assert isinstance(svg, str) and svg.lstrip().startswith("<?xml"), name
        html, inside = _shown(svg)
        assert inside == str(svg), name  # the very drawing, whole (its legend included)
        box = re.match(r'<div class="gv-picture" style="([^"]*)"', html)
        assert box and "max-width:100%" in box.group(1) and "overflow-x:auto" in box.group(1)
        assert "max-width:none" in html  # the notebook's own "fit the image" rule is undone
        assert SVG(svg).data.startswith("<svg")  # IPython's SVG still takes it


def test_a_picture_is_its_text() -> None:
    picture = Picture("<svg></svg>")
    assert picture == "<svg></svg>" and picture + "x" == "<svg></svg>x"
    assert type(picture + "x") is str


def test_plain_text_front_ends_show_what_it_is_not_its_text() -> None:
    from IPython.core.formatters import DisplayFormatter

    data, _ = DisplayFormatter().format(Picture("<svg></svg>"))
    assert data["text/plain"] == "<gradviz drawing: 11 characters of SVG>"
    assert data["text/html"].startswith('<div class="gv-picture"')
