"""``rec.diff(other)``: matched nodes, nodes only in one recording, gradient ratios."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.errors import GradvizError


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))


def test_identical_runs_match() -> None:
    model = mlp()
    x = torch.randn(5, 3)
    a = gradviz.record(model(x).pow(2).mean(), params=model)
    b = gradviz.record(copy.deepcopy(model)(x).pow(2).mean(), params=model)
    d = a.diff(b)
    assert d.identical and d.first_difference is None
    assert len(d.changes) == len(a.graph.nodes)
    assert all(c.ratio == pytest.approx(1.0) for c in d.changes if c.norm_a)


def test_detach_and_scaled_loss() -> None:
    model = mlp()
    x = torch.randn(5, 3)
    a = gradviz.record(model(x).pow(2).mean(), params=model)
    hidden = model[1](model[0](x)).detach()
    b = gradviz.record(model[2](hidden).pow(2).mean() * 2, params=model)
    d = a.diff(b)
    only_a = {a.graph.node(n).type_name for n in d.only_a}
    assert only_a == {"TanhBackward0", "AddmmBackward0", "AccumulateGrad", "TBackward0"}
    assert [b.graph.node(n).type_name for n in d.only_b] == ["MulBackward0"]
    # the last layer's weight gradient doubled: compare with torch directly
    w = model[2].weight
    (g_a,) = torch.autograd.grad(model(x).pow(2).mean(), w)
    (g_b,) = torch.autograd.grad(model[2](hidden).pow(2).mean() * 2, w)
    want = float(torch.linalg.vector_norm(g_b) / torch.linalg.vector_norm(g_a))
    leaf = next(r.node_id for r in a.graph.tensors if r.name == "2.weight")
    change = next(c for c in d.changes if c.node_a == leaf)
    assert change.ratio == pytest.approx(want, rel=1e-6) and not change.same
    first = d.first_difference
    assert first is not None and first.step_a == 1  # the loss's own node already differs
    # the union draws B's extra node too, marked
    assert any(n.id.startswith("b_") for n in d.union.nodes)
    dot = d.to_dot()
    assert "gv_marked" in dot and "×2" in dot


def test_bad_input() -> None:
    x = torch.randn(3, requires_grad=True)
    rec = gradviz.record(x.sum())
    with pytest.raises(GradvizError, match="two recordings"):
        rec.diff("other")  # type: ignore[arg-type]


@pytest.mark.needs_dot
def test_saved_page(tmp_path: Path) -> None:
    model = mlp()
    x = torch.randn(5, 3)
    a = gradviz.record(model(x).sum(), params=model)
    b = gradviz.record((model(x) * 3).sum(), params=model)
    page = a.diff(b).save(tmp_path / "diff.html", title="<run A> & B").read_text()
    assert "<svg" in page and "&lt;run A&gt; &amp; B" in page and "<run A>" not in page
    assert 'class="gv-diff-table"' in page and "gv-diff-data" in page
    assert (a.diff(b).save(tmp_path / "d.svg")).read_text().count("<svg") == 1
