"""record() reads every node's saved values in one pass (``_autograd.read_saved``) and
shares the frozen ``SavedValue`` objects whose text follows from a name and a dtype and
shape or a repr. The result must equal the per-attribute reading it replaced: the
``saved_values``/``checkpointed``/``reentrant_checkpoint`` functions and ``_saved_value``."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch.utils.checkpoint import checkpoint

import gradviz
from gradviz.capture import _autograd
from gradviz.capture.trace import _saved_value
from gradviz.model.graph import Graph, SavedValue
from tests.support.models import MODELS


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)  # type: ignore[attr-defined]
        return x * x

    @staticmethod
    def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors  # type: ignore[attr-defined]
        return 2 * x * grad


def _deep_mlp() -> torch.Tensor:
    torch.manual_seed(3)
    layers = [torch.nn.Linear(80, 80) for _ in range(4)]  # repeated names and shapes
    h = torch.randn(3, 80)
    for layer in layers:
        h = layer(h).relu()
    return Square.apply(h).mean()  # type: ignore[no-any-return]


def _checkpointed(reentrant: bool) -> Callable[[], torch.Tensor]:
    def build() -> torch.Tensor:
        torch.manual_seed(4)
        w = torch.randn(8, 8, requires_grad=True)
        x = torch.randn(4, 8, requires_grad=True)
        inner = checkpoint(lambda a, b: (a @ b).tanh() * a, x, w, use_reentrant=reentrant)
        return (inner @ w).sin().sum()

    return build


def _user_hooks() -> torch.Tensor:
    torch.manual_seed(5)
    w = torch.randn(100, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
        return (w.exp() * w).sum()


BUILDS: dict[str, Callable[[], torch.Tensor]] = {
    **{name: (lambda build=build: build()[0]) for name, build in MODELS.items()},
    "deep mlp + custom Function": _deep_mlp,
    "checkpoint": _checkpointed(False),
    "reentrant checkpoint": _checkpointed(True),
    "user saved-tensor hooks": _user_hooks,
}


def _eager(torch_node: object) -> tuple[tuple[SavedValue, ...], bool, bool, bool]:
    values, freed = _autograd.saved_values(torch_node)
    texts = tuple(_saved_value(name, value) for name, value in values)
    return (
        texts,
        freed,
        _autograd.checkpointed(torch_node),
        _autograd.reentrant_checkpoint(torch_node),
    )


def _fused(torch_node: object) -> tuple[list[tuple[str, object]], bool, bool, bool]:
    return _autograd.read_saved(torch_node)


@pytest.mark.parametrize("name", list(BUILDS))
def test_one_pass_read_equals_the_per_attribute_read(name: str) -> None:
    loss = BUILDS[name]()
    graph: Graph = gradviz.trace(loss)
    eager = [_eager(node.torch_node) for node in graph.nodes]
    for node, (texts, freed, in_checkpoint, reentrant) in zip(graph.nodes, eager, strict=True):
        values, fused_freed, fused_checkpoint, fused_reentrant = _fused(node.torch_node)
        assert (fused_freed, fused_checkpoint, fused_reentrant) == (
            freed,
            in_checkpoint,
            reentrant,
        )
        assert [n for n, _ in values] == [v.name for v in texts]
        assert node.saved == texts  # the reader's (shared) values equal fresh ones
        assert node.saved_freed == freed
    expected = tuple(
        node.id for node, facts in zip(graph.nodes, eager, strict=True) if facts[2] or facts[3]
    )
    assert graph.checkpointed == expected
    if "checkpoint" in name:
        assert expected  # the case is really checkpointed
    loss.backward()  # frees the saved values: both reads say so alike
    for node in graph.nodes:
        _, freed, in_checkpoint, reentrant = _eager(node.torch_node)
        assert _fused(node.torch_node)[1:] == (freed, in_checkpoint, reentrant)


def test_shared_saved_values_are_the_same_objects_for_repeated_layers() -> None:
    graph = gradviz.trace(_deep_mlp())
    addmm = [n for n in graph.nodes if n.type_name == "AddmmBackward0"]
    assert len(addmm) == 4
    seen: dict[tuple[str, str], SavedValue] = {}
    shared = 0
    for node in addmm:
        for value in node.saved:
            if value.summary is None and value.text != "()":  # texts only: one object each
                first = seen.setdefault((value.name, value.text), value)
                assert value is first
                shared += first is not value or node is not addmm[0]
    assert shared >= 3 * 3  # mat2 (a big weight), sizes, strides of the three later layers


@pytest.mark.parametrize("name", ["deep mlp + custom Function", "checkpoint"])
def test_record_reads_the_same_saved_values_as_the_per_attribute_read(name: str) -> None:
    loss = BUILDS[name]()
    recording = gradviz.record(loss, retain_graph=True)  # kept: read again below
    for node in recording.graph.nodes:
        texts, freed, _, _ = _eager(node.torch_node)
        assert node.saved == texts and node.saved_freed == freed is False
