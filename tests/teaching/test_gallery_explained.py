"""``make demo``'s entries for the everyday questions: why ``.grad`` is None (the cut
drawn), memory, gradient health, a diff of two runs and the optimizer step; each written,
previewed in the gallery, and saying what PyTorch itself does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from gradviz.render.theme import THEMES
from gradviz.stepper.page import unpack_state
from gradviz.teaching.explained import ENTRIES, render_explained
from gradviz.teaching.gallery import render_lessons

pytestmark = pytest.mark.needs_dot


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("explained")
    render_explained(folder)
    return folder / "explained"


def test_every_entry_writes_its_files(out: Path) -> None:
    names = {p.name for p in out.iterdir()}
    expected = {
        "why-no-grad.svg", "why-path.svg", "memory-peak.svg", "memory.html", "health.svg",
        "diff.svg", "diff.html", "optimizer-step.svg", "optimizer-step.html",
    }  # fmt: skip
    assert expected <= names
    assert {f"{slug}.txt" for slug in ("why-no-grad", "memory", "health", "diff")} <= names
    assert len(ENTRIES) == 5


def test_why_no_grad_draws_the_cut(out: Path) -> None:
    svg = (out / "why-no-grad.svg").read_text()
    assert "cuts the graph" in svg  # the detach op, labelled as the cut
    assert THEMES["default"].step.active_border.lower() in svg.lower()  # highlighted
    text = (out / "why-no-grad.txt").read_text()
    assert "x.detach() * 2" in text and "retain_grad()" in text
    # PyTorch agrees: after the same computation x.grad stays None
    x = torch.randn(3, requires_grad=True)
    (x.detach() * 2 * torch.randn(3, requires_grad=True)).sum().backward()
    assert x.grad is None


def test_health_edges_get_thinner_toward_the_first_layer(out: Path) -> None:
    widths = {
        float(w) for w in re.findall(r'stroke-width="([0-9.]+)"', (out / "health.svg").read_text())
    }
    assert len(widths) > 5  # widths follow log10 of the gradient's norm
    norms = [
        float(line.rsplit("= ", 1)[1])
        for line in (out / "health.txt").read_text().splitlines()
        if line.startswith("layer")
    ]
    assert norms == sorted(norms, reverse=True)  # listed from the last layer to the first
    assert norms[-1] < 1e-4 * norms[0]


def test_memory_and_diff_and_step_texts(out: Path) -> None:
    memory = (out / "memory.txt").read_text()
    assert "Trying to backward through the graph a second time" in memory
    diff = (out / "diff.txt").read_text()
    assert "only in A: TanhBackward0" in diff and "only in B: MulBackward0" in diff
    step = (out / "optimizer-step.txt").read_text()
    assert step.startswith("SGD step over 4 parameters.") and "momentum_buffer" in step
    shown = unpack_state((out / "optimizer-step.html").read_text())["data"]["optimizer"]
    assert shown["optimizer"] == "SGD" and len(shown["params"]) == 4  # the step's panel
    for page in ("memory.html", "diff.html", "optimizer-step.html"):
        assert not re.search(r'(?:src|href)="(?:https?:)?//', (out / page).read_text()), page


def test_the_gallery_previews_and_links_them(tmp_path: Path) -> None:
    written = render_lessons(tmp_path)
    index = (tmp_path / "index.html").read_text()
    assert 'id="explained"' in index
    for path in written:
        if path.parent.name == "explained" and path.suffix == ".svg":
            assert f'<img src="explained/{path.name}"' in index
        elif path.parent.name == "explained":
            assert f'href="explained/{path.name}"' in index
