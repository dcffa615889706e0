"""Module views in the stepper: clusters, and modules below a depth collapsed to one box.

A collapsed box is active while a node inside it runs, done once all have run, pending
before and ``gv_partial`` in between; an edge that merges several graph edges reveals its
gradient when the first of them flows. These tests derive both from the member nodes'
own classes, independently of how ``gradviz.replay.frames`` computes them.
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
import torch
from torch import nn

import gradviz
from gradviz.model.recording import Recording
from gradviz.render.frontier import auto_frontier
from gradviz.render.views import to_dot
from gradviz.render.watched import collapsed_members
from gradviz.replay.frames import (
    _schedule,
    classes_at,
    first_step,
    replay_born,
    replay_data,
    replay_options,
    step_svg,
)
from gradviz.replay.modules import MODULE_VIEW_MIN_NODES, module_depths, module_views, view_options
from gradviz.stepper.page import replay_html, stepper_payload, unpack_state
from gradviz.teaching.lessons import lesson

pytestmark = pytest.mark.needs_dot


class Residual(nn.Module):
    """``inner(x) + x``: two graph edges leave the block for the node that made ``x``."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.inner = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.inner(x) + x
        return out


def residual_mlp() -> Recording:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), Residual(8), nn.ReLU(), nn.Linear(8, 2))
    x = torch.randn(3, 4)
    with gradviz.watch(model) as w:
        loss = model(x).pow(2).mean()
    return w.record(loss)


def transformer_layer() -> Recording:
    torch.manual_seed(2)
    layer = nn.TransformerEncoderLayer(
        d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True
    )
    x = torch.randn(2, 5, 16)
    with gradviz.watch(layer) as w:
        loss = layer(x).pow(2).mean()
    return w.record(loss)


@pytest.fixture(scope="module", params=["residual_mlp", "transformer_layer"])
def watched(request: pytest.FixtureRequest) -> Recording:
    build = {"residual_mlp": residual_mlp, "transformer_layer": transformer_layer}
    return build[request.param]()


@pytest.fixture(scope="module")
def mlp() -> Recording:
    return residual_mlp()


def test_a_page_with_the_module_view_and_no_collapsed_one(mlp: Recording) -> None:
    state = unpack_state(replay_html(mlp, views=["backward", "modules"]))
    assert set(state["svgs"]) == {"backward", "modules"}
    assert (
        state["data"]["modules"]["collapsed"] == [] and state["data"]["modules"]["default"] is None
    )


def _steps(recording: Recording) -> range:
    return range(first_step(recording), len(recording.steps) + 1)


def test_module_views_only_for_watched_models_of_some_size(watched: Recording) -> None:
    assert module_depths(watched)[0] == 0
    views = module_views(watched)
    # the frontier's view first where the whole graph is more than MAX_THINGS things
    auto = ["collapsed-auto"] if auto_frontier(watched.graph) else []
    assert views == [*auto, *(f"collapsed-{d}" for d in module_depths(watched)), "modules"]
    assert view_options("collapsed-1") == {
        "view": "backward",
        "modules": True,
        "collapse_depth": 1,
    }
    assert view_options("modules") == {"view": "backward", "modules": True}

    plain = gradviz.record(*lesson("ten-ops").build().roots)
    assert module_views(plain) == []  # no watch(): no module data
    with gradviz.watch() as w:
        built = lesson("ten-ops").build()
    assert module_views(w.record(*built.roots)) == []  # watched, but no nn.Module ran
    tiny = nn.Linear(2, 1)
    with gradviz.watch(tiny) as w2:
        loss = tiny(torch.ones(1, 2)).sum()
    small = w2.record(loss)
    assert len(small.graph.nodes) <= MODULE_VIEW_MIN_NODES and module_views(small) == []


def test_box_states_follow_their_member_nodes(watched: Recording) -> None:
    """At every step of every collapsed depth: a box is active iff a node inside is active,
    done iff every node inside is done (or never runs), pending iff none has run yet."""
    prefix = watched.graph.prefix
    depths = module_depths(watched)
    schedule = _schedule(watched, prefix, depths=depths)
    not_run = set(watched.not_run)
    seen_states: set[str] = set()
    for depth in depths:
        members = collapsed_members(watched.graph, depth)
        assert members, depth
        for index in _steps(watched):
            classes = classes_at(schedule, index)
            for module, nodes in members.items():
                box = classes[f"{prefix}_bm{module}"] if index >= 0 else None
                if index < 0:
                    assert f"{prefix}_bm{module}" not in classes  # forward frames: none
                    continue
                states = [classes[f"{prefix}_{n}"] for n in nodes if n not in not_run]
                if not states:
                    expected = "gv_notrun"
                elif "gv_active" in states:
                    expected = "gv_active"
                elif all(s == "gv_done" for s in states):
                    expected = "gv_done"
                elif all(s == "gv_pending" for s in states):
                    expected = "gv_pending"
                else:
                    expected = "gv_partial"
                assert box == expected, (depth, module, index, states)
                seen_states.add(expected)
    assert {"gv_pending", "gv_active", "gv_done"} <= seen_states


def _box_edges(recording: Recording, dot: str, depth: int) -> dict[str, list[str]]:
    """Edge id in the collapsed DOT -> the graph edge ids it merges (derived from the graph)."""
    group = {n: f"bm{m}" for m, ns in collapsed_members(recording.graph, depth).items() for n in ns}
    merged: dict[tuple[str, str], list[str]] = defaultdict(list)
    for edge in recording.graph.edges:
        if edge.dst is None:
            continue
        src, dst = group.get(edge.src, edge.src), group.get(edge.dst, edge.dst)
        if src != dst and (src in group.values() or dst in group.values()):
            merged[(src, dst)].append(f"e_{edge.src}_{edge.slot}")
    drawn = dict(re.findall(r'^\s*(\w+ -> \w+) \[id="\w+?_(e_\w+)"', dot, re.MULTILINE))
    out: dict[str, list[str]] = {}
    for (src, dst), ids in merged.items():
        out[drawn[f"{src} -> {dst}"]] = ids
    return out


def test_merged_edges_reveal_when_the_first_gradient_flows(watched: Recording) -> None:
    prefix = watched.graph.prefix
    schedule = _schedule(watched, prefix)
    flows = {k[len(prefix) + 1 :]: at for k, at in schedule["edges"].items()}
    merges = 0
    for depth in module_depths(watched):
        options = replay_options(watched, **view_options(f"collapsed-{depth}"))
        dot = to_dot(watched.graph, options)
        for drawn, underlying in _box_edges(watched, dot, depth).items():
            times = [flows[e] for e in underlying if e in flows]
            if not times:
                assert f"{prefix}_{drawn}" not in schedule["edges"]
                continue
            for index in _steps(watched):
                expected = (
                    "gv_hidegrad" if index < min(times) else "gv_flowing"
                    if index == min(times) else None
                )  # fmt: skip
                assert classes_at(schedule, index).get(f"{prefix}_{drawn}") == expected
            line = next(ln for ln in dot.splitlines() if f'id="{prefix}_{drawn}"' in ln)
            if len(times) > 1:
                merges += 1
                assert "gv_merged" in line and f"+{len(times) - 1} more" in line
            else:
                assert "more" not in line
    if watched.graph.forward and any(
        m.type_name == "Residual" for m in watched.graph.forward.modules
    ):
        assert merges >= 1  # the residual block's two edges out


def test_payload_ships_module_views_and_what_boxes_open(mlp: Recording) -> None:
    payload = stepper_payload(mlp)
    views = ["collapsed-0", "collapsed-1", "collapsed-2", "modules"]
    assert list(payload["svgs"]) == ["backward", "combined", *views]
    data = payload["data"]
    prefix = payload["prefix"]
    modules = data["modules"]
    assert modules["collapsed"] == views[:3] and modules["default"] == "collapsed-1"
    forward = mlp.graph.forward
    assert forward is not None
    residual = next(m.index for m in forward.modules if m.type_name == "Residual")
    inner = next(m.index for m in forward.modules if m.path == "1.inner")
    opened = modules["opens"]["collapsed-1"][f"{prefix}_bm{residual}"]
    assert opened == {
        "module": "1 (Residual)",
        "opens": "collapsed-2",
        "cluster": f"{prefix}_b_m{residual}",
    }
    assert modules["opens"]["collapsed-2"][f"{prefix}_bm{inner}"]["opens"] == "modules"
    # every box a view names is drawn in it, and the cluster it opens into in the next
    for view, boxes in modules["opens"].items():
        for box, info in boxes.items():
            assert f'id="{box}"' in payload["svgs"][view]
            assert f'id="{info["cluster"]}"' in payload["svgs"][info["opens"]]
    assert set(data["schedule"]["boxes"]) == {b for v in modules["opens"].values() for b in v}
    assert "born" in data["schedule"] and set(data["schedule"]["born"]) == {
        "backward",
        "combined",
        *views,
    }
    named = [s for s in data["steps"] if s.get("module")]
    assert named and all(s["node"] for s in named)
    assert "gv_partial" in payload["css"]["scoped"]


def test_recordings_without_modules_ship_what_they_did(mlp: Recording) -> None:
    built = lesson("ten-ops").build()
    plain = gradviz.record(*built.roots, names=built.names)
    payload = stepper_payload(plain)
    assert list(payload["svgs"]) == ["backward", "combined"]
    assert "modules" not in payload["data"] and "boxes" not in payload["data"]["schedule"]
    assert "gv_partial" not in payload["css"]["scoped"]
    assert all("module" not in s for s in payload["data"]["steps"])
    shipped = {k: v for k, v in payload["data"].items() if k not in ("search", "views")}
    # plus what the search box and view menu need
    assert shipped == replay_data(plain, explain=True)


def test_step_svg_and_stepper_draw_the_collapsed_view(mlp: Recording) -> None:
    prefix = mlp.graph.prefix
    forward = mlp.graph.forward
    assert forward is not None
    first_node = mlp.steps[0].node_id  # the loss's node, outside every module
    inside = next(s for s in mlp.steps if forward.module_for_node(s.node_id) is not None)
    box = collapsed_members(mlp.graph, 1)
    module = next(m for m, nodes in box.items() if inside.node_id in nodes)
    svg = step_svg(mlp, inside.index, **view_options("collapsed-1"))
    assert re.search(rf'id="{prefix}_bm{module}" class="[^"]*\bgv_active\b', svg)
    assert f"{prefix}_{inside.node_id}" not in svg  # drawn inside the box only
    assert ".gv_partial" in svg
    stepper = gradviz.Stepper(mlp, view="collapsed-1")
    stepper.goto(inside.index)
    assert re.search(rf'id="{prefix}_bm{module}" class="[^"]*\bgv_active\b', stepper.svg())
    stepper.view = "modules"
    assert re.search(rf'id="{prefix}_{inside.node_id}" class="[^"]*\bgv_active\b', stepper.svg())
    stepper.goto(1)
    assert f'id="{prefix}_{first_node}" class="node gv_node gv_active"' in stepper.svg()


def test_born_covers_boxes_during_forward_frames(mlp: Recording) -> None:
    born = replay_born(mlp, ["collapsed-1"])["collapsed-1"]
    prefix = mlp.graph.prefix
    boxes = [f"{prefix}_bm{m}" for m in collapsed_members(mlp.graph, 1)]
    assert all(-len(mlp.forward_ops) <= born[b] < 0 for b in boxes)
