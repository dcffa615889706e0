"""The explanations' data as the stepper gets it: aligned with the schedule, checked
against PyTorch, shipped (with its front-end code) only where a page has it."""

from __future__ import annotations

import math

import pytest
import torch

import gradviz
from gradviz.replay.frames import replay_data
from gradviz.stepper import page as page_module
from gradviz.stepper.page import asset_text, compact_css, page_script, replay_html, unpack_state


def chain() -> tuple[gradviz.Recording, list[torch.Tensor], list[torch.Tensor]]:
    x = torch.randn(6, requires_grad=True)
    a = x * 3
    b = a.tanh()
    c = b.exp()
    loss = c.sum()
    grads = list(torch.autograd.grad(loss, [c, b, a], retain_graph=True))
    return gradviz.record(loss), [loss, c, b], grads


def test_health_logs_follow_the_schedule_and_match_autograd() -> None:
    rec, sources, grads = chain()
    data = replay_data(rec, explain=True)
    order = list(data["schedule"]["edges"])
    logs = dict(zip(order, data["health"]["edges"], strict=True))
    for tensor, grad in zip(sources, grads, strict=True):
        node = next(n for n in rec.graph.nodes if n.torch_node is tensor.grad_fn)
        (edge,) = [e for e in rec.graph.out_edges(node.id) if e.dst is not None]
        element = f"{rec.graph.prefix}_e_{edge.src}_{edge.slot}"
        expected = math.log10(float(torch.linalg.vector_norm(grad)))
        assert logs[element] == pytest.approx(expected, abs=0.006)
    assert data["health"]["v"] == -6 and data["health"]["x"] == 3


def test_zero_and_module_norms() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    loss = (model(torch.randn(2, 3)) * 0).sum()
    rec = gradviz.record(loss, params=model)
    health = replay_data(rec, explain=True)["health"]
    assert "z" in health["edges"]
    assert [name for name, _ in health["modules"]] == ["1", "0"]  # the order backward reaches
    for _, series in health["modules"]:
        assert series[-1][1] == 0.0
    assert health["by"] == "module"


def test_without_modules_the_strip_has_a_row_per_leaf_with_autograd_norms() -> None:
    torch.manual_seed(0)
    w = torch.randn(3, 2, requires_grad=True)
    b = torch.randn(2, requires_grad=True)
    loss = (torch.randn(4, 3) @ w + b).tanh().sum()
    expected = torch.autograd.grad(loss, [w, b], retain_graph=True)
    rec = gradviz.record(loss, names={"w": w, "b": b})
    health = replay_data(rec, explain=True)["health"]
    assert health["by"] == "leaf"
    rows = dict(health["modules"])
    assert set(rows) == {"w", "b"}  # not one "(top level)" row
    for name, grad in zip(["w", "b"], expected, strict=True):
        assert rows[name][-1][1] == pytest.approx(float(torch.linalg.vector_norm(grad)), rel=1e-3)


def test_the_page_ships_the_code_only_with_the_data(tmp_path: pytest.TempPathFactory) -> None:
    rec, _, _ = chain()
    code, style = page_script(False, explain=True), compact_css(asset_text("explain.css"))
    small = replay_html(rec)
    assert code in small and style in small and "memory" in unpack_state(small)["data"]
    bare = replay_html(rec, explain=False)
    assert code not in bare and style not in bare
    assert page_script(False, explain=False) in bare
    assert not {"memory", "health"} & set(unpack_state(bare)["data"])


def test_the_widget_has_the_toggles() -> None:
    rec, _, _ = chain()
    stepper = gradviz.Stepper(rec)
    assert "gv-memory-btn" in stepper._esm and "gv-health-strip" in stepper._css
    assert {"memory", "health"} <= set(stepper.data)
    assert "health" not in gradviz.Stepper(rec, explain=False).data
    off = gradviz.Stepper(rec, explain=True, view="backward")
    off.ensure_view("combined")  # a later layout does not get explain= as a render option


def test_big_pages_keep_the_toggles_while_they_stay_light(monkeypatch: pytest.MonkeyPatch) -> None:
    """By default a page ships the toggles unless they alone take it over the page budget;
    then it leaves them out (same layout), and ``explain=True`` still forces them in."""
    rec, _, _ = chain()
    with_toggles = replay_html(rec)
    assert {"memory", "health"} <= set(unpack_state(with_toggles)["data"])
    without = replay_html(rec, explain=False)
    nodes = len(rec.graph.nodes)
    between = (len(with_toggles.encode("utf-8")) + len(without.encode("utf-8"))) // (2 * nodes)
    monkeypatch.setattr(page_module, "PAGE_BYTES_PER_NODE", between)
    light = replay_html(rec)
    assert not {"memory", "health"} & set(unpack_state(light)["data"])
    assert page_script(False, explain=True) not in light
    assert unpack_state(light)["svgs"] == unpack_state(with_toggles)["svgs"]
    forced = replay_html(rec, explain=True)
    assert {"memory", "health"} <= set(unpack_state(forced)["data"])
    # a page over the budget without them too keeps them: they do not make the difference
    monkeypatch.setattr(page_module, "PAGE_BYTES_PER_NODE", 1)
    assert {"memory", "health"} <= set(unpack_state(replay_html(rec))["data"])
