"""The legend is drawn from the very attributes the nodes of each role get, in every theme;
greyscale roles differ by more than a shade; big gradients' edge notation is explained."""

from __future__ import annotations

import re

import pytest
import torch

import gradviz
from gradviz.render.theme import THEMES
from gradviz.render.views import to_dot
from gradviz.replay.frames import replay_options
from gradviz.teaching.lessons import lesson

_ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')
_LOOK = ("style", "fillcolor", "color", "fontcolor", "penwidth")


def _look(line: str) -> dict[str, str]:
    found = dict(_ATTRIBUTE.findall(line.split("label=")[0] + " " + line.split(">>")[-1]))
    return {key: found.get(key, "") for key in _LOOK}


def _lines_of(dot: str, css_class: str) -> list[str]:
    return [line for line in dot.splitlines() if f'class="{css_class}"' in line]


def _watched_ten_ops() -> gradviz.Graph:
    with gradviz.watch() as w:
        built = lesson("ten-ops").build()
    return w.trace(*built.roots)


@pytest.mark.parametrize("theme", sorted(THEMES))
@pytest.mark.parametrize("view", ["backward", "combined"])
def test_every_legend_sample_looks_exactly_like_the_nodes_of_its_role(
    theme: str, view: str
) -> None:
    dot = _watched_ten_ops().to_dot(view=view, theme=theme)
    drawn = {
        "leaf": _lines_of(dot, "gv_tensor gv_leaf"),
        "constant": _lines_of(dot, "gv_offgraph") + _lines_of(dot, "gv_tensor gv_constant"),
        "branch": _lines_of(dot, "gv_tensor gv_branch"),
        "node": _lines_of(dot, "gv_node"),
    }
    for role, lines in drawn.items():
        if view == "backward" and role == "branch":
            continue  # the backward view draws the root only
        (sample,) = _lines_of(dot, f"gv_legend_item gv_{role}")
        assert lines, (role, view)
        for line in lines:
            assert _look(line) == _look(sample), (role, line)


def test_the_leaf_sample_is_bold_because_leaves_are() -> None:
    dot = _watched_ten_ops().to_dot(view="combined")
    (sample,) = _lines_of(dot, "gv_legend_item gv_leaf")
    leaf = _lines_of(dot, "gv_tensor gv_leaf")[0]
    assert "bold" in _look(sample)["style"] and float(_look(leaf)["penwidth"]) >= 2.5
    assert 'BORDER="4"' not in dot  # the old legend's border, which no node had


def test_greyscale_roles_differ_by_more_than_a_shade() -> None:
    theme = THEMES["greyscale"]
    dot = _watched_ten_ops().to_dot(view="combined", theme="greyscale")
    looks = {}
    for role, _ in theme.legend():
        (sample,) = _lines_of(dot, f"gv_legend_item gv_{role.value}")
        look = _look(sample)
        looks[role] = (look["style"], look["penwidth"])
    assert len(set(looks.values())) == len(looks), looks


def test_big_gradients_edge_notation_is_explained_where_it_appears() -> None:
    torch.manual_seed(0)
    x = torch.randn(40, 2, requires_grad=True)
    loss = (x * 3).sum()
    recording = gradviz.record(loss, names={"x": x})
    dot = to_dot(recording.graph, replay_options(recording))
    assert "‖" in dot and "shape ‖norm‖" in dot
    small = gradviz.record(torch.tensor(2.0, requires_grad=True) * 3)
    assert "shape ‖norm‖" not in to_dot(small.graph, replay_options(small))


def _nested_text(values: list[object]) -> str:
    from gradviz.model.values import format_number

    if isinstance(values, list):
        return "[" + ", ".join(_nested_text(v) for v in values) + "]"
    return format_number(float(values))


def test_the_side_panel_keeps_a_matrix_gradient_in_rows_as_the_narration_does() -> None:
    from gradviz.explain.steps import describe_step, narrate

    A = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    recording = gradviz.record((A * 1).mean(), names={"A": A})
    plain = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (plain * 1).mean().backward()
    assert plain.grad is not None
    expected = _nested_text(plain.grad.tolist())  # [[0.25, 0.25], [0.25, 0.25]]
    last = len(recording) - 1  # AccumulateGrad(A)
    panel = describe_step(recording, last)
    assert panel["received"] == [expected]
    assert expected in narrate(recording, last)
    mul = describe_step(recording, last - 1)
    assert mul["sent"][0]["value"] == expected


def test_labels_keep_shape_apart_from_values_and_a_matrix_in_rows() -> None:
    A = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    recording = gradviz.record((A * 1).mean(), names={"A": A})
    dot = to_dot(recording.graph, replay_options(recording))
    assert _nested_text(A.tolist()) == "[[1, 2], [3, 4]]"
    assert "shape 2×2 · [[1, 2], [3, 4]]" in dot and "2×2 [1, 2, 3, 4]" not in dot
    plain = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (plain * 1).mean().backward()
    assert plain.grad is not None
    edge = _nested_text(plain.grad.tolist())
    assert f"label=<{edge}>" in dot or f">{edge}<" in dot, "the edges carry the rows too"
