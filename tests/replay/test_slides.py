"""Slides: rec.save("x.pdf") one page per frame with the narration as a caption,
rec.save("x.pptx") one slide per frame with the narration in the speaker notes."""

from __future__ import annotations

from pathlib import Path

import pytest
from pptx import Presentation
from pypdf import PdfReader

import gradviz
from gradviz.explain.steps import describe_step
from gradviz.teaching.lessons import lesson

pytestmark = pytest.mark.needs_dot


def _ten_ops() -> gradviz.Recording:
    with gradviz.watch() as watching:
        built = lesson("05-ten-ops").build()
    return built.record(watching)


def _frames(recording: gradviz.Recording) -> int:
    return len(recording.forward_ops) + len(recording.steps) + 1


def test_pdf_has_one_page_per_frame_with_the_narration(tmp_path: Path) -> None:
    recording = _ten_ops()
    assert recording.forward_ops  # watched: forward frames come first
    path = recording.save(tmp_path / "replay.pdf")
    reader = PdfReader(path)
    assert len(reader.pages) == _frames(recording)
    sizes = {(float(p.mediabox.width), float(p.mediabox.height)) for p in reader.pages}
    assert len(sizes) == 1  # one fixed layout: every page the same size
    first_backward = len(recording.forward_ops) + 1  # the page after the seed's
    text = " ".join(reader.pages[first_backward].extract_text().split())
    narration = " ".join(str(describe_step(recording, 1)["narration"]).split())
    assert narration[:40] in text


def test_pptx_has_one_slide_per_frame_with_notes(tmp_path: Path) -> None:
    recording = _ten_ops()
    path = recording.save(tmp_path / "replay.pptx")
    deck = Presentation(str(path))
    assert len(deck.slides) == _frames(recording)
    last = list(deck.slides)[-1]
    notes = last.notes_slide.notes_text_frame.text
    expected = str(describe_step(recording, len(recording.steps))["narration"])
    assert expected.split()[0] in notes and expected.strip()[-20:] in notes
    pictures = [s for s in last.shapes if s.shape_type == 13]  # MSO_SHAPE_TYPE.PICTURE
    assert len(pictures) == 1


def test_hostile_narration_cannot_break_the_pdf(tmp_path: Path) -> None:
    import torch

    x = torch.tensor(2.0, requires_grad=True)
    y = (x * x).sum()
    recording = gradviz.record(y, names={"<b>&x</i>": x})
    path = recording.save(tmp_path / "odd.pdf")
    assert len(PdfReader(path).pages) == len(recording.steps) + 1


def test_cli_writes_pdf_and_pptx_slides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gradviz.cli import main

    path = tmp_path / "model.py"
    path.write_text(
        "import torch\n"
        "a = torch.tensor(2.0, requires_grad=True)\n"
        "b = torch.tensor(3.0, requires_grad=True)\n"
        "loss = (a * b + a) * a\n"
        "loss.backward()\n"
    )
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    assert main(["render", str(path), "--root", "loss", "-o", str(out), "--pdf", "--pptx"]) == 0
    pages = len(PdfReader(out / "model-slides.pdf").pages)
    slides = len(Presentation(str(out / "model-slides.pptx")).slides)
    assert pages == slides
    assert pages >= 6  # forward ops (watched by default), the seed and the backward steps
