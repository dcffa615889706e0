"""make demo: every lesson rendered, byte-identical on a second run; README assets fresh."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from gradviz.demo import render_assets, render_lessons
from gradviz.lessons import LESSONS

ASSETS = Path(__file__).parent.parent / "assets"


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


@pytest.mark.needs_dot
def test_demo_renders_every_lesson_identically_twice(tmp_path: Path) -> None:
    render_lessons(tmp_path / "one")
    render_lessons(tmp_path / "two")
    first, second = tree(tmp_path / "one"), tree(tmp_path / "two")
    assert first == second
    for item in LESSONS:
        for view in ("backward", "combined"):
            assert f"{item.slug}/{view}.svg" in first
        assert f"{item.slug}/steps/step-000.svg" in first
    index = (tmp_path / "one" / "index.html").read_text()
    for link in re.findall(r'(?:href|src)="([^"]+)"', index):
        assert not link.startswith(("http:", "https:", "//")), link
        assert (tmp_path / "one" / link).exists(), link


@pytest.mark.needs_dot
def test_readme_assets_are_fresh(tmp_path: Path) -> None:
    fresh = render_assets(tmp_path)
    version = subprocess.run(["dot", "-V"], capture_output=True, text=True).stderr
    for path in fresh:
        committed = ASSETS / path.name
        assert committed.exists(), f"{committed} is missing: run make assets"
        text = committed.read_text()
        made_by = re.search(r"graphviz version (\S+)", text)
        if made_by and made_by.group(1) not in version:
            pytest.skip(f"assets were laid out by Graphviz {made_by.group(1)}; this is {version}")
        assert path.read_text() == text, f"{committed.name} is stale: run make assets"
