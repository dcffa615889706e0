"""The graph as plain data: backward nodes, the edges between them, and tensor records.

Nothing here touches torch, so a ``Graph`` can be saved as JSON, loaded on a machine
without PyTorch, rendered, and compared byte for byte. The live torch objects a traced
graph still holds (``torch_node``, ``leaf_tensor``, ``tensor``) are extras that never
reach JSON or any rendering.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from gradviz.escape import json_text, utf8
from gradviz.model.values import Role, Summary

if TYPE_CHECKING:
    from gradviz.model.forward import Forward

__all__ = ["Edge", "Graph", "Node", "SavedStorages", "SavedValue", "TensorRecord"]

JSON_FORMAT = "gradviz.graph/1"
# what a traced graph reads of its saved tensors on first use: node id -> ((storage key,
# bytes, also held by a leaf), ...), and the nodes that ran inside a checkpoint
SavedStorages = tuple[dict[str, tuple[tuple[str, int, bool], ...]], tuple[str, ...]]


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

    @classmethod
    def made(cls, src: str, slot: int, dst: str | None, input_nr: int) -> Edge:
        """``Edge(src, slot, dst, input_nr)`` for a walk's hot loop: a frozen dataclass sets
        each field through ``object.__setattr__`` (5x the time); the result is the same."""
        edge = object.__new__(cls)
        edge.__dict__.update(src=src, slot=slot, dst=dst, input_nr=input_nr)
        return edge

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
        return tensor_label(self.name, self.is_root, self.role)

    def pending_values(self) -> int:
        """How many values a summary of ``data`` would read now: 0 once it is summarized
        (a traced record summarizes on first use, ``gradviz.capture.ondemand``)."""
        return 0

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


# a tensor record's fields that hold values or a live tensor: ``Graph.structure`` drops them
_VALUE_FIELDS = frozenset({"data", "grad", "tensor"})


def tensor_label(name: str | None, is_root: bool, role: Role) -> str:
    """``TensorRecord.label`` from the fields it reads (a ``TensorRow`` has them too)."""
    if name:
        return name
    if is_root:
        return "root"
    if role is Role.LEAF:
        return "leaf"
    return "constant" if role is Role.CONSTANT else "tensor"


# a node as a drawing of its type needs it: (id, type_name); an edge: (src, slot, dst, input_nr)
NodeRow = tuple[str, str]
EdgeRow = tuple[str, int, str | None, int]
# a tensor as a drawing without values needs it, fields named as in TensorRecord:
# (id, name, role, shape, dtype, node_id, is_root)
TensorRow = tuple[str, str | None, Role, tuple[int, ...], str, str | None, bool]
# the same as columns, one list per field: nodes (ids, type names), edges (src, slot, dst,
# input_nr); a walk fills them without a tuple per node or edge
NodeColumns = tuple[list[str], list[str]]
EdgeColumns = tuple[list[str], list[int], list[str | None], list[int]]


def _edge_columns(rows: list[EdgeRow]) -> EdgeColumns:
    return (
        [row[0] for row in rows],
        [row[1] for row in rows],
        [row[2] for row in rows],
        [row[3] for row in rows],
    )


class Graph:
    """A traced backward graph: nodes in visit order, edges in slot order, tensor records.

    A graph fresh from ``trace()`` holds its nodes and edges as plain rows and builds the
    ``Node`` and ``Edge`` objects on first use of ``nodes`` or ``edges``: a drawing of the
    structure reads the rows (``node_rows``, ``edge_rows``) and needs no objects. Its
    ``TensorRecord`` objects likewise wait for the first use of ``tensors``
    (``tensor_rows``).
    """

    _nodes: list[Node] | None
    _edges: list[Edge] | None
    _node_columns: NodeColumns
    _edge_columns: EdgeColumns
    _build: Callable[[], tuple[list[Node], list[Edge]]] | None
    _tensors: list[TensorRecord] | None
    _tensor_rows: list[TensorRow]
    _build_tensors: Callable[[], list[TensorRecord]] | None
    _plain_ids: bool

    def __init__(
        self,
        nodes: list[Node],
        edges: list[Edge],
        root_ids: list[str],
        tensors: list[TensorRecord],
    ) -> None:
        self._nodes, self._edges = nodes, edges
        self._node_columns, self._edge_columns, self._build = ([], []), ([], [], [], []), None
        self._tensors, self._tensor_rows, self._build_tensors = tensors, [], None
        self._start(root_ids)

    @classmethod
    def from_columns(
        cls,
        node_columns: NodeColumns,
        edge_columns: EdgeColumns,
        build: Callable[[], tuple[list[Node], list[Edge]]],
        root_ids: list[str],
        tensor_rows: list[TensorRow],
        build_tensors: Callable[[], list[TensorRecord]],
        *,
        plain_ids: bool = False,
    ) -> Graph:
        """A graph whose nodes and edges ``build()`` makes on first use (one per column
        entry, in order), and its tensor records ``build_tensors()`` (one per tensor row, in
        order); until then drawings read the columns (``NodeColumns``, ``EdgeColumns``: one
        list per field, all of one length, as a walk fills them). ``plain_ids``: the caller
        made every id itself, a plain identifier (``trace()`` makes ``n3``, ``t0``), so a
        drawing need not check them while it reads these columns (``rows_have_plain_ids``)."""
        graph = cls.__new__(cls)
        graph._nodes, graph._edges = None, None
        graph._node_columns, graph._edge_columns = node_columns, edge_columns
        graph._build = build
        graph._tensors, graph._tensor_rows = None, tensor_rows
        graph._build_tensors = build_tensors
        graph._start(root_ids)
        graph._plain_ids = plain_ids
        return graph

    def _built(self) -> tuple[list[Node], list[Edge]]:
        if self._nodes is None or self._edges is None:
            assert self._build is not None
            self._nodes, self._edges = self._build()
            # the builder holds the live torch nodes (now the nodes do), the rows are spent
            self._build, self._node_columns, self._edge_columns = None, ([], []), ([], [], [], [])
        return self._nodes, self._edges

    @property
    def nodes(self) -> list[Node]:
        return self._nodes if self._nodes is not None else self._built()[0]

    @property
    def edges(self) -> list[Edge]:
        return self._edges if self._edges is not None else self._built()[1]

    def node_rows(self) -> list[NodeRow] | None:
        """Each node's (id, type_name) while no ``Node`` object is built; None after (the
        objects then decide: they may carry saved values or folded contents)."""
        return None if self._nodes is not None else list(zip(*self._node_columns, strict=True))

    def node_columns(self) -> NodeColumns | None:
        """``node_rows`` as columns (ids, type names); the lists themselves: read only."""
        return self._node_columns if self._nodes is None else None

    def edge_rows(self) -> list[EdgeRow]:
        """Each edge as (src, slot, dst, input_nr), in ``edges`` order."""
        if self._edges is None:
            return list(zip(*self._edge_columns, strict=True))
        return [(e.src, e.slot, e.dst, e.input_nr) for e in self._edges]

    def edge_columns(self) -> EdgeColumns:
        """``edge_rows`` as columns (src, slot, dst, input_nr); while no ``Edge`` object is
        built, the lists themselves: read only."""
        if self._edges is None:
            return self._edge_columns
        return _edge_columns(self.edge_rows())

    @property
    def tensors(self) -> list[TensorRecord]:
        """The tensor records: roots first, then leaves in visit order, then other named
        tensors (a traced graph builds them on first use)."""
        if self._tensors is None:
            assert self._build_tensors is not None
            self._tensors = self._build_tensors()
            self._build_tensors, self._tensor_rows = None, []  # the builder holds the tensors
        return self._tensors

    @tensors.setter
    def tensors(self, value: list[TensorRecord]) -> None:
        self._tensors, self._tensor_rows, self._build_tensors = value, [], None

    def tensor_rows(self) -> list[TensorRow] | None:
        """Each tensor's fields a drawing without values reads (``TensorRow``), while no
        ``TensorRecord`` is built; None after (the records then decide)."""
        return self._tensor_rows if self._tensors is None else None

    def rows_have_plain_ids(self) -> bool:
        """Whether a drawing reads only rows whose ids their maker vouched for (see
        ``from_columns``): no ``Node``, ``Edge`` or ``TensorRecord`` built yet (once built, they
        are lists anyone may change) and no ``watch()`` data (whose ids it did not make)."""
        return (
            self._plain_ids
            and self._nodes is None
            and self._tensors is None
            and self.forward is None
        )

    def _start(self, root_ids: list[str]) -> None:
        self._plain_ids = False
        self.root_ids = root_ids
        # node id -> node, out edges, in edges: built on the first lookup (a drawing needs none)
        self._lookups: tuple[dict[str, Node], dict[str, list[Edge]], dict[str, list[Edge]]] | None
        self._lookups = None
        self.prefix = self.structure_prefix()
        # what gradviz.watch() saw of the forward pass, when the graph was traced under it
        self.forward: Forward | None = None
        self._saved_storages: dict[str, tuple[tuple[str, int, bool], ...]] = {}
        self._checkpointed: tuple[str, ...] = ()
        # computes ``saved_storages`` and ``checkpointed`` from the nodes on first use (a
        # traced graph reads them on demand); it holds no node (a deep chain must be freed
        # from its root)
        self.saved_storages_source: Callable[[list[Node]], SavedStorages] | None = None

    def _settle_saved(self) -> None:
        source = self.saved_storages_source
        if source is not None:
            self.saved_storages_source = None
            self._saved_storages, self._checkpointed = source(self.nodes)

    @property
    def saved_storages(self) -> dict[str, tuple[tuple[str, int, bool], ...]]:
        """The storages each node's saved tensors hold, read from the live graph (not in
        JSON): node id -> ((storage key, bytes, also held by a leaf), ...); see
        analysis.memory."""
        self._settle_saved()
        return self._saved_storages

    @saved_storages.setter
    def saved_storages(self, value: dict[str, tuple[tuple[str, int, bool], ...]]) -> None:
        self._settle_saved()
        self._saved_storages = value

    @property
    def checkpointed(self) -> tuple[str, ...]:
        """Nodes run inside ``torch.utils.checkpoint(use_reentrant=False)``, read from the
        live graph (not in JSON): they saved placeholders, and backward recomputes their
        tensors by running the segment's forward again. Also each
        ``CheckpointFunctionBackward`` of ``use_reentrant=True``, the one node that stands
        for a whole segment run without a graph."""
        self._settle_saved()
        return self._checkpointed

    @checkpointed.setter
    def checkpointed(self, value: tuple[str, ...]) -> None:
        self._settle_saved()
        self._checkpointed = value

    # -- lookups -------------------------------------------------------------------------
    def _indexed(
        self,
    ) -> tuple[dict[str, Node], dict[str, list[Edge]], dict[str, list[Edge]]]:
        """The nodes by id and each node's out and in edges, built on first use."""
        if self._lookups is None:
            by_id = {node.id: node for node in self.nodes}
            out: dict[str, list[Edge]] = {node_id: [] for node_id in by_id}
            into: dict[str, list[Edge]] = {node_id: [] for node_id in by_id}
            for edge in self.edges:
                out[edge.src].append(edge)
                if edge.dst is not None:
                    into[edge.dst].append(edge)
            self._lookups = by_id, out, into
        return self._lookups

    def node(self, node_id: str) -> Node:
        return self._indexed()[0][node_id]

    def out_edges(self, node_id: str) -> list[Edge]:
        """The node's ``next_functions`` entries, in slot order."""
        return self._indexed()[1][node_id]

    def in_edges(self, node_id: str) -> list[Edge]:
        """The edges whose gradients flow into the node, in visit order."""
        return self._indexed()[2][node_id]

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
        into = self._indexed()[2][node_id]
        return len({edge.input_nr for edge in into}) > 1 or any(edge.input_nr > 0 for edge in into)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def structure_prefix(self) -> str:
        """The SVG id prefix: a hash of the structure (every node, edge and tensor record),
        so that the same graph keeps the same ids in every drawing and process."""
        return "g" + hashlib.sha1(utf8(self._structure_key())).hexdigest()[:8]

    def _structure_key(self) -> str:
        """The structure as text, one ``join`` per column: the joins loop in C, where a text
        per node or edge cost the GPT's cold trace + DOT 0.15 ms more (README
        "Performance"). Each column is one section, so no two structures share a text."""
        columns = self.node_columns()
        if columns is None:
            ids = [n.id for n in self.nodes]
            types = [n.type_name for n in self.nodes]
        else:
            ids, types = columns
        srcs, slots, dsts, input_nrs = self.edge_columns()
        try:  # a walk's slots and output numbers are small: one byte each
            numbers = bytes(slots).hex() + "/" + bytes(input_nrs).hex()
        except (ValueError, TypeError):  # one is above 255 (or a graph made by hand)
            numbers = repr(slots) + "/" + repr(input_nrs)
        tensor_rows = self.tensor_rows()
        if tensor_rows is None:
            tensors = [f"{t.id}:{t.name}:{t.node_id}" for t in self.tensors]
        else:
            tensors = [f"{row[0]}:{row[1]}:{row[5]}" for row in tensor_rows]
        return "\n".join(
            (
                "|".join(ids),
                "|".join(types),
                "|".join(srcs),
                numbers,
                "|".join([dst or "" for dst in dsts]),
                "|".join(tensors),
            )
        )

    # -- plain data ----------------------------------------------------------------------
    def structure(self) -> Graph:
        """The same nodes, edges and tensors as plain data without values: no live torch
        object and no summary (what a drawing with ``values=False`` shows). Cheap on a
        fresh trace, whose summaries wait: ``to_dict`` would compute them all."""
        nodes = [
            Node(id=n.id, type_name=n.type_name, name=n.name, sequence_nr=n.sequence_nr)
            for n in self.nodes
        ]
        edges = [Edge.made(e.src, e.slot, e.dst, e.input_nr) for e in self.edges]
        kept = [f.name for f in fields(TensorRecord) if f.name not in _VALUE_FIELDS]
        tensors = [
            TensorRecord(data=None, grad=None, **{name: getattr(t, name) for name in kept})
            for t in self.tensors
        ]
        return type(self)(nodes, edges, list(self.root_ids), tensors)

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
        """A graph from ``to_dict()`` data, checked field by field first (it may come from
        anyone): a fault raises ``gradviz.InvalidInput`` naming the field."""
        from gradviz.model.forward import FORWARD_FORMAT
        from gradviz.model.validate_json import check_graph_data

        check_graph_data(data, JSON_FORMAT, FORWARD_FORMAT)
        graph = cls(
            nodes=[Node.from_dict(n) for n in data["nodes"]],
            edges=[Edge.from_dict(e) for e in data["edges"]],
            root_ids=list(data["root_ids"]),
            tensors=[TensorRecord.from_dict(t) for t in data["tensors"]],
        )
        if data.get("forward") is not None:
            from gradviz.model.forward import Forward

            graph.forward = Forward.from_dict(data["forward"])
        return graph

    @classmethod
    def from_json(cls, text: str | bytes) -> Graph:
        """A graph from ``to_json()`` text (``from_dict`` checks every field)."""
        try:
            data = json.loads(text)
        except (ValueError, TypeError, RecursionError) as error:
            from gradviz.errors import InvalidInput

            raise InvalidInput(f"not a gradviz graph: the text is not JSON ({error})") from None
        return cls.from_dict(data)

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
