"""MkDocs hook: the example diagrams live in assets/ (written by ``make assets``, shown by
the README); the site takes them from there instead of keeping copies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def on_files(files: Files, config: Any) -> Files:
    for svg in sorted(ASSETS.glob("*.svg")):
        files.append(File.generated(config, f"images/{svg.name}", abs_src_path=str(svg)))
    return files
