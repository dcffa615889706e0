"""PNG (resvg) and PDF (svglib + reportlab) from Graphviz's SVG, without system programs."""

from __future__ import annotations

import io
import re
import warnings
from pathlib import Path

from gradviz.errors import GradvizError, GradvizWarning

__all__ = ["DEFAULT_DPI", "MAX_PNG_PIXELS", "svg_to"]

DEFAULT_DPI = 96.0  # PNG pixels per inch; Graphviz's points are 1/72 inch
MAX_PNG_PIXELS = 32767  # PNG viewers and resvg refuse wider or taller images


def svg_to(svg: bytes, fmt: str, dpi: float | None = None) -> bytes:
    """PNG (resvg) or PDF (svglib + reportlab) from Graphviz's SVG, without system programs."""
    if fmt == "pdf":
        from reportlab.graphics import renderPDF
        from svglib.svglib import svg2rlg

        from gradviz.render.pdffonts import with_fallbacks

        drawing = svg2rlg(io.BytesIO(svg))
        if drawing is None:
            raise GradvizError("the SVG could not be converted to PDF (svglib read nothing)")
        drawing = with_fallbacks(drawing)  # a glyph Helvetica lacks: a font that has it
        pdf: bytes = renderPDF.drawToString(drawing)
        return pdf
    if fmt != "png":
        raise ValueError(f"cannot convert SVG to {fmt!r}: use 'png' or 'pdf'")
    import resvg_py

    resolution = DEFAULT_DPI if dpi is None else float(dpi)
    if not 0 < resolution <= 2400:
        raise ValueError(f"dpi must be a number in (0, 2400], not {dpi!r}")
    width, height = _svg_points(svg)
    largest = max(width, height) * resolution / 72
    if largest > MAX_PNG_PIXELS:
        fitted = MAX_PNG_PIXELS * 72 / max(width, height)
        warnings.warn(
            f"at {resolution:g} dpi this PNG would be {largest:.0f} px long, more than the "
            f"{MAX_PNG_PIXELS} px PNG viewers accept: drawn at {fitted:.0f} dpi instead. "
            "Save as .svg or .pdf to keep every detail.",
            GradvizWarning,
            stacklevel=3,
        )
        resolution = fitted
    png: bytes = resvg_py.svg_to_bytes(
        svg_string=_png_families(svg.decode("utf-8")),
        dpi=resolution,
        font_files=_png_fonts(),
        sans_serif_family="Bitstream Vera Sans",
        font_family="Bitstream Vera Sans",
    )
    return png


# Faces with Helvetica's widths (the widths Graphviz laid the labels out with), then Vera
_HELVETICA_LIKE = "Helvetica,Arial,Liberation Sans,Arimo,Nimbus Sans,Bitstream Vera Sans"


def _png_families(svg: str) -> str:
    """Helvetica is rarely installed: list the faces with its widths that often are. Also,
    CSS generic families are case-insensitive and resvg's are not: Graphviz 16 writes
    "sans-Serif", which resvg would not match, drawing regular text in a serif face."""
    svg = svg.replace('font-family="Helvetica,sans-Serif"', f'font-family="{_HELVETICA_LIKE}"')
    svg = svg.replace(
        'font-family="Helvetica,Arial,sans-serif"', f'font-family="{_HELVETICA_LIKE}"'
    )
    return svg.replace(",sans-Serif", ",sans-serif")


def _png_fonts() -> list[str]:
    """Bitstream Vera, shipped inside reportlab: the same text on every machine, even one
    without fonts (Helvetica is rarely installed; resvg then picked serif and sans at random).
    The system's fonts still cover characters Vera lacks."""
    import reportlab

    folder = Path(reportlab.__file__).parent / "fonts"
    return [str(folder / name) for name in ("Vera.ttf", "VeraBd.ttf", "VeraIt.ttf", "VeraBI.ttf")]


_SIZE = re.compile(rb'<svg[^>]*?\swidth="([\d.]+)pt"[^>]*?\sheight="([\d.]+)pt"', re.S)


def _svg_points(svg: bytes) -> tuple[float, float]:
    found = _SIZE.search(svg[:4096])
    return (float(found.group(1)), float(found.group(2))) if found else (0.0, 0.0)
