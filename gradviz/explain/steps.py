"""What each step means, in words, with the recorded numbers.

For the ops a lecture meets (add ... clone, AccumulateGrad) a step is told as the chain
rule: what the node got, each local derivative with its value, and what it sent where,
e.g. "got ∂k/∂k = 1; ∂(j·i)/∂j = i = 8 → sends 8 to AddBackward0". The local
derivatives come from the node's saved values, and every number a formula predicts is
checked against the gradient the engine really sent: a formula that does not agree is
never shown (the step falls back to the plain "received X; sends Y to Z" sentence).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

from gradviz.analysis.flow import same_sum
from gradviz.analysis.nonfinite import sum_overflow_text
from gradviz.explain.formulas import FORMULAS
from gradviz.explain.lookup import recorded_text
from gradviz.explain.symbols import (
    _context,
    _leaf_name,
    _root_name,
    _target,
    _tensor_name,
)
from gradviz.explain.terms import (
    Formula,
    Term,
    _Ctx,
)
from gradviz.explain.text import (
    _agree,
    _as_tensor,
    _equals,
    _is_scalar,
    _paren,
    show,
)
from gradviz.model.graph import Edge
from gradviz.model.recording import GradValue, Recording, Step, value_text
from gradviz.model.values import format_number

__all__ = ["Explanation", "Formula", "Term", "describe_step", "explain_step", "narrate", "show"]


# -- received gradients ---------------------------------------------------------------------------
def _streams(recording: Recording, step: Step, nr: int) -> list[tuple[str, GradValue]]:
    """What each producer sent into output ``nr`` of the step's node, in forward order."""
    graph = recording.graph
    streams: list[tuple[int, str, GradValue]] = []
    seed = recording.seeds.get((step.node_id, nr))
    if seed is not None:
        streams.append((-1, "the seed", seed))
    for edge in graph.in_edges(step.node_id):
        producer = recording.step_for(edge.src)
        if edge.input_nr != nr or producer is None or producer.index > step.index:
            continue
        value = producer.grad_inputs[edge.slot] if edge.slot < len(producer.grad_inputs) else None
        if value is not None:
            node = graph.node(edge.src)
            streams.append((node.sequence_nr, node.type_name, value))
    streams.sort(key=lambda s: s[0])
    return [(label, value) for _, label, value in streams]


def _received(recording: Recording, step: Step, outputs: list[str | None]) -> str:
    """'∂k/∂i = 10 from MulBackward0 + 8 from AddBackward0 = 18' for each output.

    When a hook changed the gradient on the way, what arrived is not the sum of what was
    sent: then it says what arrived, what the producers sent and their sum, and no ∂ label
    (the changed value is not the derivative of anything the graph computed).
    """
    root = _root_name(recording.graph)
    parts = []
    for nr, value in enumerate(step.grad_outputs):
        if value is None:
            continue
        label = outputs[nr] if nr < len(outputs) else None
        streams = _streams(recording, step, nr)
        if not same_sum(value, [v for _, v in streams]):
            parts.append(_changed(value, streams, label))
            continue
        text = "" if label is None else f"∂{root}/∂{label} = "
        if len(streams) > 1:
            text += " + ".join(f"{_shown(recording, v)} from {who}" for who, v in streams) + " = "
        parts.append(text + _shown(recording, value))
    return ", ".join(parts) or "nothing"


def _shown(recording: Recording, value: GradValue) -> str:
    """``show(value)`` of a gradient the recording holds (told once per replay)."""
    return recorded_text(recording.graph, value, "show", lambda: show(value))


def _arrived(recording: Recording, step: Step) -> str:
    """What an AccumulateGrad step received, shown as ``_received`` showed it."""
    value = step.grad_outputs[0]
    return show(None) if value is None else _shown(recording, value)


def _panel_text(recording: Recording, value: GradValue | None) -> str:
    """``value_text(value)`` of a gradient the recording holds (written once per replay)."""
    if value is None:
        return value_text(None)
    return recorded_text(recording.graph, value, "panel", lambda: value_text(value))


def _changed(value: GradValue, streams: list[tuple[str, GradValue]], label: str | None) -> str:
    """'[60, 120], not what was sent towards y ([3, 6] from A + [3, 6] from B = [6, 12]): ...'."""
    towards = "" if label is None else f" towards {label}"
    if not streams:
        return f"{show(value)}, though nothing was sent{towards}: something changed it on the way"
    sent = " + ".join(f"{show(v)} from {who}" for who, v in streams)
    tensors = [_as_tensor(v) for _, v in streams]
    if len(streams) > 1:
        if all(t is not None for t in tensors):
            total = functools.reduce(lambda a, b: a + b, [t for t in tensors if t is not None])
            sent += f" = {show(total)}"
        else:
            sent = f"the sum of {sent}"
    return (
        f"{show(value)}, not what was sent{towards} ({sent}): a hook changed the gradient "
        "on the way"
    )


def _output_labels(recording: Recording, step: Step, expr: str | None) -> list[str | None]:
    """The name of each output, else its expression ('(j·i)', 'x.unbind()[1]'), else None."""
    graph = recording.graph
    labels: list[str | None] = []
    for nr in range(max(1, len(step.grad_outputs))):
        name = _tensor_name(graph, step.node_id, nr)
        if name is None and expr is not None:
            name = _paren(expr) if len(step.grad_outputs) <= 1 else f"{_paren(expr)}[{nr}]"
        labels.append(name)
    return labels


# -- putting it together ---------------------------------------------------------------------
@dataclass(frozen=True)
class Explanation:
    """A step told in words, with the parts the side panel shows separately."""

    text: str
    op: str
    formula: tuple[str, ...]
    checked: bool


def _term_text(ctx: _Ctx, term: Term, edge: Edge) -> str:
    """One edge: '∂(g/h)/∂h = -g/h² = -4 → sends 18·(-4) = -72 to AccumulateGrad(h)'."""
    graph = ctx.recording.graph
    if edge.dst is None:
        sym = ctx.sym(edge.slot)
        what = f"the constant {sym}" if _is_number(sym) else sym
        return f"{what} is off the graph: nothing sent"
    value = ctx.step.grad_inputs[edge.slot] if edge.slot < len(ctx.step.grad_inputs) else None
    sent = ctx.sent[edge.slot] if edge.slot < len(ctx.sent) else None
    head, local, g = term.head, term.local, ctx.g
    if local is not None and _is_scalar(local) and format_number(float(local)) != term.rule:
        head += f" = {format_number(float(local))}"
    elif local is not None and not _is_scalar(local) and term.rule not in ("1", "-1"):
        shown = show(local, "tensor")
        if not shown.startswith("a "):
            head += f" = {shown}"
    if value is None:
        return f"{head} → sends nothing to {_target(graph, edge)}"
    shown = _shown(ctx.recording, value)
    if local is not None and _is_scalar(g) and _is_scalar(local) and _is_scalar(sent):
        assert g is not None and sent is not None
        product = ""
        if not _equals(g, 1) and not _equals(local, 1):
            product = f"{format_number(float(g))}·{_paren(format_number(float(local)))} = "
        return f"{head} → sends {product}{shown} to {_target(graph, edge)}"
    how = f"{term.how} = " if term.how and local is not None else ""
    return f"{head} → sends {how}{shown} to {_target(graph, edge)}"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _formula(ctx: _Ctx) -> tuple[Formula, bool] | None:
    """The op's formula and whether its numbers were checked; None when it disagrees."""
    make = FORMULAS.get(ctx.node.type_name)
    if make is None or not ctx.step.finished:
        return None
    try:
        formula = make(ctx)
    except (RuntimeError, ValueError, TypeError, IndexError):
        return None
    slots = {edge.slot for edge in ctx.edges if edge.dst is not None}
    checked = bool(slots)
    for term in formula.terms:
        if term.slot not in slots:
            continue
        sent = ctx.sent[term.slot] if term.slot < len(ctx.sent) else None
        if term.expected is None or sent is None:
            checked = False
            continue
        if not _agree(term.expected, sent):
            return None
    if slots - {term.slot for term in formula.terms}:
        return None
    return formula, checked


def _chain_rule(ctx: _Ctx, formula: Formula, checked: bool) -> Explanation:
    outputs = _output_labels(ctx.recording, ctx.step, formula.expr)
    for nr, label in enumerate(formula.outputs):
        if nr < len(outputs) and _tensor_name(ctx.recording.graph, ctx.node.id, nr) is None:
            outputs[nr] = label
    terms = {term.slot: term for term in formula.terms}
    parts = []
    for edge in ctx.edges:
        term = terms.get(edge.slot, Term(slot=edge.slot, head="", expected=None))
        parts.append(_term_text(ctx, term, edge))
    name = _tensor_name(ctx.recording.graph, ctx.node.id, 0) if len(outputs) == 1 else None
    made = f"{name} = {formula.expr}" if name else formula.expr
    if ctx.placeholders:
        made += ", where " + ", ".join(f"{s} is {what}" for s, what in ctx.placeholders.items())
    text = f"{ctx.node.type_name} ({made}): got {_received(ctx.recording, ctx.step, outputs)}"
    text += "".join(f"; {part}" for part in parts) + "."
    return Explanation(text, formula.op, tuple(parts), checked)


def _generic(recording: Recording, step: Step) -> Explanation:
    """'XBackward0 received 18; sends 9 to Y' for nodes without a formula (or one that failed)."""
    graph = recording.graph
    outputs = _output_labels(recording, step, None)
    received = _received(recording, step, outputs) if step.grad_outputs else "nothing"
    parts = []
    for edge in graph.out_edges(step.node_id):
        value = step.grad_inputs[edge.slot] if edge.slot < len(step.grad_inputs) else None
        if edge.dst is None:
            parts.append(f"input {edge.slot} is off the graph: nothing sent")
        elif step.finished:
            sent = show(None) if value is None else _shown(recording, value)
            parts.append(f"sends {sent} to {_target(graph, edge)}")
    text = f"{step.type_name} received {received}" + "".join(f"; {p}" for p in parts) + "."
    if not step.finished:
        text += " It did not finish (backward stopped here)."
    return Explanation(text, "", tuple(parts), False)


def _accumulate(recording: Recording, step: Step) -> Explanation:
    """'AccumulateGrad(h): ∂k/∂h = -72 from DivBackward0 + 8 from AddBackward0 = -64; ...'."""
    graph = recording.graph
    leaf = _leaf_name(graph, step.node_id)
    label = leaf or "the leaf"
    received = _received(recording, step, [label])
    grad = f"{leaf}.grad" if leaf else ".grad"
    if step.leaf_grad_after is None:
        change = f"adds it to {grad}"
    elif step.leaf_grad_before is None:
        change = f"adds it to {grad}: None → {show(step.leaf_grad_after)}"
    else:
        change = (
            f"adds it to {grad}: {show(step.leaf_grad_before)} + {_arrived(recording, step)} "
            f"= {show(step.leaf_grad_after)}"
        )
    head = f"AccumulateGrad({leaf})" if leaf else "AccumulateGrad"
    return Explanation(f"{head}: got {received}; {change}.", "accumulate", (change,), True)


def explain_step(recording: Recording, index: int) -> Explanation:
    """Frame ``index`` in words: the chain rule where gradviz knows the op, plain otherwise."""
    if index == 0:
        return Explanation(_seed_text(recording), "seed", (), True)
    step = recording.steps[index - 1]
    if step.type_name == "AccumulateGrad" and step.grad_outputs:
        explanation = _accumulate(recording, step)
    else:
        # a user's node hook may have replaced what the node sent: tell (and check the
        # formula against) what the op computed; the flow note says what the hook made of it
        told = step if step.sent_by_op is None else replace(step, grad_inputs=step.sent_by_op)
        ctx = _context(recording, told)
        found = _formula(ctx)
        explanation = _generic(recording, told) if found is None else _chain_rule(ctx, *found)
    extra = ""
    if step.nonfinite_origin:
        extra += " " + _nonfinite_text(recording, step)
    if step.nonfinite_sum:
        extra += " " + sum_overflow_text(step)
    if not step.flow_ok:
        extra += f" Flow check: {step.flow_note}."
    elif not step.flow_checked:
        extra += f" Flow check {step.flow_note}."
    if extra:
        text = explanation.text + extra
        explanation = Explanation(text, explanation.op, explanation.formula, explanation.checked)
    return explanation


def _nonfinite_sent(recording: Recording, step: Step) -> list[dict[str, Any]]:
    """Each non-finite gradient the step made: slot, where it went, NaN or Inf."""
    graph = recording.graph
    targets = {edge.slot: edge for edge in graph.out_edges(step.node_id)}
    out = []
    for slot, kind in step.nonfinite_origin:
        edge = targets.get(slot)
        to = "off the graph" if edge is None or edge.dst is None else _target(graph, edge)
        out.append({"slot": slot, "to": to, "kind": kind})
    return out


def _nonfinite_text(recording: Recording, step: Step) -> str:
    """'Inf first appears here: SqrtBackward0 sent Inf to AccumulateGrad(x) (input 0),
    although everything it received was finite.'"""
    sent = _nonfinite_sent(recording, step)
    kinds = [kind for kind in ("NaN", "Inf") if any(kind in s["kind"] for s in sent)]
    verb = "appear" if len(kinds) > 1 else "appears"
    where = ", ".join(f"{s['kind']} to {s['to']} (input {s['slot']})" for s in sent)
    return (
        f"{' and '.join(kinds)} first {verb} here: {step.type_name} sent {where}, although "
        "everything it received was finite."
    )


def _seed_text(recording: Recording) -> str:
    graph = recording.graph
    root = _root_name(graph)
    parts = []
    for (node_id, nr), value in recording.seeds.items():
        node = graph.node(node_id)
        name = _tensor_name(graph, node_id, nr) or _leaf_name(graph, node_id)
        what = f"∂{name}/∂{name} = {show(value)}" if name and root == name else show(value)
        made = f", the node that made {name}" if name and not node.is_accumulate_grad else ""
        parts.append(f"the seed {what} enters {node.type_name}{made}")
    text = "; ".join(parts) or "no seed gradient"
    return text[0].upper() + text[1:] + "."


def narrate(recording: Recording, index: int) -> str:
    """One or two sentences for frame ``index``."""
    return explain_step(recording, index).text


def forward_text(recording: Recording, node_id: str) -> str | None:
    """The forward op and source line a node came from (recorded under ``watch()``)."""
    op = recording.forward_op(node_id)
    if op is None:
        return None
    if op.line is None:
        return op.name
    return f"{op.name} at {op.line.short()}: {op.line.text.strip()}"


def describe_step(recording: Recording, index: int) -> dict[str, Any]:
    """The side panel's data for frame ``index``: plain strings only."""
    explanation = explain_step(recording, index)
    if index == 0:
        return {
            "index": 0,
            "node": None,
            "type": "seed",
            "forward": None,
            "op": "seed",
            "narration": explanation.text,
            "formula": [],
            "checked": True,
            "received": [],
            "sent": [],
            "flow_ok": True,
            "hooks": [],
            "flow_checked": True,
            "nonfinite": [],
        }
    step = recording.steps[index - 1]
    graph = recording.graph
    sent = []
    for edge in graph.out_edges(step.node_id):
        value = step.grad_inputs[edge.slot] if edge.slot < len(step.grad_inputs) else None
        target = "off the graph" if edge.dst is None else _target(graph, edge)
        sent.append({"slot": edge.slot, "to": target, "value": _panel_text(recording, value)})
    return {
        "index": index,
        "node": step.node_id,
        "type": step.type_name,
        "forward": forward_text(recording, step.node_id),
        "op": explanation.op,
        "narration": explanation.text,
        "formula": list(explanation.formula),
        "checked": explanation.checked,
        "received": [_panel_text(recording, g) for g in step.grad_outputs],
        "sent": sent,
        "flow_ok": step.flow_ok,
        "hooks": [change.text() for change in step.hook_changes],
        "flow_checked": step.flow_checked,
        "nonfinite": _nonfinite_sent(recording, step),
    }
