"""``why_no_grad``: name why a tensor's ``.grad`` is None, say the fix, mark it on the graph.

The plain form reads what the backward graph alone shows (a non-leaf, a tensor the root
does not reach, ``requires_grad=False``, an integer dtype). Under ``gradviz.watch()`` the
forward ops also give the line that cut the chain: ``detach()``/``.data``, an op under
``torch.no_grad()``/``inference_mode``, a cast to an integer or boolean dtype, or a copy
(``.double()``, ``.to()``) that made the tensor a non-leaf.
"""

from __future__ import annotations

from gradviz.analysis.nograd import (
    COPY_OPS,
    Cut,
    GradFacts,
    NoGradReport,
    find_cut,
    grad_path,
    is_integer_dtype,
)
from gradviz.model.forward import FOp, Forward
from gradviz.model.graph import Graph
from gradviz.model.public import built

__all__ = ["explain_no_grad", "forward_label"]


def explain_no_grad(
    graph: Graph, facts: GradFacts, root: str = "root", forward: Forward | None = None
) -> NoGradReport:
    """Why the tensor of ``facts`` gets no ``.grad`` from a backward of the root's ``graph``.

    The caller traces the graph and reads the live facts (``gradviz.capture.nograd``);
    ``root`` names the root in the words; ``forward`` (what ``watch()`` saw) gives the
    line that cut the graph (``detach``, ``no_grad``, an integer cast).
    """
    return _decide(graph, facts, forward, root)


def forward_label(forward: Forward, tensor_id: str | None, default: str) -> str:
    """The name ``watch()`` gave a forward tensor, or ``default``."""
    return _label(forward, tensor_id, default)


def _label(forward: Forward, tensor_id: str | None, default: str) -> str:
    if tensor_id is None:
        return default
    item = forward.tensor(tensor_id)
    return item.name or default


def _where(op: FOp) -> str:
    if op.line is None:
        return f"`{op.name}`"
    return f"`{op.line.text}` ({op.line.short()})"


def _decide(graph: Graph, facts: GradFacts, forward: Forward | None, root: str) -> NoGradReport:
    if not facts.requires_grad:
        return _no_requires_grad(graph, facts, forward, root)
    if facts.node_id is not None and facts.root_node_id is not None:
        return _reachable(graph, facts, forward, root)
    if forward is not None and facts.forward_id is not None and facts.root_forward_id:
        cut = find_cut(forward, facts.forward_id, facts.root_forward_id)
        if isinstance(cut, Cut):
            return _cut(graph, facts, cut, root)
    return _not_used(graph, facts, forward, root)


def _report(
    graph: Graph,
    facts: GradFacts,
    cause: str,
    message: str,
    fix: str,
    cut: Cut | None = None,
    path: tuple[str, ...] = (),
    marks: tuple[str, ...] = (),
) -> NoGradReport:
    extra = (facts.record_id, facts.forward_id)
    unique = tuple(dict.fromkeys([*marks, *(m for m in extra if m)]))
    return built(NoGradReport)(graph, cause, message, fix, facts, cut, path, unique)


def _reachable(graph: Graph, facts: GradFacts, forward: Forward | None, root: str) -> NoGradReport:
    assert facts.node_id is not None and facts.root_node_id is not None
    nodes, edges = grad_path(graph, facts.root_node_id, facts.node_id)
    marks = nodes + edges
    label = facts.label
    steps = f"{len(edges)} edge{'s' if len(edges) != 1 else ''}"
    if facts.is_leaf or facts.retains_grad:
        kept = "a leaf" if facts.is_leaf else "a non-leaf that calls retain_grad()"
        return _report(
            graph, facts, "ok",
            f"Nothing blocks it: {label} is {kept} that requires grad, and {root}'s backward "
            f"graph reaches it ({steps}, marked). backward() fills {label}.grad. If it is "
            "still None: backward() has not run yet, it ran with inputs= that leave "
            f"{label} out, the gradient was taken with torch.autograd.grad() (which never "
            "writes .grad), or zero_grad() reset it to None.",
            f"call {root}.backward() and read {label}.grad after it.",
            path=nodes, marks=marks,
        )  # fmt: skip
    made = _maker(forward, facts.forward_id)
    copy_op = made is not None and made.name in COPY_OPS
    if facts.copied_leaf or copy_op:
        where = _where(made) if made is not None else "a copy such as .double() or .to()"
        return _report(
            graph, facts, "copy",
            f"{label} is not a leaf: {where} copied a leaf to another dtype or device, and "
            f"the copy has grad_fn={facts.grad_fn}. Backward sends the gradient through the "
            f"copy to the original leaf (marked at the end of the path) and keeps no "
            f"{label}.grad.",
            "create the tensor in the dtype/device you need and only then ask for "
            "gradients (torch.randn(3, dtype=torch.float64, requires_grad=True)), or make "
            f"the copy a leaf: {label} = {label}.detach().requires_grad_(); "
            f"{label}.retain_grad() also keeps its gradient.",
            path=nodes, marks=marks + _op_marks(made),
        )  # fmt: skip
    where = f" (made by {_where(made)})" if made is not None else ""
    return _report(
        graph, facts, "non_leaf",
        f"{label} is not a leaf: it was computed{where} and has grad_fn={facts.grad_fn}. "
        f"{root}'s backward graph reaches it ({steps}, marked), but backward only passes "
        "a non-leaf's gradient on to the leaves and keeps .grad for leaves alone.",
        f"call {label}.retain_grad() before backward(), or get the gradient directly "
        f"with torch.autograd.grad({root}, {label}).",
        path=nodes, marks=marks + _op_marks(made),
    )  # fmt: skip


def _maker(forward: Forward | None, forward_id: str | None) -> FOp | None:
    if forward is None or forward_id is None:
        return None
    made = forward.tensor(forward_id).created_by
    return None if made is None else forward.ops[made]


def _op_marks(op: FOp | None) -> tuple[str, ...]:
    return () if op is None else (f"op{op.index}",)


_CUT_WORDS = {
    "detach": (
        "{where} cut the graph: detach() and .data return a tensor that shares the data "
        "but not the history, so no gradient flows from {root} back through it to {label}.",
        "use the tensor itself on the path to {root}; keep detach() only for values that "
        "must not train (targets, logged numbers).",
    ),
    "no_grad": (
        "{where} ran under torch.no_grad() or torch.inference_mode(): its result has no "
        "grad_fn, so {root}'s gradient stops there and never reaches {label}.",
        "move that line out of the no_grad()/inference_mode() block (or compute it again "
        "outside the block for the loss).",
    ),
    "integer": (
        "{where} made a tensor of dtype {dtype}: integer and boolean values have no gradient, so "
        "autograd drops the history there and {root} cannot send a gradient back to {label}.",
        "keep the path to {root} in floating point: a soft version (softmax weights "
        "instead of argmax, no round()/long()), or cast only values that need no gradient.",
    ),
    "requires_grad_false": (
        "{where} switched requires_grad off on the way, so the chain from {label} to "
        "{root} has no gradient from there on.",
        "drop that requires_grad=False (or requires_grad_(False)) on the path to {root}.",
    ),
    "other": (
        "{where} made a tensor without grad_fn from one that had a gradient, so the chain "
        "from {label} to {root} ends there.",
        "check that op: it is not differentiable; compute that value with ops autograd "
        "can differentiate.",
    ),
}


_MADE_WITHOUT = {
    "detach": "{where} made it with detach() or .data, which share the data but not the history",
    "no_grad": "{where} made it under torch.no_grad() or torch.inference_mode(), which record "
    "no history",
    "integer": "{where} made it with dtype {dtype}, and integer and boolean values have no "
    "gradient",
}


def _cut(graph: Graph, facts: GradFacts, cut: Cut, root: str) -> NoGradReport:
    assert graph.forward is not None
    words, fix = _CUT_WORDS[cut.kind]
    dtype = graph.forward.tensor(cut.tensor_out).dtype
    values = {"where": _where(cut.op), "root": root, "label": facts.label, "dtype": dtype}
    marks = (f"op{cut.op.index}", cut.tensor_in, cut.tensor_out)
    cause = "not_differentiable" if cut.kind == "other" else cut.kind
    return _report(
        graph, facts, cause, words.format(**values), fix.format(**values), cut=cut,
        marks=marks,
    )  # fmt: skip


def _not_used(graph: Graph, facts: GradFacts, forward: Forward | None, root: str) -> NoGradReport:
    label = facts.label
    if forward is None:
        hint = (
            " The backward graph does not show where the chain broke; run the forward pass "
            "inside `with gradviz.watch() as w:` and ask w.why_no_grad() for the line "
            "(a detach(), .data, torch.no_grad() or an integer cast)."
        )
    else:
        hint = " No op chain in the watched forward pass leads from it to the root."
    marks = (facts.root_node_id,) if facts.root_node_id else ()
    return _report(
        graph, facts, "not_used",
        f"{root} does not depend on {label} through autograd: its backward graph (drawn) "
        f"never reaches {label}, so no gradient arrives there.{hint}",
        f"use {label} in the computation of {root}, or check you pass the right tensors "
        "(a name reassigned to a new tensor, a parameter replaced by a copy, the loss of "
        "another model).",
        marks=marks,
    )  # fmt: skip


def _no_requires_grad(
    graph: Graph, facts: GradFacts, forward: Forward | None, root: str
) -> NoGradReport:
    label = facts.label
    made = _maker(forward, facts.forward_id)
    if forward is not None and facts.forward_id is not None:
        switched = [
            op
            for op in forward.ops
            if op.kind == "requires_grad"
            and op.outputs[0] == facts.forward_id
            and op.name.endswith("False")
        ]
        if switched:
            op = switched[-1]
            return _report(
                graph, facts, "requires_grad_false",
                f"{label} has requires_grad=False: {_where(op)} switched it off, so autograd "
                "does not track it and no gradient is computed for it.",
                f"remove that line, or call {label}.requires_grad_() before using it.",
                marks=_op_marks(op),
            )  # fmt: skip
        if made is not None and any(
            a.tensor is not None and forward.tensor(a.tensor).requires_grad for a in made.inputs
        ):
            kind = "detach" if made.kind == "detach" else ""
            if not kind and (not made.grad_enabled or made.inference_mode):
                kind = "no_grad"
            if not kind and is_integer_dtype(facts.dtype):
                kind = "integer"
            if kind:
                reason = _MADE_WITHOUT[kind].format(where=_where(made), dtype=facts.dtype)
                values = {"root": root, "label": label}
                return _report(
                    graph, facts, kind,
                    f"{label} has requires_grad=False: {reason}. Autograd does not track "
                    "it, so it gets no gradient (and no .grad).",
                    _CUT_WORDS[kind][1].format(**values),
                    marks=_op_marks(made),
                )  # fmt: skip
    if is_integer_dtype(facts.dtype):
        return _report(
            graph, facts, "integer",
            f"{label} has dtype {facts.dtype}: only floating-point and complex tensors "
            "can require gradients, so autograd never tracks it.",
            "compute it in floating point if it must get a gradient; an index or a count "
            "has none.",
        )  # fmt: skip
    return _report(
        graph, facts, "requires_grad_false",
        f"{label} has requires_grad=False: autograd does not track it, so it gets no "
        "gradient (and no .grad).",
        f"create it with requires_grad=True (torch.zeros(3, requires_grad=True)) or call "
        f"{label}.requires_grad_() before computing {root} from it.",
    )  # fmt: skip
