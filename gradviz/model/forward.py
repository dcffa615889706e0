"""The forward pass ``gradviz.watch()`` saw, as plain data (stdlib only, JSON round-trip).

A ``Forward`` holds the tensors the watched code touched (``FTensor``), the ops in the
order they ran (``FOp``: inputs, outputs, version bumps, the backward nodes they created,
the source line), and the ``nn.Module`` calls (``ModuleScope``). Once a ``Graph`` is traced
under the watch, ``node_ops`` / ``node_modules`` link its backward nodes to ops and modules
and ``tensor_links`` its tensor records to forward tensors.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gradviz.escape import float_from_json
from gradviz.model.values import Role, Scalar, Summary

__all__ = [
    "FORWARD_FORMAT",
    "Arg",
    "FOp",
    "FTensor",
    "Forward",
    "ModuleScope",
    "SourceLine",
    "TensorState",
    "VersionBump",
]

FORWARD_FORMAT = "gradviz.forward/1"


@dataclass(frozen=True)
class SourceLine:
    """Where an op ran: the first frame outside torch and gradviz's own machinery."""

    filename: str
    lineno: int
    function: str
    text: str

    def short(self) -> str:
        """'model.py:12', or 'cell line 3' for code typed into a notebook cell."""
        path = self.filename.replace("\\", "/")
        if "/ipykernel_" in path or path.startswith("<ipython-input-"):
            return f"cell line {self.lineno}"
        return f"{path.rsplit('/', 1)[-1]}:{self.lineno}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "lineno": self.lineno,
            "function": self.function,
            "text": self.text,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SourceLine:
        return cls(data["filename"], data["lineno"], data["function"], data["text"])


@dataclass(frozen=True)
class Arg:
    """One input of an op: a tensor (``tensor`` id and its version then) or a constant."""

    position: str  # "0", "1", ... for positional arguments, the keyword otherwise
    tensor: str | None = None
    version: int | None = None
    value: Scalar | None = None  # a Python scalar (or its text)
    text: str = ""  # how the constant reads

    @property
    def is_tensor(self) -> bool:
        return self.tensor is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "tensor": self.tensor,
            "version": self.version,
            "value": self.value,
            "text": self.text,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Arg:
        return cls(
            position=data["position"],
            tensor=data["tensor"],
            version=data["version"],
            value=float_from_json(data["value"]),
            text=data["text"],
        )


@dataclass(frozen=True)
class VersionBump:
    """An in-place change: tensor ``tensor`` went from version ``before`` to ``after``."""

    tensor: str
    before: int
    after: int

    def to_dict(self) -> dict[str, Any]:
        return {"tensor": self.tensor, "before": self.before, "after": self.after}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VersionBump:
        return cls(data["tensor"], data["before"], data["after"])


@dataclass(eq=False)
class FOp:
    """One forward op, in the order it ran (``index`` counts from 0).

    ``kind``: ``"op"``, ``"inplace"`` (bumped a version), ``"factory"`` (no tensor inputs),
    ``"view"``, ``"detach"``, or ``"requires_grad"`` (``requires_grad`` switched on or off).
    ``seq_start``/``seq_end`` is the range of autograd sequence numbers the op allocated:
    every backward node it created has its ``_sequence_nr()`` in ``[seq_start, seq_end)``.
    """

    index: int
    name: str
    kind: str
    inputs: tuple[Arg, ...]
    outputs: tuple[str, ...]  # tensor ids
    output_versions: tuple[int | None, ...]
    grad_fns: tuple[str | None, ...]  # type name of each output's grad_fn right after the op
    grad_fn_seqs: tuple[int | None, ...]
    bumps: tuple[VersionBump, ...]
    seq_start: int
    seq_end: int
    grad_enabled: bool
    inference_mode: bool
    line: SourceLine | None
    module: int | None = None  # innermost ModuleScope index

    def label(self) -> str:
        return self.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "kind": self.kind,
            "inputs": [a.to_dict() for a in self.inputs],
            "outputs": list(self.outputs),
            "output_versions": list(self.output_versions),
            "grad_fns": list(self.grad_fns),
            "grad_fn_seqs": list(self.grad_fn_seqs),
            "bumps": [b.to_dict() for b in self.bumps],
            "seq_start": self.seq_start,
            "seq_end": self.seq_end,
            "grad_enabled": self.grad_enabled,
            "inference_mode": self.inference_mode,
            "line": None if self.line is None else self.line.to_dict(),
            "module": self.module,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FOp:
        line = data.get("line")
        return cls(
            index=data["index"],
            name=data["name"],
            kind=data["kind"],
            inputs=tuple(Arg.from_dict(a) for a in data["inputs"]),
            outputs=tuple(data["outputs"]),
            output_versions=tuple(data["output_versions"]),
            grad_fns=tuple(data["grad_fns"]),
            grad_fn_seqs=tuple(data["grad_fn_seqs"]),
            bumps=tuple(VersionBump.from_dict(b) for b in data["bumps"]),
            seq_start=data["seq_start"],
            seq_end=data["seq_end"],
            grad_enabled=data["grad_enabled"],
            inference_mode=data["inference_mode"],
            line=None if line is None else SourceLine.from_dict(line),
            module=data.get("module"),
        )


@dataclass(frozen=True)
class TensorState:
    """How a tensor was from one moment of the forward pass until its next state: what a
    forward frame draws for it then.

    ``op`` is the op at which ``watch()`` first saw this state; ``after`` says whether the op
    made it (its output, or its input changed in place, or ``requires_grad`` set) or found it
    so when it read the tensor: a change no op made (``.grad`` written by a backward pass,
    ``.data`` assigned) shows from the first op that touched the tensor after it. ``op`` is
    ``len(ops)`` for a change seen only when the block ended.
    """

    op: int
    after: bool
    version: int | None
    requires_grad: bool
    is_leaf: bool
    grad_fn: str | None  # type name of its grad_fn then
    data: Summary | None  # its value then
    has_grad: bool  # ``.grad`` was set (of a leaf, or a non-leaf that retains its grad)
    grad: Summary | None  # ``.grad``'s value then

    @property
    def role(self) -> Role:
        """The colour the tensor has at this moment (``gradviz.capture.op_values.role``)."""
        if not self.requires_grad:
            return Role.CONSTANT
        return Role.LEAF if self.is_leaf else Role.BRANCH

    @property
    def moment(self) -> int:
        """Orders states: before op k (2k), after op k (2k + 1)."""
        return 2 * self.op + int(self.after)

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "after": self.after,
            "version": self.version,
            "requires_grad": self.requires_grad,
            "is_leaf": self.is_leaf,
            "grad_fn": self.grad_fn,
            "data": None if self.data is None else self.data.to_dict(),
            "has_grad": self.has_grad,
            "grad": None if self.grad is None else self.grad.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TensorState:
        return cls(
            op=data["op"],
            after=data["after"],
            version=data["version"],
            requires_grad=data["requires_grad"],
            is_leaf=data["is_leaf"],
            grad_fn=data["grad_fn"],
            data=None if data["data"] is None else Summary.from_dict(data["data"]),
            has_grad=data["has_grad"],
            grad=None if data["grad"] is None else Summary.from_dict(data["grad"]),
        )


@dataclass(eq=False)
class FTensor:
    """A tensor the watched code touched. ``role`` is its role when the block ended (or
    when last seen); ``created_by`` the op that made it (None: made before the watch).
    ``states``: how it was at each moment, oldest first, one entry per change
    (``TensorState``; ``Forward.state_at`` finds the one of a moment)."""

    id: str
    name: str | None
    name_source: str | None  # "names", "param", "assign", "locals"
    shape: tuple[int, ...]
    dtype: str
    role: Role
    requires_grad: bool
    is_leaf: bool
    data: Summary | None  # the value when first seen
    created_by: int | None
    version: int | None  # when last seen
    base: str | None = None  # the tensor this one is a view of
    grad_fn: str | None = None  # type name of its grad_fn when last seen
    states: list[TensorState] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.name or ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "name_source": self.name_source,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "role": self.role.value,
            "requires_grad": self.requires_grad,
            "is_leaf": self.is_leaf,
            "data": None if self.data is None else self.data.to_dict(),
            "created_by": self.created_by,
            "version": self.version,
            "base": self.base,
            "grad_fn": self.grad_fn,
            "states": [state.to_dict() for state in self.states],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FTensor:
        return cls(
            id=data["id"],
            name=data["name"],
            name_source=data["name_source"],
            shape=tuple(data["shape"]),
            dtype=data["dtype"],
            role=Role(data["role"]),
            requires_grad=data["requires_grad"],
            is_leaf=data["is_leaf"],
            data=None if data["data"] is None else Summary.from_dict(data["data"]),
            created_by=data["created_by"],
            version=data["version"],
            base=data.get("base"),
            grad_fn=data.get("grad_fn"),
            states=[TensorState.from_dict(state) for state in data.get("states", ())],
        )


@dataclass(eq=False)
class ModuleScope:
    """One call of an ``nn.Module``: its path, class, nesting and sequence-number range."""

    index: int
    path: str
    type_name: str
    depth: int
    parent: int | None
    seq_start: int
    seq_end: int

    @property
    def label(self) -> str:
        return f"{self.path} ({self.type_name})" if self.path else self.type_name

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "path": self.path,
            "type_name": self.type_name,
            "depth": self.depth,
            "parent": self.parent,
            "seq_start": self.seq_start,
            "seq_end": self.seq_end,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModuleScope:
        return cls(
            index=data["index"],
            path=data["path"],
            type_name=data["type_name"],
            depth=data["depth"],
            parent=data["parent"],
            seq_start=data["seq_start"],
            seq_end=data["seq_end"],
        )


@dataclass(eq=False)
class Forward:
    """Everything ``watch()`` captured, plus the links to one traced graph."""

    tensors: list[FTensor] = field(default_factory=list)
    ops: list[FOp] = field(default_factory=list)
    modules: list[ModuleScope] = field(default_factory=list)
    node_ops: dict[str, int] = field(default_factory=dict)  # backward node id -> op index
    node_modules: dict[str, int] = field(default_factory=dict)  # node id -> module index
    tensor_links: dict[str, str] = field(default_factory=dict)  # graph tensor id -> ftensor id
    # the first op of the pass the graph came from: a watch() around a training loop saw
    # every iteration, and the replay shows the recorded one (gradviz.capture.link)
    first_replayed: int = 0

    @property
    def replayed(self) -> list[FOp]:
        """The ops the replay shows: those of the recorded pass."""
        return self.ops[self.first_replayed :] if self.first_replayed else self.ops

    def __post_init__(self) -> None:
        self._by_id = {t.id: t for t in self.tensors}
        for item in self.tensors:
            if not item.states:  # data from before states were kept: one per version seen
                item.states = _states_by_version(item, self.ops)

    def state_at(self, tensor_id: str, op: int, after: bool) -> int:
        """The index in ``tensor(tensor_id).states`` of how the tensor was just before op
        ``op`` ran (``after=False``: as the op read it) or just after (``after=True``)."""
        states = self._by_id[tensor_id].states
        moments = [state.moment for state in states]
        return max(bisect.bisect_right(moments, 2 * op + int(after)) - 1, 0)

    def tensor(self, key: str) -> FTensor:
        """A forward tensor by id (``f3``) or by name (``c``)."""
        found = self._by_id.get(key)
        if found is not None:
            return found
        for item in self.tensors:
            if item.name == key:
                return item
        raise KeyError(f"no forward tensor {key!r}; named: {self.names()}")

    def names(self) -> list[str]:
        return [t.name for t in self.tensors if t.name]

    def label(self, tensor_id: str) -> str:
        """A tensor's name, or what made it (``mul``) when it has none."""
        item = self._by_id[tensor_id]
        if item.name:
            return item.name
        if item.created_by is not None:
            return self.ops[item.created_by].name
        return {Role.LEAF: "leaf", Role.CONSTANT: "constant"}.get(item.role, "tensor")

    def op_for_node(self, node_id: str) -> FOp | None:
        index = self.node_ops.get(node_id)
        return None if index is None else self.ops[index]

    def module_for_node(self, node_id: str) -> ModuleScope | None:
        index = self.node_modules.get(node_id)
        return None if index is None else self.modules[index]

    def module_chain(self, index: int | None) -> list[ModuleScope]:
        """The module scope and its ancestors, outermost first."""
        chain: list[ModuleScope] = []
        while index is not None:
            chain.append(self.modules[index])
            index = self.modules[index].parent
        return chain[::-1]

    def ops_bumping(self, tensor_id: str) -> list[FOp]:
        """The in-place ops that changed the tensor's version (views share the counter)."""
        return [op for op in self.ops if any(b.tensor == tensor_id for b in op.bumps)]

    def states_seen(self, tensor_id: str) -> range:
        """The tensor's states seen at a replayed op (the others are from an earlier pass,
        or were seen only when the block ended): each one a forward frame can show."""
        states = self._by_id[tensor_id].states
        first = next((i for i, s in enumerate(states) if s.op >= self.first_replayed), None)
        if first is None:
            return range(0)
        last = next((i for i, s in enumerate(states) if s.op >= len(self.ops)), len(states))
        return range(first, last)

    def states_in(self, op: FOp) -> tuple[list[int], list[int]]:
        """The state index of each tensor input of ``op`` as it read them, and of each
        tensor it made or changed (``outputs``, then bumped inputs not among them)."""
        inputs = [self.state_at(a.tensor, op.index, False) for a in op.inputs if a.tensor]
        made = list(op.outputs) + [b.tensor for b in op.bumps if b.tensor not in op.outputs]
        return inputs, [self.state_at(t, op.index, True) for t in made]

    def copy(self) -> Forward:
        return Forward.from_dict(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORWARD_FORMAT,
            "tensors": [t.to_dict() for t in self.tensors],
            "ops": [o.to_dict() for o in self.ops],
            "modules": [m.to_dict() for m in self.modules],
            "node_ops": dict(self.node_ops),
            "node_modules": dict(self.node_modules),
            "tensor_links": dict(self.tensor_links),
            "first_replayed": self.first_replayed,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Forward:
        if data.get("format") != FORWARD_FORMAT:
            raise ValueError(f"not gradviz forward data (expected format {FORWARD_FORMAT!r})")
        return cls(
            tensors=[FTensor.from_dict(t) for t in data["tensors"]],
            ops=[FOp.from_dict(o) for o in data["ops"]],
            modules=[ModuleScope.from_dict(m) for m in data["modules"]],
            node_ops=dict(data["node_ops"]),
            node_modules=dict(data["node_modules"]),
            tensor_links=dict(data["tensor_links"]),
            first_replayed=int(data.get("first_replayed", 0)),
        )


def _states_by_version(item: FTensor, ops: list[FOp]) -> list[TensorState]:
    """States for forward data saved before they were kept: one per version an op read or
    made, each with the tensor's last-seen fields (all that data knows)."""
    seen: dict[int, tuple[int, bool]] = {}
    for op in ops:
        for arg in op.inputs:
            if arg.tensor == item.id:
                seen.setdefault(arg.version or 0, (op.index, False))
        for tensor_id, version in zip(op.outputs, op.output_versions, strict=True):
            if tensor_id == item.id:
                seen.setdefault(version or 0, (op.index, True))
        for bump in op.bumps:
            if bump.tensor == item.id:
                seen.setdefault(bump.after, (op.index, True))
    order = sorted(seen.items(), key=lambda entry: 2 * entry[1][0] + int(entry[1][1]))
    return [
        TensorState(
            op=at,
            after=after,
            version=version,
            requires_grad=item.requires_grad,
            is_leaf=item.is_leaf,
            grad_fn=item.grad_fn,
            data=item.data if position == 0 else None,
            has_grad=False,
            grad=None,
        )
        for position, (version, (at, after)) in enumerate(order)
    ]
