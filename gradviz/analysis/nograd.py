"""Why a tensor's ``.grad`` stays None: the facts, the cause, and what to mark on the graph.

``.grad`` is filled only for a leaf that requires grad and that the root's backward graph
reaches through ``AccumulateGrad``. Each way to miss that leaves a trace: a non-leaf has a
``grad_fn`` (and needs ``retain_grad()``), an unreachable tensor has no node in the root's
graph, and under ``gradviz.watch()`` the forward ops show the line where the chain was cut
(``detach()``/``.data``, an op under ``torch.no_grad()``, a cast to an integer dtype).
This module holds the plain data and the graph/forward reasoning; ``gradviz.explain.nograd``
gathers the live facts and writes the words.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from gradviz.capture.nograd import GradFacts
from gradviz.model.forward import FOp, Forward
from gradviz.model.graph import Graph

__all__ = [
    "CAUSES",
    "COPY_OPS",
    "Cut",
    "GradFacts",
    "NoGradReport",
    "find_cut",
    "grad_path",
    "is_integer_dtype",
]

# every cause ``why_no_grad`` can name, in the words of the report's ``cause`` field
CAUSES = (
    "non_leaf",  # reachable, but a non-leaf: .grad is kept only after retain_grad()
    "copy",  # a non-leaf because .double()/.to()/... copied a leaf
    "detach",  # detach() or .data cut the path to the root
    "no_grad",  # an op under torch.no_grad() / inference_mode cut it
    "integer",  # a cast to an integer or boolean dtype cut it
    "not_used",  # the root does not depend on the tensor at all
    "requires_grad_false",  # the tensor never required grad, or it was switched off
    "not_differentiable",  # an op on the way made a tensor without grad_fn for no known reason
    "ok",  # nothing wrong: backward will fill .grad
)

# ops that copy a tensor to another dtype or device (a differentiable ToCopyBackward0)
COPY_OPS = frozenset(
    ["to", "double", "float", "half", "bfloat16", "cuda", "cpu", "type", "clone", "contiguous"]
)


def is_integer_dtype(dtype: str) -> bool:
    """Integer and boolean dtypes carry no gradient (``int64``, ``uint8``, ``bool`` ...)."""
    return dtype == "bool" or "int" in dtype


@dataclass(frozen=True)
class Cut:
    """The forward op where the tensor's path to the root lost its gradient."""

    op: FOp
    kind: str  # "detach", "no_grad", "integer", "requires_grad_false" or "other"
    tensor_in: str  # the forward tensor that still had a gradient
    tensor_out: str  # the forward tensor the op made without one


@dataclass
class NoGradReport:
    """The answer of ``why_no_grad``: the cause, the fix, and the marks to draw."""

    graph: Graph
    cause: str
    message: str
    fix: str
    facts: GradFacts
    cut: Cut | None = None
    path: tuple[str, ...] = ()  # node ids from the root's node to the tensor's node
    marked: tuple[str, ...] = field(default=())

    @property
    def line(self) -> str | None:
        """The source line of the cut (``file.py:12``), when ``watch()`` saw it."""
        if self.cut is None or self.cut.op.line is None:
            return None
        return self.cut.op.line.short()

    def marks(self) -> tuple[str, ...]:
        """Element ids to highlight: the path's nodes and edges, or the cut and its tensors."""
        return self.marked

    def __str__(self) -> str:
        return f"{self.message}\nFix: {self.fix}"


def grad_path(graph: Graph, start: str, target: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The shortest chain of nodes from ``start`` to ``target`` along ``next_functions``
    and the keys of its edges; two empty tuples when there is none."""
    previous: dict[str, tuple[str, str] | None] = {start: None}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        if current == target:
            break
        for edge in graph.out_edges(current):
            if edge.dst is not None and edge.dst not in previous:
                previous[edge.dst] = (current, edge.key)
                queue.append(edge.dst)
    if target not in previous:
        return (), ()
    nodes: list[str] = [target]
    edges: list[str] = []
    step = previous[target]
    while step is not None:
        nodes.append(step[0])
        edges.append(step[1])
        step = previous[step[0]]
    return tuple(reversed(nodes)), tuple(reversed(edges))


def _cut_kind(op: FOp, out_dtype: str) -> str:
    if op.kind == "detach":
        return "detach"
    if op.kind == "requires_grad":
        return "requires_grad_false"
    if not op.grad_enabled or op.inference_mode:
        return "no_grad"
    if is_integer_dtype(out_dtype):
        return "integer"
    return "other"


def find_cut(forward: Forward, tensor_id: str, root_id: str) -> Cut | str | None:
    """Follow the forward data flow from ``tensor_id``: the ``Cut`` where the gradient was
    lost on the way to ``root_id``; None when the root is reached with the gradient intact;
    ``"not_used"`` when no op chain leads from the tensor to the root at all.

    A tensor carries the gradient (is *connected*) when an op made it from a connected
    input and gave it a ``grad_fn``; an op that made it without one is the cut, and what
    is computed from a cut tensor only inherits that cut.
    """
    connected = {tensor_id}
    cut_of: dict[str, Cut] = {}
    for op in forward.ops:
        if op.kind == "requires_grad":
            target = op.outputs[0]
            if target in connected and op.name.endswith("False"):
                connected.discard(target)
                cut_of[target] = Cut(op, "requires_grad_false", target, target)
            continue
        inputs = [a.tensor for a in op.inputs if a.tensor is not None]
        live = [t for t in inputs if t in connected]
        inherited = [cut_of[t] for t in inputs if t in cut_of]
        if not live and not inherited:
            continue
        outputs = list(op.outputs) + [b.tensor for b in op.bumps if b.tensor not in op.outputs]
        grad_fns = list(op.grad_fns) + [None] * (len(outputs) - len(op.grad_fns))
        for out, grad_fn in zip(outputs, grad_fns, strict=True):
            if live and (grad_fn is not None or (op.kind == "inplace" and out in connected)):
                connected.add(out)
                cut_of.pop(out, None)
            elif live:
                connected.discard(out)
                kind = _cut_kind(op, forward.tensor(out).dtype)
                cut_of[out] = Cut(op, kind, live[0], out)
            elif out not in connected:
                cut_of.setdefault(out, inherited[0])
    if root_id in connected:
        return None
    if root_id in cut_of:
        return cut_of[root_id]
    return "not_used"
