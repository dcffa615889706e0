"""How a forward tensor box shows its tensor at one moment (``TensorState``): its DOT
name per state, the tensors an op made, and the record a combined view's table draws.
Pure data shaping, like ``render``: no torch, no subprocess."""

from __future__ import annotations

from dataclasses import replace

from gradviz.model.forward import FOp, Forward, TensorState
from gradviz.model.graph import TensorRecord
from gradviz.render.links import _Box

__all__ = ["as_record", "box_name", "made_by", "standing_differs"]


def box_name(tensor_id: str, state: int) -> str:
    """A forward tensor box's DOT name: ``f3`` for the tensor's first state, ``f3_s2`` for
    its third (``gradviz.replay.forwardframes.box_steps`` times them by it)."""
    return tensor_id if state == 0 else f"{tensor_id}_s{state}"


def made_by(op: FOp) -> list[str]:
    """The tensors an op made or changed: its outputs, then inputs it changed in place."""
    return list(op.outputs) + [b.tensor for b in op.bumps if b.tensor not in op.outputs]


def standing_differs(moment: TensorState, last: TensorState) -> bool:
    """True when a tensor stood otherwise on the graph at ``moment`` than in its last state
    drawn: requires_grad, leaf or not, or its ``.grad`` (not: only its values and the
    grad_fn an in-place op gave it)."""
    return (moment.requires_grad, moment.is_leaf, moment.has_grad, moment.grad) != (
        last.requires_grad,
        last.is_leaf,
        last.has_grad,
        last.grad,
    )


def as_record(made: _Box, data: Forward) -> TensorRecord:
    """The record a box's table draws: the graph's (its id, its richer summary while the
    values are those it has) or one made from the forward tensor, with the fields of the
    box's moment."""
    moment = made.state
    tensor = made.tensor
    record = made.record
    if record is None:
        assert moment is not None
        return TensorRecord(
            id=made.name,
            name=data.label(tensor.id),
            shape=tensor.shape,
            dtype=tensor.dtype,
            device="",
            requires_grad=moment.requires_grad,
            is_leaf=moment.is_leaf,
            version=moment.version or 0,
            grad_fn=moment.grad_fn,
            data=moment.data,
            grad=moment.grad if moment.has_grad else None,
            role=moment.role,
            node_id=None,
            output_nr=None,
        )
    named = _named(record, data)
    if moment is None:
        return named
    same_values = moment.version == record.version and record.data is not None
    return replace(
        named,
        requires_grad=moment.requires_grad,
        is_leaf=moment.is_leaf,
        grad_fn=moment.grad_fn,
        data=named.data if same_values else moment.data,
        grad=moment.grad if moment.has_grad else None,
        role=moment.role,
    )


def _named(record: TensorRecord, data: Forward) -> TensorRecord:
    """The record, named from the forward data when the trace left it unnamed."""
    if record.name:
        return record
    linked = data.tensor_links.get(record.id)
    if linked is None or not data.tensor(linked).name:
        return record
    return replace(record, name=data.tensor(linked).name)
