"""The live facts ``why_no_grad`` needs about a tensor and a root's traced graph.

Reading ``requires_grad``, ``is_leaf``, ``retains_grad`` and the tensor's gradient edge
needs the live tensor; everything after that works on plain data
(``gradviz.analysis.nograd``, a layer above).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gradviz.capture import _autograd
from gradviz.errors import InvalidArgument, NotOnGraph
from gradviz.model.graph import Graph
from gradviz.model.summarize import dtype_name

__all__ = ["GradFacts", "check_tensor", "gradient_facts"]


@dataclass(frozen=True)
class GradFacts:
    """What the live tensor and the root's backward graph say, as plain data."""

    label: str
    requires_grad: bool
    is_leaf: bool
    retains_grad: bool
    dtype: str
    grad_fn: str | None
    node_id: str | None  # its node in the root's graph (grad_fn, or AccumulateGrad)
    root_node_id: str | None
    record_id: str | None  # its tensor record in the graph, when drawn
    copied_leaf: bool = False  # grad_fn is a copy whose only input is a leaf's AccumulateGrad
    forward_id: str | None = None  # under watch(): its forward tensor
    root_forward_id: str | None = None


def check_tensor(tensor: object, what: str) -> torch.Tensor:
    """``why_no_grad`` takes tensors; say so instead of failing deep inside."""
    if not isinstance(tensor, torch.Tensor):
        raise NotOnGraph(
            f"why_no_grad: the {what} is a {type(tensor).__name__}, not a tensor. Pass the "
            "tensor whose .grad is None and the tensor you call backward() on, e.g. "
            "gradviz.why_no_grad(w, loss)."
        )
    if _autograd.in_function_transform(tensor):
        raise InvalidArgument(
            f"why_no_grad: the {what} is a tensor of a torch.func transform (inside vmap, "
            "grad, jacrev, ...), which keeps the history of its tensors to itself: gradviz "
            "cannot read it there. Call gradviz.why_no_grad outside the transform, on the "
            "same computation run without it (e.g. for one sample instead of vmap's batch)."
        )
    return tensor


def gradient_facts(
    graph: Graph,
    tensor: torch.Tensor,
    root: torch.Tensor,
    label: str,
    forward_id: str | None = None,
    root_forward_id: str | None = None,
) -> GradFacts:
    """Where the tensor's gradient would land in ``graph`` (the root's traced graph)."""
    by_torch = {id(n.torch_node): n.id for n in graph.nodes if n.torch_node is not None}
    node_id = None
    copied_leaf = False
    if tensor.requires_grad:
        node, _ = _autograd.gradient_edge(tensor)
        found = by_torch.get(id(node))
        if found is not None and graph.node(found).torch_node is node:
            node_id = found
        if tensor.grad_fn is not None:
            inputs = [n for n, _ in _autograd.next_functions(tensor.grad_fn) if n is not None]
            copied_leaf = (
                type(tensor.grad_fn).__name__ == "ToCopyBackward0"
                and len(inputs) == 1
                and _autograd.is_accumulate_grad(inputs[0])
            )
    root_node, _ = _autograd.gradient_edge(root)
    root_id = by_torch.get(id(root_node))
    record_id = next((r.id for r in graph.tensors if r.tensor is tensor), None)
    return GradFacts(
        label=label,
        requires_grad=tensor.requires_grad,
        is_leaf=tensor.is_leaf,
        retains_grad=bool(tensor.retains_grad),
        dtype=dtype_name(tensor.dtype),
        grad_fn=None if tensor.grad_fn is None else type(tensor.grad_fn).__name__,
        node_id=node_id,
        root_node_id=root_id,
        record_id=record_id,
        copied_leaf=copied_leaf,
        forward_id=forward_id,
        root_forward_id=root_forward_id,
    )
