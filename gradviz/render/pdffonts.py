"""Text in PDFs (graphs and slides) in fonts that have its glyphs, chosen per character.

reportlab's Helvetica (the face Graphviz lays labels out with) holds only WinAnsi
(Latin-1 and a few more): a subscript (``w₁``), Cyrillic, Hebrew or CJK came out as boxes.
Each character not in WinAnsi is drawn in the first TrueType font found that has it
(``FONT_FILES``: DejaVu Sans, Noto, CJK fallbacks; in the system's font folders or in an
installed package such as matplotlib), so a label keeps Helvetica where Helvetica can draw
it. reportlab draws no right-to-left text: the invisible direction marks and isolates are
left out of PDF text (they have no glyph), overrides are shown as U+FFFD like elsewhere.
Pure reportlab; nothing here runs a program.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gradviz.escape import visible_text

__all__ = ["BASE_FONT", "FONT_FILES", "fallback_fonts", "pdf_text", "runs", "with_fallbacks"]

BASE_FONT = "Helvetica"
# TrueType files (glyf outlines: reportlab cannot embed CFF .otf) tried in this order
FONT_FILES = (
    "DejaVuSans.ttf",
    "NotoSans-Regular.ttf",
    "NotoSansHebrew-Regular.ttf",
    "Arial Unicode.ttf",
    "ArialUni.ttf",
    "DroidSansFallbackFull.ttf",
    "DroidSansFallback.ttf",
    "NotoSansCJK-Regular.ttc",
    "wqy-zenhei.ttc",
    "wqy-microhei.ttc",
    "unifont.ttf",
)
_MARKS = re.compile("[\u061c\u200b-\u200f\u2066-\u2069\ufeff]")


def _folders() -> Iterator[Path]:
    """Where fonts live: installed packages that ship them, then the system's folders."""
    spec = importlib.util.find_spec("matplotlib")  # ships DejaVu Sans; found, not imported
    for folder in (spec.submodule_search_locations or []) if spec else []:
        yield Path(folder) / "mpl-data" / "fonts" / "ttf"
    home = Path.home()
    yield from (home / ".fonts", home / ".local/share/fonts")
    if sys.platform == "darwin":
        yield from (Path("/Library/Fonts"), Path("/System/Library/Fonts"), home / "Library/Fonts")
    elif sys.platform == "win32":
        yield Path(os.environ.get("WINDIR", "C:/Windows")) / "Fonts"
    yield from (Path("/usr/share/fonts"), Path("/usr/local/share/fonts"))


def _find(name: str) -> Path | None:
    for folder in _folders():
        if not folder.is_dir():
            continue
        direct = folder / name
        if direct.is_file():
            return direct
        for found in folder.rglob(name):  # /usr/share/fonts/truetype/dejavu/...
            return found
    return None


@functools.cache
def fallback_fonts() -> tuple[tuple[str, frozenset[int]], ...]:
    """The TrueType fonts found, registered with reportlab: (name, the characters it has)."""
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFError, TTFont

    fonts = []
    for file_name in FONT_FILES:
        path = _find(file_name)
        if path is None:
            continue
        name = "gv-" + path.stem
        try:
            font = TTFont(name, str(path), subfontIndex=0)
        except (TTFError, OSError, ValueError):  # a CFF font or a damaged file: skip it
            continue
        pdfmetrics.registerFont(font)
        # one face for bold and italic too: paragraph markup (<b>) asks for them
        pdfmetrics.registerFontFamily(name, normal=name, bold=name, italic=name, boldItalic=name)
        fonts.append((name, frozenset(font.face.charToGlyph)))
    return tuple(fonts)


def _in_base(char: str) -> bool:
    try:
        char.encode("cp1252")
    except UnicodeEncodeError:
        return False
    return True


def _font_for(char: str, base: str) -> str:
    if _in_base(char):
        return base
    code = ord(char)
    for name, chars in fallback_fonts():
        if code in chars:
            return name
    return base  # no font has it: the base face's box, as before


def runs(text: str, base: str = BASE_FONT) -> list[tuple[str, str]]:
    """``text`` as (font, text) runs: each character in ``base`` where WinAnsi has it, else
    in the first fallback font that has it."""
    out: list[tuple[str, str]] = []
    for char in text:
        font = _font_for(char, base)
        if out and out[-1][0] == font:
            out[-1] = (font, out[-1][1] + char)
        else:
            out.append((font, char))
    return out


# a run of right-to-left letters (Hebrew, Arabic, Syriac, Thaana, their presentation forms),
# spaces between them included
_RTL = "\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc"
_RTL_RUN = re.compile(f"[{_RTL}]+(?: +[{_RTL}]+)*")


def pdf_text(text: str) -> str:
    """Text for a PDF: direction marks and isolates (invisible, and without a glyph in most
    fonts) left out, each right-to-left run put in the order it is read on the page (PDF text
    is drawn left to right; letters are not joined), then made visible like every output."""
    text = _RTL_RUN.sub(lambda run: run.group()[::-1], _MARKS.sub("", text))
    return visible_text(text)


def with_fallbacks(drawing: Any) -> Any:
    """An svglib drawing with each string that Helvetica cannot draw split into runs, each
    in a font that has its glyphs, placed one after the other (the anchor kept)."""
    from reportlab.graphics.shapes import Group, String
    from reportlab.pdfbase.pdfmetrics import stringWidth

    def visit(group: Any) -> None:
        contents = getattr(group, "contents", None)
        if contents is None:
            return
        for index, shape in enumerate(contents):
            if not isinstance(shape, String):
                visit(shape)
                continue
            text = pdf_text(shape.text)
            if text == shape.text and all(_in_base(char) for char in text):
                continue
            parts = runs(text, shape.fontName if shape.fontName else BASE_FONT)
            widths = [stringWidth(part, font, shape.fontSize) for font, part in parts]
            total = sum(widths)
            x = shape.x - {"middle": total / 2, "end": total}.get(shape.textAnchor, 0.0)
            split = Group()
            for (font, part), width in zip(parts, widths, strict=True):
                piece = String(x, shape.y, part, fontName=font, fontSize=shape.fontSize)
                piece.fillColor = shape.fillColor
                piece.textAnchor = "start"
                split.add(piece)
                x += width
            contents[index] = split

    visit(drawing)
    return drawing
