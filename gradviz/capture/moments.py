"""Each watched tensor's state at each moment of the forward pass (``TensorState``): what a
forward frame draws of it then, so no frame shows a tensor as the block left it.

What is observable, and when a change is placed:

- an op's outputs, and its inputs as it left them (an in-place op, ``requires_grad_()``,
  ``x.requires_grad = ...``, which ``watch()`` sees as an op too): at that op;
- ``x.grad = ...``, ``x.data = ...`` and ``backward()`` are seen as they happen (the torch
  function mode sees them): the tensors they change are noted then, and show from the next
  op on; a change first seen when the block ends belongs to no frame;
- a change no Python-level call made (a new version from an in-place op on ``x.data``, or
  by C++ code) is noted at the first op that reads the tensor after it, before it runs.

Values are summarized again only when they may have changed: a new version (in-place ops
through any view share it), ``.data`` set, or ``x.data`` changed in place. A change made
where no Python-level torch call runs and no version changes (a C++ extension writing
memory directly) stays unseen. Cost per op: a version compare per input; a few attribute
reads (``state_key``) only for what the op may have changed, and its new outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

from gradviz.capture import op_values
from gradviz.capture.op_values import StateKey
from gradviz.model.forward import Forward, TensorState

__all__ = ["Moments", "Seen", "state_now"]

Seen = tuple[TensorState, StateKey]  # a state and what it draws


class Moments:
    """The states of one watch's tensors, noted only when what they draw changes."""

    def __init__(self, forward: Forward) -> None:
        self.forward = forward
        self.seen: dict[str, StateKey] = {}  # tensor id -> what its last state draws
        self.dirty: set[str] = set()  # values changed with no version bump
        self.data_of: dict[str, str] = {}  # an ``x.data`` alias -> x

    def observe(self, tensor_id: str, tensor: torch.Tensor, op: int, after: bool) -> None:
        """Note the tensor's state at this moment when it differs from its last one."""
        key = op_values.state_key(tensor)
        dirty = tensor_id in self.dirty
        last_key = self.seen.get(tensor_id)
        if key == last_key and not dirty:
            return
        item = self.forward._by_id[tensor_id]
        last = item.states[-1] if item.states else None
        state, _ = state_now(tensor, op, after, last, last_key, key, dirty)
        item.states.append(state)
        self.seen[tensor_id] = key
        self.dirty.discard(tensor_id)
        item.role = state.role  # the fields "when last seen"
        item.requires_grad = state.requires_grad
        item.is_leaf = state.is_leaf
        item.version = state.version
        item.grad_fn = state.grad_fn

    def before(
        self,
        find: Callable[[torch.Tensor], str | None],
        inputs: list[torch.Tensor],
        versions: list[int | None],
    ) -> list[Seen | None]:
        """Before an op runs: a known input changed since last seen (a new version, or
        values changed through ``.data``) is noted now; an unknown input's state is kept
        for the op to register it with (after an in-place op it would read changed).
        Every other change is one ``watch()`` sees as it happens."""
        first: list[Seen | None] = []
        index = len(self.forward.ops)
        for tensor, version in zip(inputs, versions, strict=True):
            found = find(tensor)
            if found is None:
                first.append(state_now(tensor, index, False))
                continue
            last = self.seen.get(found)
            if last is None or last[2] != version or found in self.dirty:
                self.observe(found, tensor, index, False)
            first.append(None)
        return first

    def all(self, live: Iterable[tuple[str, torch.Tensor | None]]) -> None:
        """Every tensor still alive, as it is now (after a backward pass, or at the end)."""
        index = len(self.forward.ops)
        for tensor_id, tensor in live:
            if tensor is not None:
                self.observe(tensor_id, tensor, index, False)

    def after_op(
        self, name: str, inputs: list[str], outputs: list[str], bumped: list[str]
    ) -> list[str]:
        """``x.data`` makes an alias whose in-place changes change x's values, not its
        version: returns the x whose values this op changed so, to be noted now."""
        if name == "data" and inputs and outputs:
            self.data_of[outputs[0]] = inputs[0]
        changed = [self.data_of[t] for t in bumped if t in self.data_of]
        self.dirty.update(changed)
        return changed


def state_now(
    tensor: torch.Tensor,
    op: int,
    after: bool,
    last: TensorState | None = None,
    last_key: StateKey | None = None,
    key: StateKey | None = None,
    dirty: bool = False,
) -> Seen:
    """The tensor's state now; values summarized again only when they may have changed
    (a new version, ``.data`` set) and ``.grad`` only when it is another tensor or version."""
    key = key or op_values.state_key(tensor)
    requires_grad, leaf, version, grad_fn, grad_key = key
    if last is not None and last.version == version and not dirty:
        data = last.data
    else:
        data = op_values.cheap_summary(tensor)
    if last is not None and last_key is not None and last_key[4] == grad_key:
        has_grad, grad = last.has_grad, last.grad
    else:
        value = op_values.grad_of(tensor, leaf) if grad_key is not None else None
        has_grad = value is not None
        grad = None if value is None else op_values.cheap_summary(value)
    state = TensorState(
        op=op,
        after=after,
        version=version,
        requires_grad=requires_grad,
        is_leaf=leaf,
        grad_fn=grad_fn,
        data=data,
        has_grad=has_grad,
        grad=grad,
    )
    return state, key
