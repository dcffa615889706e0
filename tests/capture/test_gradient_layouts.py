"""Every layout a gradient can have: ``record()`` runs the backward unchanged (the leaves'
``.grad`` bitwise a plain backward's), and every summary of the recording reads (a layout
gradviz cannot summarise gets a placeholder, never an exception).

The layouts: a ZeroTensor (``torch.sgn`` of a real tensor sends one), sparse COO, CSR, CSC,
BSR and BSC gradients, conjugate and negative views, nested tensors (strided and jagged),
tensor subclasses (a plain subclass and a ``__torch_dispatch__`` wrapper), meta tensors.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator

import pytest
import torch
from torch.testing._internal.two_tensor import TwoTensor

import gradviz
from gradviz.escape import json_text
from gradviz.model.recording import GradValue, short_text, value_text
from gradviz.model.summarize import summarize

Make = Callable[[], tuple[torch.Tensor, list[torch.Tensor]]]


class Marked(torch.Tensor):
    """A plain tensor subclass (no ``__torch_function__`` override of its own)."""


def zero_tensor() -> tuple[torch.Tensor, list[torch.Tensor]]:
    """``sgn``'s backward of a real tensor sends an efficient ZeroTensor (no storage)."""
    x = torch.randn(20, requires_grad=True)
    return (torch.sgn(x) * x).sum(), [x]


def embedding_coo() -> tuple[torch.Tensor, list[torch.Tensor]]:
    embedding = torch.nn.Embedding(30, 4, sparse=True)
    return embedding(torch.tensor([1, 2, 1, 7])).square().sum(), [embedding.weight]


def through(layout: Callable[[torch.Tensor], torch.Tensor]) -> Make:
    """A dense leaf made sparse and back: the gradients between are of that layout."""

    def make() -> tuple[torch.Tensor, list[torch.Tensor]]:
        x = torch.randn(6, 6, requires_grad=True)
        weights = torch.arange(36.0).view(6, 6)
        return ((layout(x) * 3.0).to_dense() * weights).sum(), [x]

    return make


def sparse_csr_leaf() -> tuple[torch.Tensor, list[torch.Tensor]]:
    x = torch.randn(6, 6).to_sparse_csr().requires_grad_()
    w = torch.randn(6, 3, requires_grad=True)
    return torch.sparse.mm(x, w).square().sum(), [w]


def conjugate() -> tuple[torch.Tensor, list[torch.Tensor]]:
    x = torch.randn(20, dtype=torch.complex64, requires_grad=True)
    return (x.conj() * torch.arange(20.0)).abs().sum(), [x]


def negative() -> tuple[torch.Tensor, list[torch.Tensor]]:
    """``conj().imag`` is a negative view; its gradient flows through one."""
    x = torch.randn(20, dtype=torch.complex64, requires_grad=True)
    return (x.conj().imag * torch.arange(20.0)).sum(), [x]


def seeded(make_gradient: Callable[[], torch.Tensor], complex_root: bool) -> Make:
    """The user's ``gradient=`` is the view itself: it flows on unresolved."""

    def make() -> tuple[torch.Tensor, list[torch.Tensor]]:
        dtype = torch.complex64 if complex_root else torch.float32
        x = torch.randn(20, dtype=dtype, requires_grad=True)
        return x * 3.0, [x]

    make.gradient = make_gradient  # type: ignore[attr-defined]
    return make


def conjugate_seed() -> torch.Tensor:
    view = torch.randn(20, dtype=torch.complex64).conj()
    assert view.is_conj()
    return view


def negative_seed() -> torch.Tensor:
    view = torch.randn(20, dtype=torch.complex64).conj().imag
    assert view.is_neg()
    return view


def nested(layout: torch.layout) -> Make:
    def make() -> tuple[torch.Tensor, list[torch.Tensor]]:
        a = torch.randn(2, 3, requires_grad=True)
        b = torch.randn(4, 3, requires_grad=True)
        joined = torch.nested.as_nested_tensor([a, b], layout=layout)
        doubled = joined * 2.0
        if layout == torch.jagged:
            return doubled.values().square().sum(), [a, b]
        return doubled.to_padded_tensor(0.0).square().sum(), [a, b]

    return make


def subclass() -> tuple[torch.Tensor, list[torch.Tensor]]:
    x = torch.randn(20).as_subclass(Marked).requires_grad_()
    return (x * x).sum(), [x]


def wrapper_subclass() -> tuple[torch.Tensor, list[torch.Tensor]]:
    """A ``__torch_dispatch__`` wrapper: no storage of its own, no ``tolist()``."""
    x = TwoTensor(torch.randn(20), torch.randn(20)).requires_grad_()
    return (x * x).sum(), [x]


def meta() -> tuple[torch.Tensor, list[torch.Tensor]]:
    x = torch.randn(20, device="meta", requires_grad=True)
    return (torch.sgn(x) * x * x).sum(), [x]


CASES: dict[str, Make] = {
    "zerotensor": zero_tensor,
    "sparse_coo": embedding_coo,
    "sparse_coo_view": through(lambda t: t.to_sparse()),
    "sparse_csr": through(lambda t: t.to_sparse_csr()),
    "sparse_csc": through(lambda t: t.to_sparse_csc()),
    "sparse_bsr": through(lambda t: t.to_sparse_bsr((2, 2))),
    "sparse_bsc": through(lambda t: t.to_sparse_bsc((3, 3))),
    "sparse_csr_leaf": sparse_csr_leaf,
    "conjugate": conjugate,
    "negative": negative,
    "conjugate_seed": seeded(conjugate_seed, complex_root=True),
    "negative_seed": seeded(negative_seed, complex_root=False),
    "nested_strided": nested(torch.strided),
    "nested_jagged": nested(torch.jagged),
    "subclass": subclass,
    "wrapper_subclass": wrapper_subclass,
    "meta": meta,
}


def build(make: Make) -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor | None]:
    """The root, the leaves and the ``gradient=`` (None: the engine's ones)."""
    torch.manual_seed(11)
    with warnings.catch_warnings():  # sparse CSR and nested tensors are "beta"
        warnings.simplefilter("ignore", UserWarning)
        root, leaves = make()
        gradient = getattr(make, "gradient", None)
        return root, leaves, None if gradient is None else gradient()


def parts(grad: torch.Tensor) -> list[torch.Tensor]:
    """Dense plain tensors that hold all of ``grad``, to compare bit for bit."""
    if isinstance(grad, TwoTensor):
        return [*parts(grad.a), *parts(grad.b)]
    if grad.is_nested:
        return [part for piece in grad.unbind() for part in parts(piece)]
    if grad.layout != torch.strided:
        return parts(grad.to_dense())
    plain = grad.as_subclass(torch.Tensor) if type(grad) is not torch.Tensor else grad
    if plain.is_conj() or plain.is_neg():
        plain = plain.resolve_conj().resolve_neg()
    if plain.is_complex():
        plain = torch.view_as_real(plain)
    return [plain]


def assert_same_grad(mine: torch.Tensor | None, plain: torch.Tensor | None) -> None:
    assert (mine is None) == (plain is None)
    if mine is None or plain is None:
        return
    assert type(mine) is type(plain)
    assert (mine.layout, mine.dtype, mine.device) == (plain.layout, plain.dtype, plain.device)
    assert mine.shape == plain.shape
    if mine.is_meta:
        return
    for a, b in zip(parts(mine), parts(plain), strict=True):
        # bitwise: the same bits, NaN and signed zeros included
        assert a.shape == b.shape and a.dtype == b.dtype
        assert torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def kept_values(recording: gradviz.Recording) -> Iterator[GradValue]:
    yield from recording.seeds.values()
    for step in recording.steps:
        for value in (*step.grad_outputs, *step.grad_inputs, step.leaf_grad_after):
            if value is not None:
                yield value


def read_every_summary(recording: gradviz.Recording) -> None:
    """What pages, JSON and the stepper read of a recording: none may raise."""
    json_text(recording.to_dict())  # plain numbers only: a ragged size is none
    for value in kept_values(recording):
        value_text(value)
        short_text(value)
    recording.health()
    recording.memory()
    recording.frames()
    repr(recording)


@pytest.mark.parametrize("keep", ["all", "summary"])
@pytest.mark.parametrize("case", CASES)
def test_record_keeps_every_layout_unchanged(case: str, keep: str) -> None:
    root, leaves, gradient = build(CASES[case])
    root.backward(gradient)
    plain = [leaf.grad for leaf in leaves]

    root, leaves, gradient = build(CASES[case])
    recording = gradviz.record(root, gradient=gradient, keep=keep)  # type: ignore[arg-type]
    for leaf, expected in zip(leaves, plain, strict=True):
        assert_same_grad(leaf.grad, expected)
    assert len(recording.steps) == len(recording.graph.nodes)
    read_every_summary(recording)


def test_zerotensor_gradient_is_kept_as_zeros() -> None:
    """What ``sgn`` sends is zeros: the recording says so (not a placeholder)."""
    root, _, _ = build(zero_tensor)
    recording = gradviz.record(root, keep="all")
    sgn = next(s for s in recording.steps if s.type_name == "SgnBackward0")
    summary = summarize(sgn.grad_inputs[0])  # type: ignore[arg-type]
    assert summary.available and summary.min == summary.max == 0.0


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(lambda: torch.randn(5, 4).to_sparse_bsr((1, 2)), id="bsr"),
        pytest.param(
            lambda: torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]), id="nested"
        ),
        pytest.param(lambda: TwoTensor(torch.ones(30), torch.ones(30)), id="wrapper_subclass"),
        pytest.param(lambda: torch._efficientzerotensor(30), id="zerotensor"),
    ],
)
def test_summaries_of_unusual_layouts_never_raise(value: Callable[[], torch.Tensor]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        tensor = value()
    summary = summarize(tensor)
    assert summary.text()  # a placeholder at worst, never an exception
