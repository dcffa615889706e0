"""PDF text (a graph's .pdf and the slides' .pdf) draws every character in a font that has
it: subscripts, Cyrillic and Hebrew names come out as text, not boxes; a right-to-left
name's direction mark does not become U+FFFD; speaker notes keep their line breaks; a long
narration shrinks or is cut to stay in its band below the graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz.render import pdffonts
from gradviz.replay import slides

pytestmark = pytest.mark.needs_dot

NAMES = ["w₁", "вес", "משקל\u200f", "x"]  # a subscript, Cyrillic, Hebrew with an RLM
CJK = "權重"


def _recording(names: list[str]) -> gradviz.Recording:
    leaves = {name: torch.tensor([1.0, 2.0], requires_grad=True) for name in names}
    total = sum(leaf * (index + 1) for index, leaf in enumerate(leaves.values()))
    assert isinstance(total, torch.Tensor)
    return gradviz.record(total.sum(), names=leaves)


def _drawn(path: Path, pages: list[int] | None = None) -> list[tuple[str, str]]:
    """(font, text) of every piece of text the PDF draws, read back through pypdf."""
    import pypdf

    reader = pypdf.PdfReader(str(path))
    seen: list[tuple[str, str]] = []

    def visit(text: str, _cm: Any, _tm: Any, font: Any, _size: Any) -> None:
        if text.strip():
            seen.append((str(font.get("/BaseFont")) if font else "", text.strip()))

    for index in pages if pages is not None else range(len(reader.pages)):
        reader.pages[index].extract_text(visitor_text=visit)
    return seen


def _covers(font: str, text: str) -> bool:
    """Whether ``font`` (a BaseFont as the PDF names it) has every character of ``text``."""
    name = font.lstrip("/").split("+", 1)[-1]
    if name.startswith("Helvetica"):
        return all(pdffonts._in_base(char) for char in text)
    charsets = {_postscript_name(n): chars for n, chars in pdffonts.fallback_fonts()}
    charsets.update({n: chars for n, chars in pdffonts.fallback_fonts()})
    return name in charsets and all(ord(char) in charsets[name] for char in text)


def _postscript_name(registered: str) -> str:
    """The name a registered TrueType font has in the PDF (its own, not its file's)."""
    from reportlab.pdfbase import pdfmetrics

    face_name = pdfmetrics.getFont(registered).face.name
    return face_name.decode() if isinstance(face_name, bytes) else str(face_name)


def _check(drawn: list[tuple[str, str]], wanted: list[str]) -> None:
    assert pdffonts.fallback_fonts(), "no fallback TrueType font found (DejaVu Sans, Noto ...)"
    text = "".join(part for _, part in drawn)
    for font, part in drawn:
        assert _covers(font, part), (font, part)  # no .notdef box, no ZapfDingbats stand-in
    assert "■" not in text and "\ufffd" not in text
    for name in wanted:
        assert all(char in text for char in name.replace("\u200f", "")), name


def test_a_graph_pdf_draws_each_name_in_a_font_that_has_it(tmp_path: Path) -> None:
    path = _recording(NAMES).graph.save(tmp_path / "graph.pdf")
    _check(_drawn(path), NAMES)


def test_slides_pdf_draws_names_and_narration_in_fonts_that_have_them(tmp_path: Path) -> None:
    path = _recording(NAMES).save(tmp_path / "slides.pdf")
    _check(_drawn(path, pages=[0, 1, 4]), NAMES)


def test_cjk_names_are_drawn_when_a_cjk_font_is_found(tmp_path: Path) -> None:
    if not all(_covers(pdffonts._font_for(char, "Helvetica"), char) for char in CJK):
        pytest.skip("no CJK TrueType font on this machine (fonts-droid-fallback, unifont)")
    path = _recording([CJK]).graph.save(tmp_path / "graph.pdf")
    _check(_drawn(path), [CJK])


def test_speaker_notes_keep_line_breaks_and_right_to_left_names(tmp_path: Path) -> None:
    from pptx import Presentation

    path = _recording(NAMES).save(tmp_path / "slides.pptx")
    deck = Presentation(str(path))
    notes = [s.notes_slide.notes_text_frame.text for s in deck.slides]
    assert all("\u240a" not in n and "\ufffd" not in n for n in notes)
    assert all(n.count("\n") >= 1 for n in notes)  # the title, then the narration
    assert any("משקל\u200f" in n for n in notes)


def test_a_long_narration_stays_in_its_band() -> None:
    width, height = 900.0, slides.CAPTION_HEIGHT
    narration = "The gradient of the loss flows back through every layer. " * 60
    text, used = slides.caption("step 3 / 9: AddmmBackward0", narration, width, height)
    assert used <= height
    _, wrapped = text.wrap(width, height)
    assert wrapped <= height
    assert "…" in text.text  # cut, and says so
    short, _ = slides.caption("seed", "A short one.", width, height)
    assert "A short one." in short.text and short.style.fontSize == slides.CAPTION_SIZES[0]


def test_right_to_left_runs_are_drawn_in_reading_order() -> None:
    assert pdffonts.pdf_text("name: משקל כבד\u200f (x)") == "name: דבכ לקשמ (x)"
    assert pdffonts.pdf_text("w₁ \u2068a\u2069") == "w₁ a"  # isolates left out
