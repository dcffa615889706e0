"""``why_no_grad``: each cause, checked against what PyTorch itself does with ``.grad``.

Every case first runs the real backward and asserts that torch leaves ``.grad`` None (or
fills it, for the "ok" case), then that gradviz names the cause, the line and a fix that
works: the fix is applied and torch's gradient is compared with ``torch.autograd.grad``.
"""

from __future__ import annotations

import re

import pytest
import torch

import gradviz
from gradviz.errors import NotOnGraph


def marked(dot: str) -> set[str]:
    """The DOT names of the elements drawn with the highlight (``a -> b`` for edges)."""
    found = set()
    for line in dot.splitlines():
        if "gv_marked" not in line:
            continue
        head = line.split(" [", 1)[0].strip()
        found.add(head)
    return found


def assert_backward_leaves_none(tensor: torch.Tensor, root: torch.Tensor) -> None:
    root.backward(retain_graph=True)
    assert tensor.grad is None


def test_non_leaf_without_retain_grad() -> None:
    with gradviz.watch() as w:
        x = torch.randn(3, requires_grad=True)
        h = (x * 2).tanh()
        loss = h.sum()
    with pytest.warns(UserWarning, match="non-leaf"):
        assert_backward_leaves_none(h, loss)
    report = w.why_no_grad(h, loss)
    assert report.cause == "non_leaf"
    assert "retain_grad()" in report.fix and "h" in report.message
    assert "TanhBackward0" in report.message and "h = (x * 2).tanh()" in report.message
    # the marked path runs from the root's node to h's node, along real next_functions
    nodes = report.path
    assert report.graph.node(nodes[0]).torch_node is loss.grad_fn
    assert report.graph.node(nodes[-1]).torch_node is h.grad_fn
    assert {"n0", "n1"} <= marked(report.to_dot())
    # the fix works: retain_grad() gives .grad, equal to torch.autograd.grad
    x2 = x.detach().clone().requires_grad_()
    h_plain = (x2 * 2).tanh()
    (expected,) = torch.autograd.grad(h_plain.sum(), h_plain)
    h2 = (x2 * 2).tanh()
    h2.retain_grad()
    h2.sum().backward()
    assert torch.equal(h2.grad, expected)


def test_plain_non_leaf_and_path() -> None:
    x = torch.randn(2, 3, requires_grad=True)
    h = x.exp()
    loss = (h * 3).sum()
    report = gradviz.why_no_grad(h, loss, name="h")
    assert report.cause == "non_leaf"
    assert "h.retain_grad()" in report.fix
    assert report.graph.node(report.path[-1]).torch_node is h.grad_fn
    assert report.graph.node(report.path[0]).torch_node is loss.grad_fn
    assert len(report.path) == 3  # SumBackward0 -> MulBackward0 -> ExpBackward0


def test_copy_made_a_non_leaf() -> None:
    with gradviz.watch() as w:
        weights = torch.randn(3, requires_grad=True).double()
        loss = (weights * 2).sum()
    with pytest.warns(UserWarning, match="non-leaf"):
        assert_backward_leaves_none(weights, loss)
    report = w.why_no_grad(weights, loss)
    assert report.cause == "copy"
    assert ".double()" in report.message and "ToCopyBackward0" in report.message
    assert "dtype=torch.float64" in report.fix
    # the path ends at the original leaf's AccumulateGrad, beyond the copy
    assert report.graph.node(report.path[-1]).torch_node is weights.grad_fn
    op = next(o for o in w.forward.ops if o.name == "double")
    assert f"op{op.index}" in report.marks()
    # the backward graph alone shows the copy too
    plain = gradviz.why_no_grad(weights, loss, name="weights")
    assert plain.cause == "copy"
    # the fix: made in float64 as a leaf, it gets .grad = d(loss)/d(weights)
    fixed = torch.randn(3, dtype=torch.float64, requires_grad=True)
    (fixed * 2).sum().backward()
    assert fixed.grad is not None and torch.equal(fixed.grad, torch.full_like(fixed, 2.0))


def test_to_copy_is_named_with_its_line() -> None:
    with gradviz.watch() as w:
        base = torch.randn(3, requires_grad=True)
        moved = base.to(torch.float64)
        loss = moved.pow(2).sum()
    report = w.why_no_grad(moved, loss)
    assert report.cause == "copy" and "moved = base.to(torch.float64)" in report.message
    # the leaf itself is fine: its gradient arrives through the copy
    ok = w.why_no_grad(base, loss)
    assert ok.cause == "ok"
    loss.backward()
    assert base.grad is not None


@pytest.mark.parametrize("how", ["detach", "data"])
def test_detach_and_data_cut_the_graph(how: str) -> None:
    with gradviz.watch() as w:
        x = torch.randn(3, requires_grad=True)
        b = torch.randn(3, requires_grad=True)
        cut = x.detach() if how == "detach" else x.data
        loss = (cut * b).sum()
    assert_backward_leaves_none(x, loss)
    assert b.grad is not None  # the rest of the graph still works
    report = w.why_no_grad(x, loss)
    assert report.cause == "detach"
    assert report.cut is not None and report.cut.op.name == how
    assert report.line is not None and report.line.startswith("test_why_no_grad.py:")
    assert "cut = x.detach() if" in report.message
    dot = report.to_dot()
    assert f"op{report.cut.op.index}" in marked(dot)
    assert report.cut.tensor_in == w.find(x)


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_no_grad_block_is_the_cut(mode: str) -> None:
    block = torch.no_grad if mode == "no_grad" else torch.inference_mode
    with gradviz.watch() as w:
        x = torch.randn(3, requires_grad=True)
        b = torch.randn(3, requires_grad=True)
        with block():
            scaled = x * 2
        loss = (scaled.clone() * b).sum()
    assert_backward_leaves_none(x, loss)
    report = w.why_no_grad(x, loss)
    assert report.cause == "no_grad"
    assert report.cut is not None and "scaled = x * 2" in report.message
    # asked about the tensor made under no_grad itself: the same line
    own = w.why_no_grad(scaled, loss)
    assert own.cause == "no_grad" and "scaled = x * 2" in own.message
    assert not scaled.requires_grad


def test_integer_cast_is_the_cut() -> None:
    with gradviz.watch() as w:
        x = torch.randn(4, requires_grad=True)
        table = torch.randn(4, requires_grad=True)
        index = x.abs().mul(2).long().clamp(0, 3)
        loss = table[index].sum()
    assert_backward_leaves_none(x, loss)
    assert table.grad is not None
    report = w.why_no_grad(x, loss)
    assert report.cause == "integer"
    assert report.cut is not None and report.cut.op.name == "long"
    assert "int64" in report.message and "index = x.abs()" in report.message
    own = w.why_no_grad(index, loss)
    assert own.cause == "integer"
    plain = gradviz.why_no_grad(index, loss, name="index")
    assert plain.cause == "integer" and "int64" in plain.message


def test_not_used_by_the_root() -> None:
    with gradviz.watch() as w:
        unused = torch.randn(3, requires_grad=True)
        y = torch.randn(3, requires_grad=True)
        loss = (y * 3).sum()
    assert_backward_leaves_none(unused, loss)
    report = w.why_no_grad(unused, loss)
    assert report.cause == "not_used" and "unused" in report.message
    assert report.cut is None
    plain = gradviz.why_no_grad(unused, loss)
    assert plain.cause == "not_used" and "gradviz.watch()" in plain.message


def test_requires_grad_false() -> None:
    with gradviz.watch() as w:
        const = torch.randn(3)
        y = torch.randn(3, requires_grad=True)
        loss = (y * const).sum()
    assert_backward_leaves_none(const, loss)
    for report in (w.why_no_grad(const, loss), gradviz.why_no_grad(const, loss)):
        assert report.cause == "requires_grad_false"
        assert "requires_grad=True" in report.fix


def test_requires_grad_switched_off_names_the_line() -> None:
    with gradviz.watch() as w:
        p = torch.randn(3, requires_grad=True)
        p.requires_grad = False
        y = torch.randn(3, requires_grad=True)
        loss = (y * p).sum()
    assert_backward_leaves_none(p, loss)
    report = w.why_no_grad(p, loss)
    assert report.cause == "requires_grad_false"
    assert "p.requires_grad = False" in report.message


def test_ok_leaf_in_a_module_and_gradients_unchanged() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    data = torch.randn(5, 3)
    with gradviz.watch(model) as w:
        loss = model(data).sum()
    report = w.why_no_grad(model[0].weight, loss)
    assert report.cause == "ok"
    leaf = report.graph.node(report.path[-1])
    assert leaf.is_accumulate_grad and leaf.torch_node.variable is model[0].weight
    expected = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
    loss.backward()
    for param, grad in zip(model.parameters(), expected, strict=True):
        assert torch.equal(param.grad, grad)  # asking changed nothing


def test_bad_input_is_a_clear_error() -> None:
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(NotOnGraph, match="not a tensor"):
        gradviz.why_no_grad([1.0], x.sum())  # type: ignore[arg-type]
    with pytest.raises(NotOnGraph, match="requires_grad=False"):
        gradviz.why_no_grad(x, torch.ones(()))


def test_hostile_names_stay_escaped() -> None:
    x = torch.randn(3, requires_grad=True)
    h = x * 2
    report = gradviz.why_no_grad(h, h.sum(), name='<b>"h"</b> & {x}')
    dot = report.to_dot()
    assert '<b>"h"' not in dot


@pytest.mark.needs_dot
def test_svg_highlights_with_the_theme_colour() -> None:
    with gradviz.watch() as w:
        x = torch.randn(3, requires_grad=True)
        loss = (x.detach() * torch.randn(3, requires_grad=True)).sum()
    report = w.why_no_grad(x, loss)
    for theme in ("default", "dark"):
        if theme not in gradviz.THEMES:
            continue
        colour = gradviz.THEMES[theme].step.active_border
        svg = report.svg(theme=theme)
        assert re.search(r'class="[^"]*gv_marked', svg)
        assert colour.lower() in svg.lower()


@pytest.mark.needs_dot
def test_save(tmp_path: object) -> None:
    from pathlib import Path

    x = torch.randn(3, requires_grad=True)
    h = x.sin()
    saved = gradviz.why_no_grad(h, h.sum(), name="h").save(Path(str(tmp_path)) / "why.svg")
    assert saved.read_text(encoding="utf-8").lstrip().startswith(("<?xml", "<svg", "<!--"))
