"""``record()``'s arguments, checked before anything runs: a wrong ``gradient=``,
``inputs=``, ``keep=`` or ``memory_budget=`` gets an ``InvalidArgument`` saying what to pass,
never an error from inside the backward that would be blamed on a hook."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from gradviz.errors import InvalidArgument

__all__ = ["InputTensors", "TensorOrTensors", "as_tuple", "check_options", "input_list", "seeds"]

TensorOrTensors = torch.Tensor | Sequence[torch.Tensor]
InputTensors = torch.Tensor | Iterable[torch.Tensor]


def as_tuple(value: TensorOrTensors) -> tuple[torch.Tensor, ...]:
    if isinstance(value, torch.Tensor):
        return (value,)
    return tuple(value)


def check_options(keep: object, memory_budget: object) -> None:
    """Bad options fail here, before any hook exists, not as a failure inside backward."""
    if keep not in ("auto", "all", "summary"):
        raise InvalidArgument(f"keep must be 'auto', 'all' or 'summary', not {keep!r}")
    if memory_budget is not None and (
        isinstance(memory_budget, bool) or not isinstance(memory_budget, int) or memory_budget < 0
    ):
        raise InvalidArgument(
            f"memory_budget must be a number of bytes (an int >= 0, e.g. 2**30) or None, "
            f"not {memory_budget!r}"
        )


def input_list(inputs: InputTensors, argument: str) -> tuple[torch.Tensor, ...]:
    """``inputs`` read once (``model.parameters()`` is a generator), each checked."""
    tensors = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
    if not tensors:
        raise InvalidArgument(f"{argument}= is empty: give the tensors to compute gradients for")
    for index, tensor in enumerate(tensors):
        if not isinstance(tensor, torch.Tensor):
            raise InvalidArgument(
                f"{argument}[{index}] is a {type(tensor).__name__}, not a tensor; {argument}= "
                "takes the tensors to compute gradients for"
            )
        if not tensor.requires_grad:
            raise InvalidArgument(
                f"{argument}[{index}] (shape {tuple(tensor.shape)}) does not require grad: "
                "autograd cannot compute a gradient for it"
            )
    return tensors


def seeds(
    roots: tuple[torch.Tensor, ...], gradient: TensorOrTensors | None, argument: str
) -> tuple[torch.Tensor, ...]:
    """The gradients entering the roots: as given, or 1 for scalar roots (as PyTorch does).

    Checked as PyTorch checks them, but here: failing inside the engine, before any node
    ran, would read as a failure of some hook."""
    given: tuple[object, ...]
    if gradient is None:
        given = (None,) * len(roots)
    elif isinstance(gradient, torch.Tensor):
        given = (gradient,)
    elif isinstance(gradient, Sequence) and not isinstance(gradient, str):
        given = tuple(gradient)
    else:
        raise InvalidArgument(
            f"{argument}= takes a tensor or a sequence of tensors (one per root), "
            f"not a {type(gradient).__name__}"
        )
    if len(given) != len(roots):
        raise InvalidArgument(
            f"got {len(given)} gradients for {len(roots)} roots; give one per root"
        )
    seeds: list[torch.Tensor] = []
    for index, (root, grad) in enumerate(zip(roots, given, strict=True)):
        if grad is None:
            if root.numel() != 1:
                raise InvalidArgument(
                    f"root {index} has shape {tuple(root.shape)}: a non-scalar root needs "
                    "gradient= (e.g. gradient=torch.ones_like(root)), as in tensor.backward()"
                )
            grad = torch.ones_like(root, memory_format=torch.preserve_format)
        seeds.append(checked_seed(index, root, grad, argument))
    return tuple(seeds)


def checked_seed(index: int, root: torch.Tensor, grad: object, argument: str) -> torch.Tensor:
    where = f"{argument} for root {index}"
    if not isinstance(grad, torch.Tensor):
        raise InvalidArgument(f"{where} is a {type(grad).__name__}, not a tensor")
    if grad.shape != root.shape:
        raise InvalidArgument(
            f"{where} has shape {tuple(grad.shape)}, but the root has shape "
            f"{tuple(root.shape)}: give a gradient of the root's shape "
            "(e.g. torch.ones_like(root))"
        )
    if grad.is_complex() != root.is_complex():
        kinds = {True: "complex", False: "real"}
        raise InvalidArgument(
            f"{where} is {kinds[grad.is_complex()]}, but the root is "
            f"{kinds[root.is_complex()]}: give a gradient of the root's kind"
        )
    if grad.device != root.device:
        raise InvalidArgument(
            f"{where} is on {grad.device}, but the root is on {root.device}: move it there"
        )
    return grad
