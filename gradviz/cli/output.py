"""Where the command line writes, checked before the script runs, and how big it draws.

The output folder is resolved to an absolute path first, so a script that changes
directory does not move it; a folder that cannot be written is reported before minutes of
training, not after. Static drawings of big graphs are scaled down to fit ``--max-size``
pixels (a slide), and the scale is said once: Graphviz would otherwise clamp bitmaps at
32,767 px without a word.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

__all__ = ["DPI", "fitted_dot", "png_size", "svg_scale", "writable_folder"]

DPI = 96  # Graphviz's bitmap resolution: pixels per inch (1 pt = 96/72 px)


class OutputError(Exception):
    """The output folder cannot be used; the message says why and what to do."""


def writable_folder(out: Path) -> Path:
    """``out`` as an absolute folder that exists and takes files, or an ``OutputError``."""
    folder = out.expanduser().absolute()
    for parent in [folder, *folder.parents]:
        if parent.exists() and not parent.is_dir():
            where = "is a file" if parent == folder else f"is under {parent}, which is a file"
            raise OutputError(f"-o {out}: {where}; give a folder, e.g. -o out/")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise OutputError(
            f"-o {out}: cannot write there ({reason}); give a folder you can write to"
        ) from None
    return folder


def fitted_dot(dot_text: str, max_px: int) -> str:
    """The DOT text with a ``size`` attribute: Graphviz scales the drawing down (never up)
    to fit ``max_px`` pixels on its longer side."""
    if max_px <= 0:
        return dot_text
    inches = max_px / DPI
    brace = dot_text.index("{") + 1
    return f'{dot_text[:brace]}\n  graph [size="{inches:.4f},{inches:.4f}"];{dot_text[brace:]}'


_SCALE = re.compile(r'class="graph" transform="scale\(([0-9.]+)')


def svg_scale(svg: str) -> float:
    """The scale Graphviz drew an SVG at (1.0 when it was not scaled)."""
    found = _SCALE.search(svg)
    return float(found.group(1)) if found else 1.0


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG, from its header."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 24:
        raise ValueError("not a PNG")
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
