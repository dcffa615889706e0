"""What ``record()`` returns: the graph, the steps in the engine's order, and the flow check.

A ``Step`` is one node execution: what the node received (``grad_outputs``, one entry per
output of the forward op) and what it sent (``grad_inputs``, aligned with its
``next_functions``). Values are tensor copies (``keep="all"``) or ``Summary`` objects.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import torch

from gradviz.graph import Graph, Summary
from gradviz.summary import summarize

if TYPE_CHECKING:
    from gradviz.forward import FOp
    from gradviz.replay import ForwardFrame, Frame

__all__ = ["GradValue", "Recording", "Step", "as_summary", "short_text", "value_text"]

GradValue = torch.Tensor | Summary


def as_summary(value: GradValue) -> Summary:
    return value if isinstance(value, Summary) else summarize(value)


def value_text(value: GradValue | None, max_chars: int = 40) -> str:
    """How a gradient reads in a panel: '18', '[1, 2]', or 'min … · max … · mean …'."""
    return "None" if value is None else as_summary(value).text(max_chars)


def short_text(value: GradValue | None) -> str:
    """How a gradient reads on an edge: '18', '[1, 2]', or '16×2 ‖0.21‖'."""
    return "None" if value is None else as_summary(value).short()


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
    flow_note: str = ""
    raw_outputs: tuple[torch.Tensor | None, ...] = field(default=(), repr=False)

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
            "flow_note": self.flow_note,
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
        return [] if self.graph.forward is None else list(self.graph.forward.ops)

    @property
    def order(self) -> list[str]:
        """Node ids in the order the engine ran them."""
        return [step.node_id for step in self.steps]

    @property
    def not_run(self) -> list[str]:
        """Nodes that did not run: pruned by ``inputs=``, or ``AccumulateGrad`` under grad()."""
        return [n.id for n in self.graph.nodes if n.id not in self._by_node]

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
            import json

            target.write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False))
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
        return (
            f"<gradviz.Recording: {len(self.steps)} steps over {len(self.graph.nodes)} nodes, "
            f"keep={self.keep!r}, {flow}>"
        )


# -- the flow check ------------------------------------------------------------------------
def check_flow(recording: Recording) -> None:
    """Mark steps where what a node received is not what its producers sent.

    Received gradient at output ``nr`` = seed + the sum of every edge into it with that
    ``input_nr``; at ``AccumulateGrad``, ``.grad`` must change by what was received. A
    mismatch means something (a user's hook) changed a gradient on the way.
    """
    graph = recording.graph
    for step in recording.steps:
        notes: list[str] = []
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
            if not _same_sum(received, sent):
                notes.append(
                    f"received {value_text(received)} at output {nr}, but its producers sent "
                    f"{' + '.join(value_text(v) for v in sent) or 'nothing'}: something "
                    "(a hook?) changed the gradient on the way"
                )
        if (
            step.finished
            and step.leaf_grad_after is not None
            and step.grad_outputs
            and not _accumulated(step.leaf_grad_before, step.grad_outputs[0], step.leaf_grad_after)
        ):
            notes.append(
                f".grad went from {value_text(step.leaf_grad_before)} to "
                f"{value_text(step.leaf_grad_after)}, which is not the received "
                f"{value_text(step.grad_outputs[0])} added on"
            )
        step.flow_ok = not notes
        step.flow_note = "; ".join(notes)


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape:
        return False
    if a is b or torch.equal(a, b):  # the usual case, and one pass instead of allclose's many
        return True
    a, b = a.detach().double(), b.detach().double()
    return bool(torch.allclose(a, b, rtol=1e-5, atol=1e-7, equal_nan=True))  # nan: a diverged model


def _total(value: GradValue) -> float:
    summary = as_summary(value)
    if summary.complete:
        return float(sum(float(v) for v in summary.values))
    return (summary.mean or 0.0) * summary.numel


def _scale(values: list[GradValue]) -> float:
    scale = 0.0
    for value in values:
        summary = as_summary(value)
        scale += max(abs(summary.min or 0.0), abs(summary.max or 0.0)) * max(summary.numel, 1)
    return scale


def _same_sum(received: GradValue | None, sent: list[GradValue]) -> bool:
    if len(sent) == 1 and sent[0] is received:  # stored once: the producer's own value
        return True
    if received is None:
        return not sent or all(_is_zero(v) for v in sent)
    if not sent:
        return _is_zero(received)
    if all(isinstance(v, torch.Tensor) for v in [received, *sent]):
        total = sent[0].detach()  # type: ignore[union-attr]
        for value in sent[1:]:
            total = total + value.detach()  # type: ignore[union-attr]
        return _close(received, total)  # type: ignore[arg-type]
    tolerance = 1e-4 * _scale([received, *sent]) + 1e-6
    return _near(_total(received), sum(_total(v) for v in sent), tolerance)


def _is_zero(value: GradValue) -> bool:
    summary = as_summary(value)
    return summary.min == 0 and summary.max == 0


def _accumulated(before: GradValue | None, received: GradValue | None, after: GradValue) -> bool:
    if received is None or (before is None and after is received):
        return True
    if isinstance(after, torch.Tensor) and isinstance(received, torch.Tensor):
        expected = received.detach()
        if isinstance(before, torch.Tensor):
            expected = before.detach() + expected
        return _close(after, expected)
    parts = [received] if before is None else [before, received]
    tolerance = 1e-4 * _scale([after, *parts]) + 1e-6
    return _near(_total(after), sum(_total(v) for v in parts), tolerance)


def _near(total: float, expected: float, tolerance: float) -> bool:
    """Totals of summaries agree. A gradient holding nan or inf has no total to compare
    (inf - inf is nan): it agrees with another that is not finite either."""
    if math.isfinite(total) and math.isfinite(expected):
        return abs(total - expected) <= tolerance
    return not math.isfinite(total) and not math.isfinite(expected)
