"""Which saved tensors outlive the graph because the user's code still holds them.

A node saves an input batch (``x`` of ``model(x)``) as the tensor itself: freeing the graph
drops the graph's reference, but the batch stays alive in the user's variable, so its bytes
are not freed (as a weight's are not). A tensor made inside the forward without a
``grad_fn`` (``x * 2`` of a batch, a dropout of it) is held by the graph alone and is freed
with it. PyTorch hands back the very Python object the user holds, so the two differ by
the references to that object; what the reading itself costs (the list the values come in,
the loop) is measured once on a probe read the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Container, Sequence

import torch

from gradviz.capture._autograd import read_saved

__all__ = ["held_outside"]

_BASELINE: list[tuple[int, int]] = []  # (plain, view): references of a graph-only tensor


def held_outside(
    values: Sequence[tuple[str, object]], known: Container[int] = ()
) -> list[torch.Tensor]:
    """The tensors of ``values`` (as ``read_saved`` returned them for one node) without a
    ``grad_fn`` that something besides the graph holds (for a view: its base). ``known``:
    ids of tensors gradviz itself keeps one reference to."""
    plain, view = _baseline()
    held = []
    for index, is_view, count in _references(values):
        tensor = values[index][1]
        assert isinstance(tensor, torch.Tensor)
        if id(tensor) in known:
            count -= 1
        if count > (view if is_view else plain):
            held.append(tensor)
    return held


def _references(values: Sequence[tuple[str, object]]) -> list[tuple[int, bool, int]]:
    """(position, is a view, references to it or its base) of each tensor without a
    ``grad_fn``; a tensor listed twice counts its other entries out."""
    seen: dict[int, int] = {}
    for _, value in values:
        seen[id(value)] = seen.get(id(value), 0) + 1
    found = []
    for index, (_, value) in enumerate(values):
        if not isinstance(value, torch.Tensor) or value.grad_fn is not None:
            continue
        base = value._base
        if base is None:
            found.append((index, False, sys.getrefcount(value) - seen[id(value)] + 1))
        else:
            found.append((index, True, sys.getrefcount(base)))
        del value, base
    return found


def _baseline() -> tuple[int, int]:
    """The references a tensor held by the graph alone has when read with ``read_saved``."""
    if not _BASELINE:
        _BASELINE.append((_probe(view=False), _probe(view=True)))
    return _BASELINE[0]


def _probe(view: bool) -> int:
    """A ``MulBackward0`` saving a temporary (or a view of one), read as the trace reads
    nodes; if that cannot be done here, no count (nothing is taken for held)."""
    try:
        with torch.inference_mode(False), torch.enable_grad():
            weight = torch.ones(2, requires_grad=True)
            node = (weight * (torch.ones(4)[:2] if view else torch.ones(2))).grad_fn
        values, *_ = read_saved(node)
        counts = [c for index, _, c in _references(values) if values[index][1] is not weight]
        del values, node, weight
        return counts[0]
    except (RuntimeError, IndexError):  # pragma: no cover - a PyTorch that saves otherwise
        return sys.maxsize
