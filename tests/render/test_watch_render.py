"""The forward and watched combined views: roles, names, scalars, links, safety."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
import torch

import gradviz
from gradviz.teaching.lessons import LESSONS, Lesson, lesson


def watched_graph(slug: str) -> gradviz.Graph:
    with gradviz.watch() as w:
        built = lesson(slug).build()
    return w.trace(*built.roots)


def test_forward_view_boxes_ops_and_scalars() -> None:
    graph = watched_graph("ten-ops")
    dot = graph.to_dot(view="forward")
    assert graph.forward is not None
    for item in graph.forward.tensors:
        assert f'id="{graph.prefix}_{item.id}"' in dot
        assert f"gv_{item.role.value}" in dot
    assert dot.count('class="gv_op ') == 7  # 6 arithmetic ops + requires_grad = True
    with gradviz.watch() as w:
        x = torch.tensor(3.0, requires_grad=True)
        y = 2 * x + 1
    scalars = w.trace(y).to_dot(view="forward")
    assert scalars.count("gv_scalar") == 2


def test_combined_view_links_tensors_to_grad_fns_and_constants_to_none() -> None:
    graph = watched_graph("ten-ops")
    dot = graph.to_dot(view="combined")
    for node in graph.nodes:
        assert f'id="{graph.prefix}_{node.id}"' in dot
    for record in graph.tensors:
        if record.node_id is not None:
            assert f'id="{graph.prefix}_l_{record.id}"' in dot
    # d and f are the constants behind the two None slots
    assert dot.count("gv_constlink") == 2


def test_plain_graphs_render_as_before() -> None:
    built = lesson("ten-ops").build()
    graph = gradviz.trace(*built.roots, names=built.names)
    from gradviz.render.dot import RenderOptions, _DotWriter

    for view in ("backward", "combined"):
        assert graph.to_dot(view=view) == _DotWriter(graph, RenderOptions.make(view=view)).write()
    with pytest.raises(ValueError, match="watch"):
        graph.to_dot(view="forward")


@pytest.mark.needs_dot
@pytest.mark.parametrize("item", LESSONS, ids=lambda item: item.slug)
@pytest.mark.parametrize("view", ["forward", "combined"])
def test_every_lesson_renders_well_formed_svg(item: Lesson, view: str) -> None:
    graph = watched_graph(item.slug)
    svg = graph.svg(view=view)
    ET.fromstring(svg)
    assert graph.forward is not None
    texts = "".join(
        t.text or "" for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")
    )
    for name in graph.forward.names():
        assert name in texts


@pytest.mark.needs_dot
def test_evil_names_stay_text() -> None:
    evil = "</text><script>alert(1)</script>"
    a = torch.tensor(2.0, requires_grad=True)
    with gradviz.watch(names={evil: a}) as w:
        b = a * 2
    svg = w.trace(b).svg(view="combined")
    assert "<script" not in svg
    ET.fromstring(svg)
