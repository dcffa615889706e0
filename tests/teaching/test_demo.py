"""make demo: every lesson rendered, byte-identical on a second run; make assets fresh."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from gradviz.render.backend import run_graphviz
from gradviz.render.theme import THEMES
from gradviz.teaching.gallery import render_assets, render_lessons, write_themes
from gradviz.teaching.lessons import LESSONS

ASSETS = Path(__file__).parents[2] / "assets"


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


@pytest.mark.needs_dot
def test_demo_renders_every_lesson_identically_twice(tmp_path: Path) -> None:
    lines: list[str] = []
    written = render_lessons(tmp_path / "one", progress=lines.append)
    render_lessons(tmp_path / "two")
    first, second = tree(tmp_path / "one"), tree(tmp_path / "two")
    assert first == second
    assert sorted(p.relative_to(tmp_path / "one").as_posix() for p in written) == sorted(first)
    for item in LESSONS:
        for view in ("forward", "backward", "combined", "combined-watched"):
            assert f"{item.slug}/{view}.svg" in first
        assert f"{item.slug}/replay.html" in first
        assert {f"{item.slug}/replay.pdf", f"{item.slug}/replay.pptx"} <= set(first)
        assert f"{item.slug}/steps/step-000.svg" in first
        assert any(item.slug in line for line in lines), "progress names every lesson"
    index = (tmp_path / "one" / "index.html").read_text()
    links = re.findall(r'(?:href|src)="([^"]+)"', index)
    for link in links:
        assert not link.startswith(("http:", "https:", "//", "/")), link
        if not link.startswith("#"):
            assert (tmp_path / "one" / link).exists(), link
    previews = set(re.findall(r'<img src="([^"]+)"', index))
    assert previews == {name for name in first if name.endswith(".svg")}
    assert {name for name in first if name.endswith(".html")} <= set(links) | {"index.html"}


@pytest.mark.needs_dot
def test_each_replay_page_is_standalone(tmp_path: Path) -> None:
    render_lessons(tmp_path)
    for item in LESSONS:
        page = (tmp_path / item.slug / "replay.html").read_text(encoding="utf-8")
        assert "gv-replay-data" in page and item.title.split(":")[0] in page
        assert not re.search(r'(?:src|href)="(?:https?:)?//', page), item.slug


def test_themes_json_is_every_theme_as_data(tmp_path: Path) -> None:
    data = json.loads(write_themes(tmp_path).read_text(encoding="utf-8"))
    assert data == {name: dataclasses.asdict(theme) for name, theme in THEMES.items()}


def test_committed_themes_json_is_fresh(tmp_path: Path) -> None:
    fresh = write_themes(tmp_path).read_text(encoding="utf-8")
    committed = ASSETS / "themes.json"
    assert committed.exists(), f"{committed} is missing: run make assets"
    assert committed.read_text(encoding="utf-8") == fresh, "themes.json is stale: make assets"


@pytest.mark.needs_dot
def test_readme_assets_are_fresh(tmp_path: Path) -> None:
    fresh = render_assets(tmp_path)
    assert "themes.json" in {path.name for path in fresh}, "make assets writes the themes"
    # the Graphviz gradviz runs (embedded by default: the same on every machine)
    found = re.search(r"graphviz version ([^\n]*)", run_graphviz("digraph {}").decode("utf-8"))
    assert found is not None
    version = found.group(1)
    stale = []
    laid_out_elsewhere = []
    for path in fresh:
        committed = ASSETS / path.name
        assert committed.exists(), f"{committed} is missing: run make assets"
        text = committed.read_text(encoding="utf-8")
        made_by = re.search(r"graphviz version (\S+)", text)
        if made_by and made_by.group(1) not in version:
            laid_out_elsewhere.append(f"{path.name} (Graphviz {made_by.group(1)})")
            continue
        if path.read_text(encoding="utf-8") != text:
            stale.append(path.name)
    assert stale == [], f"stale: {stale}; run make assets"
    if laid_out_elsewhere:
        pytest.skip(f"laid out by another Graphviz than {version.strip()}: {laid_out_elsewhere}")
