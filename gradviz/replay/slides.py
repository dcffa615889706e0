"""Lecture slides from a replay: a PDF page or a PowerPoint slide per frame, one fixed layout.

Every frame is the replay's one Graphviz layout restyled for its step (``step_svg``), so a
node never moves from page to page. The PDF prints the narration as a caption (LaTeX users
take a page with ``\\includegraphics[page=N]``); the PPTX puts it in the speaker notes.
Both are pip-only: svglib + reportlab draw the SVG as vectors into the PDF; resvg rasterises
it for PowerPoint (which cannot take SVG through python-pptx); python-pptx writes the deck.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from xml.sax.saxutils import escape as xml_escape

from typing_extensions import Unpack

from gradviz.errors import GradvizError
from gradviz.escape import visible_text
from gradviz.explain.steps import describe_step
from gradviz.model.recording import Recording
from gradviz.render import pdffonts, raster
from gradviz.render.options import RenderKeywords
from gradviz.replay.forwardframes import describe_forward
from gradviz.replay.frames import step_svg

__all__ = ["Slide", "slides", "slides_pdf", "slides_pptx"]

# one 16:9 page in points (a projector's shape; Beamer's 16:9 is the same ratio)
PAGE_WIDTH, PAGE_HEIGHT = 960.0, 540.0
MARGIN = 24.0
CAPTION_HEIGHT = 96.0  # the narration's band at the foot of a PDF page
# A slide's picture has twice the pixels of its box on the slide at 96 dpi (sharp on a
# 1080p projector and on a retina screen), whatever the graph's own size: a 30-layer MLP's
# graph drawn at its own size was 13 s and 1.7 MB a slide.
PICTURE_PIXELS_PER_POINT = 2 * 96 / 72
MAX_PNG_DPI = 2400.0  # resvg's limit; a tiny graph scaled up to its box stays below it


@dataclass(frozen=True)
class Slide:
    """One frame of the replay: its step number, its SVG and what the narration says."""

    step: int
    svg: str
    title: str
    narration: str


def slides(recording: Recording, **options: Unpack[RenderKeywords]) -> list[Slide]:
    """Every frame in the stepper's order: the forward ops (under ``watch()``), the seed,
    then the backward steps; all from one layout."""
    count = len(recording.forward_ops)
    frames: list[Slide] = []
    for index in range(1, count + 1):
        panel = describe_forward(recording, index)
        step = index - count - 1
        title = f"forward {index} / {count}: {panel['type']}"
        frames.append(
            Slide(step, step_svg(recording, step, **options), title, str(panel["narration"]))
        )
    total = len(recording.steps)
    for step in range(total + 1):
        panel = describe_step(recording, step)
        title = "seed" if step == 0 else f"step {step} / {total}: {panel['type']}"
        frames.append(
            Slide(step, step_svg(recording, step, **options), title, str(panel["narration"]))
        )
    return frames


def slides_pdf(recording: Recording, name: str, **options: Unpack[RenderKeywords]) -> bytes:
    """One page per frame: the graph scaled to the same box on every page, the frame's title
    and narration as a caption below; ``name`` goes into the document's title."""
    from reportlab.pdfgen import canvas

    # invariant: no date or random id inside, so the same replay gives the same bytes
    buffer = io.BytesIO()  # drawn in memory, then written whole (``gradviz.export``)
    pdf = canvas.Canvas(buffer, pagesize=(PAGE_WIDTH, PAGE_HEIGHT), invariant=True)
    pdf.setTitle(visible_text(f"gradviz replay: {name}"))
    box_width = PAGE_WIDTH - 2 * MARGIN
    box_height = PAGE_HEIGHT - 2 * MARGIN - CAPTION_HEIGHT
    for slide in slides(recording, **options):
        drawing = _drawing(slide.svg)
        scale = min(box_width / drawing.width, box_height / drawing.height)
        drawing.scale(scale, scale)
        left = MARGIN + (box_width - drawing.width * scale) / 2
        bottom = MARGIN + CAPTION_HEIGHT + (box_height - drawing.height * scale) / 2
        drawing.drawOn(pdf, left, bottom)
        text, used = caption(slide.title, slide.narration, box_width, CAPTION_HEIGHT)
        text.drawOn(pdf, MARGIN, MARGIN + CAPTION_HEIGHT - used)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def slides_pptx(recording: Recording, **options: Unpack[RenderKeywords]) -> bytes:
    """One 16:9 slide per frame: the title, the graph as a picture in the same box on every
    slide, the narration in the speaker notes."""
    from pptx import Presentation
    from pptx.util import Emu, Pt

    deck = Presentation()
    deck.slide_width, deck.slide_height = Emu(_emu(PAGE_WIDTH)), Emu(_emu(PAGE_HEIGHT))
    blank = deck.slide_layouts[6]
    title_height = 40.0
    box_width = PAGE_WIDTH - 2 * MARGIN
    box_height = PAGE_HEIGHT - 2 * MARGIN - title_height
    for slide in slides(recording, **options):
        page = deck.slides.add_slide(blank)
        heading = page.shapes.add_textbox(
            Emu(_emu(MARGIN)), Emu(_emu(MARGIN)), Emu(_emu(box_width)), Emu(_emu(title_height))
        )
        heading.text_frame.text = notes_text(slide.title)
        heading.text_frame.paragraphs[0].runs[0].font.size = Pt(24)
        png, width, height = _picture(slide.svg, box_width, box_height)
        scale = min(box_width / width, box_height / height)
        left = MARGIN + (box_width - width * scale) / 2
        top = MARGIN + title_height + (box_height - height * scale) / 2
        page.shapes.add_picture(
            io.BytesIO(png),
            Emu(_emu(left)),
            Emu(_emu(top)),
            Emu(_emu(width * scale)),
            Emu(_emu(height * scale)),
        )
        page.notes_slide.notes_text_frame.text = notes_text(f"{slide.title}\n{slide.narration}")
    fixed = datetime(2000, 1, 1)  # the same replay gives the same bytes
    deck.core_properties.created = deck.core_properties.modified = fixed
    deck.core_properties.last_printed = fixed
    buffer = io.BytesIO()
    deck.save(buffer)
    return _dated(buffer.getvalue())


def _dated(archive: bytes) -> bytes:
    """The zip again with one fixed date on every member (zipfile stamps the clock)."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(archive)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            member = zipfile.ZipInfo(info.filename, date_time=(2000, 1, 1, 0, 0, 0))
            member.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(member, source.read(info))
    return out.getvalue()


def _emu(points: float) -> int:
    """PowerPoint's unit: 12,700 EMU per point."""
    return round(points * 12700)


# Where the narration isolates a name (U+2068 ... U+2069) for the stepper's panel: PowerPoint
# and reportlab do not take isolates (U+FFFD), and the name's own overrides are already
# shown as U+FFFD, so the isolates are left out; marks (RLM, LRM) stay.
_ISOLATES = re.compile("[\u2066-\u2069]")
CAPTION_SIZES = (14.0, 12.0, 11.0, 10.0, 9.0)  # the narration shrinks to fit its band, then is cut


def notes_text(text: str) -> str:
    """Text for a slide's title or speaker notes: line breaks kept as line breaks (python-pptx
    makes each line a paragraph), everything else visible."""
    return "\n".join(visible_text(_ISOLATES.sub("", line)) for line in text.split("\n"))


def _markup(text: str) -> str:
    """Narration as text inside reportlab's paragraph markup: nothing in it is a tag, each
    character in a font that has it (``render.pdffonts``), line breaks as breaks."""
    return "<br/>".join(
        "".join(
            xml_escape(part) if font == pdffonts.BASE_FONT
            else f'<font face="{font}">{xml_escape(part)}</font>'
            for font, part in pdffonts.runs(pdffonts.pdf_text(line))
        )
        for line in text.split("\n")
    )  # fmt: skip


def caption(title: str, narration: str, width: float, height: float) -> tuple[Any, float]:
    """The page's caption as a reportlab paragraph that fits ``width`` x ``height`` (a long
    narration in a smaller size, and if even the smallest is too tall, cut to fit with an
    ellipsis) and the height it takes."""
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.platypus import Paragraph

    words = narration.split(" ")
    keep = len(words)
    while True:
        told = " ".join(words[:keep]) + ("" if keep == len(words) else " …")
        markup = f"<b>{_markup(title)}</b> {_markup(told)}"
        for size in CAPTION_SIZES:
            style = ParagraphStyle(
                "caption", fontName=pdffonts.BASE_FONT, fontSize=size, leading=size * 1.28
            )
            text = Paragraph(markup, style)
            _, used = text.wrap(width, height)
            if used <= height or (keep == 0 and size == CAPTION_SIZES[-1]):
                return text, min(used, height)
        keep = keep * 3 // 4 if keep > 4 else keep - 1


def _drawing(svg: str) -> Any:
    """The SVG as a reportlab drawing (vectors, the stepper's CSS applied)."""
    from svglib.svglib import svg2rlg

    drawing = svg2rlg(io.BytesIO(svg.encode("utf-8")))
    if drawing is None or not drawing.width or not drawing.height:
        raise GradvizError("the replay's SVG could not be drawn into the PDF (svglib read nothing)")
    return pdffonts.with_fallbacks(drawing)


def _picture(svg: str, box_width: float, box_height: float) -> tuple[bytes, float, float]:
    """The SVG as a PNG (``render.raster``: resvg, with its font fallbacks) drawn for the box
    it is scaled into on the slide (``PICTURE_PIXELS_PER_POINT`` of the box), and the SVG's
    size in points."""
    size = _SIZE.search(svg)
    if size is None:
        raise GradvizError("the replay's SVG has no size in points; cannot place it on a slide")
    width, height = float(size.group(1)), float(size.group(2))
    if width <= 0 or height <= 0:
        raise GradvizError("the replay's SVG has no area; cannot place it on a slide")
    scale = min(box_width / width, box_height / height)
    dpi = min(72 * PICTURE_PIXELS_PER_POINT * scale, MAX_PNG_DPI)
    png = raster.svg_to(svg.encode("utf-8"), "png", dpi=dpi)
    return png, width, height


# Graphviz writes the drawing's size in points on the root element
_SIZE = re.compile(r'<svg[^>]*?width="([0-9.]+)pt"[^>]*?height="([0-9.]+)pt"')
