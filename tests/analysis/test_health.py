"""Gradient health: every edge's norm against torch.autograd.grad, bands, module norms."""

from __future__ import annotations

import math

import pytest
import torch

import gradviz
from gradviz.errors import GradvizError


def edge_from(rec: gradviz.Recording, grad_fn: object) -> str:
    """The key of the (single) edge leaving the node that is ``grad_fn``."""
    node = next(n for n in rec.graph.nodes if n.torch_node is grad_fn)
    (edge,) = [e for e in rec.graph.out_edges(node.id) if e.dst is not None]
    return edge.key


def test_edge_norms_match_autograd() -> None:
    x = torch.randn(5, requires_grad=True, generator=torch.Generator().manual_seed(0))
    a = x * 3
    b = a.tanh()
    c = b.exp()
    loss = c.sum()
    grads = torch.autograd.grad(loss, [c, b, a], retain_graph=True)
    rec = gradviz.record(loss)
    keys = [edge_from(rec, t.grad_fn) for t in (loss, c, b)]
    health = rec.health()
    for key, grad in zip(keys, grads, strict=True):
        norm = float(torch.linalg.vector_norm(grad))
        edge = health.edges[key]
        assert edge.norm == pytest.approx(norm, rel=1e-6)
        # log10 of a norm near 1 is near 0: a relative tolerance alone would ask for exactness
        assert edge.log10 == pytest.approx(math.log10(norm), rel=1e-6, abs=1e-6)
        assert edge.band == "healthy"
    # each edge is sent at its source's step, so at(step) grows as backward runs
    assert len(health.at(1)) == 1 and len(health.at(len(rec))) == len(health.edges)


def test_bands() -> None:
    x = torch.randn(4, requires_grad=True)
    rec = gradviz.record((x * 1e5).sum() * 1e2)
    assert {e.band for e in rec.health().edges.values()} >= {"exploding"}
    y = torch.randn(4, requires_grad=True)
    rec = gradviz.record((y * 1e-9).sum())
    assert "vanishing" in {e.band for e in rec.health().edges.values()}
    z = torch.randn(4, requires_grad=True)
    rec = gradviz.record((z * 0).sum())
    assert "zero" in {e.band for e in rec.health().edges.values()}
    with pytest.raises(GradvizError, match="vanishing_below"):
        rec.health(vanishing_below=10, exploding_above=1)


def test_module_norms_match_the_parameters_grads() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2))
    data = torch.randn(3, 4)
    loss = model(data).pow(2).sum()
    rec = gradviz.record(loss, params=model)
    health = rec.health()
    by_module = {m.module: m for m in health.modules}
    assert set(by_module) == {"0", "2"}
    for module in ("0", "2"):
        params = dict(model.named_parameters())
        expected = math.sqrt(
            sum(
                float(torch.linalg.vector_norm(params[f"{module}.{k}"].grad)) ** 2
                for k in ("weight", "bias")
            )
        )
        assert by_module[module].norm == pytest.approx(expected, rel=1e-6)
    # the last layer's parameters get their gradients before the first layer's
    assert by_module["2"].step < by_module["0"].step


def test_health_overlay_in_the_dot() -> None:
    x = torch.randn(4, requires_grad=True)
    rec = gradviz.record((x * 1e-9).tanh().sum(), names={"x": x})
    health = rec.health()
    styles = health.edge_styles()
    theme = gradviz.THEMES["default"]
    vanishing = [k for k, e in health.edges.items() if e.band == "vanishing"]
    assert vanishing and all(styles[k][1] == theme.node.border for k in vanishing)
    widths = [w for w, _ in styles.values()]
    assert min(widths) >= 0.6 and max(widths) <= 5.0
    dot = rec.graph.to_dot(edge_styles=styles)
    assert f'color="{theme.node.border}"' in dot and "penwidth=" in dot


@pytest.mark.needs_dot
def test_health_toggle_in_the_svg() -> None:
    x = torch.randn(4, requires_grad=True)
    rec = gradviz.record((x * 1e-9).tanh().sum())
    plain = rec.svg()
    overlay = rec.svg(health=True)
    colour = gradviz.THEMES["default"].node.border
    assert overlay != plain
    assert 'stroke-width="' in overlay and colour in overlay
