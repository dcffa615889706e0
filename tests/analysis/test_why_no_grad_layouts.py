"""``why_no_grad`` on a sparse or nested leaf gives the answer a plain backward confirms,
and inside a ``torch.func`` transform a gradviz error that says to call it outside."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest
import torch

import gradviz
from gradviz.errors import GradvizError


def quietly(make: Callable[[], torch.Tensor]) -> torch.Tensor:
    with warnings.catch_warnings():  # sparse CSR and nested tensors are "beta"
        warnings.simplefilter("ignore", UserWarning)
        return make()


LEAVES: dict[str, Callable[[], torch.Tensor]] = {
    "sparse_coo": lambda: torch.randn(4, 3).to_sparse().requires_grad_(),
    "sparse_csr": lambda: torch.randn(4, 3).to_sparse_csr().requires_grad_(),
    "nested": lambda: torch.nested.nested_tensor(
        [torch.randn(2, 3), torch.randn(4, 3)], requires_grad=True
    ),
}


def used(leaf: torch.Tensor) -> torch.Tensor:
    if leaf.is_nested:
        return (leaf * 2.0).to_padded_tensor(0.0).sum()
    return (leaf.to_dense() * 2.0).sum()


@pytest.mark.parametrize("kind", LEAVES)
def test_a_reached_leaf_gets_its_grad(kind: str) -> None:
    leaf = quietly(LEAVES[kind])
    root = quietly(lambda: used(leaf))
    report = gradviz.why_no_grad(leaf, root, name="s")
    assert report.cause == "ok", report.message
    assert report.path  # the path from the root to the leaf's AccumulateGrad
    root.backward()
    assert leaf.grad is not None


@pytest.mark.parametrize("kind", LEAVES)
def test_an_unused_leaf_is_not_used(kind: str) -> None:
    leaf = quietly(LEAVES[kind])
    other = torch.randn(3, requires_grad=True)
    root = (other * 2.0).sum()
    report = gradviz.why_no_grad(leaf, root, name="s")
    assert report.cause == "not_used", report.message
    root.backward()
    assert leaf.grad is None


def test_a_nested_tensor_made_from_leaves_is_a_non_leaf() -> None:
    a = torch.randn(2, 3, requires_grad=True)
    b = torch.randn(4, 3, requires_grad=True)
    joined = quietly(lambda: torch.nested.as_nested_tensor([a, b]))
    root = (joined * 2.0).to_padded_tensor(0.0).sum()
    report = gradviz.why_no_grad(joined, root, name="joined")
    assert report.cause == "non_leaf", report.message


def test_inside_vmap_says_to_call_it_outside() -> None:
    w = torch.randn(3, requires_grad=True)
    errors: list[Exception] = []

    def per_sample(x: torch.Tensor) -> torch.Tensor:
        y = (x * w).sum()
        for tensor, root in [(w, y), (x, y)]:
            try:
                gradviz.why_no_grad(tensor, root)
            except Exception as error:  # checked below
                errors.append(error)
        return y

    torch.func.vmap(per_sample)(torch.randn(4, 3))
    assert len(errors) == 2
    for error in errors:
        assert isinstance(error, GradvizError)
        assert "torch.func transform" in str(error) and "outside" in str(error)


def test_trace_inside_vmap_names_the_transform() -> None:
    w = torch.randn(3, requires_grad=True)
    errors: list[Exception] = []

    def per_sample(x: torch.Tensor) -> torch.Tensor:
        y = (x * w).sum()
        try:
            gradviz.trace(y)
        except gradviz.NotOnGraph as error:
            errors.append(error)
        return y

    torch.func.vmap(per_sample)(torch.randn(4, 3))
    assert len(errors) == 1 and "torch.func transform" in str(errors[0])
