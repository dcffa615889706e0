"""The model zoo (tests/support/zoo.py): on every architecture, gradviz changes no
gradient (bitwise, watched and recorded against a plain run) and the page's first view
follows its rule: at most ``MAX_THINGS`` things; where module boxes are drawn, at least
``MIN_THINGS`` and no box holding more than half of the backward nodes.

The hand-built models need torch alone and always run; the library-built ones run where
``make bench``'s ``bench`` dependency group is installed, and are skipped elsewhere."""

from __future__ import annotations

import pytest
import torch

import gradviz
from gradviz.render.frontier import MAX_THINGS, MIN_THINGS, auto_frontier
from gradviz.stepper.page import available_views, default_view
from tests.support.zoo import ZOO, ZooModel, first_view

pytestmark = [pytest.mark.slow, pytest.mark.needs_dot]


def _grads(model: torch.nn.Module) -> list[torch.Tensor | None]:
    return [p.grad for p in model.parameters()]


@pytest.mark.parametrize("entry", ZOO, ids=[m.name for m in ZOO])
def test_zoo_gradients_are_bitwise_those_of_plain_torch_and_the_first_view_reads(
    entry: ZooModel,
) -> None:
    if not entry.available():
        pytest.skip(f"{entry.library} is not installed (make bench installs the bench group)")
    model, loss_of = entry.build()
    torch.manual_seed(1)  # dropout draws the same masks in both runs
    loss_of().backward()
    plain = _grads(model)

    model, loss_of = entry.build()
    torch.manual_seed(1)
    with gradviz.watch(model) as w:
        loss = loss_of()
    rec = w.record(loss)
    watched = _grads(model)
    assert len(watched) == len(plain)
    for got, want in zip(watched, plain, strict=True):
        assert (got is None) == (want is None)
        if got is not None and want is not None:
            assert got.dtype == want.dtype and torch.equal(got, want)

    graph = rec.graph
    view = default_view(rec, available_views(rec))
    things, biggest = first_view(rec, view)
    assert things <= MAX_THINGS, (view, things)
    if auto_frontier(graph):  # boxes are drawn: enough of them, none holding most
        assert view == "collapsed-auto"
        assert things >= MIN_THINGS, (view, things)
        assert biggest * 2 <= len(graph.nodes), (biggest, len(graph.nodes))


def test_the_zoo_has_every_architecture_the_bench_needs() -> None:
    """Twelve or more architectures, among them those that run with torch alone."""
    names = {m.name for m in ZOO}
    assert len(names) == len(ZOO) >= 12
    hand = {m.name for m in ZOO if m.library == "torch"}
    assert hand == {"moe", "gnn", "checkpoint-fn", "s4d", "lstm-lm"}
    assert {"vit", "convnext", "bert", "t5", "llama-24", "unet", "mixtral", "mamba"} <= names
