"""The inlined front end's compaction keeps the code as it was: comments go, strings stay."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gradviz.stepper.page import asset_text, compact_css, compact_js


def test_trailing_comments_go_only_where_they_cannot_be_inside_a_string() -> None:
    source = (
        "const a = 1; // dropped\n"
        'const b = "x // y"; // kept: the code holds a slash\n'
        "const c = `t`; // dropped: the template is whole\n"
        'const d = "it\'s"; // kept: a lone quote\n'
        "const e = 2 / 3; // kept: a slash before it\n"
    )
    out = compact_js(source).splitlines()
    assert out[0] == "const a = 1;"
    assert out[1] == source.splitlines()[1]
    assert out[2] == "const c = `t`;"
    assert out[3] == source.splitlines()[3]
    assert out[4] == source.splitlines()[4]


def test_compact_css_drops_comments_and_indentation_only() -> None:
    css = "/* a note\n over lines */\n.a > b {\n  color: red; /* why */\n}\n\n.c{x:1}\n"
    assert compact_css(css) == ".a > b {\ncolor: red;\n}\n.c{x:1}\n"


@pytest.mark.skipif(shutil.which("node") is None, reason="no node to parse the JS")
def test_the_compacted_stepper_still_parses(tmp_path: Path) -> None:
    path = tmp_path / "stepper.mjs"
    path.write_text(compact_js(asset_text("stepper.js")), encoding="utf-8")
    subprocess.run(["node", "--check", str(path)], check=True, timeout=60)
