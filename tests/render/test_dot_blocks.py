"""The backward DOT writes its nodes, edges and leaves in blocks whose defaults carry what
every box of the block shares (class, shape, style, colours): each line holds its own text
only. The blocks are anonymous subgraphs, so Graphviz lays out and draws exactly what the
same statements with every attribute written out would give: the SVG is the same bytes.
"""

from __future__ import annotations

import re
import warnings

import pytest
import torch

import gradviz
from gradviz.render.backend import run_dot
from gradviz.teaching.lessons import LESSONS
from tests.support.models import MODELS


def _written_out(dot: str) -> str:
    """The DOT without its blocks: each block's node and edge defaults written into every
    node and edge statement of the block (the attributes a statement sets itself come later,
    and later attributes win in DOT), as gradviz wrote it before the blocks."""
    out: list[str] = []
    inside = False
    node_defaults = edge_defaults = ""
    for line in dot.split("\n"):
        stripped = line.strip()
        if line == "  {":
            inside = True
            continue
        if inside and line == "  }":
            inside = False
            continue
        if inside and stripped.startswith(("node [", "edge [")):
            defaults = stripped[stripped.index("[") + 1 : stripped.rindex("]")]
            if stripped.startswith("node"):
                node_defaults = defaults
            else:
                edge_defaults = defaults
            continue
        if inside and "[" in line:
            head, _, rest = line.partition("[")
            defaults = edge_defaults if " -> " in head else node_defaults
            line = f"{head}[{defaults} {rest}"
        out.append(line)
    assert not inside, "a block is left open"
    return "\n".join(out)


def _cases() -> list[tuple[str, gradviz.Graph]]:
    cases = []
    for lesson in LESSONS[:6]:
        built = lesson.build()
        cases.append((lesson.slug, gradviz.trace(*built.roots, names=built.names)))
    for name, build in MODELS.items():
        loss, names = build()
        cases.append((name, gradviz.trace(loss, names=names)))
    x = torch.randn(4, 3, requires_grad=True)
    a, b, c = x.unbind(1)
    hostile = torch.randn(3, requires_grad=True)
    loss = (a * b + c.exp()).sum() + (hostile * torch.randn(3)).pow(2).sum()
    names = {"x": x, '<b>"x"&{}[];</b>' + "w" * 60: hostile}
    cases.append(("multi-output, off-graph, hostile name", gradviz.trace(loss, names=names)))
    return cases


OPTIONS: dict[str, dict[str, object]] = {
    "default": {},
    "structure": {"values": False},
    "saved": {"saved": True, "values": False},
    "fold": {"fold": True},
    "no shapes, LR, no legend": {"shapes": False, "direction": "LR", "legend": False},
    "combined": {"view": "combined"},
}


SYSTEM = pytest.param("system", marks=pytest.mark.needs_dot)


@pytest.mark.parametrize("backend", ["embedded", SYSTEM])
def test_blocks_draw_the_same_svg_as_every_attribute_written_out(backend: str) -> None:
    gradviz.use_graphviz(backend)
    try:
        for name, graph in _cases():
            for option_name, options in OPTIONS.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # fold=True on a graph with no repeats
                    dot = graph.to_dot(**options)  # type: ignore[arg-type]
                assert "\n  {\n" in dot, (name, option_name)
                plain = _written_out(dot)
                assert plain != dot
                same = run_dot(dot, "svg") == run_dot(plain, "svg")
                assert same, f"{name}, {option_name}: the blocks changed the SVG"
    finally:
        gradviz.use_graphviz(None)


def test_a_replays_drawing_is_the_same_svg_with_gradients_on_edges_links_and_widths() -> None:
    """What a replay lays out: every gradient on its edge or link, and the health overlay's
    edge widths."""
    from gradviz.analysis.health import gradient_health
    from gradviz.render.reports import health_edge_styles
    from gradviz.render.views import to_dot
    from gradviz.replay.frames import replay_options

    loss, names = MODELS["mlp"]()
    recording = gradviz.record(loss, names=names)
    styles = health_edge_styles(gradient_health(recording), "default")
    for extra in ({}, {"edge_styles": styles}):
        options = replay_options(recording, **extra)
        assert options.edge_labels and options.link_labels
        dot = to_dot(recording.graph, options)
        assert "<FONT COLOR" in dot  # the gradients
        assert not extra or re.search(r"-> n\d+ \[[^\]]*penwidth", dot)  # the widths
        assert run_dot(dot, "svg") == run_dot(_written_out(dot), "svg")


def test_each_plain_node_and_leaf_line_holds_its_own_text_only() -> None:
    loss, names = MODELS["transformer"]()
    graph = gradviz.trace(loss, names=names)
    dot = graph.to_dot(values=False)
    prefix = graph.prefix
    node_lines = [line for line in dot.split("\n") if re.match(r"  n\d+ \[", line)]
    assert len(node_lines) == len(graph.nodes)
    for line in node_lines:
        own = r'label=<<B>\w+…?</B>>(?: tooltip="\w+")?'  # a long type: whole in its tooltip
        assert re.fullmatch(rf'  (n\d+) \[id="{prefix}_\1" {own}\];', line), line
    edge_lines = [line for line in dot.split("\n") if re.match(r"  n\d+ -> n\d+ \[", line)]
    assert edge_lines
    for line in edge_lines:
        if "headlabel" not in line:  # a multi-output node's inputs say which output
            assert re.fullmatch(rf'  (n\d+) -> n\d+ \[id="{prefix}_e_\1_\d+"\];', line), line
    leaf_lines = [line for line in dot.split("\n") if re.match(r"  t\d+ \[", line)]
    assert any('label=<<B>linear1.weight</B><BR/><FONT POINT-SIZE="9">' in x for x in leaf_lines)
    for line in leaf_lines[1:]:  # the root's box (first) sets its own style
        assert "style=" not in line and "class=" not in line, line
    assert len(dot) < 150 * (len(graph.nodes) + len(graph.edges))


def test_the_views_with_watch_data_still_write_every_attribute() -> None:
    """Their writer adds lines of its own (forward boxes, clusters): no block there."""
    x = torch.randn(3, requires_grad=True)
    with gradviz.watch() as watch:
        loss = (x.exp() * 2).sum()
    graph = watch.trace(loss, names={"x": x})
    for view in ("backward", "combined", "forward"):
        dot = graph.to_dot(view=view)
        assert "\n  {\n" not in dot, view
        if view != "forward":
            assert re.search(r'  n0 \[id="[^"]+" class="gv_node" shape="box"', dot), view
