"""``record()``: run the real backward once, with a prehook and a hook on every node.

The hooks only look: they copy or summarize what flows and return ``None``, so the
gradients are bitwise the ones PyTorch computes without gradviz. Every hook is removed in
a ``finally``, also when backward raises.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch.utils.hooks import RemovableHandle

from gradviz.analysis.flow import check_flow
from gradviz.analysis.nonfinite import find_origins
from gradviz.analysis.order import predicted_order
from gradviz.capture import _autograd
from gradviz.capture._interrupts import deferred_interrupts
from gradviz.capture.trace import Params, gc_paused, trace
from gradviz.errors import BackwardFailed, GradvizWarning, GraphFreed
from gradviz.model.graph import Graph, Node
from gradviz.model.recording import GradValue, Recording, Step
from gradviz.model.summarize import covers, summarize, summarize_view
from gradviz.model.values import Summary

__all__ = ["AUTO_ALL_MAX_NODES", "MEMORY_BUDGET", "Keep", "record", "record_grad"]

Keep = Literal["auto", "all", "summary"]
# keep="auto" keeps full copies for graphs of up to this many nodes, summaries above.
AUTO_ALL_MAX_NODES = 500
# keep="all" warns (GradvizWarning) before its gradient copies would pass this many bytes.
MEMORY_BUDGET = 1 << 30  # 1 GiB

TensorOrTensors = torch.Tensor | Sequence[torch.Tensor]
PreHook = Callable[[tuple[torch.Tensor | None, ...]], None]
PostHook = Callable[[tuple[torch.Tensor | None, ...], tuple[torch.Tensor | None, ...]], None]


def record(
    *roots: torch.Tensor,
    gradient: TensorOrTensors | None = None,
    inputs: TensorOrTensors | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    keep: Keep = "auto",
    names: Mapping[str, torch.Tensor] | None = None,
    params: Params | None = None,
    memory_budget: int | None = MEMORY_BUDGET,
) -> Recording:
    """Like ``torch.autograd.backward(roots, gradient, ...)``, recording every node it runs.

    ``keep``: ``"all"`` keeps a copy of every gradient, ``"summary"`` keeps shape, dtype,
    norm, min, max, mean and the first values, ``"auto"`` keeps everything for graphs of up
    to ``AUTO_ALL_MAX_NODES`` nodes and summaries for bigger ones. Each gradient is stored
    once: a tensor passed on unchanged (to the next node, or into a leaf's ``.grad``)
    shares the copy made where it first appeared.

    ``memory_budget``: with ``keep="all"``, a ``GradvizWarning`` is issued before the
    copies would hold more than this many bytes (default ``MEMORY_BUDGET``, 1 GiB;
    ``None``: never warn).
    """
    graph = trace(*roots, params=params, names=names)
    recorder = _Recorder(graph, keep, create_graph, mode="backward", memory_budget=memory_budget)
    seeds = _seeds(roots, gradient)
    recorder.set_seeds(roots, seeds)
    input_nodes = _input_nodes(graph, inputs)

    def run() -> None:
        torch.autograd.backward(
            list(roots),
            grad_tensors=list(seeds),
            retain_graph=retain_graph,
            create_graph=create_graph,
            inputs=inputs,
        )

    return recorder.run(run, input_nodes)


def record_grad(
    outputs: TensorOrTensors,
    inputs: TensorOrTensors,
    grad_outputs: TensorOrTensors | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
    keep: Keep = "auto",
    names: Mapping[str, torch.Tensor] | None = None,
    params: Params | None = None,
    memory_budget: int | None = MEMORY_BUDGET,
) -> tuple[tuple[torch.Tensor | None, ...], Recording]:
    """Like ``torch.autograd.grad(...)``: returns its gradients and the recording.

    No ``AccumulateGrad`` runs and no ``.grad`` changes, exactly as in PyTorch.
    """
    roots = _as_tuple(outputs)
    input_tuple = _as_tuple(inputs)
    graph = trace(*roots, params=params, names=names)
    recorder = _Recorder(graph, keep, create_graph, mode="grad", memory_budget=memory_budget)
    seeds = _seeds(roots, grad_outputs)
    recorder.set_seeds(roots, seeds)
    result: list[tuple[torch.Tensor | None, ...]] = []

    def run() -> None:
        result.append(
            torch.autograd.grad(
                list(roots),
                list(input_tuple),
                grad_outputs=list(seeds),
                retain_graph=retain_graph,
                create_graph=create_graph,
                allow_unused=allow_unused,
            )
        )

    recording = recorder.run(run, _input_nodes(graph, input_tuple))
    return result[0], recording


def _as_tuple(value: TensorOrTensors) -> tuple[torch.Tensor, ...]:
    if isinstance(value, torch.Tensor):
        return (value,)
    return tuple(value)


def _seeds(
    roots: tuple[torch.Tensor, ...], gradient: TensorOrTensors | None
) -> tuple[torch.Tensor, ...]:
    """The gradients entering the roots: as given, or 1 for scalar roots (as PyTorch does)."""
    given: tuple[torch.Tensor | None, ...]
    given = (None,) * len(roots) if gradient is None else _as_tuple(gradient)
    if len(given) != len(roots):
        raise ValueError(f"got {len(given)} gradients for {len(roots)} roots; give one per root")
    seeds = []
    for index, (root, grad) in enumerate(zip(roots, given, strict=True)):
        if grad is None:
            if root.numel() != 1:
                raise ValueError(
                    f"root {index} has shape {tuple(root.shape)}: a non-scalar root needs "
                    "gradient= (e.g. gradient=torch.ones_like(root)), as in tensor.backward()"
                )
            grad = torch.ones_like(root, memory_format=torch.preserve_format)
        seeds.append(grad)
    return tuple(seeds)


def _same_layout(kept: GradValue, grad: torch.Tensor) -> bool:
    """Whether ``kept`` can stand for ``grad``: a summary, or a copy with its strides
    (AccumulateGrad stores a gradient of another layout, a transpose, in the leaf's own)."""
    return not isinstance(kept, torch.Tensor) or kept.stride() == grad.stride()


def _input_nodes(graph: Graph, inputs: TensorOrTensors | None) -> list[str] | None:
    """Where gradients are wanted when ``inputs=`` prunes the graph (None: everywhere)."""
    if inputs is None:
        return None
    wanted: list[str] = []
    for tensor in _as_tuple(inputs):
        node, _ = _autograd.gradient_edge(tensor)
        wanted.extend(n.id for n in graph.nodes if n.torch_node is node)
    return wanted


@dataclass
class _Recorder:
    graph: Graph
    keep: Keep
    create_graph: bool
    mode: Literal["backward", "grad"]
    steps: list[Step] = field(default_factory=list)
    open_steps: dict[str, Step] = field(default_factory=dict)
    seeds: dict[tuple[str, int], GradValue] = field(default_factory=dict)
    memory_budget: int | None = MEMORY_BUDGET
    held: int = 0  # bytes of gradient copies kept so far (keep="all")
    # id(tensor) -> (weak reference, _version, what was kept): a gradient tensor seen
    # again, unchanged (same object, same version), reuses what was kept the first time.
    seen: dict[int, tuple[weakref.ref[torch.Tensor], int, GradValue]] = field(default_factory=dict)
    # id(memory's root tensor) -> (weak reference, _version, a summary of all of it): other
    # dense views of that memory (transposes) reuse its statistics (keep="summary")
    regions: dict[int, tuple[weakref.ref[torch.Tensor], int, Summary]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.keep == "auto":
            self.keep = "all" if len(self.graph.nodes) <= AUTO_ALL_MAX_NODES else "summary"
        if self.keep not in ("all", "summary"):
            raise ValueError(f"keep must be 'auto', 'all' or 'summary', not {self.keep!r}")
        self.retained: dict[str, list[tuple[str, torch.Tensor]]] = {}
        for record in self.graph.tensors:
            if record.node_id and record.tensor is not None and not record.is_leaf:
                self.retained.setdefault(record.node_id, []).append((record.id, record.tensor))

    # -- keeping values ------------------------------------------------------------------
    def kept(self, value: torch.Tensor | None) -> GradValue | None:
        if value is None:
            return None
        if self.keep == "summary":
            return summarize(value)
        if self.create_graph:
            return value  # a fresh tensor with a graph of its own: second derivatives
        self._count(value)
        return value.detach().clone()

    def _count(self, value: torch.Tensor) -> None:
        """Warn once, before the copies would hold more than ``memory_budget`` bytes."""
        size = 0 if value.is_meta else value.numel() * value.element_size()
        budget = self.memory_budget
        if budget is not None and self.held <= budget < self.held + size:
            warnings.warn(
                f"gradviz.record(keep='all') is about to hold more than {budget / 2**20:.0f} "
                f"MiB of gradient copies ({len(self.steps)} steps of "
                f"{len(self.graph.nodes)} nodes so far). Pass keep='summary' to keep "
                "statistics only, or raise memory_budget=.",
                GradvizWarning,
                stacklevel=2,
            )
        self.held += size

    def kept_once(self, value: torch.Tensor | None) -> GradValue | None:
        """``kept(value)``, reusing what was kept when this very tensor was seen before."""
        if value is None:
            return None
        key = id(value)
        entry = self.seen.get(key)
        if entry is not None and entry[0]() is value and entry[1] == value._version:
            return entry[2]
        kept: GradValue | None = None
        if self.keep == "summary":
            kept = self._kept_view(value)
            if kept is None:
                kept = summarize(value)
                self._remember_region(value, kept)
        else:
            kept = self.kept(value)
        if kept is not None:
            self.seen[key] = (weakref.ref(value), value._version, kept)
        return kept

    def _kept_view(self, value: torch.Tensor) -> Summary | None:
        """The summary of a view of memory summarized before (``TBackward`` passes on a
        transpose of what it received): that summary's statistics, no new passes."""
        root = value._base
        if root is None:
            root = value
        entry = self.regions.get(id(root))
        if entry is None or entry[0]() is not root or entry[1] != root._version:
            return None
        return summarize_view(value, entry[2]) if covers(value, root) else None

    def _remember_region(self, value: torch.Tensor, kept: Summary) -> None:
        """Keep ``kept``'s statistics for other views of the same memory."""
        root = value._base
        if root is None:
            root = value
        if not kept.complete and kept.min is not None and covers(value, root):
            self.regions[id(root)] = (weakref.ref(root), root._version, kept)

    def set_seeds(self, roots: tuple[torch.Tensor, ...], seeds: tuple[torch.Tensor, ...]) -> None:
        """What enters each root node before any node runs (summed when roots share one)."""
        totals: dict[tuple[str, int], torch.Tensor] = {}
        for root, seed in zip(roots, seeds, strict=True):
            node, output_nr = _autograd.gradient_edge(root)
            node_id = next(n.id for n in self.graph.nodes if n.torch_node is node)
            key = (node_id, output_nr)
            totals[key] = seed.detach() if key not in totals else totals[key] + seed.detach()
        for key, total in totals.items():
            self.seeds[key] = summarize(total) if self.keep == "summary" else total.clone()

    # -- hooks (return None: they only look) -----------------------------------------------
    def prehook(self, node_id: str, grad_outputs: tuple[torch.Tensor | None, ...]) -> None:
        """What ``node_id`` received, before it runs (the hooks of ``hooks_for`` in one)."""
        self.hooks_for(self.graph.node(node_id))[0](grad_outputs)

    def hook(
        self,
        node_id: str,
        grad_inputs: tuple[torch.Tensor | None, ...],
        grad_outputs: tuple[torch.Tensor | None, ...],
    ) -> None:
        """What ``node_id`` sent, after it ran."""
        self.hooks_for(self.graph.node(node_id))[1](grad_inputs, grad_outputs)

    def hooks_for(self, node: Node) -> tuple[PreHook, PostHook]:
        """The node's prehook and hook: closures with everything they need bound once
        (two of them run per node, so lookups and attribute reads add up)."""
        node_id = node.id
        type_name = node.type_name
        leaf = node.leaf_tensor
        retained = self.retained.get(node_id, ())
        steps = self.steps
        open_steps = self.open_steps
        kept_once = self.kept_once
        kept = self.kept

        def prehook(grad_outputs: tuple[torch.Tensor | None, ...]) -> None:
            step = Step(len(steps) + 1, node_id, type_name, tuple(map(kept_once, grad_outputs)))
            # no strong references to the raw gradients: autograd may steal or reuse them
            if leaf is not None:
                step.leaf_grad_before = kept(leaf.grad)
            for record_id, tensor in retained:
                if tensor.retains_grad and tensor.grad is not None:
                    step.retained[record_id] = kept(tensor.grad)  # type: ignore[assignment]
            steps.append(step)
            open_steps[node_id] = step

        def hook(
            grad_inputs: tuple[torch.Tensor | None, ...],
            grad_outputs: tuple[torch.Tensor | None, ...],
        ) -> None:
            step = open_steps.pop(node_id)
            step.grad_inputs = tuple(map(kept_once, grad_inputs))
            if leaf is not None:
                grad = leaf.grad
                received = step.grad_outputs
                if (
                    step.leaf_grad_before is None
                    and grad is not None
                    and received
                    and received[0] is not None
                    and _same_layout(received[0], grad)
                    and not getattr(leaf, "_post_accumulate_grad_hooks", None)
                ):
                    # .grad was None, so AccumulateGrad set it to what it received (stolen
                    # or cloned, same values): store that once
                    step.leaf_grad_after = received[0]
                else:
                    step.leaf_grad_after = kept_once(grad)
            step.finished = True

        return prehook, hook

    def before_user_hooks(self, node_id: str) -> PostHook:
        """A hook that runs before the user's own hooks of the node: what the op itself
        sent, so that a hook's change shows instead of passing for the op's result."""
        open_steps = self.open_steps
        kept_once = self.kept_once

        def hook(
            grad_inputs: tuple[torch.Tensor | None, ...],
            grad_outputs: tuple[torch.Tensor | None, ...],
        ) -> None:
            step = open_steps.get(node_id)
            if step is not None:
                step.sent_by_op = tuple(map(kept_once, grad_inputs))

        return hook

    # -- the run -------------------------------------------------------------------------
    def _register(self, handles: list[RemovableHandle]) -> None:
        """A prehook and a hook on every node; each handle is stored as soon as it exists."""
        hooks_for = self.hooks_for
        for node in self.graph.nodes:
            torch_node = node.torch_node
            prehook, hook = hooks_for(node)
            handles.append(torch_node.register_prehook(prehook))
            handle = torch_node.register_hook(hook)
            handles.append(handle)
            if _autograd.has_other_hooks(handle):
                # the user's hooks may replace what the node sends: look first too
                handle = torch_node.register_hook(self.before_user_hooks(node.id))
                handles.append(handle)
                _autograd.move_to_front(handle)

    def run(self, backward: Any, input_nodes: list[str] | None) -> Recording:
        freed = [n for n in self.graph.nodes if n.saved_freed]
        if freed:
            raise GraphFreed(
                f"the graph was already freed by an earlier backward ({freed[0].type_name} "
                "lost its saved tensors). Run the forward pass again, or pass "
                "retain_graph=True to the earlier backward()/gradviz.record()."
            )
        handles: list[RemovableHandle] = []
        error: BaseException | None = None
        # the hooks allocate many small objects and free few: without the pause, the cyclic
        # collector rescans them (and torch's own objects) over and over
        with gc_paused():
            try:
                with deferred_interrupts():  # a handle lost to Ctrl-C would leave its hook
                    self._register(handles)
                backward()
            except Exception as raised:  # re-raised below as BackwardFailed, with the steps
                error = raised
            finally:
                with deferred_interrupts():
                    for handle in handles:
                        handle.remove()
                self.seen.clear()
                self.regions.clear()
            recording = Recording(
                graph=self.graph,
                steps=self.steps,
                seeds=self.seeds,
                keep=self.keep,  # type: ignore[arg-type]
                mode=self.mode,
                input_nodes=input_nodes,
            )
            check_flow(recording)  # the analysis runs here, not in Recording.__init__
            find_origins(recording)
        if error is not None:
            node_id, where = _where_it_failed(recording)
            raise BackwardFailed(
                f"backward failed {where}: {error}", recording=recording, node_id=node_id
            ) from error
        return recording


def _where_it_failed(recording: Recording) -> tuple[str | None, str]:
    """The node backward failed at, and where that was in words.

    The node whose step did not finish failed (its op or a hook after it). When every step
    finished, a hook on the next node's incoming gradient raised (a tensor hook or a
    prehook, which run before gradviz's prehook): that node is the one the engine runs
    next, known from the predicted order while the recorded steps follow it.
    """
    steps = recording.steps
    failed = next((s for s in reversed(steps) if not s.finished), None)
    if failed is not None:
        return failed.node_id, f"in {failed.type_name} ({failed.node_id}, step {failed.index})"
    done = len(steps)
    after = f"after step {done}" if done else "before any node ran"
    predicted = predicted_order(recording)
    if recording.order != predicted[:done] or done >= len(predicted):
        return None, after
    node = recording.graph.node(predicted[done])
    return node.id, (
        f"{after}, as {node.type_name} ({node.id}) was about to run: a hook on its incoming "
        "gradient (a tensor hook or a prehook) raised"
    )
