"""What ``watch()`` notes of each op it sees: its name, its tensors' roles, versions and
small summaries, and its Python scalars as text. Cheap by design: it runs on every op."""

from __future__ import annotations

from typing import Any

import torch

from gradviz.model.forward import Arg
from gradviz.model.summarize import SMALL_NUMEL, dtype_name, summarize
from gradviz.model.values import Role, Summary

__all__ = [
    "arguments",
    "cheap_summary",
    "flat_tensors",
    "grad_fn",
    "grad_of",
    "is_leaf",
    "op_name",
    "role",
    "scalar_text",
    "state_key",
    "version",
]


def version(tensor: torch.Tensor) -> int | None:
    try:
        return int(tensor._version)
    except RuntimeError:  # inference tensors track no version
        return None


def grad_fn(tensor: torch.Tensor) -> Any:
    """``tensor.grad_fn``, or None where PyTorch refuses to say: reading it raises for a view
    made under ``no_grad()`` whose base was then changed in place (``h[1:].zero_()``)."""
    try:
        return tensor.grad_fn
    except RuntimeError:
        return None


def is_leaf(tensor: torch.Tensor) -> bool:
    """``tensor.is_leaf``; False for the view ``grad_fn`` cannot read (it has a base)."""
    try:
        return bool(tensor.is_leaf)
    except RuntimeError:
        return False


def grad_of(tensor: torch.Tensor, leaf: bool) -> torch.Tensor | None:
    """``tensor.grad`` where autograd can fill it (a leaf, or a tensor that retains its
    grad); None elsewhere without reading it: reading a non-leaf's ``.grad`` warns."""
    if not leaf and not tensor.retains_grad:
        return None
    return tensor.grad


StateKey = tuple[bool, bool, int | None, str | None, tuple[int, int | None] | None]


def state_key(tensor: torch.Tensor) -> StateKey:
    """What a forward frame draws of a tensor, cheaply: requires_grad, is_leaf, version,
    grad_fn's type name and which ``.grad`` (its identity and version). Equal keys: the
    drawing is the same (values change only with the version, or where ``watch()`` saw a
    ``.data`` change)."""
    leaf = is_leaf(tensor)
    node = grad_fn(tensor)
    grad = grad_of(tensor, leaf)
    return (
        tensor.requires_grad,
        leaf,
        version(tensor),
        None if node is None else type(node).__name__,
        None if grad is None else (id(grad), version(grad)),
    )


def role(tensor: torch.Tensor) -> Role:
    if not tensor.requires_grad:
        return Role.CONSTANT
    return Role.LEAF if is_leaf(tensor) else Role.BRANCH


_SHAPES: dict[tuple[tuple[int, ...], torch.dtype], Summary] = {}  # shape-only summaries


def cheap_summary(tensor: torch.Tensor) -> Summary | None:
    """Every value of a small tensor; of a bigger one, its shape and dtype only. The
    shape-only summary is immutable and the same for every tensor of that shape and dtype:
    made once (``watch()`` asks for one per tensor it sees)."""
    try:
        numel = tensor.numel()
        if numel <= SMALL_NUMEL:
            return summarize(tensor)
        key = (tuple(tensor.shape), tensor.dtype)
        found = _SHAPES.get(key)
        if found is None:
            if len(_SHAPES) > 4096:
                _SHAPES.clear()
            found = _SHAPES[key] = Summary(key[0], dtype_name(key[1]), numel, (), False)
        return found
    except RuntimeError:
        return None


def flat_tensors(value: object) -> list[torch.Tensor]:
    """The tensors in ``value``, in order, through nested tuples and lists."""
    if isinstance(value, torch.Tensor):
        return [value]
    if not isinstance(value, tuple | list):
        return []
    found: list[torch.Tensor] = []
    for item in value:
        if isinstance(item, torch.Tensor):
            found.append(item)
        elif isinstance(item, tuple | list):
            found += flat_tensors(item)
    return found


def scalar_text(value: object) -> tuple[bool | int | float | str | None, str]:
    if isinstance(value, bool | int | float):
        return value, repr(value)
    text = repr(value)
    return None, text if len(text) <= 40 else text[:37] + "..."


def op_name(func: Any) -> str:
    """``mul``, ``add_``, ``__setitem__``, ...: the name the op has in Python."""
    return str(getattr(func, "__name__", None) or repr(func))


def arguments(
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    input_ids: list[str],
    before: list[int | None],
) -> list[Arg]:
    """The op's arguments in order: each tensor by id with its version before the op (the
    op's ``inputs`` list these tensors in the same order), each other value as text."""
    out: list[Arg] = []
    cursor = 0
    for position, value in [*((str(i), v) for i, v in enumerate(args)), *kwargs.items()]:
        if isinstance(value, torch.Tensor):
            out.append(Arg(position, tensor=input_ids[cursor], version=before[cursor]))
            cursor += 1
            continue
        count = len(flat_tensors(value)) if isinstance(value, tuple | list) else 0
        if count:
            text = position if count == 1 else f"{position}[]"
            for offset in range(cursor, cursor + count):
                out.append(Arg(text, tensor=input_ids[offset], version=before[offset]))
            cursor += count
        else:
            scalar, text = scalar_text(value)
            out.append(Arg(position, value=scalar, text=text))
    return out
