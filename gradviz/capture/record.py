"""``record()``: run the real backward once, with gradviz's hooks on every node.

The hooks only look: they keep or summarize what flows and return ``None``, so the
gradients are bitwise the ones PyTorch computes without gradviz. Every hook is removed in
a ``finally``, also when backward raises. The hooks record only their own backward (a
probe node run alongside the roots names its graph task): another thread's backward, or
a nested one, on the same graph passes through them. A failure of gradviz's own inside a
hook, and every gradviz warning, wait until the backward is over: they never stop it.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypedDict

import torch

from gradviz.capture import _autograd, arguments
from gradviz.capture._interrupts import deferred_interrupts
from gradviz.capture._own_ops import gc_paused, own_ops
from gradviz.capture.arguments import InputTensors, TensorOrTensors
from gradviz.capture.by_reference import memory_of, references_safe, shareable, unshare
from gradviz.capture.hooks import HookHandles, one_hook_will_do
from gradviz.capture.ondemand import settle_grads
from gradviz.capture.order import predicted_order
from gradviz.capture.trace import Params, trace
from gradviz.errors import GradvizWarning, GraphFreed, InvalidArgument, backward_failed
from gradviz.model.graph import Graph, Node
from gradviz.model.public import built
from gradviz.model.recording import GradValue, Recording, Step
from gradviz.model.summarize import covers, plain_values, summarize, summarize_view
from gradviz.model.values import Summary

__all__ = [
    "AUTO_ALL_MAX_BYTES",
    "MEMORY_BUDGET",
    "InputTensors",
    "Keep",
    "RecordKeywords",
    "TensorOrTensors",
    "record",
    "record_grad",
]

Keep = Literal["auto", "all", "summary"]


class RecordKeywords(TypedDict, total=False):
    """``record()``'s keywords that callers pass through (``Watch.record``, ``record_step``),
    typed so that a misspelt keyword is caught by the type checker, not at run time."""

    gradient: TensorOrTensors | None
    inputs: InputTensors | None
    retain_graph: bool | None
    create_graph: bool
    keep: Keep
    memory_budget: int | None


# keep="auto" keeps full copies when the gradients the graph's nodes receive take up to
# this many bytes (from their shapes and dtypes), summaries above.
AUTO_ALL_MAX_BYTES = 64 << 20  # 64 MiB
# full copies stop before they would pass this many bytes: summaries from there on, and a
# GradvizWarning after the backward says so.
MEMORY_BUDGET = 1 << 30  # 1 GiB


PreHook = Callable[[tuple[torch.Tensor | None, ...]], None]
PostHook = Callable[[tuple[torch.Tensor | None, ...], tuple[torch.Tensor | None, ...]], None]


def record(
    *roots: torch.Tensor,
    gradient: TensorOrTensors | None = None,
    inputs: InputTensors | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    keep: Keep = "auto",
    names: Mapping[str, torch.Tensor] | None = None,
    params: Params | None = None,
    memory_budget: int | None = MEMORY_BUDGET,
) -> Recording:
    """Like ``torch.autograd.backward(roots, gradient, ...)``, recording every node it runs.

    ``keep``: ``"all"`` keeps every gradient (by reference where nothing can change it,
    ``gradviz.capture.hooks``; else a copy), ``"summary"`` keeps shape, dtype,
    norm, min, max, mean and the first values, ``"auto"`` keeps copies when the graph's
    gradients take up to ``AUTO_ALL_MAX_BYTES`` and summaries when they take more. Each
    gradient is stored once: a tensor passed on unchanged (to the next node, or into a
    leaf's ``.grad``) shares the copy made where it first appeared.

    ``memory_budget``: copies stop before they would hold more than this many bytes (default
    ``MEMORY_BUDGET``, 1 GiB; ``None``: no limit); the rest is kept as summaries, and a
    ``GradvizWarning`` after the backward says from which step on.
    """
    arguments.check_options(keep, memory_budget)
    input_list = None if inputs is None else arguments.input_list(inputs, "inputs")
    # inside watch(): gradviz's ops are not the user's forward pass; the collector paused
    # over the whole recording (not per phase: each resume collected what the last made)
    with own_ops(), gc_paused():
        graph = trace(*roots, params=params, names=names)
        recorder = _Recorder(
            graph, keep, create_graph, mode="backward", memory_budget=memory_budget
        )
        seeds = arguments.seeds(roots, gradient, "gradient")
        recorder.set_seeds(roots, seeds)
        input_nodes = _input_nodes(graph, input_list)

        def run(probe: _Probe) -> None:
            torch.autograd.backward(
                [*roots, *probe.roots],
                # the engine's own 1s when none was given: the same seeds, and passing
                # them makes torch import its symbolic-shape checks (0.35 s, once)
                grad_tensors=None if gradient is None else [*seeds, *probe.seeds],
                retain_graph=retain_graph,
                create_graph=create_graph,
                inputs=None if input_list is None else [*input_list, *probe.leaves],
            )

        recording = recorder.run(run, input_nodes, roots[0].device)
        recording.graph_retained = bool(create_graph if retain_graph is None else retain_graph)
        return recording


def record_grad(
    outputs: TensorOrTensors,
    inputs: InputTensors,
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
    arguments.check_options(keep, memory_budget)
    roots = arguments.as_tuple(outputs)
    input_tuple = arguments.input_list(inputs, "inputs")
    # inside watch(): gradviz's ops are not the user's forward pass; the collector paused
    # over the whole recording (not per phase: each resume collected what the last made)
    with own_ops(), gc_paused():
        graph = trace(*roots, params=params, names=names)
        recorder = _Recorder(graph, keep, create_graph, mode="grad", memory_budget=memory_budget)
        seeds = arguments.seeds(roots, grad_outputs, "grad_outputs")
        recorder.set_seeds(roots, seeds)
        result: list[tuple[torch.Tensor | None, ...]] = []

        def run(probe: _Probe) -> None:
            grads = torch.autograd.grad(
                [*roots, *probe.roots],
                [*input_tuple, *probe.leaves],
                grad_outputs=None if grad_outputs is None else [*seeds, *probe.seeds],
                retain_graph=retain_graph,
                create_graph=create_graph,
                allow_unused=allow_unused,
            )
            result.append(grads[: len(input_tuple)])

        recording = recorder.run(run, _input_nodes(graph, input_tuple), roots[0].device)
        recording.graph_retained = bool(create_graph if retain_graph is None else retain_graph)
    return result[0], recording


def _same_layout(kept: GradValue, grad: torch.Tensor) -> bool:
    """Whether ``kept`` can stand for ``grad``: a summary, or a copy with its layout and
    strides (AccumulateGrad stores a transpose in the leaf's own strides). Sparse tensors
    have no strides: they are stored as they came."""
    if not isinstance(kept, torch.Tensor):
        return True
    if kept.layout != grad.layout:
        return False
    return kept.layout != torch.strided or kept.stride() == grad.stride()


def _input_nodes(graph: Graph, inputs: tuple[torch.Tensor, ...] | None) -> list[str] | None:
    """Where gradients are wanted when ``inputs=`` prunes the graph (None: everywhere)."""
    if inputs is None:
        return None
    wanted: list[str] = []
    for tensor in inputs:
        node, _ = _autograd.gradient_edge(tensor)
        wanted.extend(n.id for n in graph.nodes if n.torch_node is node)
    return wanted


class _Task:
    """The steps of one backward (graph task) that ran through the hooks."""

    __slots__ = ("open_steps", "steps")

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.open_steps: dict[str, Step] = {}


class _Probe:
    """A private two-node graph run with the user's roots: its node's prehook runs inside
    the recorded backward and tells which graph task that is. Its node is made last, so the
    engine runs it first (before any node but AccumulateGrad). Where no graph can be made
    (inside ``torch.inference_mode()``), it is empty. Its hook needs no removal: the graph
    is private and dies with the probe."""

    def __init__(
        self, bind: Callable[[tuple[torch.Tensor | None, ...]], None], device: torch.device
    ) -> None:
        self.roots: list[torch.Tensor] = []
        self.seeds: list[torch.Tensor] = []
        self.leaves: list[torch.Tensor] = []
        with torch.enable_grad():
            leaf = torch.zeros((), device=device, requires_grad=True)  # the roots' device:
            root = leaf * 1.0  # nothing new on the CPU for a meta graph
        if root.grad_fn is None:
            return
        root.grad_fn.register_prehook(bind)
        self.roots, self.seeds, self.leaves = [root], [torch.ones((), device=device)], [leaf]


@dataclass
class _Recorder:
    graph: Graph
    keep: Keep
    create_graph: bool
    mode: Literal["backward", "grad"]
    steps: list[Step] = field(default_factory=list)
    seeds: dict[tuple[str, int], GradValue] = field(default_factory=dict)
    memory_budget: int | None = MEMORY_BUDGET
    held: int = 0  # bytes of gradient copies kept so far (keep="all")
    # graph task id -> its steps: this recording's backward, and until the probe names it,
    # any other backward that ran through the hooks (dropped then)
    tasks: dict[int, _Task] = field(default_factory=dict)
    task: int | None = None  # this recording's graph task, once the probe ran
    # from which step on the memory budget made copies summaries (0: it did not)
    switched_at: int = 0
    # what failed inside gradviz's own hooks: reported after the backward, never raised there
    internal_errors: list[str] = field(default_factory=list)
    # id(tensor) -> (weak reference, _version, what was kept): a gradient tensor seen
    # again, unchanged (same object, same version), reuses what was kept the first time.
    seen: dict[int, tuple[weakref.ref[torch.Tensor], int, GradValue]] = field(default_factory=dict)
    # id(memory's root tensor) -> (weak reference, _version, a summary of all of it): other
    # dense views of that memory (transposes) reuse its statistics (keep="summary")
    regions: dict[int, tuple[weakref.ref[torch.Tensor], int, Summary]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.one_hook_nodes: set[str] = set()  # nodes whose step opens after they ran
        self.by_reference = False  # keep="all" without copies (``run`` decides)
        self.user_node_hooks = False  # the user's node hooks found on the graph
        self.user_memory: set[int] = set()  # where the user's gradient= tensors live
        self.shared: list[tuple[torch.Tensor, int]] = []  # (kept by reference, _version)
        if self.keep == "auto":
            self.keep = "all" if _fits(self.graph, AUTO_ALL_MAX_BYTES) else "summary"
        if self.keep not in ("all", "summary"):
            raise InvalidArgument(f"keep must be 'auto', 'all' or 'summary', not {self.keep!r}")
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
        return self._copy(value)

    def _copy(self, value: torch.Tensor, share: bool = False) -> GradValue:
        """A copy of ``value``, or with ``share`` the tensor itself (``by_reference``); a
        summary once copies would pass ``memory_budget`` bytes, and summaries from then on
        (``switched_at`` says from which step); a summary for a tensor without
        ``plain_values`` (nested, a fake tensor): gradviz's analyses compute with tensors."""
        if not plain_values(value):
            return summarize(value)
        size = 0 if value.is_meta else value.numel() * value.element_size()
        budget = self.memory_budget
        if budget is not None and self.held + size > budget:
            self.keep = "summary"
            self.switched_at = max(1, sum(len(task.steps) for task in self.tasks.values()))
            return summarize(value)
        self.held += size
        if share and shareable(value):
            alias = value.detach()  # the same memory and version counter, not the same
            self.shared.append((alias, alias._version))  # tensor: AccumulateGrad's choices
            return alias  # (move it into .grad, or copy it) stay PyTorch's own
        return value.detach().clone()

    def kept_once(self, value: torch.Tensor | None, share: bool = True) -> GradValue | None:
        """``kept(value)``, reusing what was kept when this very tensor was seen before.
        A gradient on its way (``share``) is kept by reference under ``by_reference``."""
        if value is None:
            return None
        key = id(value)
        entry = self.seen.get(key)
        if entry is not None and entry[0]() is value and entry[1] == value._version:
            return entry[2]
        if self.keep == "summary":
            kept: GradValue | None = self._summary(value)
        elif self.create_graph:
            kept = value  # a fresh tensor with a graph of its own: second derivatives
        else:
            kept = self._copy(value, share and self.by_reference)
        if kept is not None:
            self.seen[key] = (weakref.ref(value), value._version, kept)
        return kept

    def kept_grad(self, value: torch.Tensor | None) -> GradValue | None:
        """``kept_once`` for a ``.grad``: a copy (unless kept before), as the user may
        change ``.grad`` in place later (``zero_grad(set_to_none=False)``, clipping)."""
        return self.kept_once(value, share=False)

    def _summary(self, value: torch.Tensor) -> Summary:
        """``summarize(value)``; for a view of memory summarized before (``TBackward``
        passes on a transpose of what it received) that summary's statistics, no new
        passes. A summary of a whole memory is kept for its other views."""
        root = value._base
        if root is None:
            root = value
        regions = self.regions
        entry = regions.get(id(root))
        if (
            entry is not None
            and entry[0]() is root
            and entry[1] == root._version
            and covers(value, root)
        ):
            return summarize_view(value, entry[2])
        kept = summarize(value)
        if not kept.complete and kept.min is not None and covers(value, root):
            regions[id(root)] = (weakref.ref(root), root._version, kept)
        return kept

    def set_seeds(self, roots: tuple[torch.Tensor, ...], seeds: tuple[torch.Tensor, ...]) -> None:
        """What enters each root node before any node runs (summed when roots share one)."""
        totals: dict[tuple[str, int], torch.Tensor] = {}
        for root, seed in zip(roots, seeds, strict=True):
            node, output_nr = _autograd.gradient_edge(root)
            node_id = next(n.id for n in self.graph.nodes if n.torch_node is node)
            key = (node_id, output_nr)
            totals[key] = seed.detach() if key not in totals else totals[key] + seed.detach()
        for key, total in totals.items():
            self.seeds[key] = summarize(total) if self.keep == "summary" else self._copy(total)
        # the user's gradient= memory: what flows on of it is copied after the backward
        dense = [seed for seed in seeds if seed.layout == torch.strided]
        self.user_memory = {memory_of(seed) for seed in dense}

    # -- which backward a hook runs in ---------------------------------------------------
    def bind(self, grad_outputs: tuple[torch.Tensor | None, ...]) -> None:
        """The probe's prehook: the graph task running now is this recording's."""
        task = _autograd.current_graph_task()
        self.task = task
        mine = self.tasks.get(task) or _Task()
        self.tasks.clear()
        self.tasks[task] = mine

    def current_task(self) -> _Task | None:
        """The steps of the backward the calling hook runs in; None for another backward
        than this recording's, once that is known (the hook then only passes through)."""
        task_id = _autograd.current_graph_task()
        task = self.tasks.get(task_id)
        if task is None and self.task is None:
            task = self.tasks[task_id] = _Task()
        return task

    def own_steps(self) -> list[Step]:
        """This recording's steps: its task's, or when the probe could not run (no graph
        inside inference_mode, or backward failed first) the only task seen."""
        if self.task is not None:
            task = self.tasks.get(self.task)
            return [] if task is None else task.steps
        if len(self.tasks) == 1:
            return next(iter(self.tasks.values())).steps
        return []

    def failed_inside(self, where: str, error: Exception) -> None:
        """A failure of gradviz's own in a hook: kept for after the backward."""
        if len(self.internal_errors) < 20:
            self.internal_errors.append(f"{where}: {type(error).__name__}: {error}")

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
        current_task = self.current_task
        failed_inside = self.failed_inside
        kept_once = self.kept_once
        kept_grad = self.kept_grad
        kept = self.kept

        def prehook(grad_outputs: tuple[torch.Tensor | None, ...]) -> None:
            task = current_task()
            if task is None:
                return  # another backward on the same graph
            try:
                steps = task.steps
                step = Step(len(steps) + 1, node_id, type_name, tuple(map(kept_once, grad_outputs)))
                # no strong references to the raw gradients: autograd may steal or reuse them
                if leaf is not None:
                    step.leaf_grad_before = kept(leaf.grad)
                for record_id, tensor in retained:
                    if tensor.retains_grad and tensor.grad is not None:
                        step.retained[record_id] = kept(tensor.grad)  # type: ignore[assignment]
                steps.append(step)
                task.open_steps[node_id] = step
            except Exception as error:  # gradviz's own failure must not stop the backward
                failed_inside(f"before {type_name} ({node_id})", error)

        def hook(
            grad_inputs: tuple[torch.Tensor | None, ...],
            grad_outputs: tuple[torch.Tensor | None, ...],
        ) -> None:
            task = current_task()
            if task is None:
                return  # another backward on the same graph
            step = task.open_steps.pop(node_id, None)
            if step is None:
                return  # its prehook failed, and said so
            try:
                step.grad_inputs = tuple(map(kept_once, grad_inputs))
                if leaf is not None:
                    step.leaf_grad_after = _leaf_grad_after(step, leaf, kept_grad)
                step.finished = True
            except Exception as error:  # gradviz's own failure must not stop the backward
                step.finished = True  # the node itself ran
                failed_inside(f"after {type_name} ({node_id})", error)

        return prehook, hook

    def one_hook_for(self, node: Node) -> PostHook:
        """The node's one hook after it ran (``gradviz.capture.hooks``): what ``hooks_for``'s
        prehook and hook record, in one call (half of a small node's cost was the calls)."""
        node_id = node.id
        type_name = node.type_name
        leaf = node.leaf_tensor
        retained = self.retained.get(node_id, ())
        current_task = self.current_task
        failed_inside = self.failed_inside
        kept_once = self.kept_once
        kept_grad = self.kept_grad
        kept = self.kept

        def hook(
            grad_inputs: tuple[torch.Tensor | None, ...],
            grad_outputs: tuple[torch.Tensor | None, ...],
        ) -> None:
            task = current_task()
            if task is None:
                return  # another backward on the same graph
            steps = task.steps
            try:
                step = Step(len(steps) + 1, node_id, type_name, tuple(map(kept_once, grad_outputs)))
                for record_id, tensor in retained:
                    if tensor.retains_grad and tensor.grad is not None:
                        step.retained[record_id] = kept(tensor.grad)  # type: ignore[assignment]
                steps.append(step)
            except Exception as error:  # gradviz's own failure must not stop the backward
                failed_inside(f"before {type_name} ({node_id})", error)
                return
            try:
                step.grad_inputs = tuple(map(kept_once, grad_inputs))
                if leaf is not None:
                    step.leaf_grad_after = _leaf_grad_after(step, leaf, kept_grad)
                step.finished = True
            except Exception as error:  # gradviz's own failure must not stop the backward
                step.finished = True  # the node itself ran
                failed_inside(f"after {type_name} ({node_id})", error)

        return hook

    def before_user_hooks(self, node_id: str) -> PostHook:
        """A hook that runs before the user's own hooks of the node: what the op itself
        sent, so that a hook's change shows instead of passing for the op's result."""
        current_task = self.current_task
        kept_once = self.kept_once
        failed_inside = self.failed_inside

        def hook(
            grad_inputs: tuple[torch.Tensor | None, ...],
            grad_outputs: tuple[torch.Tensor | None, ...],
        ) -> None:
            task = current_task()
            step = None if task is None else task.open_steps.get(node_id)
            if step is None:
                return
            try:
                step.sent_by_op = tuple(map(kept_once, grad_inputs))
            except Exception as error:  # gradviz's own failure must not stop the backward
                failed_inside(f"after {step.type_name} ({node_id})", error)

        return hook

    # -- the run -------------------------------------------------------------------------
    def _register(self, handles: HookHandles) -> None:
        """One hook on each node where that is enough, else a prehook and a hook
        (``gradviz.capture.hooks``); each handle is stored as soon as it exists."""
        hooks_for = self.hooks_for
        one_hook_for = self.one_hook_for
        retained = self.retained
        add = handles.add
        one_hook_nodes = self.one_hook_nodes
        has_other_hooks = _autograd.has_other_hooks
        for node in self.graph.nodes:
            torch_node = node.torch_node
            entries = retained.get(node.id)  # most nodes have no retained tensor
            retains = entries is not None and any(t.retains_grad for _, t in entries)
            if one_hook_will_do(node, retains):
                one_hook_nodes.add(node.id)
                handle = add(torch_node.register_hook(one_hook_for(node)))
                if not has_other_hooks(handle):
                    continue
                handles.drop_last()  # the user's own hooks are here: two hooks, as below
                self.one_hook_nodes.discard(node.id)
            prehook, hook = hooks_for(node)
            handles.add(torch_node.register_prehook(prehook))
            handle = handles.add(torch_node.register_hook(hook))
            if _autograd.has_other_hooks(handle):
                self.user_node_hooks = True
                # the user's hooks may replace what the node sends: look first too
                handle = handles.add(torch_node.register_hook(self.before_user_hooks(node.id)))
                _autograd.move_to_front(handle)

    def run(
        self,
        backward: Callable[[_Probe], None],
        input_nodes: list[str] | None,
        device: torch.device,
    ) -> Recording:
        freed = [n for n in self.graph.nodes if n.saved_freed]
        if freed:
            raise GraphFreed(
                f"the graph was already freed by an earlier backward ({freed[0].type_name} "
                "lost its saved tensors). Run the forward pass again, or pass "
                "retain_graph=True to the earlier backward()/gradviz.record()."
            )
        settle_grads(self.graph.tensors)  # the .grad values from before, not after
        handles = HookHandles()
        error: Exception | None = None
        probe = _Probe(self.bind, device)
        # the hooks allocate many small objects and free few: without the pause, the cyclic
        # collector rescans them (and torch's own objects) over and over
        with gc_paused():
            try:
                with deferred_interrupts():  # a handle lost to Ctrl-C would leave its hook
                    self._register(handles)
                # inputs= and grad(): the engine hands those gradients to the user: copies
                self.by_reference = self.keep == "all" and self.mode == "backward"
                self.by_reference &= input_nodes is None and not self.create_graph
                self.by_reference &= not self.user_node_hooks and references_safe(self.graph)
                backward(probe)
            except Exception as raised:  # re-raised below as BackwardFailed, with the steps
                error = raised
            finally:
                handles.remove_all()
                if self.by_reference:
                    self.internal_errors += unshare(self.graph, self.shared, self.user_memory)
                self.seen.clear()
                self.regions.clear()
            self.steps = self.own_steps()
            recording = built(Recording)(
                graph=self.graph,
                steps=self.steps,
                seeds=self.seeds,
                keep=self.keep,  # type: ignore[arg-type]
                mode=self.mode,
                input_nodes=input_nodes,
            )
        self._warn_after()
        if error is not None:
            node_id, where = _where_it_failed(recording, error, self.one_hook_nodes)
            raise backward_failed(
                f"backward failed {where}: {error}", error, recording=recording, node_id=node_id
            ) from error
        return recording

    def _warn_after(self) -> None:
        """gradviz's warnings, once the backward is over: raised inside a hook (``-W
        error``), a warning would have stopped the user's backward half-way."""
        if self.switched_at:
            budget = self.memory_budget or 0
            warnings.warn(
                f"gradviz.record() kept gradient copies up to memory_budget="
                f"{budget} bytes ({budget / 2**20:.0f} MiB); from step {self.switched_at} "
                f"on it kept summaries (shape, dtype, norm, min, max, mean). Raise "
                "memory_budget= to keep every copy, or pass keep='summary'.",
                GradvizWarning,
                stacklevel=4,
            )
        if self.internal_errors:
            warnings.warn(
                "gradviz could not record everything (the backward itself ran unchanged): "
                + "; ".join(self.internal_errors),
                GradvizWarning,
                stacklevel=4,
            )


def _leaf_grad_after(
    step: Step, leaf: torch.Tensor, kept_once: Callable[[torch.Tensor | None], GradValue | None]
) -> GradValue | None:
    """The leaf's ``.grad`` after AccumulateGrad ran."""
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
        # .grad was None, so AccumulateGrad set it to what it received (stolen or cloned,
        # same values): store that once
        return received[0]
    return kept_once(grad)


def _fits(graph: Graph, limit: int) -> bool:
    """Whether the gradients the graph's nodes receive take at most ``limit`` bytes (what
    full copies of them hold)."""
    total = 0
    for node in graph.nodes:
        if node.torch_node is not None:
            total += _autograd.input_bytes(node.torch_node)
            if total > limit:
                return False
    return True


def _raised_in_python(error: BaseException) -> bool:
    """Whether Python code (a hook, an ``autograd.Function``) raised ``error`` inside the
    engine, rather than the engine itself (C++ leaves no frame after the backward call)."""
    traceback = error.__traceback__
    while traceback is not None and traceback.tb_next is not None:
        traceback = traceback.tb_next
    if traceback is None:
        return False
    return traceback.tb_frame.f_code.co_name != "_engine_run_backward"


def _where_it_failed(
    recording: Recording,
    error: BaseException,
    one_hook_nodes: set[str] | frozenset[str] = frozenset(),
) -> tuple[str | None, str]:
    """The node backward failed at, and where that was in words.

    The node whose step did not finish failed (its op or a hook after it). When every step
    finished and Python code raised, a hook on the next node's incoming gradient raised (a
    tensor hook or a prehook, which run before gradviz's prehook): that node is the one the
    engine runs next, known from the predicted order while the recorded steps follow it.
    A node with one hook (``gradviz.capture.hooks``) opens its step after it ran: its own
    failure looks the same.
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
    if not _raised_in_python(error):
        if node.id in one_hook_nodes:  # its one hook runs after it: the node itself failed
            return node.id, f"in {node.type_name} ({node.id}, step {done + 1})"
        return node.id, f"{after}, as {node.type_name} ({node.id}) was about to run"
    return node.id, (
        f"{after}, as {node.type_name} ({node.id}) was about to run: a hook on its incoming "
        "gradient (a tensor hook or a prehook) raised"
    )
