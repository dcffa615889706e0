"""``trace()``: an iterative breadth-first walk over ``grad_fn.next_functions``."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

import torch

from gradviz.capture import _autograd
from gradviz.capture._autograd import PackedByHooks
from gradviz.capture._own_ops import gc_paused, own_ops
from gradviz.capture.held import held_outside
from gradviz.capture.ondemand import LiveNode, LiveTensorRecord
from gradviz.errors import InvalidArgument, NotOnGraph
from gradviz.model.graph import (
    Edge,
    EdgeColumns,
    Graph,
    Node,
    SavedStorages,
    SavedValue,
    TensorRecord,
    TensorRow,
)
from gradviz.model.public import built
from gradviz.model.summarize import (
    SMALL_NUMEL,
    dtype_name,
    plain_values,
    shape_of,
    summarize,
)
from gradviz.model.values import Role, Summary

__all__ = ["trace"]

Params = torch.nn.Module | Mapping[str, torch.Tensor] | Iterable[tuple[str, torch.Tensor]]


def trace(
    *roots: torch.Tensor,
    params: Params | None = None,
    names: Mapping[str, torch.Tensor] | None = None,
) -> Graph:
    """Walk the real backward graph behind ``roots`` into a plain-data ``Graph``.

    ``names`` maps names to tensors (``{"a": a, "b": b}``); ``params`` takes a module (its
    parameters are named by their path) or ``(name, tensor)`` pairs. Explicit ``names``
    win over ``params``.
    """
    with own_ops():  # inside watch(): the walk's summaries are not the user's ops
        walker = _Walker(roots, _named_tensors(params, names))
        with gc_paused():
            return walker.walk()


def _named_tensors(
    params: Params | None, names: Mapping[str, torch.Tensor] | None
) -> dict[int, tuple[str, torch.Tensor]]:
    named: dict[int, tuple[str, torch.Tensor]] = {}
    if params is not None:
        for pair in _param_pairs(params):
            checked = _check_named(*pair, "params")
            named[id(checked[1])] = checked
    if names is not None and not isinstance(names, Mapping):
        raise InvalidArgument(
            f"names= takes a dict from names to tensors, e.g. names={{'x': x, 'w': w}}; "
            f"got a {type(names).__name__}"
        )
    for name, tensor in (names or {}).items():
        checked = _check_named(name, tensor, "names")
        named[id(checked[1])] = checked
    return named


_PARAMS_HINT = (
    "params= takes a module (params=model), a dict {'fc.weight': tensor} or "
    "(name, tensor) pairs such as model.named_parameters()"
)


def _param_pairs(params: object) -> list[tuple[object, object]]:
    """``params`` as (name, tensor) pairs, or an ``InvalidArgument`` that says what to pass."""
    if isinstance(params, torch.nn.Module):
        return list(params.named_parameters())
    if isinstance(params, Mapping):
        return list(params.items())
    if isinstance(params, str | bytes | torch.Tensor) or not isinstance(params, Iterable):
        raise InvalidArgument(f"{_PARAMS_HINT}; got a {type(params).__name__}")
    pairs: list[tuple[object, object]] = []
    for item in params:
        if isinstance(item, torch.Tensor):
            raise InvalidArgument(
                f"{_PARAMS_HINT}; got tensors without names (model.parameters()?): pass "
                "model.named_parameters() or the model itself"
            )
        if not isinstance(item, tuple) or len(item) != 2:
            raise InvalidArgument(f"{_PARAMS_HINT}; got an item {type(item).__name__}")
        pairs.append(item)
    return pairs


def _check_named(name: object, tensor: object, argument: str) -> tuple[str, torch.Tensor]:
    if not isinstance(name, str) or not isinstance(tensor, torch.Tensor):
        raise InvalidArgument(
            f"{argument}= maps names to tensors, e.g. {{'a': a}}; "
            f"got {type(name).__name__} -> {type(tensor).__name__}"
        )
    return name, tensor


def _root_node(index: int, root: object) -> tuple[Any, int]:
    if not isinstance(root, torch.Tensor):
        raise NotOnGraph(
            f"root {index} is a {type(root).__name__}, not a tensor. Pass the tensor your "
            "computation produced, e.g. gradviz.trace(loss)."
        )
    if not root.requires_grad:
        if _autograd.in_function_transform(root):
            raise NotOnGraph(
                f"root {index} is a tensor of a torch.func transform (inside vmap, grad, "
                "...), which keeps the history of its tensors to itself: gradviz cannot "
                "read it there. Run gradviz outside the transform, on the same computation "
                "run without it (e.g. for one sample instead of vmap's batch)."
            )
        raise NotOnGraph(
            f"root {index} (shape {tuple(root.shape)}) is on no autograd graph: it has "
            "requires_grad=False and no grad_fn. Create an input with requires_grad=True "
            "(e.g. torch.tensor(2.0, requires_grad=True)) and compute the root from it, "
            "outside torch.no_grad() and torch.inference_mode()."
        )
    return _autograd.gradient_edge(root)


class _Walker:
    """One walk: keeps the visit-order ids and builds the records."""

    def __init__(
        self, roots: tuple[torch.Tensor, ...], named: dict[int, tuple[str, torch.Tensor]]
    ) -> None:
        if not roots:
            raise NotOnGraph("trace() needs at least one root tensor, e.g. gradviz.trace(loss).")
        self.roots = roots
        self.named = named
        self.ids: dict[Any, str] = {}  # live torch node -> id; keys keep nodes alive
        self.torch_nodes: list[Any] = []  # in visit order
        # each AccumulateGrad's leaf and the node's id, in visit order
        self.leaves: list[tuple[torch.Tensor, str]] = []
        # id(leaf tensor) -> the id of the AccumulateGrad node that feeds it
        self.leaf_nodes: dict[int, str] = {}
        self.saved = _SavedReader()
        self.device_names: dict[torch.device, str] = {}  # str(device) builds a new string
        self.dtype_names: dict[torch.dtype, str] = {}
        self.read_saved = self.saved.read  # one bound method for all nodes
        self.root_edges: dict[int, tuple[Any, int]] = {}

    def walk(self) -> Graph:
        """Breadth first: ``torch_nodes`` is the queue too (a node is taken in the order it
        was found). Structure only: the ``Node`` objects are built on first use
        (``_object_builder``), their saved values read on first use after that
        (``_SavedReader``), the tensor records on first use of ``graph.tensors``. Nodes and
        edges go into columns (one list per field), not a tuple each: fewer objects to make
        and for the collector to scan, which is most of a walk's cost when caches are cold."""
        root_edges = [_root_node(i, root) for i, root in enumerate(self.roots)]
        # a root's record takes its gradient edge from here (torch builds each in Python)
        self.root_edges = dict(zip(map(id, self.roots), root_edges, strict=True))
        ids = self.ids
        torch_nodes = self.torch_nodes
        type_names_column: list[str] = []
        srcs: list[str] = []
        slots: list[int] = []
        dsts: list[str | None] = []
        input_nrs: list[int] = []
        leaves = self.leaves
        add_node = torch_nodes.append
        add_type = type_names_column.append
        add_src, add_slot, add_dst, add_input_nr = (
            srcs.append,
            slots.append,
            dsts.append,
            input_nrs.append,
        )
        add_leaf = leaves.append
        next_functions = _autograd.next_functions_of
        variable = _autograd.variable_of
        tensor_type = torch.Tensor
        made_ids = _node_ids()  # "n0", "n1", ...: made once per process, not once per walk
        known = len(made_ids)
        # type -> its __name__, which builds a new string each time for torch's C++ node
        # types; one string per type also keeps its hash for the drawing's lookups
        type_names: dict[type, str] = {}
        root_ids: list[str] = []
        for torch_node, _ in root_edges:
            node_id = ids.get(torch_node)
            if node_id is None:
                count = len(torch_nodes)
                node_id = ids[torch_node] = made_ids[count] if count < known else f"n{count}"
                add_node(torch_node)
                kind = type(torch_node)
                type_name = type_names.get(kind) or type_names.setdefault(kind, kind.__name__)
                add_type(type_name)
                if type_name == "AccumulateGrad":
                    leaf = variable(torch_node)
                    if isinstance(leaf, tensor_type):
                        add_leaf((leaf, node_id))
            root_ids.append(node_id)
        for torch_node in torch_nodes:  # grows while it is read: the queue
            src = ids[torch_node]
            for slot, (child, input_nr) in enumerate(next_functions(torch_node)):
                add_src(src)
                add_slot(slot)
                add_input_nr(input_nr)
                if child is None:
                    add_dst(None)
                    continue
                dst = ids.get(child)
                if dst is None:  # found: the same steps as for a root above
                    count = len(torch_nodes)
                    dst = ids[child] = made_ids[count] if count < known else f"n{count}"
                    add_node(child)
                    kind = type(child)
                    type_name = type_names.get(kind) or type_names.setdefault(kind, kind.__name__)
                    add_type(type_name)
                    if type_name == "AccumulateGrad":
                        leaf = variable(child)
                        if isinstance(leaf, tensor_type):
                            add_leaf((leaf, dst))
                add_dst(dst)
        for leaf, node_id in reversed(leaves):  # the first node of a leaf wins
            self.leaf_nodes[id(leaf)] = node_id
        tensor_rows, build_tensors = self._tensor_rows()
        edge_columns = (srcs, slots, dsts, input_nrs)
        build = _object_builder(self.torch_nodes, edge_columns, self.read_saved)
        node_columns = (_node_ids(len(torch_nodes))[: len(torch_nodes)], type_names_column)
        # every id in the columns is one the walk made above: f"n{index}", f"t{index}"
        graph = built(Graph).from_columns(
            node_columns,
            edge_columns,
            build,
            _unique(root_ids),
            tensor_rows,
            build_tensors,
            plain_ids=True,
        )
        # the reader holds no node: nodes -> reader, never back (no reference cycle)
        graph.saved_storages_source = self.saved.storages
        return graph

    def _tensor_rows(self) -> tuple[list[TensorRow], Callable[[], list[TensorRecord]]]:
        """Each tensor's ``TensorRow`` now, and a builder of its ``TensorRecord`` for first
        use. What may change later (the version, ``.grad``, ``requires_grad``, the shape,
        dtype and device: ``tensor.data = ...`` changes those and no version) is read now;
        the rest of a leaf's record follows from it. Roots, other named tensors and a
        leaf that is not a plain one get their whole record now (``_record``)."""
        rows: list[TensorRow] = []
        sources: list[TensorRecord | _LeafSource] = []
        seen: set[int] = set()
        named = self.named
        for tensor in self.roots:
            if id(tensor) not in seen:
                seen.add(id(tensor))
                record = self._record(f"t{len(rows)}", tensor, True)
                rows.append(_row_of(record))
                sources.append(record)
        dtype_names = self.dtype_names
        device_names = self.device_names
        add_row = rows.append
        add_source = sources.append
        leaf_role = Role.LEAF
        made_ids = _tensor_ids(len(self.leaves) + len(rows))
        read = _LEAF_FIELDS
        for leaf, node_id in self.leaves:
            key = id(leaf)
            if key in seen:
                continue
            seen.add(key)
            record_id = made_ids[len(rows)]
            try:  # the fields in one call: a Python attribute lookup costs as much as a read
                requires_grad, is_leaf, version, grad, shape, dtype, is_cpu = read(leaf)
            except RuntimeError:  # made under inference_mode, no version counter: the long way
                requires_grad = is_leaf = False
            if not (requires_grad and is_leaf):  # changed since the forward: the long way
                record = self._record(record_id, leaf, False)
                add_row(_row_of(record))
                add_source(record)
                continue
            name = named[key][0] if key in named else None
            grad_from = None if grad is None else (grad, _autograd.version(grad))
            dtype_text = dtype_names.get(dtype)
            if dtype_text is None:
                dtype_text = dtype_names[dtype] = dtype_name(dtype)
            device_name = "cpu"  # tensor.device makes a new object each time
            if not is_cpu:
                device = leaf.device
                device_name = device_names.get(device) or device_names.setdefault(
                    device, str(device)
                )
            # the walk found the leaf at its first AccumulateGrad node: that is the node
            add_row((record_id, name, leaf_role, shape, dtype_text, node_id, False))
            add_source((leaf, version, grad_from, device_name))
        for _, tensor in named.values():
            if id(tensor) not in seen:
                seen.add(id(tensor))
                record = self._record(f"t{len(rows)}", tensor, False)
                rows.append(_row_of(record))
                sources.append(record)
        return rows, _tensor_builder(rows, sources)

    def _record(self, record_id: str, tensor: torch.Tensor, is_root: bool) -> TensorRecord:
        name = self.named.get(id(tensor), (None, None))[0]
        node_id: str | None = None
        output_nr: int | None = None
        requires_grad = tensor.requires_grad
        is_leaf = tensor.is_leaf
        if requires_grad:
            # a leaf's gradient edge is its AccumulateGrad node (found by the walk), output 0
            node_id = self.leaf_nodes.get(id(tensor)) if is_leaf else None
            if node_id is not None:
                output_nr = 0
            else:
                edge = self.root_edges.get(id(tensor)) if is_root else None
                torch_node, output_nr = edge or _autograd.gradient_edge(tensor)
                node_id = self.ids.get(torch_node)
                if node_id is None:
                    output_nr = None
        if not requires_grad:
            role = Role.CONSTANT
        elif is_leaf:
            role = Role.LEAF
        else:
            role = Role.BRANCH
        grad = tensor.grad if (is_leaf or tensor.retains_grad) else None
        grad_fn = tensor.grad_fn
        version = _autograd.version(tensor)
        device = tensor.device
        device_name = self.device_names.get(device)
        if device_name is None:
            device_name = self.device_names[device] = str(device)
        return LiveTensorRecord.made(
            (tensor, version),
            None if grad is None else (grad, _autograd.version(grad)),
            id=record_id,
            name=name,
            shape=shape_of(tensor),
            dtype=dtype_name(tensor.dtype),
            device=device_name,
            requires_grad=requires_grad,
            is_leaf=is_leaf,
            version=version,
            grad_fn=None if grad_fn is None else type(grad_fn).__name__,
            role=role,
            node_id=node_id,
            output_nr=output_nr,
            is_root=is_root,
            tensor=tensor,
        )  # data and grad: summarized on demand (gradviz.capture.ondemand)


# a plain leaf's record as the walk read it: (the tensor, its version, (.grad, its version)
# or None, the device's name)
_LeafSource = tuple[torch.Tensor, int, tuple[torch.Tensor, int] | None, str]


def _row_of(record: TensorRecord) -> TensorRow:
    return (
        record.id,
        record.name,
        record.role,
        record.shape,
        record.dtype,
        record.node_id,
        record.is_root,
    )


def _tensor_builder(
    rows: list[TensorRow], sources: list[TensorRecord | _LeafSource]
) -> Callable[[], list[TensorRecord]]:
    """Builds the walk's ``TensorRecord`` objects, one per row, when the graph first needs
    them: a plain leaf's from what the walk read (requires_grad, is_leaf, output 0 of its
    AccumulateGrad, no grad_fn), the others as made then."""

    def build() -> list[TensorRecord]:
        records: list[TensorRecord] = []
        made = LiveTensorRecord.made
        for row, source in zip(rows, sources, strict=True):
            if isinstance(source, TensorRecord):
                records.append(source)
                continue
            tensor, version, grad_from, device = source
            record_id, name, role, shape, dtype, node_id, is_root = row
            records.append(
                made(
                    (tensor, version),
                    grad_from,
                    id=record_id,
                    name=name,
                    shape=tuple(shape),
                    dtype=dtype,
                    device=device,
                    requires_grad=True,
                    is_leaf=True,
                    version=version,
                    grad_fn=None,
                    role=role,
                    node_id=node_id,
                    output_nr=0,
                    is_root=is_root,
                    tensor=tensor,
                )
            )
        return records

    return build


def _object_builder(
    torch_nodes: list[Any],
    edge_columns: EdgeColumns,
    reader: Callable[[LiveNode], tuple[tuple[SavedValue, ...], bool]],
) -> Callable[[], tuple[list[Node], list[Edge]]]:
    """Builds a walk's ``Node`` (ids in visit order) and ``Edge`` objects when the graph
    first needs them; it holds the live torch nodes until then (and no ``Graph``: no cycle)."""

    def build() -> tuple[list[Node], list[Edge]]:
        nodes: list[Node] = []
        with gc_paused():  # many small objects: see gc_paused
            for index, torch_node in enumerate(torch_nodes):
                type_name, name, sequence_nr, leaf = _autograd.node_facts(torch_node)
                node_id = f"n{index}"
                nodes.append(
                    LiveNode.made(reader, node_id, type_name, name, sequence_nr, torch_node, leaf)
                )
            made = Edge.made
            edges = [made(*row) for row in zip(*edge_columns, strict=True)]
        return nodes, edges

    return build


_SCALARS = (int, bool, float, str, type(None))


class _SavedReader:
    """Reads traced nodes' saved values on first use; shared by one walk's nodes."""

    def __init__(self) -> None:
        # id(small saved tensor) -> (it, its _version, text, summary)
        self.saved_summaries: dict[int, tuple[torch.Tensor, int, str, Summary]] = {}
        # node id -> ((device, data pointer), bytes) of each saved tensor's storage
        self.saved_raw: dict[str, list[tuple[tuple[int, int], int]]] = {}
        self.checkpointed: set[str] = set()  # node ids run inside torch.utils.checkpoint
        # storages of saved tensors the user's code still holds (an input batch)
        self.held: set[tuple[int, int]] = set()
        # (name, dtype, shape) or (name, repr) -> the frozen SavedValue they make
        self.shared: dict[object, SavedValue] = {}

    def storages(self, nodes: list[Node]) -> SavedStorages:
        """Each node's saved storages, deduplicated: a tensor saved by two nodes (an
        activation read by the next layer's backward too) is one key; a storage a leaf
        owns (a weight, an input batch the user's code still holds) is flagged, as
        freeing the graph does not free it. Also the nodes
        that ran inside a checkpoint (they hold their segment's inputs instead)."""
        for node in nodes:
            if isinstance(node, LiveNode):
                node.settle()  # reads the node's saved values (and storages) if not yet
        leaf_storages = set(self.held)
        for node in nodes:
            if node.leaf_tensor is not None:
                leaf_storages.add(_storage_of(node.leaf_tensor)[0])
        keys: dict[tuple[int, int], str] = {}
        found: dict[str, tuple[tuple[str, int, bool], ...]] = {}
        saved_raw = self.saved_raw
        for node_id in [node.id for node in nodes if node.id in saved_raw]:
            storages = saved_raw[node_id]
            entries = []
            for where, size in storages:
                key = keys.setdefault(where, f"s{len(keys)}")
                entries.append((key, size, where in leaf_storages))
            found[node_id] = tuple(dict.fromkeys(entries))
        checkpointed = tuple(node.id for node in nodes if node.id in self.checkpointed)
        return found, checkpointed

    def read(self, node: Node) -> tuple[tuple[SavedValue, ...], bool]:
        """The node's saved values, read from the live torch node (and its storages noted
        for ``saved_storages``)."""
        with own_ops():  # inside watch(): the summaries are not the user's ops
            torch_node = node.torch_node
            values, freed, in_checkpoint, reentrant = _autograd.read_saved(torch_node)
            # first: who else holds a value counts references, which the lists below add to
            for tensor in held_outside(values, self.saved_summaries):
                self.held.add(_storage_of(tensor)[0])
            # what the graph holds: a value the user's saved_tensors_hooks packed, as packed
            held = [v.packed if type(v) is PackedByHooks else v for _, v in values]
            storages = [_storage_of(v) for v in held if isinstance(v, torch.Tensor)]
            if in_checkpoint:  # it holds its segment's inputs
                self.checkpointed.add(node.id)
                inputs = _autograd.checkpoint_inputs(torch_node)
                storages += [_storage_of(t) for t in inputs]
            elif reentrant:  # its saved values: inputs
                self.checkpointed.add(node.id)
            if storages:
                self.saved_raw[node.id] = storages
            return tuple([self._saved_value(name, value) for name, value in values]), freed

    def _saved_value(self, name: str, value: object) -> SavedValue:
        """``_saved_value``, summarizing a small saved tensor once per walk: the same tensor
        (a weight, an activation) is often saved by several nodes. A ``SavedValue`` is
        frozen, so one whose text follows from the name and the dtype and shape (a big
        tensor) or from the repr (sizes, scalars) is built once per walk and shared."""
        kind = type(value)
        if kind is torch.Tensor:
            tensor = cast(torch.Tensor, value)
            if tensor.numel() > SMALL_NUMEL:
                key: object = (name, tensor.dtype, shape_of(tensor))
                saved = self.shared.get(key)
                if saved is None:
                    saved = self.shared[key] = _saved_value(name, tensor)
                return saved
            return self._small_tensor(name, tensor)
        if kind in _SCALARS or (
            kind is tuple
            and value
            and not isinstance(cast(tuple[object, ...], value)[0], torch.Tensor)
        ):
            text = repr(value)[:80]
            saved = self.shared.get((name, text))
            if saved is None:
                saved = self.shared[(name, text)] = SavedValue(name, text)
            return saved
        return _saved_value(name, value)

    def _small_tensor(self, name: str, value: torch.Tensor) -> SavedValue:
        key = id(value)
        entry = self.saved_summaries.get(key)
        version = value._version
        if entry is None or entry[0] is not value or entry[1] != version:
            summary = summarize(value)
            entry = (value, version, summary.text(), summary)
            self.saved_summaries[key] = entry  # holds the tensor: its id stays unique
        return SavedValue(name, entry[2], entry[3])


def _saved_value(name: str, value: object) -> SavedValue:
    kind = type(value)
    if kind is tuple:  # the commonest: sizes and strides
        items: tuple[object, ...] = value  # type: ignore[assignment]
        if not items or not isinstance(items[0], torch.Tensor):
            return SavedValue(name, repr(value)[:80])
    elif kind in _SCALARS:
        return SavedValue(name, repr(value)[:80])
    if isinstance(value, torch.Tensor):
        if value.numel() <= SMALL_NUMEL:
            summary = summarize(value)
            return SavedValue(name, summary.text(), summary)
        shape = "×".join(map(str, shape_of(value)))
        return SavedValue(name, f"{dtype_name(value.dtype)} {shape}")
    if isinstance(value, RuntimeError):
        return SavedValue(name, "unreadable: " + str(value).split("\n")[0][:120])
    if isinstance(value, tuple | list) and value and isinstance(value[0], torch.Tensor):
        return SavedValue(name, f"{len(value)} tensors")
    return SavedValue(name, repr(value)[:80])


# what the walk reads of a plain leaf (``_tensor_rows``)
_LEAF_FIELDS = operator.attrgetter(
    "requires_grad", "is_leaf", "_version", "grad", "shape", "dtype", "is_cpu"
)

_made_ids: list[str] = []  # "n0", "n1", ...: replaced whole when it grows (threads share it)
_made_tensor_ids: list[str] = []  # "t0", "t1", ...: the same for tensor records


def _node_ids(count: int = 0) -> list[str]:
    """The node ids "n0", "n1", ... made so far, at least ``count`` of them (then some,
    so that the next walk of a similar graph finds all of its ids made)."""
    global _made_ids
    made = _made_ids
    if len(made) < count:
        made = _made_ids = [f"n{index}" for index in range(max(count, 2 * len(made)))]
    return made


def _tensor_ids(count: int) -> list[str]:
    """``_node_ids`` for tensor records: "t0", "t1", ..., at least ``count`` of them."""
    global _made_tensor_ids
    made = _made_tensor_ids
    if len(made) < count:
        made = _made_tensor_ids = [f"t{index}" for index in range(max(count, 2 * len(made)))]
    return made


def _unique(ids: list[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def _storage_of(tensor: torch.Tensor) -> tuple[tuple[int, int], int]:
    """Where a tensor's storage lives (device index, -1 for the CPU; data pointer) and its
    size in bytes (0 for tensors without one storage: sparse, nested, fake)."""
    if not plain_values(tensor):  # a fake tensor's pointer is no memory (and torch warns)
        return (-2, id(tensor)), 0
    try:
        storage = tensor.untyped_storage()
        return (tensor.get_device(), storage.data_ptr()), storage.nbytes()
    except (RuntimeError, NotImplementedError):
        return (-2, id(tensor)), 0
