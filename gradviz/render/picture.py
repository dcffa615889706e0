"""SVG text that shows itself in a notebook without running past the output area.

Graphviz sizes a drawing to its content: twelve layers drawn left to right are many screens
wide. Jupyter's own SVG display either shrinks such a drawing to the output's width (its
text unreadable) or lets it run past the edge (its legend cut off). A ``Picture`` is the
same text (a ``str``: files, ``IPython.display.SVG`` and string code take it as before),
shown at its own size in a box as wide as the output at most, scrolled sideways when the
drawing is wider. The drawing goes in as an image, so its stylesheet and ids stay its own.
"""

from __future__ import annotations

import base64
import html
from typing import Any

__all__ = ["Picture"]

# The box: never wider than the output, a scroll bar where the drawing is wider; the image
# keeps its own size (front ends shrink images to the output's width otherwise).
BOX = "max-width:100%;overflow-x:auto;overflow-y:hidden"
IMAGE = "max-width:none;height:auto;display:block"


class Picture(str):
    """An SVG drawing's text, shown by notebooks in a box that scrolls when it is wider."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        """The drawing as an image at its own size, in a box that scrolls sideways."""
        data = base64.b64encode(self.encode("utf-8")).decode("ascii")
        alt = html.escape("gradviz drawing (scroll sideways to see all of it)")
        return (
            f'<div class="gv-picture" style="{BOX}">'
            f'<img alt="{alt}" style="{IMAGE}" src="data:image/svg+xml;base64,{data}"></div>'
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's plain-text form: what it is, not pages of SVG (``str()`` is the text)."""
        printer.text(f"<gradviz drawing: {len(self):,} characters of SVG>")
