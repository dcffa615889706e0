"""Names and symbols: what each tensor and node is called in a narration (x, w, u₁ ...)."""

from __future__ import annotations

import torch

from gradviz.escape import isolated
from gradviz.explain.formulas import FALLBACK_SYMBOLS, FORMULAS, OPERAND_SAVED
from gradviz.explain.lookup import (
    known_names,
    named_constants,
    rank_among_type,
    remembered,
    roots,
    tensors_at,
)
from gradviz.explain.terms import (
    _Ctx,
)
from gradviz.explain.text import (
    Tensor,
    _as_sent,
    _as_tensor,
)
from gradviz.model.graph import Edge, Graph, Node
from gradviz.model.recording import Recording, Step
from gradviz.model.values import Role, Summary, format_number


# -- names ----------------------------------------------------------------------------------------
def _tensor_name(graph: Graph, node_id: str, output_nr: int) -> str | None:
    for record in tensors_at(graph, node_id):
        if record.name and (record.output_nr or 0) == output_nr:
            return isolated(record.name)
    return None


def _root_name(graph: Graph) -> str:
    found = roots(graph)
    return isolated(found[0].name) if len(found) == 1 and found[0].name else "L"


def _leaf_name(graph: Graph, node_id: str) -> str | None:
    names = [t.name for t in tensors_at(graph, node_id) if t.role is Role.LEAF and t.name]
    return isolated(names[0]) if names else None


def _target(graph: Graph, edge: Edge) -> str:
    """Where an edge's gradient goes: 'AddBackward0', 'AccumulateGrad(h)', '... output 1'."""
    assert edge.dst is not None
    node = graph.node(edge.dst)
    if node.is_accumulate_grad:
        name = _leaf_name(graph, node.id)
        return f"AccumulateGrad({name})" if name else "AccumulateGrad"
    if graph.is_multi_output(node.id):
        return f"{_which(graph, node)} output {edge.input_nr}"
    return _which(graph, node)


def _which(graph: Graph, node: Node) -> str:
    """A node's type, told apart from others of its type by the tensor it made (``
    MulBackward0 (e)``) or its rank among them (``MulBackward0 (#2)``)."""
    rank, count = rank_among_type(graph, node)
    if count < 2:
        return node.type_name
    named = [t.name for t in tensors_at(graph, node.id) if t.name and not t.is_leaf]
    if named:
        return f"{node.type_name} ({named[0]})"
    return f"{node.type_name} (#{rank + 1})"


def _same_storage(a: object, b: object) -> bool | None:
    """Whether two live tensors are one tensor's data; None when that cannot be told."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor) or not a.numel() or not b.numel():
        return None
    try:
        return bool(a.data_ptr() == b.data_ptr() and a.shape == b.shape)
    except RuntimeError:
        return None


def _constant_name(ctx: _Ctx, saved: str) -> str | None:
    """An off-graph operand the node saved: the one named constant with its value, else the
    value itself. A named constant that is provably another tensor (the live saved value lives
    elsewhere, e.g. the ones of a seed saved by a gradient's graph) is not it."""
    graph = ctx.recording.graph
    tensor = _as_tensor(ctx.saved_raw(saved))
    if tensor is None:
        return None
    raw, live = ctx.saved_raw(saved), ctx._live().get(saved)
    dtype = _dtype(raw) or _dtype(live)
    matches = []
    for record in named_constants(graph):
        data = None if record.data is None else _as_tensor(record.data)
        if not record.name or data is None:
            continue
        if data.shape != tensor.shape or not torch.equal(data, tensor):
            continue
        # a Python number (x * 2) is saved as an int64 or float64 tensor: not a float32 constant
        if dtype is not None and dtype != record.dtype:
            continue
        if _same_storage(live, record.tensor) is False:
            continue
        matches.append(isolated(record.name))
    if len(matches) == 1:
        return matches[0]
    return format_number(float(tensor)) if tensor.numel() == 1 else None


def _dtype(value: object) -> str | None:
    if isinstance(value, Summary):
        return value.dtype
    if isinstance(value, Tensor):
        return str(value.dtype).removeprefix("torch.")
    return None


def _forward_operand(ctx: _Ctx, slot: int) -> tuple[bool, str | None]:
    """What ``gradviz.watch()`` saw in an off-graph slot: (True, its name, or the Python
    number's value, or None for an unnamed tensor), or (False, None) when it cannot tell.

    Only for a node its forward op made directly, whose positional operands line up with
    the node's inputs (``add(s, bias)`` → AddBackward0's slots 0 and 1)."""
    graph, node = ctx.recording.graph, ctx.node
    forward = graph.forward
    op = None if forward is None else forward.op_for_node(node.id)
    if forward is None or op is None or node.sequence_nr not in op.grad_fn_seqs:
        return False, None
    operands = [arg for arg in op.inputs if arg.position.isdigit()]
    if len(operands) != len(ctx.edges) or slot >= len(operands):
        return False, None
    arg = operands[slot]
    if arg.tensor is None:
        number = arg.value
        if isinstance(number, int | float) and not isinstance(number, bool):
            return True, format_number(float(number))
        return False, None
    item = forward.tensor(arg.tensor)
    if item.requires_grad:
        return False, None
    linked = {f: r for r, f in forward.tensor_links.items()}
    records = {record.id: record for record in graph.tensors}
    record = records.get(linked.get(item.id, ""))
    name = record.name if record is not None and record.name else item.name
    return True, isolated(name) if name and _fits(tuple(item.shape), _output_shape(ctx)) else None


def _fits(shape: tuple[int, ...], out: tuple[int, ...] | None) -> bool:
    """Whether an operand of this shape can broadcast into an output of shape ``out``."""
    if out is None:
        return True
    if len(shape) > len(out):
        return False
    return all(n in (1, m) for n, m in zip(reversed(shape), reversed(out), strict=False))


def _output_shape(ctx: _Ctx) -> tuple[int, ...] | None:
    grads = ctx.step.grad_outputs
    value = grads[0] if len(grads) == 1 else None
    return None if value is None else tuple(value.shape)


def _unkept_constant(ctx: _Ctx) -> str | None:
    """The name of an off-graph operand the node did not save (``y = s + bias``: AddBackward0
    keeps only alpha), without ``gradviz.watch()``: only when it is the one named constant of
    the graph and its shape fits the output. (A Python number, ``s + 0.25``, leaves no trace
    to tell it from that constant; under ``watch()`` the forward op tells.)
    """
    constants = named_constants(ctx.recording.graph)
    if len(constants) != 1 or not _fits(tuple(constants[0].shape), _output_shape(ctx)):
        return None
    return isolated(constants[0].name or "")


def _expression(recording: Recording, node_id: str, depth: int) -> str | None:
    """A short expression for an unnamed tensor from its named inputs: '(b·c)', 'wᵀ'.
    Made once per node and depth while the recording is narrated."""
    key = ("expression", id(recording), node_id, depth)
    return remembered(recording.graph, key, lambda: _new_expression(recording, node_id, depth))


def _new_expression(recording: Recording, node_id: str, depth: int) -> str | None:
    graph = recording.graph
    node = graph.node(node_id)
    make = FORMULAS.get(node.type_name)
    if depth <= 0 or make is None or graph.is_multi_output(node_id):
        return None
    step = recording.step_for(node_id) or Step(0, node_id, node.type_name, ())
    ctx = _context(recording, step, depth - 1, grads=False)
    if ctx.fallback:
        return None
    try:
        expr = make(ctx).expr
    except (RuntimeError, ValueError, TypeError, IndexError):
        return None
    if len(expr) > 16:
        return None
    return expr


_PLACEHOLDERS = ("u", "v", "w", "p", "q", "r", "s")
_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


class _Taken:
    """The names a placeholder may not take: the graph's (read, never copied: a graph with
    thousands of named tensors is narrated one node at a time) and those of this node."""

    def __init__(self, known: frozenset[str], own: set[str]) -> None:
        self._known = known
        self._own = own
        self.numbers: dict[str, int] = {}  # per first candidate, the subscript to try next

    def __contains__(self, name: str) -> bool:
        return name in self._own or name in self._known

    def add(self, name: str) -> None:
        self._own.add(name)


def _fresh(candidates: tuple[str, ...], used: _Taken) -> str:
    """The first candidate no tensor is called, else the first with a subscript: 'u₂'.

    Names are only ever added to ``used``, so the subscripts are searched on from where the
    last search stopped: a node with thousands of unnamed inputs counts up once in all.

    Never a prime: 'x′' reads as a derivative (and as the real x) in a lesson on them."""
    for candidate in candidates:
        if candidate not in used:
            return candidate
    base = candidates[0]
    number = used.numbers.get(base, 2)
    while f"{base}{number}".translate(_SUBSCRIPTS) in used:
        number += 1
    used.numbers[base] = number
    return f"{base}{number}".translate(_SUBSCRIPTS)


def _stands_for(graph: Graph, edge: Edge) -> str:
    """What a placeholder symbol is: 'an unnamed constant', 'the unnamed output of X'."""
    if edge.dst is None:
        return "an unnamed constant"
    node = graph.node(edge.dst)
    if node.is_accumulate_grad:
        return "an unnamed leaf"
    if graph.is_multi_output(node.id):
        return f"output {edge.input_nr} of {node.type_name}, unnamed"
    return f"the unnamed output of {node.type_name}"


def _symbols(ctx: _Ctx, depth: int) -> list[str]:
    """A symbol per input slot: the tensor's name or expression, a named constant, a value,
    or, when nothing better is known, a placeholder that is nobody's name ('u', 'const'),
    whose meaning goes to ``ctx.placeholders``."""
    graph, kind = ctx.recording.graph, ctx.node.type_name
    fallback = FALLBACK_SYMBOLS.get(kind, ())
    names: list[str | None] = []
    for edge in ctx.edges:
        name = None
        if edge.dst is not None:
            name = _tensor_name(graph, edge.dst, edge.input_nr)
            if name is None and edge.input_nr == 0:
                name = _expression(ctx.recording, edge.dst, depth)
        else:
            saved = OPERAND_SAVED.get(kind, {}).get(edge.slot)
            known, name = _forward_operand(ctx, edge.slot)
            if not known:
                name = _unkept_constant(ctx) if saved is None else _constant_name(ctx, saved)
            elif name is None and saved is not None:  # an unnamed tensor: its value, if one
                value = _as_tensor(ctx.saved_raw(saved))
                scalar = value is not None and value.numel() == 1
                name = format_number(float(value)) if value is not None and scalar else None
        names.append(name)
    used = _Taken(known_names(graph), {n for n in names if n})
    out = []
    for edge, name in zip(ctx.edges, names, strict=True):
        if name is None:
            ctx.fallback = True
            if edge.dst is None:
                candidates: tuple[str, ...] = ("const",)
            else:
                own = fallback[edge.slot : edge.slot + 1]
                candidates = own + tuple(c for c in _PLACEHOLDERS if c not in own)
            name = _fresh(candidates, used)
            used.add(name)
            ctx.placeholders[name] = _stands_for(graph, edge)
        out.append(name)
    return out


def _context(recording: Recording, step: Step, depth: int = 2, grads: bool = True) -> _Ctx:
    """What the formulas need about a step (``grads=False``: only names, for expressions)."""
    graph = recording.graph
    node = graph.node(step.node_id)
    edges = graph.out_edges(step.node_id)
    sent = [_as_sent(v) for v in step.grad_inputs] if grads and step.grad_inputs else []
    ctx = _Ctx(
        recording=recording,
        step=step,
        node=node,
        edges=edges,
        syms=[],
        grads=[_as_tensor(g) for g in step.grad_outputs] if grads else [],
        names_only=not grads,
        sent=sent,
    )
    ctx.syms = _symbols(ctx, depth)
    return ctx
