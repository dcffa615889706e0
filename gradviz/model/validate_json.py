"""Strict checks of graph data read from JSON, before any of it is drawn.

A ``.json`` file may come from anyone, and its strings end up in DOT, SVG and HTML. Ids
must have the very form gradviz writes (``n3``, ``t0``, ``f12``), so none can carry DOT
syntax; every reference must point at something that exists; every number, flag and
enum value must have its type and range; sizes are bounded. The first fault found raises
an ``InvalidInput`` that names the field (``graph.nodes[3].id``) and what it must be, so
a malformed file never reaches a ``KeyError`` or a Graphviz error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from gradviz.errors import InvalidInput
from gradviz.escape import NONFINITE_TEXT

__all__ = [
    "FORWARD_ID",
    "MAX_ITEMS",
    "MAX_TEXT_CHARS",
    "NODE_ID",
    "TENSOR_ID",
    "check_graph_data",
]

NODE_ID = re.compile(r"n[0-9]{1,9}")
TENSOR_ID = re.compile(r"t[0-9]{1,9}")
FORWARD_ID = re.compile(r"f[0-9]{1,9}")
MAX_ITEMS = 1_000_000  # nodes, edges, tensors, ops, values ... in one list
MAX_TEXT_CHARS = 100_000  # one name or text (drawn shortened; whole in the panel)
MAX_INT = 2**64  # AccumulateGrad's sequence number is UINT64_MAX
ROLES = ("leaf", "constant", "branch", "node")
OP_KINDS = ("op", "inplace", "factory", "view", "detach", "requires_grad")
_WORD = re.compile(r"[a-z_]{1,32}")

_Check = Callable[[Any, str], None]


def _fail(where: str, wanted: str, value: Any) -> InvalidInput:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return InvalidInput(
        f"{where} must be {wanted}, not {shown}: this file was not written by gradviz, or "
        "was changed since; save the graph again with graph.save('graph.json')"
    )


def _object(
    value: Any, where: str, required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> None:
    """A JSON object with exactly the ``required`` keys, and maybe some ``optional`` ones."""
    if not isinstance(value, Mapping):
        raise _fail(where, "a JSON object", value)
    missing = [key for key in required if key not in value]
    if missing:
        raise InvalidInput(
            f"{where}.{missing[0]} is missing: this file was not written by gradviz, or was "
            "changed since; save the graph again with graph.save('graph.json')"
        )
    unknown = [key for key in value if key not in required and key not in optional]
    if unknown:
        raise InvalidInput(f"{where} has an unknown field {str(unknown[0])[:80]!r}")


def _list(value: Any, where: str, item: _Check) -> None:
    if not isinstance(value, list):
        raise _fail(where, "a JSON list", value)
    if len(value) > MAX_ITEMS:
        raise _fail(where, f"a list of at most {MAX_ITEMS} items", f"{len(value)} items")
    for index, element in enumerate(value):
        item(element, f"{where}[{index}]")


def _text(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise _fail(where, "text", value)
    if len(value) > MAX_TEXT_CHARS:
        raise _fail(where, f"text of at most {MAX_TEXT_CHARS} characters", value)


def _maybe(check: _Check) -> _Check:
    def optional(value: Any, where: str) -> None:
        if value is not None:
            check(value, where)

    return optional


def _flag(value: Any, where: str) -> None:
    if not isinstance(value, bool):
        raise _fail(where, "true or false", value)


def _integer(low: int = 0, high: int = MAX_INT) -> _Check:
    def check(value: Any, where: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise _fail(where, f"a whole number from {low} to {high}", value)

    return check


_COUNT = _integer()
_SIGNED = _integer(-MAX_INT, MAX_INT)


def _number(value: Any, where: str) -> None:
    """A float or int, or NaN / Infinity written as text (``gradviz.escape.json_text``)."""
    if isinstance(value, str) and value in NONFINITE_TEXT:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(where, "a number (or 'NaN', 'Infinity', '-Infinity')", value)
    if isinstance(value, int) and abs(value) > MAX_INT:
        raise _fail(where, f"a number of at most {MAX_INT} in size", value)
    # a bare NaN or Infinity (json.loads reads them; gradviz wrote them before 0.1) is a
    # float like any other here


def _scalar(value: Any, where: str) -> None:
    """One kept value: a number, a flag, or a complex number's text ('(1-2j)')."""
    if isinstance(value, bool):
        return
    if isinstance(value, str) and value not in NONFINITE_TEXT:
        if len(value) > 100:
            raise _fail(where, "a number, or a complex number's text", value)
        return
    _number(value, where)


def _one_of(choices: tuple[str, ...]) -> _Check:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, str) or value not in choices:
            raise _fail(where, f"one of {', '.join(repr(c) for c in choices)}", value)

    return check


def _matching(pattern: re.Pattern[str], wanted: str) -> _Check:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, str) or pattern.fullmatch(value) is None:
            raise _fail(where, wanted, value)

    return check


_NODE_ID = _matching(NODE_ID, "a node id like 'n3'")
_TENSOR_ID = _matching(TENSOR_ID, "a tensor id like 't0'")
_FORWARD_ID = _matching(FORWARD_ID, "a forward tensor id like 'f12'")


def _summary(value: Any, where: str) -> None:
    _object(
        value,
        where,
        ("shape", "dtype", "numel", "values", "complete"),
        ("min", "max", "mean", "norm", "nan", "inf", "available", "nbytes"),
    )
    _list(value["shape"], f"{where}.shape", _COUNT)
    _text(value["dtype"], f"{where}.dtype")
    _COUNT(value["numel"], f"{where}.numel")
    _list(value["values"], f"{where}.values", _scalar)
    _flag(value["complete"], f"{where}.complete")
    for key in ("min", "max", "mean", "norm"):
        _maybe(_number)(value.get(key), f"{where}.{key}")
    for key in ("nan", "inf", "available"):
        if key in value:
            _flag(value[key], f"{where}.{key}")
    if "nbytes" in value:
        _COUNT(value["nbytes"], f"{where}.nbytes")


def _saved(value: Any, where: str) -> None:
    _object(value, where, ("name", "text"), ("summary",))
    _text(value["name"], f"{where}.name")
    _text(value["text"], f"{where}.text")
    _maybe(_summary)(value.get("summary"), f"{where}.summary")


def _node(value: Any, where: str) -> None:
    _object(value, where, ("id", "type_name", "name", "sequence_nr", "saved", "saved_freed"))
    _NODE_ID(value["id"], f"{where}.id")
    _text(value["type_name"], f"{where}.type_name")
    _text(value["name"], f"{where}.name")
    _SIGNED(value["sequence_nr"], f"{where}.sequence_nr")
    _list(value["saved"], f"{where}.saved", _saved)
    _flag(value["saved_freed"], f"{where}.saved_freed")


def _edge(value: Any, where: str) -> None:
    _object(value, where, ("src", "slot", "dst", "input_nr"))
    _NODE_ID(value["src"], f"{where}.src")
    _COUNT(value["slot"], f"{where}.slot")
    _maybe(_NODE_ID)(value["dst"], f"{where}.dst")
    _COUNT(value["input_nr"], f"{where}.input_nr")


def _tensor(value: Any, where: str) -> None:
    _object(
        value,
        where,
        (
            "id",
            "name",
            "shape",
            "dtype",
            "device",
            "requires_grad",
            "is_leaf",
            "version",
            "grad_fn",
            "data",
            "grad",
            "role",
            "node_id",
            "output_nr",
            "is_root",
        ),
    )
    _TENSOR_ID(value["id"], f"{where}.id")
    _maybe(_text)(value["name"], f"{where}.name")
    _list(value["shape"], f"{where}.shape", _COUNT)
    for key in ("dtype", "device"):
        _text(value[key], f"{where}.{key}")
    for key in ("requires_grad", "is_leaf"):
        _flag(value[key], f"{where}.{key}")
    _COUNT(value["version"], f"{where}.version")
    _maybe(_text)(value["grad_fn"], f"{where}.grad_fn")
    for key in ("data", "grad"):
        _maybe(_summary)(value[key], f"{where}.{key}")
    _one_of(ROLES)(value["role"], f"{where}.role")
    _maybe(_NODE_ID)(value["node_id"], f"{where}.node_id")
    _maybe(_COUNT)(value["output_nr"], f"{where}.output_nr")
    _flag(value["is_root"], f"{where}.is_root")


def _unique(ids: list[str], where: str, field: str) -> set[str]:
    seen: set[str] = set()
    for index, item in enumerate(ids):
        if item in seen:
            raise _fail(f"{where}[{index}].{field}", "unique", item)
        seen.add(item)
    return seen


def _refers(value: Any, where: str, known: set[str] | range, what: str) -> None:
    if value is not None and value not in known:
        raise _fail(where, f"the {what} of an entry in this file", value)


def check_graph_data(data: Any, graph_format: str, forward_format: str) -> None:
    """Raise ``InvalidInput`` naming the first field of ``data`` (a ``Graph.to_dict()``
    read back, of ``graph_format`` with forward data of ``forward_format``) that gradviz
    did not write that way; return when every field is sound."""
    if not isinstance(data, Mapping) or data.get("format") != graph_format:
        raise InvalidInput(
            f"not a gradviz graph (expected format {graph_format!r}); write one with "
            "graph.save('graph.json')"
        )
    _object(data, "graph", ("format", "nodes", "edges", "root_ids", "tensors"), ("forward",))
    _list(data["nodes"], "graph.nodes", _node)
    _list(data["edges"], "graph.edges", _edge)
    _list(data["root_ids"], "graph.root_ids", _NODE_ID)
    _list(data["tensors"], "graph.tensors", _tensor)
    nodes = _unique([n["id"] for n in data["nodes"]], "graph.nodes", "id")
    tensors = _unique([t["id"] for t in data["tensors"]], "graph.tensors", "id")
    slots: set[tuple[str, int]] = set()
    for index, edge in enumerate(data["edges"]):
        where = f"graph.edges[{index}]"
        _refers(edge["src"], f"{where}.src", nodes, "id of a node")
        _refers(edge["dst"], f"{where}.dst", nodes, "id of a node")
        if (edge["src"], edge["slot"]) in slots:
            raise _fail(f"{where}.slot", f"unique for node {edge['src']}", edge["slot"])
        slots.add((edge["src"], edge["slot"]))
    for index, root in enumerate(data["root_ids"]):
        _refers(root, f"graph.root_ids[{index}]", nodes, "id of a node")
    for index, record in enumerate(data["tensors"]):
        _refers(record["node_id"], f"graph.tensors[{index}].node_id", nodes, "id of a node")
    if data.get("forward") is not None:
        _forward(data["forward"], "graph.forward", nodes, tensors, forward_format)


def _source_line(value: Any, where: str) -> None:
    _object(value, where, ("filename", "lineno", "function", "text"))
    for key in ("filename", "function", "text"):
        _text(value[key], f"{where}.{key}")
    _COUNT(value["lineno"], f"{where}.lineno")


def _arg(value: Any, where: str) -> None:
    _object(value, where, ("position", "tensor", "version", "value", "text"))
    _text(value["position"], f"{where}.position")
    _maybe(_FORWARD_ID)(value["tensor"], f"{where}.tensor")
    _maybe(_COUNT)(value["version"], f"{where}.version")
    if value["value"] is not None and not isinstance(value["value"], bool):
        _number(value["value"], f"{where}.value")
    _text(value["text"], f"{where}.text")


def _bump(value: Any, where: str) -> None:
    _object(value, where, ("tensor", "before", "after"))
    _FORWARD_ID(value["tensor"], f"{where}.tensor")
    _COUNT(value["before"], f"{where}.before")
    _COUNT(value["after"], f"{where}.after")


def _op(value: Any, where: str) -> None:
    _object(
        value,
        where,
        (
            "index",
            "name",
            "kind",
            "inputs",
            "outputs",
            "output_versions",
            "grad_fns",
            "grad_fn_seqs",
            "bumps",
            "seq_start",
            "seq_end",
            "grad_enabled",
            "inference_mode",
        ),
        ("line", "module"),
    )
    _COUNT(value["index"], f"{where}.index")
    _text(value["name"], f"{where}.name")
    _one_of(OP_KINDS)(value["kind"], f"{where}.kind")
    _list(value["inputs"], f"{where}.inputs", _arg)
    _list(value["outputs"], f"{where}.outputs", _FORWARD_ID)
    _list(value["output_versions"], f"{where}.output_versions", _maybe(_COUNT))
    _list(value["grad_fns"], f"{where}.grad_fns", _maybe(_text))
    _list(value["grad_fn_seqs"], f"{where}.grad_fn_seqs", _maybe(_SIGNED))
    for key in ("output_versions", "grad_fns", "grad_fn_seqs"):
        if len(value[key]) != len(value["outputs"]):
            raise _fail(f"{where}.{key}", "as long as outputs", f"{len(value[key])} items")
    _list(value["bumps"], f"{where}.bumps", _bump)
    _SIGNED(value["seq_start"], f"{where}.seq_start")
    _SIGNED(value["seq_end"], f"{where}.seq_end")
    _flag(value["grad_enabled"], f"{where}.grad_enabled")
    _flag(value["inference_mode"], f"{where}.inference_mode")
    _maybe(_source_line)(value.get("line"), f"{where}.line")
    _maybe(_COUNT)(value.get("module"), f"{where}.module")


def _ftensor(value: Any, where: str) -> None:
    _object(
        value,
        where,
        (
            "id",
            "name",
            "name_source",
            "shape",
            "dtype",
            "role",
            "requires_grad",
            "is_leaf",
            "data",
            "created_by",
            "version",
        ),
        ("base", "grad_fn", "states"),
    )
    _FORWARD_ID(value["id"], f"{where}.id")
    _maybe(_text)(value["name"], f"{where}.name")
    _maybe(_matching(_WORD, "a word like 'names' or 'assign'"))(
        value["name_source"], f"{where}.name_source"
    )
    _list(value["shape"], f"{where}.shape", _COUNT)
    _text(value["dtype"], f"{where}.dtype")
    _one_of(ROLES)(value["role"], f"{where}.role")
    _flag(value["requires_grad"], f"{where}.requires_grad")
    _flag(value["is_leaf"], f"{where}.is_leaf")
    _maybe(_summary)(value["data"], f"{where}.data")
    _maybe(_COUNT)(value["created_by"], f"{where}.created_by")
    _maybe(_COUNT)(value["version"], f"{where}.version")
    _maybe(_FORWARD_ID)(value.get("base"), f"{where}.base")
    _maybe(_text)(value.get("grad_fn"), f"{where}.grad_fn")
    _list(value.get("states", []), f"{where}.states", _tensor_state)


def _tensor_state(value: Any, where: str) -> None:
    keys = ("op", "after", "version", "requires_grad", "is_leaf", "grad_fn", "data")
    _object(value, where, (*keys, "has_grad", "grad"))
    _COUNT(value["op"], f"{where}.op")
    _maybe(_COUNT)(value["version"], f"{where}.version")
    for flag in ("after", "requires_grad", "is_leaf", "has_grad"):
        _flag(value[flag], f"{where}.{flag}")
    _maybe(_text)(value["grad_fn"], f"{where}.grad_fn")
    _maybe(_summary)(value["data"], f"{where}.data")
    _maybe(_summary)(value["grad"], f"{where}.grad")


def _module(value: Any, where: str) -> None:
    _object(value, where, ("index", "path", "type_name", "depth", "parent", "seq_start", "seq_end"))
    _COUNT(value["index"], f"{where}.index")
    _text(value["path"], f"{where}.path")
    _text(value["type_name"], f"{where}.type_name")
    _COUNT(value["depth"], f"{where}.depth")
    _maybe(_COUNT)(value["parent"], f"{where}.parent")
    _SIGNED(value["seq_start"], f"{where}.seq_start")
    _SIGNED(value["seq_end"], f"{where}.seq_end")


def _links(value: Any, where: str, keys: _Check, values: _Check) -> None:
    if not isinstance(value, Mapping):
        raise _fail(where, "a JSON object", value)
    if len(value) > MAX_ITEMS:
        raise _fail(where, f"at most {MAX_ITEMS} entries", f"{len(value)} entries")
    for key, item in value.items():
        keys(key, f"{where} key")
        values(item, f"{where}[{key!r}]")


def _forward(
    data: Any, where: str, nodes: set[str], graph_tensors: set[str], forward_format: str
) -> None:
    _object(
        data,
        where,
        ("format", "tensors", "ops", "modules", "node_ops", "node_modules", "tensor_links"),
        ("first_replayed",),
    )
    if data["format"] != forward_format:
        raise _fail(f"{where}.format", repr(forward_format), data["format"])
    _COUNT(data.get("first_replayed", 0), f"{where}.first_replayed")
    _list(data["tensors"], f"{where}.tensors", _ftensor)
    _list(data["ops"], f"{where}.ops", _op)
    _list(data["modules"], f"{where}.modules", _module)
    _links(data["node_ops"], f"{where}.node_ops", _NODE_ID, _COUNT)
    _links(data["node_modules"], f"{where}.node_modules", _NODE_ID, _COUNT)
    _links(data["tensor_links"], f"{where}.tensor_links", _TENSOR_ID, _FORWARD_ID)
    ftensors = _unique([t["id"] for t in data["tensors"]], f"{where}.tensors", "id")
    ops = range(len(data["ops"]))
    modules = range(len(data["modules"]))
    for index, item in enumerate(data["tensors"]):
        at = f"{where}.tensors[{index}]"
        _refers(item["created_by"], f"{at}.created_by", ops, "index of an op")
        _refers(item.get("base"), f"{at}.base", ftensors, "id of a forward tensor")
    first = data.get("first_replayed", 0)
    if first > len(data["ops"]):
        raise _fail(f"{where}.first_replayed", f"at most {len(data['ops'])} (the ops)", first)
    for index, op in enumerate(data["ops"]):
        at = f"{where}.ops[{index}]"
        if op["index"] != index:
            raise _fail(f"{at}.index", f"{index} (its place in the list)", op["index"])
        _refers(op.get("module"), f"{at}.module", modules, "index of a module")
        for place, tensor in enumerate(op["outputs"]):
            _refers(tensor, f"{at}.outputs[{place}]", ftensors, "id of a forward tensor")
        for place, arg in enumerate(op["inputs"]):
            _refers(arg["tensor"], f"{at}.inputs[{place}].tensor", ftensors, "id of a tensor")
        for place, bump in enumerate(op["bumps"]):
            _refers(bump["tensor"], f"{at}.bumps[{place}].tensor", ftensors, "id of a tensor")
    for index, scope in enumerate(data["modules"]):
        at = f"{where}.modules[{index}]"
        if scope["index"] != index:
            raise _fail(f"{at}.index", f"{index} (its place in the list)", scope["index"])
        # a parent comes before its children: no cycles, so walking up always ends
        _refers(scope["parent"], f"{at}.parent", range(index), "index of an earlier module")
    for key, op_index in data["node_ops"].items():
        _refers(key, f"{where}.node_ops key", nodes, "id of a node")
        _refers(op_index, f"{where}.node_ops[{key!r}]", ops, "index of an op")
    for key, module_index in data["node_modules"].items():
        _refers(key, f"{where}.node_modules key", nodes, "id of a node")
        _refers(module_index, f"{where}.node_modules[{key!r}]", modules, "index of a module")
    for key, ftensor in data["tensor_links"].items():
        _refers(key, f"{where}.tensor_links key", graph_tensors, "id of a graph tensor")
        _refers(ftensor, f"{where}.tensor_links[{key!r}]", ftensors, "id of a forward tensor")
