"""``keep="all"`` by reference: after the backward, the gradients ``.grad`` took over.

``record()`` keeps the gradients on their way as detached aliases where nothing can change
them during the backward (``gradviz.capture.hooks``). ``AccumulateGrad`` may still have
moved one into a leaf's ``.grad`` (it does when nothing else holds the tensor itself), and
the user may change ``.grad`` in place later (clipping, ``zero_grad(set_to_none=False)``, a
second backward): those are copied here, once the backward is over, while they still hold
what flowed.
"""

from __future__ import annotations

import torch

from gradviz.capture.hooks import by_reference_safe
from gradviz.model.graph import Graph
from gradviz.model.summarize import dtype_name, plain_values

__all__ = ["memory_of", "references_safe", "shareable", "unshare"]


def memory_of(tensor: torch.Tensor) -> int:
    """Where the tensor's memory starts (its storage's data pointer); 0 for a tensor with no
    memory of its own (a ZeroTensor, a wrapper subclass, a fake tensor) or none at all."""
    if not plain_values(tensor):  # a fake tensor's pointer is no memory (and torch warns)
        return 0
    try:
        return int(tensor.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):
        return 0


def shareable(value: torch.Tensor) -> bool:
    """Whether a gradient on its way may be kept by reference: a plain dense tensor (a
    sparse one takes other paths in AccumulateGrad when held) with memory of its own (a
    ZeroTensor, data pointer 0, is copied as the zeros it stands for)."""
    return (
        type(value) is torch.Tensor
        and value.layout == torch.strided
        and (value.data_ptr() != 0 or value.numel() == 0)
    )


def references_safe(graph: Graph) -> bool:
    """Whether no code of the user's that gradviz can see runs inside the backward with the
    gradients in hand: a tensor hook on a traced tensor (a root, a named one), a custom
    ``autograd.Function``, a leaf's hooks (``by_reference_safe``). Node hooks are found as
    gradviz registers its own."""
    if any(getattr(record.tensor, "_backward_hooks", None) for record in graph.tensors):
        return False
    return all(by_reference_safe(node) for node in graph.nodes)


def unshare(
    graph: Graph, shared: list[tuple[torch.Tensor, int]], user_memory: set[int]
) -> list[str]:
    """Give each of ``shared`` (an alias kept by reference, its ``_version`` then) that
    shares memory with a leaf's ``.grad`` or with ``user_memory`` (the data pointers of the
    user's ``gradient=`` tensors) a copy of that memory, one copy per memory (a
    gradient and its transpose stay one memory). ``alias.data = ...`` changes the alias
    itself, which the steps hold: nothing to replace there; and neither the alias's
    version counter (shared with ``.grad``) nor ``.grad`` changes.

    Returns what to report of the aliases changed in place during the backward: only a
    hook that breaks PyTorch's rule (return a new tensor, never change the argument) can."""
    changed: list[str] = []
    grads = set(user_memory)
    for node in graph.nodes:
        grad = None if node.leaf_tensor is None else node.leaf_tensor.grad
        if grad is not None and grad.layout == torch.strided:
            grads.add(memory_of(grad))
    grads.discard(0)  # no memory (empty tensors): nothing to share
    copies: dict[int, torch.UntypedStorage] = {}  # one copy per memory: views stay views
    for alias, version in shared:
        if alias._version != version:
            changed.append(f"{tuple(alias.shape)} {dtype_name(alias.dtype)}")
        storage = alias.untyped_storage()
        where = storage.data_ptr()
        if where in grads:
            copy = copies.get(where)
            if copy is None:
                copy = copies[where] = storage.clone()  # type: ignore[no-untyped-call]
            alias.data = torch.empty(0, dtype=alias.dtype).set_(
                copy, alias.storage_offset(), alias.size(), alias.stride()
            )
    shared.clear()
    if not changed:
        return []
    return [
        f"a hook changed gradients in place ({', '.join(changed[:3])}) after gradviz kept "
        "them by reference: they show the changed values (a hook must return a new tensor, "
        "not change its argument)"
    ]
