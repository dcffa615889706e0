"""Comments and docstrings say why, in the repository's own words: none cites a tracker
issue or a document outside the repository (a reader has neither)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CITATION = re.compile(r"\b[Ii]ssue #?\d+|\(#\d{2,}\)|DESIGN §")
SOURCES = ("gradviz", "tests", "frontend/src", "frontend/test", "frontend/entries", "docs")


def test_no_source_cites_a_tracker_issue() -> None:
    files = [
        path
        for folder in SOURCES
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in {".py", ".js", ".css", ".md"} and path.name != Path(__file__).name
    ]
    assert len(files) > 100
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if CITATION.search(line)
    ]
    assert not cited, "\n".join(cited)
