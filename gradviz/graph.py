"""The graph as plain data: backward nodes, the edges between them, and tensor records.

Nothing here touches torch, so a ``Graph`` can be saved as JSON, loaded on a machine
without PyTorch, rendered, and compared byte for byte. The live torch objects a traced
graph still holds (``torch_node``, ``leaf_tensor``, ``tensor``) are extras that never
reach JSON or any rendering.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradviz.escape import json_text, utf8

if TYPE_CHECKING:
    from gradviz.forward import Forward

__all__ = [
    "Edge",
    "Graph",
    "Node",
    "Role",
    "SavedValue",
    "Summary",
    "TensorRecord",
    "format_number",
]

JSON_FORMAT = "gradviz.graph/1"


class Role(str, Enum):
    """The colour roles of the seeds' diagrams."""

    LEAF = "leaf"  # leaf on the graph (green): is_leaf and requires_grad
    CONSTANT = "constant"  # leaf off the graph (yellow): requires_grad=False, scalars
    BRANCH = "branch"  # non-leaf (brown): output of a recorded op
    NODE = "node"  # backward node (blue): grad_fn objects, AccumulateGrad


Scalar = float | int | bool | str


def format_number(value: Scalar) -> str:
    """Short, stable text for one number: 36.0 -> '36', 1/3 -> '0.3333'."""
    if isinstance(value, str):
        return _complex_text(value)
    if isinstance(value, bool | int):
        return str(value)
    text = f"{value:.4g}"
    return "0" if text == "-0" else text


def _complex_text(text: str) -> str:
    """'(1.5-0.25j)' (how summaries keep complex values, exactly) as '1.5-0.25j'; other
    strings unchanged."""
    if not (text.startswith("(") and text.endswith("j)")):
        return text
    try:
        value = complex(text)
    except ValueError:
        return text
    imag = f"{value.imag:+.4g}"
    imag = "+0" if imag == "-0" else imag
    return f"{format_number(value.real)}{imag}j"


@dataclass(frozen=True)
class Summary:
    """What gradviz keeps of a tensor's values: all of them if small, statistics if not."""

    shape: tuple[int, ...]
    dtype: str
    numel: int
    values: tuple[Scalar, ...]  # every value when ``complete``, else the first few
    complete: bool
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    norm: float | None = None
    nan: bool = False  # some value is NaN
    inf: bool = False  # some value is +-Inf
    available: bool = True  # False: the values cannot be read (a meta tensor)

    @property
    def finite(self) -> bool | None:
        """True when every value is finite; None when the values are not available."""
        return None if not self.available else not (self.nan or self.inf)

    def text(self, max_chars: int = 60) -> str:
        """One line for labels: '2', '[1, 2, 3]' or 'min -1 · max 2 · mean 0.1'."""
        if not self.available:
            return f"{self.shape_text()} {self.dtype}: values not available"
        if self.complete:
            if self.shape == ():
                return format_number(self.values[0]) if self.values else "?"
            body = ", ".join(format_number(v) for v in self.values)
            text = f"[{body}]"
            if len(text) <= max_chars:
                return text
        parts = []
        if self.min is not None and self.max is not None:
            parts.append(f"min {format_number(self.min)}")
            parts.append(f"max {format_number(self.max)}")
        if self.mean is not None:
            parts.append(f"mean {format_number(self.mean)}")
        elif self.norm is not None:  # complex values: no order, so no min or max
            first = ", ".join(format_number(v) for v in self.values[:2])
            parts.append(f"norm {format_number(self.norm)} · [{first}, …]")
        if not parts:
            first = ", ".join(format_number(v) for v in self.values[:3])
            return f"[{first}, …]"
        return " · ".join(parts)

    def short(self) -> str:
        """Compact text for an edge label: the value(s) if few, else shape and norm."""
        if not self.available or (self.complete and self.numel <= 4):
            return self.text()
        norm = "" if self.norm is None else f" ‖{format_number(self.norm)}‖"
        return f"{self.shape_text()}{norm}"

    def shape_text(self) -> str:
        return "×".join(str(n) for n in self.shape) if self.shape else "scalar"

    def to_dict(self) -> dict[str, Any]:
        return {
            "shape": list(self.shape),
            "dtype": self.dtype,
            "numel": self.numel,
            "values": list(self.values),
            "complete": self.complete,
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "norm": self.norm,
            "nan": self.nan,
            "inf": self.inf,
            "available": self.available,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Summary:
        return cls(
            shape=tuple(data["shape"]),
            dtype=data["dtype"],
            numel=data["numel"],
            values=tuple(data["values"]),
            complete=data["complete"],
            min=data.get("min"),
            max=data.get("max"),
            mean=data.get("mean"),
            norm=data.get("norm"),
            nan=data.get("nan", False),
            inf=data.get("inf", False),
            available=data.get("available", True),
        )


@dataclass(frozen=True)
class SavedValue:
    """One value a backward node saved in the forward pass (``_saved_self``, ...)."""

    name: str
    text: str
    summary: Summary | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "text": self.text,
            "summary": None if self.summary is None else self.summary.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SavedValue:
        summary = data.get("summary")
        return cls(
            name=data["name"],
            text=data["text"],
            summary=None if summary is None else Summary.from_dict(summary),
        )


@dataclass(eq=False)
class Node:
    """A backward node (``MulBackward0``, ``AccumulateGrad``, a custom Function, ...)."""

    id: str
    type_name: str
    name: str
    sequence_nr: int
    saved: tuple[SavedValue, ...] = ()
    saved_freed: bool = False
    torch_node: Any = field(default=None, repr=False)
    leaf_tensor: Any = field(default=None, repr=False)

    @property
    def is_accumulate_grad(self) -> bool:
        return self.type_name == "AccumulateGrad"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type_name": self.type_name,
            "name": self.name,
            "sequence_nr": self.sequence_nr,
            "saved": [s.to_dict() for s in self.saved],
            "saved_freed": self.saved_freed,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Node:
        return cls(
            id=data["id"],
            type_name=data["type_name"],
            name=data["name"],
            sequence_nr=data["sequence_nr"],
            saved=tuple(SavedValue.from_dict(s) for s in data["saved"]),
            saved_freed=data["saved_freed"],
        )


@dataclass(frozen=True)
class Edge:
    """One ``next_functions`` entry: slot ``slot`` of ``src`` feeds output ``input_nr`` of
    ``dst``; ``dst`` is None for an input that is off the graph."""

    src: str
    slot: int
    dst: str | None
    input_nr: int

    @property
    def key(self) -> str:
        """The edge's stable name, used for SVG ids and recorded gradients."""
        return f"{self.src}.{self.slot}"

    def to_dict(self) -> dict[str, Any]:
        return {"src": self.src, "slot": self.slot, "dst": self.dst, "input_nr": self.input_nr}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Edge:
        return cls(src=data["src"], slot=data["slot"], dst=data["dst"], input_nr=data["input_nr"])


@dataclass(eq=False)
class TensorRecord:
    """A tensor worth drawing: a root, a leaf, or one the user named."""

    id: str
    name: str | None
    shape: tuple[int, ...]
    dtype: str
    device: str
    requires_grad: bool
    is_leaf: bool
    version: int
    grad_fn: str | None
    data: Summary | None
    grad: Summary | None
    role: Role
    node_id: str | None  # the grad_fn node, or the AccumulateGrad of a leaf
    output_nr: int | None
    is_root: bool = False
    tensor: Any = field(default=None, repr=False)

    @property
    def label(self) -> str:
        """The name, or what the tensor is when the user gave it none."""
        if self.name:
            return self.name
        if self.is_root:
            return "root"
        return {Role.LEAF: "leaf", Role.CONSTANT: "constant"}.get(self.role, "tensor")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "device": self.device,
            "requires_grad": self.requires_grad,
            "is_leaf": self.is_leaf,
            "version": self.version,
            "grad_fn": self.grad_fn,
            "data": None if self.data is None else self.data.to_dict(),
            "grad": None if self.grad is None else self.grad.to_dict(),
            "role": self.role.value,
            "node_id": self.node_id,
            "output_nr": self.output_nr,
            "is_root": self.is_root,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TensorRecord:
        return cls(
            id=data["id"],
            name=data["name"],
            shape=tuple(data["shape"]),
            dtype=data["dtype"],
            device=data["device"],
            requires_grad=data["requires_grad"],
            is_leaf=data["is_leaf"],
            version=data["version"],
            grad_fn=data["grad_fn"],
            data=None if data["data"] is None else Summary.from_dict(data["data"]),
            grad=None if data["grad"] is None else Summary.from_dict(data["grad"]),
            role=Role(data["role"]),
            node_id=data["node_id"],
            output_nr=data["output_nr"],
            is_root=data["is_root"],
        )


class Graph:
    """A traced backward graph: nodes in visit order, edges in slot order, tensor records."""

    def __init__(
        self,
        nodes: list[Node],
        edges: list[Edge],
        root_ids: list[str],
        tensors: list[TensorRecord],
    ) -> None:
        self.nodes = nodes
        self.edges = edges
        self.root_ids = root_ids
        self.tensors = tensors
        self._by_id = {node.id: node for node in nodes}
        self._out: dict[str, list[Edge]] = {node.id: [] for node in nodes}
        self._in: dict[str, list[Edge]] = {node.id: [] for node in nodes}
        for edge in edges:
            self._out[edge.src].append(edge)
            if edge.dst is not None:
                self._in[edge.dst].append(edge)
        self.prefix = "g" + hashlib.sha1(utf8(self._structure_key())).hexdigest()[:8]
        # what gradviz.watch() saw of the forward pass, when the graph was traced under it
        self.forward: Forward | None = None

    # -- lookups -------------------------------------------------------------------------
    def node(self, node_id: str) -> Node:
        return self._by_id[node_id]

    def out_edges(self, node_id: str) -> list[Edge]:
        """The node's ``next_functions`` entries, in slot order."""
        return self._out[node_id]

    def in_edges(self, node_id: str) -> list[Edge]:
        """The edges whose gradients flow into the node, in visit order."""
        return self._in[node_id]

    def tensors_at(self, node_id: str) -> list[TensorRecord]:
        """The tensor records attached to a node (its outputs, or the leaf it feeds)."""
        return [t for t in self.tensors if t.node_id == node_id]

    def tensor(self, name: str) -> TensorRecord:
        """The tensor record with this name."""
        for record in self.tensors:
            if record.name == name:
                return record
        raise KeyError(f"no tensor named {name!r}; named: {[t.name for t in self.tensors]}")

    def is_multi_output(self, node_id: str) -> bool:
        """True when edges reach more than one output of the node (unbind, split, ...)."""
        return len({edge.input_nr for edge in self._in[node_id]}) > 1 or any(
            edge.input_nr > 0 for edge in self._in[node_id]
        )

    def execution_order(self, only: Iterable[str] | None = None) -> list[str]:
        """Node ids in the order autograd's engine will run them (predicted, not run)."""
        from gradviz.engine_order import predict_order

        return predict_order(self, None if only is None else set(only))

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def _structure_key(self) -> str:
        parts = [f"{n.id}:{n.type_name}" for n in self.nodes]
        parts += [f"{e.src}.{e.slot}>{e.dst}.{e.input_nr}" for e in self.edges]
        parts += [f"{t.id}:{t.name}:{t.node_id}" for t in self.tensors]
        return "|".join(parts)

    # -- plain data ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": JSON_FORMAT,
            "nodes": [n.to_dict() for n in self.nodes],
            "edges": [e.to_dict() for e in self.edges],
            "root_ids": list(self.root_ids),
            "tensors": [t.to_dict() for t in self.tensors],
            **({} if self.forward is None else {"forward": self.forward.to_dict()}),
        }

    def to_json(self, indent: int | None = 1) -> str:
        return json_text(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Graph:
        if data.get("format") != JSON_FORMAT:
            raise ValueError(f"not a gradviz graph (expected format {JSON_FORMAT!r})")
        graph = cls(
            nodes=[Node.from_dict(n) for n in data["nodes"]],
            edges=[Edge.from_dict(e) for e in data["edges"]],
            root_ids=list(data["root_ids"]),
            tensors=[TensorRecord.from_dict(t) for t in data["tensors"]],
        )
        if data.get("forward") is not None:
            from gradviz.forward import Forward

            graph.forward = Forward.from_dict(data["forward"])
        return graph

    @classmethod
    def from_json(cls, text: str) -> Graph:
        return cls.from_dict(json.loads(text))

    # -- drawing (render and layout never import torch) -----------------------------------
    def to_dot(self, **options: Any) -> str:
        """The graph as Graphviz DOT text; options as in ``gradviz.render.to_dot``."""
        from gradviz.render import RenderOptions, to_dot

        return to_dot(self, RenderOptions.make(**options))

    def svg(self, **options: Any) -> str:
        """The graph laid out by Graphviz ``dot``, as SVG text."""
        from gradviz.layout import run_dot

        return run_dot(self.to_dot(**options), "svg").decode("utf-8")

    def save(self, path: str | Path, **options: Any) -> Path:
        """Write .svg, .png, .pdf, .dot or .json, chosen by the file's suffix."""
        from gradviz.layout import write_graph

        return write_graph(self, Path(path), **options)

    def summary_text(self) -> str:
        kinds: dict[str, int] = {}
        for node in self.nodes:
            kinds[node.type_name] = kinds.get(node.type_name, 0) + 1
        top = ", ".join(f"{name}×{count}" for name, count in list(kinds.items())[:6])
        more = ", …" if len(kinds) > 6 else ""
        return (
            f"<gradviz.Graph: {len(self.nodes)} backward nodes, {len(self.edges)} edges, "
            f"{len(self.tensors)} tensors ({top}{more})>"
        )

    def __repr__(self) -> str:
        return self.summary_text()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """Jupyter display: the SVG, and a text summary where SVG cannot be shown."""
        bundle = {"text/plain": self.summary_text()}
        from gradviz.errors import GradvizError

        try:
            bundle["image/svg+xml"] = self.svg()
        except GradvizError as error:  # Graphviz missing: show the text and say why
            bundle["text/plain"] += f"\n(no diagram: {error})"
        return bundle
