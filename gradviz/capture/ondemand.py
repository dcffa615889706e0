"""Tensor values summarized on demand: ``trace()`` reads no tensor values during the walk.

A traced ``TensorRecord`` keeps its tensor anyway (``record.tensor``), so a summary of
its values (``record.data``) and of its ``.grad`` (``record.grad``) can wait until a label,
a panel or ``to_dict`` asks for one; a drawing without values asks for none. ResNet-50's
parameters are 25.5 M values: summarizing them took most of a trace.

What is summarized is what the tensor held when it was traced: the tensor's ``_version``
(and the ``.grad`` object and its version) is noted then. A tensor changed in place
before its summary was asked for no longer holds those values; its summary then says the
values are not available instead of showing the new ones. ``settle_grads`` summarizes the
gradients now, before a backward pass accumulates into them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from gradviz.capture import _autograd
from gradviz.model.graph import Node, SavedValue, TensorRecord
from gradviz.model.summarize import dtype_name, summarize
from gradviz.model.values import Summary

__all__ = ["LiveNode", "LiveTensorRecord", "settle_grads", "settle_values"]

# (tensor, its _version when traced), or None: nothing pending
_Source = tuple[torch.Tensor, int] | None


class LiveTensorRecord(TensorRecord):
    """A ``TensorRecord`` of a live tensor whose summaries are computed on first use.

    Built by ``made``, which notes the tensor and its ``.grad`` (with their versions) to
    summarize. Once computed (or set), a value stays.
    """

    _data_from: _Source = None
    _grad_from: _Source = None

    @classmethod
    def made(cls, data: tuple[torch.Tensor, int], grad: _Source, **fields: Any) -> LiveTensorRecord:
        """``cls(**fields, data=None, grad=None)``, its summaries pending, without the
        dataclass ``__init__`` (its property setters cost more than the rest of a record);
        ``data`` is the tensor and its ``_version``, ``grad`` its ``.grad`` and that one's
        version, or None (the caller read them when it traced the tensor)."""
        record = object.__new__(cls)
        record.__dict__.update(fields, data=None, grad=None)
        record._data_from = data
        record._grad_from = grad
        return record

    def pending_values(self) -> int:
        source = self._data_from
        return 0 if source is None else source[0].numel()

    @property
    def data(self) -> Summary | None:
        source = self._data_from
        if source is not None:
            self._data_from = None
            self.__dict__["data"] = _summary_of(source)
        value: Summary | None = self.__dict__.get("data")
        return value

    @data.setter
    def data(self, value: Summary | None) -> None:
        self._data_from = None
        self.__dict__["data"] = value

    @property
    def grad(self) -> Summary | None:
        source = self._grad_from
        if source is not None:
            self._grad_from = None
            self.__dict__["grad"] = _summary_of(source)
        value: Summary | None = self.__dict__.get("grad")
        return value

    @grad.setter
    def grad(self, value: Summary | None) -> None:
        self._grad_from = None
        self.__dict__["grad"] = value


def _summary_of(source: tuple[torch.Tensor, int]) -> Summary:
    tensor, version = source
    if _autograd.version(tensor) == version:
        return summarize(tensor)
    # changed in place since the trace: the traced values are gone
    return Summary(
        tuple(tensor.shape), dtype_name(tensor.dtype), tensor.numel(), (), False, available=False
    )


def settle_values(records: Iterable[Any]) -> None:
    """Summarize the pending values and ``.grad`` now (an optimizer step is about to change
    the parameters in place: afterwards they would read "values not available")."""
    for record in records:
        if isinstance(record, LiveTensorRecord):
            _ = record.data, record.grad


def settle_grads(records: Iterable[Any]) -> None:
    """Summarize the pending ``.grad`` values now (a backward pass is about to change them)."""
    for record in records:
        if isinstance(record, LiveTensorRecord) and record._grad_from is not None:
            _ = record.grad


class LiveNode(Node):
    """A traced ``Node`` whose saved values (``saved``, ``saved_freed``) are read from the
    live torch node on first use: a drawing without them reads none (reading one makes a
    Python tensor per ``_saved_*`` attribute). ``record()`` reads them all before its
    backward frees them; after a plain ``loss.backward()`` they read as freed.
    """

    _saved_from: Callable[[LiveNode], tuple[tuple[SavedValue, ...], bool]] | None = None

    @classmethod
    def made(
        cls,
        reader: Callable[[LiveNode], tuple[tuple[SavedValue, ...], bool]],
        id: str,
        type_name: str,
        name: str,
        sequence_nr: int,
        torch_node: Any,
        leaf_tensor: Any,
    ) -> LiveNode:
        """A node with ``Node``'s fields whose saved values ``reader`` reads on first use.
        Built without the dataclass ``__init__`` (its property setters took half a walk's
        time per node); ``saved`` and ``saved_freed`` are properties, so left unset."""
        node = object.__new__(cls)
        node.__dict__.update(
            id=id,
            type_name=type_name,
            name=name,
            sequence_nr=sequence_nr,
            torch_node=torch_node,
            leaf_tensor=leaf_tensor,
            _saved_from=reader,
        )
        return node

    def pending(
        self, reader: Callable[[LiveNode], tuple[tuple[SavedValue, ...], bool]]
    ) -> LiveNode:
        self._saved_from = reader
        return self

    def settle(self) -> None:
        """Read the saved values now (once)."""
        reader = self._saved_from
        if reader is not None:
            self._saved_from = None
            self.__dict__["saved"], self.__dict__["saved_freed"] = reader(self)

    @property
    def saved(self) -> tuple[SavedValue, ...]:
        self.settle()
        value: tuple[SavedValue, ...] = self.__dict__.get("saved", ())
        return value

    @saved.setter
    def saved(self, value: tuple[SavedValue, ...]) -> None:
        self._saved_from = None
        self.__dict__["saved"] = value

    @property
    def saved_freed(self) -> bool:
        self.settle()
        value: bool = self.__dict__.get("saved_freed", False)
        return value

    @saved_freed.setter
    def saved_freed(self, value: bool) -> None:
        self._saved_from = None
        self.__dict__["saved_freed"] = value
