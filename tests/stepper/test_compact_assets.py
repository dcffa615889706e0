"""The inlined front end: the stylesheet's compaction keeps the rules, and every bundle the
page or the widget inlines is valid JavaScript."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gradviz.stepper.page import asset_text, compact_css

BUNDLES = (
    "stepper-page.js",
    "stepper-page-lazy.js",
    "stepper-page-explain.js",
    "stepper-page-lazy-explain.js",
    "stepper-widget.js",
    "filmstrip.js",
    "filmstrip-widget.js",
    "stepper-embedded.js",
)


def test_compact_css_drops_comments_and_indentation_only() -> None:
    css = "/* a note\n over lines */\n.a > b {\n  color: red; /* why */\n}\n\n.c{x:1}\n"
    assert compact_css(css) == ".a > b {\ncolor: red;\n}\n.c{x:1}\n"


@pytest.mark.skipif(shutil.which("node") is None, reason="no node to parse the JS")
@pytest.mark.parametrize("name", BUNDLES)
def test_the_bundles_parse(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.mjs"
    path.write_text(asset_text(name), encoding="utf-8")
    subprocess.run(["node", "--check", str(path)], check=True, timeout=60)
