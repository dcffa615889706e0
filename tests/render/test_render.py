"""DOT and SVG: golden files, stable ids, themes, options, escaping, saving, errors."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz import Graph, GraphvizNotFound
from gradviz.render.theme import THEMES
from gradviz.teaching.lessons import LESSONS, Lesson, lesson
from tests.conftest import check_golden
from tests.support import svg_ids

SVG = "{http://www.w3.org/2000/svg}"


def lesson_graph(slug: str) -> Graph:
    built = lesson(slug).build()
    return gradviz.trace(*built.roots, names=built.names)


@pytest.mark.parametrize("view", ["backward", "combined"])
@pytest.mark.parametrize("item", LESSONS, ids=lambda item: item.slug)
def test_golden_dot(item: Lesson, view: str, update_golden: bool) -> None:
    built = item.build()
    dot = gradviz.trace(*built.roots, names=built.names).to_dot(view=view)
    check_golden(f"{item.slug}.{view}.dot", dot, update_golden)


@pytest.mark.needs_dot
@pytest.mark.parametrize("view", ["backward", "combined"])
def test_svg_is_well_formed_with_stable_prefixed_ids(view: str) -> None:
    graph = lesson_graph("ten-ops")
    ids = svg_ids(graph.svg(view=view))
    p = graph.prefix
    for node in graph.nodes:
        assert f"{p}_{node.id}" in ids
    for edge in graph.edges:
        assert f"{p}_e_{edge.src}_{edge.slot}" in ids
        if edge.dst is None:
            assert f"{p}_c_{edge.src}_{edge.slot}" in ids
    shown = [
        t for t in graph.tensors if view == "combined" or t.is_root or (t.role is gradviz.Role.LEAF)
    ]
    for record in shown:
        assert f"{p}_{record.id}" in ids
    assert f"{p}_legend" in ids


@pytest.mark.needs_dot
def test_same_code_twice_gives_identical_dot_and_svg() -> None:
    first, second = lesson_graph("ten-ops"), lesson_graph("ten-ops")
    for view in ("backward", "combined"):
        assert first.to_dot(view=view) == second.to_dot(view=view)
        assert first.svg(view=view) == second.svg(view=view)


def test_two_different_graphs_get_different_prefixes() -> None:
    assert lesson_graph("chain").prefix != lesson_graph("ten-ops").prefix


def test_multi_output_edges_carry_their_output_number() -> None:
    dot = lesson_graph("unbind").to_dot()
    for nr in (0, 1, 2):
        assert f"headlabel=<{nr}>" in dot
    assert "headlabel" not in lesson_graph("chain").to_dot()


@pytest.mark.needs_dot
@pytest.mark.parametrize("name", sorted(THEMES))
def test_every_theme_renders_its_own_legend(name: str) -> None:
    theme = THEMES[name]
    svg = lesson_graph("ten-ops").svg(theme=name, view="combined")
    texts = {t.text for t in ET.fromstring(svg).iter(f"{SVG}text")}
    for _, style in theme.legend():
        assert style.fill in svg and style.legend in texts


def test_themes_keep_roles_apart_by_fill_and_by_border_style() -> None:
    for theme in THEMES.values():
        roles = [style for _, style in theme.legend()]
        assert len({s.fill for s in roles}) == len(roles)
        assert len({s.border_style for s in roles}) == len(roles)  # tells them apart in grey


def test_options() -> None:
    graph = lesson_graph("chain")
    assert 'rankdir="LR"' in graph.to_dot(direction="left-right")
    assert 'rankdir="TB"' in graph.to_dot(direction="top-down")
    assert "legend" not in graph.to_dot(legend=False)
    assert "self = " in graph.to_dot(saved=True) and "self = " not in graph.to_dot()
    x = torch.randn(2, 3, requires_grad=True)
    shaped = gradviz.trace((x * 2).sum(), names={"x": x})
    assert "2×3" in shaped.to_dot() and "2×3" not in shaped.to_dot(shapes=False)
    with pytest.raises(ValueError, match="unknown theme"):
        graph.to_dot(theme="neon")
    with pytest.raises(ValueError, match="view must be"):
        graph.to_dot(view="sideways")
    with pytest.raises(ValueError, match="direction must be"):
        graph.to_dot(direction="diagonal")
    with pytest.raises(TypeError, match="unknown render option"):
        graph.to_dot(colour="red")


EVIL = ["</text><script>alert(1)</script>", 'a"b\\c', "{x|y}<z>", "&amp; ]]> \n\t\x00 é ∂"]


@pytest.mark.needs_dot
@pytest.mark.parametrize("evil", EVIL)
def test_user_names_cannot_break_dot_svg_or_html(evil: str) -> None:
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0)
    c = a * b
    graph = gradviz.trace(c, names={evil: a, evil + "2": b, "c": c})
    for view in ("backward", "combined"):
        svg = graph.svg(view=view)
        root = ET.fromstring(svg)  # well-formed
        assert root.find(f".//{SVG}script") is None
        assert "<script" not in svg
        texts = "".join(t.text or "" for t in root.iter(f"{SVG}text"))
        assert "</text><script>" in texts if evil.startswith("</text>") else True


@pytest.mark.needs_dot
def test_save_every_format(tmp_path: Path) -> None:
    graph = lesson_graph("chain")
    assert graph.save(tmp_path / "g.svg").read_text().lstrip().startswith("<?xml")
    assert graph.save(tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert graph.save(tmp_path / "g.pdf").read_bytes()[:5] == b"%PDF-"
    assert graph.save(tmp_path / "g.dot", view="combined").read_text() == graph.to_dot(
        view="combined"
    )
    assert Graph.from_json((graph.save(tmp_path / "g.json")).read_text()).to_dot() == (
        graph.to_dot()
    )
    with pytest.raises(ValueError, match=r"\.svg, \.png"):
        graph.save(tmp_path / "g.gif")


@pytest.mark.needs_dot
def test_displays_itself_in_jupyter() -> None:
    bundle = lesson_graph("chain")._repr_mimebundle_()
    assert bundle["image/svg+xml"].lstrip().startswith("<?xml")
    assert "5 backward nodes" in bundle["text/plain"]


def test_missing_graphviz_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from gradviz.render import backend

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(backend, "_embedded_program", lambda: None)  # no wheel either
    graph = lesson_graph("chain")
    with pytest.raises(GraphvizNotFound) as raised:
        graph.svg()
    message = str(raised.value)
    assert "apt-get install graphviz" in message
    assert "brew install graphviz" in message
    assert "conda install" in message
    assert "pip install graphviz-pure" in message
    bundle = graph._repr_mimebundle_()
    assert "image/svg+xml" not in bundle and "apt-get install graphviz" in bundle["text/plain"]


@pytest.mark.needs_dot
def test_freed_graph_renders_and_says_so() -> None:
    built = lesson("ten-ops").build()
    built.roots[0].backward()
    graph = gradviz.trace(*built.roots, names=built.names)
    svg = graph.svg(saved=True)
    assert "freed" in svg
    assert graph.tensor("c").role is gradviz.Role.LEAF
