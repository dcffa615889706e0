"""Replays of real models: cheap combined layout, the recorded pass only, views=, light pages,
the module view by default, parameters kept with their modules, search and module steps."""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch
from torch import nn

import gradviz
from gradviz.errors import GradvizError
from gradviz.model.recording import Recording
from gradviz.render import backend, sidebyside
from gradviz.render.views import to_dot
from gradviz.replay.frames import step_svg
from gradviz.replay.modules import view_options
from gradviz.stepper.page import available_views, replay_html, stepper_payload, unpack_state

pytestmark = pytest.mark.needs_dot


def _deep_mlp(layers: int) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    parts: list[nn.Module] = []
    for _ in range(layers):
        parts += [nn.Linear(6, 6), nn.ReLU()]
    return nn.Sequential(*parts), torch.randn(3, 6)


def _watched(model: nn.Module, x: torch.Tensor) -> Recording:
    with gradviz.watch(model) as w:
        loss = model(x).square().mean()
    return w.record(loss)


@pytest.fixture(scope="module")
def small() -> Recording:
    return _watched(*_deep_mlp(4))


@pytest.fixture(scope="module")
def big() -> Recording:
    recording = _watched(*_deep_mlp(40))
    assert len(recording.graph.nodes) > 150
    return recording


def test_combined_view_lays_each_side_out_alone(
    small: Recording, monkeypatch: pytest.MonkeyPatch
) -> None:
    laid: list[str] = []
    real = backend.run_dot

    def spy(dot: str, fmt: str = "svg", engine: str = "dot") -> bytes:
        laid.append(dot)
        return real(dot, fmt, engine)

    monkeypatch.setattr(sidebyside, "run_dot", spy)
    svg = step_svg(small, len(small.steps), view="combined")
    assert len(laid) == 2  # the forward side, then the backward side: never both in one dot
    forward, backward = laid
    assert "op1 [" in forward and " n0 [" not in forward
    assert " n0 [" in backward and "op1 [" not in backward
    prefix = small.graph.prefix
    assert f'id="{prefix}_forward"' in svg and f'id="{prefix}_backward"' in svg
    # every link one dot run would draw is drawn, with the same id and class
    options = {**view_options("combined")}
    from gradviz.replay.frames import replay_options

    dot = to_dot(small.graph, replay_options(small, **options))
    wanted = set(re.findall(r'id="([^"]+)" class="gv_link"', dot))
    drawn = set(re.findall(r'<g id="([^"]+)" class="edge gv_link', svg))
    assert wanted and wanted == drawn
    # a link that carried a gradient shows it (the class the stepper reveals it by)
    assert re.search(r'class="edge gv_link[^"]*">(?:(?!</g>).)*class="gv_grad"', svg, re.S)


def test_watch_around_a_training_loop_replays_the_recorded_pass() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(5, 4), torch.randn(5, 1)

    def step() -> torch.Tensor:
        optimizer.zero_grad()
        return ((model(x) - y) ** 2).mean()

    with gradviz.watch(model) as once:
        loss = step()
    single = once.record(loss)
    optimizer.step()
    with gradviz.watch(model) as w:
        for _ in range(6):
            loss = step()
            loss.backward()
            optimizer.step()
        loss = step()
    looped = w.record(loss)
    assert len(w.forward.ops) > 6 * len(single.forward_ops)  # it did see every iteration
    # the recorded pass, after the previous iteration's optimizer step (one in-place add_
    # per parameter, made between the two passes)
    names = [op.name for op in looped.forward_ops]
    count = len(single.forward_ops)
    assert names[-count:] == [op.name for op in single.forward_ops]
    assert names[:-count] == ["add_"] * len(list(model.parameters()))
    page = unpack_state(replay_html(looped))
    assert page["data"]["first"] == -len(names)
    assert len(page["data"]["forward"]) == len(names)
    # where the recorded pass starts survives the JSON round trip (and its validation)
    data = looped.graph.to_dict()
    assert data["forward"]["first_replayed"] > 0
    again = type(looped.graph).from_dict(data)
    assert again.forward is not None
    assert [op.name for op in again.forward.replayed] == names


def test_views_can_be_left_out(small: Recording) -> None:
    page = replay_html(small, views=["backward", "collapsed-0"])
    state = unpack_state(page)
    assert set(state["svgs"]) == {"backward", "collapsed-0"}
    assert state["data"]["views"] == ["backward", "collapsed-0"]
    with pytest.raises(GradvizError, match="views="):
        replay_html(small, views=["sideways"])
    with pytest.raises(GradvizError, match="views="):
        replay_html(small, views=[])


def test_big_data_goes_compressed_and_unpacks_to_the_same_state(small: Recording) -> None:
    plain = replay_html(small, compress=False)
    packed = replay_html(small, compress=True)
    assert 'class="gv-replay-data" data-encoding="gzip+7bit"' in packed
    assert '<script type="application/json" class="gv-replay-data">' not in packed
    assert unpack_state(packed) == unpack_state(plain)
    assert len(packed) < len(plain) / 2
    assert "default-src 'none'" in packed  # still offline-only


def test_big_models_open_on_the_collapsed_module_view(small: Recording, big: Recording) -> None:
    assert unpack_state(replay_html(big, views=["backward", "collapsed-1"]))["view"] == (
        "collapsed-1"
    )
    assert stepper_payload(small, views=["backward", "collapsed-1"])["view"] == "backward"
    assert unpack_state(replay_html(big, views=["backward"]))["view"] == "backward"


def test_collapsed_modules_take_their_parameters_with_them(big: Recording) -> None:
    options: dict[str, Any] = view_options("collapsed-1")
    dot = big.graph.to_dot(**options)
    names = [name for name, _ in _named_parameters(big)]
    assert names
    for name in names:  # no parameter box of its own: its module's box counts it
        assert f"<B>{name}</B>" not in dot
    assert "2 parameters" in dot
    # in the cluster view each parameter sits inside its module's cluster
    clustered = big.graph.to_dot(**view_options("modules"))
    lines = clustered.splitlines()
    for name in names[:6]:
        (line,) = [ln for ln in lines if f"<B>{name}</B>" in ln]
        assert line.startswith("    "), line  # nested in a cluster, not at the top level


def _named_parameters(recording: Recording) -> list[tuple[str, str]]:
    return [
        (t.name, t.id)
        for t in recording.graph.tensors
        if t.name and t.role.value == "leaf" and not t.is_root
    ]


def test_search_and_module_steps_have_their_data(big: Recording) -> None:
    data = stepper_payload(big, views=["backward", "collapsed-1"])["data"]
    texts = dict(data["search"])
    assert any("AddmmBackward0" in t for t in texts.values())
    assert any("0.weight" in t for t in texts.values())
    chains = data["nav"]["chains"]
    forward = big.graph.forward
    assert forward is not None
    for node, chain in chains.items():
        assert chain == [m.index for m in forward.module_chain(forward.node_modules[node])]
    assert set(data["nav"]["names"]) >= {str(m) for chain in chains.values() for m in chain}


def test_every_view_is_offered(small: Recording) -> None:
    assert available_views(small) == (
        "backward",
        "combined",
        "collapsed-0",
        "collapsed-1",
        "modules",
    )
