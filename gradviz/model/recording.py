"""What ``record()`` returns, as plain data: the graph and the steps in the engine's order.

A ``Step`` is one node execution: what the node received (``grad_outputs``, one entry per
output of the forward op) and what it sent (``grad_inputs``, aligned with its
``next_functions``). Values are tensor copies (``keep="all"``) or ``Summary`` objects.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import torch

from gradviz.model.graph import Graph
from gradviz.model.summarize import summarize
from gradviz.model.value_rows import rows_text, shaped_text
from gradviz.model.values import Summary

if TYPE_CHECKING:
    from gradviz.model.forward import FOp

__all__ = [
    "GradValue",
    "HookChange",
    "Recording",
    "Step",
    "as_summary",
    "short_text",
    "summaries_once",
    "value_text",
]

GradValue = torch.Tensor | Summary


# Inside ``summaries_once``: each kept tensor's summary, by id, with the tensor itself (held,
# so its id cannot be reused while the entry lives).
_ONCE: ContextVar[dict[int, tuple[torch.Tensor, Summary]] | None] = ContextVar(
    "gradviz_summaries_once", default=None
)


@contextmanager
def summaries_once() -> Iterator[None]:
    """Inside the block each kept tensor is summarized once, however many texts tell it
    (a page's health, edge labels, panel text and quiz summarize the same gradients about
    1,000 times on a 6-layer TransformerEncoder). Only around work that changes no
    recorded value (a page's save): outside it, a tensor changed in place since is
    summarized afresh. Joins an enclosing block; per thread and task (a context variable)."""
    if _ONCE.get() is not None:
        yield
        return
    token = _ONCE.set({})
    try:
        yield
    finally:
        _ONCE.reset(token)


def as_summary(value: GradValue) -> Summary:
    if isinstance(value, Summary):
        return value
    once = _ONCE.get()
    if once is None:
        return summarize(value)
    found = once.get(id(value))
    if found is None or found[0] is not value:
        found = once[id(value)] = (value, summarize(value))
    return found[1]


def value_text(value: GradValue | None, max_chars: int = 40) -> str:
    """How a gradient reads in a panel: '18', '[1, 2]', '[[1, 2], [3, 4]]' (a matrix keeps
    its rows, as the narration shows it), or 'min … · max … · mean …'."""
    return "None" if value is None else shaped_text(as_summary(value), max_chars)


def short_text(value: GradValue | None) -> str:
    """How a gradient reads on an edge: '18', '[1, 2]', or '16×2 ‖0.21‖'."""
    if value is None:
        return "None"
    summary = as_summary(value)
    if summary.numel <= 4:  # what Summary.short shows as values: keep a matrix's rows
        return rows_text(summary) or summary.short()
    return summary.short()


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
    # (output, kind) of each non-finite gradient the step received although everything sent
    # into it was finite: the engine's sum of two or more finite gradients overflowed
    nonfinite_sum: tuple[tuple[int, str], ...] = ()
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
            "nonfinite_sum": [list(origin) for origin in self.nonfinite_sum],
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
        # whether the backward kept the saved tensors (retain_graph=True, or create_graph)
        self.graph_retained = False
        # a line its pages show beside the replay (gradviz.explore: editing needs a kernel)
        self.page_note = ""
        self._by_node = {step.node_id: step for step in steps}

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
        finite, or received one that the engine's sum of finite gradients made
        (``step.nonfinite_sum``: which output; float16 overflows at 65504). Empty when every
        gradient stayed finite (or came in non-finite as a seed)."""
        return [step for step in self.steps if step.nonfinite_origin or step.nonfinite_sum]

    def __len__(self) -> int:
        """The number of backward steps, N, as iterating yields them; the steps are numbered
        1..N, after the seed at 0 (docs/architecture.md, "Step numbers")."""
        return len(self.steps)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

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
