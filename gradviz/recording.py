"""What ``record()`` returns: the graph, the steps in the engine's order, and the flow check.

A ``Step`` is one node execution: what the node received (``grad_outputs``, one entry per
output of the forward op) and what it sent (``grad_inputs``, aligned with its
``next_functions``). Values are tensor copies (``keep="all"``) or ``Summary`` objects.
"""

from __future__ import annotations

import cmath
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import torch

from gradviz.graph import Graph, Summary
from gradviz.nonfinite import find_origins
from gradviz.summary import summarize

if TYPE_CHECKING:
    from gradviz.forward import FOp
    from gradviz.replay import ForwardFrame, Frame

__all__ = [
    "GradValue",
    "HookChange",
    "Recording",
    "Step",
    "as_summary",
    "short_text",
    "value_text",
]

GradValue = torch.Tensor | Summary


def as_summary(value: GradValue) -> Summary:
    return value if isinstance(value, Summary) else summarize(value)


def value_text(value: GradValue | None, max_chars: int = 40) -> str:
    """How a gradient reads in a panel: '18', '[1, 2]', or 'min … · max … · mean …'."""
    return "None" if value is None else as_summary(value).text(max_chars)


def short_text(value: GradValue | None) -> str:
    """How a gradient reads on an edge: '18', '[1, 2]', or '16×2 ‖0.21‖'."""
    return "None" if value is None else as_summary(value).short()


@dataclass(frozen=True)
class HookChange:
    """A gradient that a user's hook changed, with the value before and after.

    ``where``: ``"received"`` (on the way in, by a tensor hook or a node prehook: ``before``
    is what the producers sent, ``slot`` the output), ``"sent"`` (by a node hook after the
    op, e.g. a module's full backward hook: ``before`` is what the op computed, ``slot``
    the edge) or ``"grad"`` (``.grad`` after ``AccumulateGrad``, by a post-accumulate-grad
    hook: ``before`` is what accumulating alone gives). ``before`` is None when several
    summaries were sent and their sum is unknown; ``before_text`` always says it.
    """

    where: Literal["received", "sent", "grad"]
    slot: int
    before: GradValue | None
    before_text: str
    after: GradValue | None

    def text(self) -> str:
        after = value_text(self.after)
        if self.where == "received":
            return (
                f"a hook changed the gradient arriving at output {self.slot} on the way in "
                f"(a tensor hook or a prehook): sent {self.before_text}, received {after}"
            )
        if self.where == "sent":
            return (
                f"a hook on this node changed what it sends through input {self.slot} (a node "
                f"hook or a module's backward hook): the op computed {self.before_text}, "
                f"the hook made it {after}"
            )
        return (
            f"a hook changed .grad after AccumulateGrad (a post-accumulate-grad hook?): "
            f"accumulating gives {self.before_text}, .grad is {after}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "slot": self.slot,
            "before": None if self.before is None else as_summary(self.before).to_dict(),
            "after": None if self.after is None else as_summary(self.after).to_dict(),
            "text": self.text(),
        }


@dataclass(eq=False)
class Step:
    """One node execution, in the engine's real order (``index`` counts from 1)."""

    index: int
    node_id: str
    type_name: str
    grad_outputs: tuple[GradValue | None, ...]
    grad_inputs: tuple[GradValue | None, ...] = ()
    leaf_grad_before: GradValue | None = None
    leaf_grad_after: GradValue | None = None
    retained: dict[str, GradValue] = field(default_factory=dict)  # tensor id -> its .grad
    finished: bool = False
    flow_ok: bool = True
    flow_checked: bool = True  # False: the kept values cannot show the flow (flow_note: why)
    flow_note: str = ""
    # (slot, "NaN" / "Inf" / "NaN and Inf") of each non-finite gradient this step sent
    # although all it received was finite: where the NaN or Inf first appeared
    nonfinite_origin: tuple[tuple[int, str], ...] = ()
    raw_outputs: tuple[torch.Tensor | None, ...] = field(default=(), repr=False)
    # what the op itself sent, before the user's own node hooks ran (None: it had none)
    sent_by_op: tuple[GradValue | None, ...] | None = None
    hook_changes: list[HookChange] = field(default_factory=list)  # set by check_flow

    def to_dict(self) -> dict[str, Any]:
        def many(values: tuple[GradValue | None, ...]) -> list[dict[str, Any] | None]:
            return [None if v is None else as_summary(v).to_dict() for v in values]

        def one(value: GradValue | None) -> dict[str, Any] | None:
            return None if value is None else as_summary(value).to_dict()

        return {
            "index": self.index,
            "node_id": self.node_id,
            "type_name": self.type_name,
            "grad_outputs": many(self.grad_outputs),
            "grad_inputs": many(self.grad_inputs),
            "leaf_grad_before": one(self.leaf_grad_before),
            "leaf_grad_after": one(self.leaf_grad_after),
            "retained": {k: as_summary(v).to_dict() for k, v in self.retained.items()},
            "finished": self.finished,
            "flow_ok": self.flow_ok,
            "flow_checked": self.flow_checked,
            "flow_note": self.flow_note,
            "hook_changes": [change.to_dict() for change in self.hook_changes],
            "nonfinite_origin": [list(origin) for origin in self.nonfinite_origin],
        }


class Recording:
    """A recorded backward pass: ``graph``, ``steps`` and ``seeds`` (what entered the roots)."""

    def __init__(
        self,
        graph: Graph,
        steps: list[Step],
        seeds: dict[tuple[str, int], GradValue],
        keep: Literal["all", "summary"],
        mode: Literal["backward", "grad"],
        input_nodes: list[str] | None = None,
    ) -> None:
        self.graph = graph
        self.steps = steps
        self.seeds = seeds
        self.keep = keep
        self.mode = mode
        self.input_nodes = input_nodes
        self._by_node = {step.node_id: step for step in steps}
        check_flow(self)
        find_origins(self)

    # -- lookups -------------------------------------------------------------------------
    def step_for(self, node_id: str) -> Step | None:
        """The step that ran the node, or None when it did not run."""
        return self._by_node.get(node_id)

    def forward_op(self, node_id: str) -> FOp | None:
        """The forward op (name, source line, module) that created the node, when recorded
        with ``gradviz.watch()`` (``w.record(...)``); None otherwise."""
        forward = self.graph.forward
        return None if forward is None else forward.op_for_node(node_id)

    @property
    def forward_ops(self) -> list[FOp]:
        """The watched forward ops in the order they ran (empty without ``watch()``)."""
        return [] if self.graph.forward is None else list(self.graph.forward.replayed)

    @property
    def order(self) -> list[str]:
        """Node ids in the order the engine ran them."""
        return [step.node_id for step in self.steps]

    @property
    def not_run(self) -> list[str]:
        """Nodes that did not run: pruned by ``inputs=``, or ``AccumulateGrad`` under grad()."""
        return [n.id for n in self.graph.nodes if n.id not in self._by_node]

    def nonfinite_origins(self) -> list[Step]:
        """The steps where NaN or Inf first appeared: each sent a non-finite gradient
        (``step.nonfinite_origin``: which slot, NaN or Inf) although all it received was
        finite. Empty when every gradient stayed finite (or came in non-finite as a seed)."""
        return [step for step in self.steps if step.nonfinite_origin]

    def predicted_order(self) -> list[str]:
        """The order predicted from the graph alone, before any backward ran."""
        from gradviz.engine_order import needed_nodes, predict_order

        if self.input_nodes is None and self.mode == "backward":
            return predict_order(self.graph)
        targets = self.input_nodes or []
        needed = needed_nodes(self.graph, targets)
        if self.mode == "grad":  # grad() captures at the inputs instead of running them
            needed -= {t for t in targets if self.graph.node(t).is_accumulate_grad}
        return predict_order(self.graph, only=needed)

    def __len__(self) -> int:
        """The number of frames: the seed (frame 0) and one per step."""
        return len(self.steps) + 1

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    # -- frames, pictures, files ---------------------------------------------------------
    def frame(self, index: int) -> Frame:
        """The state after step ``index`` (0: the seed gradient entering the roots)."""
        from gradviz.replay import make_frame

        return make_frame(self, index)

    def frames(self) -> list[Frame]:
        from gradviz.replay import make_frames

        return make_frames(self)

    def forward_frame(self, index: int) -> ForwardFrame:
        """Under ``watch()``: the replay once forward op ``index`` (1 .. F) has run. The
        stepper shows it before the seed, as step ``index - F - 1`` (see gradviz.replay)."""
        from gradviz.replay import forward_frame

        return forward_frame(self, index)

    def svg(self, step: int | None = None, **options: Any) -> str:
        """The replay's one layout, styled for ``step`` (default: the last; under ``watch()``,
        -F..-1 are the forward frames)."""
        from gradviz.replay import step_svg

        return step_svg(self, len(self.steps) if step is None else step, **options)

    def save_steps(self, folder: str | Path, **options: Any) -> list[Path]:
        """One SVG per frame (``step-000.svg`` ...; under ``watch()`` first ``forward-001.svg``
        ..., one per forward op), all from one Graphviz layout."""
        from gradviz.replay import save_steps

        return save_steps(self, Path(folder), **options)

    def save(self, path: str | Path, **options: Any) -> Path:
        """.svg (the last step), .html (the offline stepper), .json (the steps as data)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        suffix = target.suffix.lower()
        if suffix == ".json":
            from gradviz.escape import json_text

            target.write_text(json_text(self.to_dict(), indent=1), encoding="utf-8")
        elif suffix == ".svg":
            target.write_text(self.svg(**options), encoding="utf-8")
        elif suffix == ".html":
            from gradviz.html import replay_html

            target.write_text(replay_html(self, **options), encoding="utf-8")
        else:
            raise ValueError(f"cannot save {target.name!r}: use .svg, .html or .json")
        return target

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "gradviz.recording/1",
            "graph": self.graph.to_dict(),
            "mode": self.mode,
            "keep": self.keep,
            "seeds": [
                {"node_id": n, "input_nr": nr, "value": as_summary(v).to_dict()}
                for (n, nr), v in self.seeds.items()
            ],
            "steps": [step.to_dict() for step in self.steps],
            "not_run": self.not_run,
        }

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Jupyter shows the stepper, with a static final step where widgets cannot run."""
        from gradviz.html import notebook_bundle

        return notebook_bundle(self)

    def __repr__(self) -> str:
        bad = sum(1 for s in self.steps if not s.flow_ok)
        flow = "flow check ok" if not bad else f"{bad} steps fail the flow check"
        unchecked = sum(1 for s in self.steps if not s.flow_checked)
        if unchecked:
            flow += f" ({unchecked} steps not verifiable)"
        return (
            f"<gradviz.Recording: {len(self.steps)} steps over {len(self.graph.nodes)} nodes, "
            f"keep={self.keep!r}, {flow}>"
        )


# -- the flow check ------------------------------------------------------------------------
def check_flow(recording: Recording) -> None:
    """Mark steps where a gradient is not what the graph computed: a user's hook changed it.

    Received gradient at output ``nr`` = seed + the sum of every edge into it with that
    ``input_nr``; what a node sent = what its op computed (recorded before the user's node
    hooks); at ``AccumulateGrad``, ``.grad`` must change by what was received. Each
    mismatch becomes a ``HookChange`` on the step, with the value before and after. Where
    the kept values cannot show it (meta tensors, NaN sums, complex statistics), the step is
    marked not verifiable (``flow_checked``) and ``flow_note`` says why.
    """
    graph = recording.graph
    for step in recording.steps:
        changes: list[HookChange] = []
        unverifiable: list[str] = []
        for nr, received in enumerate(step.grad_outputs):
            sent: list[GradValue] = []
            seed = recording.seeds.get((step.node_id, nr))
            if seed is not None:
                sent.append(seed)
            for edge in graph.in_edges(step.node_id):
                if edge.input_nr != nr:
                    continue
                producer = recording.step_for(edge.src)
                if producer is None or producer.index > step.index:
                    continue
                value = producer.grad_inputs[edge.slot] if producer.grad_inputs else None
                if value is not None:
                    sent.append(value)
            same = _same_sum(received, sent)
            if same is None:
                unverifiable.append(f"output {nr}: {_why_unverifiable([received, *sent])}")
            elif not same:
                changes.append(HookChange("received", nr, *_sum_text(sent), received))
        if step.sent_by_op is not None:
            for slot, (op_value, value) in enumerate(
                zip(step.sent_by_op, step.grad_inputs, strict=False)
            ):
                same = _same_sum(value, [] if op_value is None else [op_value])
                if same is None:
                    unverifiable.append(f"slot {slot}: {_why_unverifiable([value, op_value])}")
                elif not same:
                    changes.append(HookChange("sent", slot, op_value, value_text(op_value), value))
        if step.finished and step.leaf_grad_after is not None and step.grad_outputs:
            before = step.leaf_grad_before
            received = step.grad_outputs[0]
            accumulated = _accumulated(before, received, step.leaf_grad_after)
            if accumulated is None:
                why = _why_unverifiable([before, received, step.leaf_grad_after])
                unverifiable.append(f".grad: {why}")
            elif not accumulated:
                parts = [received] if before is None else [before, received]
                total, text = _sum_text(parts)  # type: ignore[arg-type]
                changes.append(HookChange("grad", 0, total, text, step.leaf_grad_after))
        step.hook_changes = changes
        step.flow_ok = not changes
        step.flow_checked = not unverifiable
        notes = [change.text() for change in changes]
        if unverifiable:
            notes.append("not verifiable at " + ", ".join(unverifiable))
        step.flow_note = "; ".join(notes)


def _sum_text(values: list[GradValue]) -> tuple[GradValue | None, str]:
    """What ``values`` add up to (None when only summaries of several are known), and the
    sum in words: '2 + 3 = 5', or 'nothing'."""
    total = _sum_of(values)
    text = " + ".join(value_text(v) for v in values) or "nothing"
    if total is not None and len(values) > 1:
        text += f" = {value_text(total)}"
    return total, text


def _sum_of(values: list[GradValue]) -> GradValue | None:
    """The total of what was sent, when gradviz can know it (tensors, or a single value)."""
    if len(values) == 1:
        return values[0]
    if values and all(isinstance(v, torch.Tensor) for v in values):
        total = values[0].detach()  # type: ignore[union-attr]
        for value in values[1:]:
            total = total + value.detach()  # type: ignore[union-attr]
        return total
    return None


def _unavailable(value: GradValue | None) -> bool:
    if isinstance(value, torch.Tensor):
        return value.is_meta
    return value is not None and not value.available


def _why_unverifiable(values: list[GradValue | None]) -> str:
    """Why the kept values cannot show whether the gradients add up."""
    if any(_unavailable(v) for v in values):
        return "the values are not available (meta tensors hold no data)"
    summaries = [as_summary(v) for v in values if v is not None]
    if any(s.finite is False for s in summaries):
        return "NaN or Inf in the summaries, whose sums cannot be compared"
    return "complex summaries keep no sum (record with keep='all' to check)"


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape:
        return False
    if a.layout != torch.strided or b.layout != torch.strided:
        return _close_sparse(a, b)
    if a is b or torch.equal(a, b):  # the usual case, and one pass instead of allclose's many
        return True
    wide = torch.complex128 if a.is_complex() or b.is_complex() else torch.float64
    a, b = a.detach().to(wide), b.detach().to(wide)
    return bool(torch.allclose(a, b, rtol=1e-5, atol=1e-7, equal_nan=True))  # nan: diverged


def _close_sparse(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Sparse gradients (``nn.Embedding(sparse=True)``): compared through their stored
    values, never made dense (an embedding table's gradient can be huge)."""
    a, b = a.detach().to_sparse(), b.detach().to_sparse()
    difference = (a - b).coalesce().values()
    scale = torch.cat(
        [a.coalesce().values().abs().reshape(-1), b.coalesce().values().abs().reshape(-1)]
    )
    tolerance = 1e-7 + 1e-5 * (float(scale.max()) if scale.numel() else 0.0)
    return difference.numel() == 0 or bool(difference.abs().max() <= tolerance)


def _total(value: GradValue) -> complex | None:
    """The sum of all values, from the summary; None when it cannot say."""
    summary = as_summary(value)
    if not summary.available:
        return None
    if summary.complete:
        try:
            return sum((complex(v) for v in summary.values), 0j)
        except (TypeError, ValueError):
            return None
    return None if summary.mean is None else summary.mean * summary.numel


def _scale(values: list[GradValue]) -> float:
    scale = 0.0
    for value in values:
        summary = as_summary(value)
        if summary.min is None and summary.norm is not None:  # complex: |sum| <= sqrt(n)·norm
            scale += summary.norm * math.sqrt(max(summary.numel, 1))
            continue
        scale += max(abs(summary.min or 0.0), abs(summary.max or 0.0)) * max(summary.numel, 1)
    return scale


def _same_sum(received: GradValue | None, sent: list[GradValue]) -> bool | None:
    """Whether ``received`` is the sum of ``sent``; None when the kept values cannot say."""
    if len(sent) == 1 and sent[0] is received:  # stored once: the producer's own value
        return True
    if received is None:
        return not sent or all(_is_zero(v) for v in sent)
    if any(_unavailable(v) for v in [received, *sent]):
        return None
    if not sent:
        return _is_zero(received)
    if all(isinstance(v, torch.Tensor) for v in [received, *sent]):
        return _close(received, _sum_of(sent))  # type: ignore[arg-type]
    return _sums_agree([received], sent)


def _sums_agree(left: list[GradValue], right: list[GradValue]) -> bool | None:
    """Whether the summed values of ``left`` and ``right`` agree, from summaries.

    A side holding NaN or Inf (a diverged model) has no total to compare (inf - inf is
    nan): against another non-finite side it cannot be told (None); against a finite one
    it is a change."""
    totals: list[complex] = []
    for value in [*left, *right]:
        total = _total(value)
        if total is None:
            return None
        totals.append(total)
    lhs, rhs = sum(totals[: len(left)], 0j), sum(totals[len(left) :], 0j)
    if not cmath.isfinite(lhs) or not cmath.isfinite(rhs):
        return None if not cmath.isfinite(lhs) and not cmath.isfinite(rhs) else False
    return abs(lhs - rhs) <= 1e-4 * _scale([*left, *right]) + 1e-6


def _is_zero(value: GradValue) -> bool:
    summary = as_summary(value)
    if summary.min is None:  # complex, or not available
        return summary.norm == 0
    return summary.min == 0 and summary.max == 0


def _accumulated(
    before: GradValue | None, received: GradValue | None, after: GradValue
) -> bool | None:
    """Whether ``.grad`` went from ``before`` to ``before + received``; None: cannot say."""
    if received is None or (before is None and after is received):
        return True
    if any(_unavailable(v) for v in (before, received, after)):
        return None
    if isinstance(after, torch.Tensor) and isinstance(received, torch.Tensor):
        expected = received.detach()
        if isinstance(before, torch.Tensor):
            expected = before.detach() + expected
        return _close(after, expected)
    parts = [received] if before is None else [before, received]
    return _sums_agree([after], parts)
