"""``watch_training``: what an unmodified training loop did, step by step, kept cheaply.

Inside the block the user's loop runs as written (``loss.backward(); optimizer.step()``).
``torch.autograd.backward`` (which ``Tensor.backward`` calls) is wrapped to see the loss
and, once PyTorch's own backward has returned, to read every parameter's ``.grad`` norm in
one ``torch._foreach_norm`` call (the accumulated gradient, before any clipping); the
optimizer's step pre- and post-hooks copy the parameters and measure ``‖Δw‖`` and read each
group's learning rate. On the steps asked for (``keep_steps``) the backward runs through
``record()`` instead, whose hooks only look. Nothing here writes a gradient or a
parameter, so training is bitwise the same; everything is undone on leaving the block,
also when the loop raises.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Sequence
from types import TracebackType
from typing import Any

import torch

from gradviz.capture.record import Keep, record
from gradviz.capture.trace import trace
from gradviz.errors import GradvizWarning, GraphFreed, InvalidArgument, NotOnGraph
from gradviz.model.public import built
from gradviz.model.training import NO_GRAD, TrainingRun

__all__ = ["TrainingWatch"]

# one step's norms: one tensor (the usual case) or one 0-d tensor or None per parameter
_Row = torch.Tensor | list[torch.Tensor | None]

# rows wait as tensors (no device sync per step) and become floats this many at a time
_SETTLE_EVERY = 64


class TrainingWatch:
    """The context manager behind ``gradviz.watch_training``; ``__enter__`` returns the
    ``TrainingRun`` it fills."""

    def __init__(
        self,
        model: torch.nn.Module | None = None,
        optimizer: torch.optim.Optimizer | None = None,
        *,
        every: int = 1,
        keep_steps: Collection[int] = (),
        updates: bool = True,
        edges: bool = False,
        keep: Keep = "summary",
    ) -> None:
        if model is not None and not isinstance(model, torch.nn.Module):
            raise InvalidArgument(
                f"watch_training takes a torch.nn.Module, not {type(model).__name__}: "
                "gradviz.watch_training(model, optimizer)"
            )
        if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
            raise InvalidArgument(
                f"watch_training takes a torch.optim.Optimizer, not {type(optimizer).__name__}"
                ": gradviz.watch_training(model, optimizer)"
            )
        if model is None and optimizer is None:
            raise InvalidArgument(
                "watch_training needs the model, the optimizer or both: "
                "gradviz.watch_training(model, optimizer)"
            )
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise InvalidArgument(f"every= takes a whole number >= 1, not {every!r}")
        self.model = model
        self.optimizer = optimizer
        self.every = every
        self.keep_steps = frozenset(int(s) for s in keep_steps)
        self.updates = updates and optimizer is not None
        self.keep = keep
        self.edges = edges
        names, tensors = _parameters(model, optimizer)
        self.tensors = tensors
        group_of: dict[int, int] = {}
        if optimizer is not None:
            for g, group in enumerate(optimizer.param_groups):
                for p in group["params"]:
                    group_of.setdefault(id(p), g)
        n_groups = 0 if optimizer is None else len(optimizer.param_groups)
        self.run = built(TrainingRun)(
            params=names,
            groups=[group_of.get(id(t), -1) for t in tensors],
            n_groups=n_groups,
            every=every,
        )
        self.step = 0  # optimizer.step() calls so far: the training step being run
        self._pending: list[tuple[int, Any, Any, Any, list[float], Any]] = []
        # the step being run: its loss and norms as tensors until settled
        self._loss: Any = None
        self._logged = False
        self._grad_norms: Any = None
        self._update_norms: Any = None
        self._lrs: list[float] = []
        self._edge_norms: list[tuple[str, torch.Tensor]] | None = None
        self._measured = False
        self._busy = False
        self._original_backward: Any = None
        self._handles: list[Any] = []
        self._before: list[torch.Tensor] | None = None

    # -- entering and leaving ------------------------------------------------------------
    def __enter__(self) -> TrainingRun:
        if self._original_backward is not None:
            raise InvalidArgument("this watch_training block is already running")
        self._original_backward = torch.autograd.backward
        torch.autograd.backward = self._backward
        if self.optimizer is not None:
            self._handles = [
                self.optimizer.register_step_pre_hook(self._before_step),
                self.optimizer.register_step_post_hook(self._after_step),
            ]
        self.run._settle = self._settle
        self.run._log = self._log
        return self.run

    def enter_at_step(self) -> TrainingRun:
        """Enter from inside ``optimizer.step()``'s first (global) pre-hook, when the
        first step's backward has already run: its gradients are read from ``.grad`` now,
        its loss stays unknown. The command line starts this way, having learnt of the
        optimizer only when the script first steps it."""
        run = self.__enter__()
        if self._wanted():
            self._grad_norms = self._norms()
            self._measured = True
        self.run.notes.append("step 0: entered at the first optimizer.step(); its loss is unknown")
        return run

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        try:
            for handle in self._handles:
                handle.remove()
            self._handles = []
            if self._original_backward is not None:
                torch.autograd.backward = self._original_backward
                self._original_backward = None
            if self._measured and self.optimizer is None:
                self._commit()
            elif self._measured:  # a backward after the last step: kept, without an update
                self._commit()
                self.run.notes.append(
                    f"step {self.step - 1}: backward ran but optimizer.step() did not"
                )
        finally:
            self._before = None
            self._settle()
            self.run._settle = None
            self.run._log = None

    # -- the hooks -----------------------------------------------------------------------
    def _wanted(self) -> bool:
        return self.step % self.every == 0

    def _backward(self, tensors: Any, *args: Any, **kwargs: Any) -> None:
        original = self._original_backward
        if self._busy or original is None:  # record()'s own backward, or after the block
            (original or torch.autograd.backward)(tensors, *args, **kwargs)
            return None
        self._busy = True
        try:
            root = tensors if isinstance(tensors, torch.Tensor) else None
            if root is not None and not self._logged and root.numel() == 1:
                self._loss = root.detach().reshape(()).clone()
            if self.run.graph is None and self._wanted():
                self.run.graph = self._read("the backward graph", lambda: self._layout(tensors))
            if self.step in self.keep_steps and self.step not in self.run.recordings:
                self._record_or_run(original, tensors, args, kwargs)
            elif self.edges and self._wanted():
                self._edge_norms = self._backward_per_edge(original, tensors, args, kwargs)
            else:
                original(tensors, *args, **kwargs)
        finally:
            self._busy = False
        if self._wanted():
            self._grad_norms = self._read("the gradients' norms", self._norms)
            self._measured = True
        if self.optimizer is None:
            self._commit()
        return None

    def _layout(self, tensors: Any) -> Any:
        """The backward graph about to run, walked (``trace``: the ids a recording of the
        same graph has) and kept as plain data without values, so no autograd node outlives
        its step (and no value of this one step stands for all of them)."""
        roots = (tensors,) if isinstance(tensors, torch.Tensor) else tuple(tensors)
        return trace(*roots, params=self._named()).structure()

    def _named(self) -> list[tuple[str, torch.Tensor]]:
        return list(zip(self.run.params, self.tensors, strict=True))

    def _read(self, what: str, look: Any) -> Any:
        """``look()``, or None with a warning and a note when it fails: gradviz only
        reads, and a read it cannot make never stops the user's loop."""
        try:
            return look()
        except Exception as error:
            text = (
                f"step {self.step}: gradviz could not read {what} "
                f"({type(error).__name__}: {error}); left out"
            )
            warnings.warn(text, GradvizWarning, stacklevel=3)
            if text not in self.run.notes:
                self.run.notes.append(text)
            return None

    def _backward_per_edge(
        self, original: Any, tensors: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> list[tuple[str, torch.Tensor]]:
        """PyTorch's backward with a hook on every node of the graph (``trace``'s ids, so
        the keys are a recording's edge keys) that keeps the norm of each gradient it
        sends, edge ``node.slot``; the hooks only read and are removed after."""
        roots = (tensors,) if isinstance(tensors, torch.Tensor) else tuple(tensors)
        graph = trace(*roots)
        found: list[tuple[str, torch.Tensor]] = []

        def hook_for(node_id: str) -> Any:
            def hook(grad_inputs: tuple[Any, ...], grad_outputs: tuple[Any, ...]) -> None:
                sent = [
                    (slot, g)
                    for slot, g in enumerate(grad_inputs)
                    if isinstance(g, torch.Tensor) and g.layout == torch.strided
                ]
                if sent:
                    norms = _foreach_norms([g for _, g in sent])
                    found.extend(
                        (f"{node_id}.{slot}", n) for (slot, _), n in zip(sent, norms, strict=True)
                    )
                return None

            return hook

        handles = [
            node.torch_node.register_hook(hook_for(node.id))
            for node in graph.nodes
            if node.torch_node is not None
        ]
        try:
            original(tensors, *args, **kwargs)
        finally:
            for handle in handles:
                handle.remove()
        return found

    def _record_or_run(
        self, original: Any, tensors: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        """Record this step's backward; when ``record()`` refuses before anything ran (a
        freed graph, a root off the graph), PyTorch's own backward runs instead, so the
        user sees PyTorch's own result or error, and the refusal is a note."""
        try:
            self.run.recordings[self.step] = self._record(tensors, args, kwargs)
        except (GraphFreed, NotOnGraph, InvalidArgument) as refused:
            self.run.notes.append(f"step {self.step}: not recorded in full ({refused})")
            original(tensors, *args, **kwargs)

    def _record(self, tensors: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The backward through ``record()``: the same gradients, with every step kept."""
        options = dict(zip(("grad_tensors", "retain_graph", "create_graph"), args, strict=False))
        options.update(kwargs)
        roots = (tensors,) if isinstance(tensors, torch.Tensor) else tuple(tensors)
        gradient = options.pop("grad_tensors", None)
        if "gradient" in options:
            gradient = options.pop("gradient")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", GradvizWarning)
            return record(
                *roots,
                gradient=gradient,
                inputs=options.get("inputs"),
                retain_graph=options.get("retain_graph"),
                create_graph=bool(options.get("create_graph", False)),
                keep=self.keep,
                params=self.model,
            )

    def _log(self, loss: Any) -> None:
        if isinstance(loss, torch.Tensor):
            if loss.numel() != 1:
                raise InvalidArgument(
                    f"run.log(loss) takes a scalar loss, not a tensor of shape {tuple(loss.shape)}"
                )
            self._loss = loss.detach().reshape(()).clone()
        else:
            self._loss = torch.tensor(float(loss), dtype=torch.float64)
        self._logged = True

    def _before_step(self, optimizer: torch.optim.Optimizer, *_: Any) -> None:
        self._lrs = self._read("the learning rates", lambda: _lrs(optimizer)) or []
        if self.updates and self._wanted():
            self._before = self._read(
                "the parameters before the step", lambda: [t.detach().clone() for t in self.tensors]
            )
        return None

    def _after_step(self, optimizer: torch.optim.Optimizer, *_: Any) -> None:
        before, self._before = self._before, None
        if before is not None:
            self._update_norms = self._read("the update sizes", lambda: self._updates(before))
        if self._wanted():
            self._commit()
        else:
            self._clear_step()
            self.step += 1
        return None

    # -- rows ----------------------------------------------------------------------------
    def _updates(self, before: list[torch.Tensor]) -> _Row:
        after = [t.detach() for t in self.tensors]
        return _as_row(list(torch._foreach_norm(torch._foreach_sub(after, before))))

    def _norms(self) -> _Row:
        """Every parameter's ``.grad`` norm (None: no ``.grad``), in one fused call when
        every ``.grad`` is there and dense (the usual case), kept as one tensor."""
        grads = [t.grad for t in self.tensors]
        if all(g is not None and g.layout == torch.strided for g in grads):
            return _as_row(_foreach_norms(grads))  # type: ignore[arg-type]
        present = [g for g in grads if g is not None and g.layout == torch.strided]
        norms = iter(_foreach_norms(present))
        values: list[torch.Tensor | None] = []
        for grad in grads:
            if grad is None:
                values.append(None)
            elif grad.layout == torch.strided:
                values.append(next(norms))
            else:
                values.append(torch.linalg.vector_norm(_stored_values(grad)))
        return values

    def _commit(self) -> None:
        if self._measured or self._wanted():
            self._pending.append(
                (
                    self.step,
                    self._loss,
                    self._grad_norms,
                    self._update_norms,
                    self._lrs,
                    self._edge_norms,
                )
            )
        self._clear_step()
        self.step += 1
        if len(self._pending) >= _SETTLE_EVERY:
            self._settle()

    def _clear_step(self) -> None:
        self._loss = None
        self._logged = False
        self._grad_norms = None
        self._update_norms = None
        self._lrs = []
        self._edge_norms = None
        self._measured = False

    def _settle(self) -> None:
        """Pending rows become floats in the run: every waiting norm stacked into one
        tensor and read at once (one device sync for many steps, and no per-step cost)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        width = len(self.tensors)
        waiting: list[tuple[torch.Tensor | None, int]] = []
        for _, loss, grads, updates, _, edges in pending:
            waiting.append((loss, 1))
            for row in (grads, updates):
                if isinstance(row, torch.Tensor) or row is None:
                    waiting.append((row, width))
                else:
                    waiting.extend((n, 1) for n in row)
            waiting.extend((n, 1) for _, n in edges or ())
        values = iter(_floats(waiting))
        for step, loss, _, _, lrs, edges in pending:
            loss_value = next(values)
            grad_row = [next(values) for _ in range(width)]
            update_row = [next(values) for _ in range(width)]
            if edges:
                self.run.edge_norms[step] = {key: next(values) for key, _ in edges}
            self.run.add_row(
                step,
                None if loss is None else loss_value,
                grad_row,
                update_row,
                lrs if len(lrs) == self.run.n_groups else [float("nan")] * self.run.n_groups,
            )


def _parameters(
    model: torch.nn.Module | None, optimizer: torch.optim.Optimizer | None
) -> tuple[list[str], list[torch.Tensor]]:
    """The parameters to watch, named by module path: the model's that require grad, then
    the optimizer's that the model does not hold (``group0.param3``)."""
    names: list[str] = []
    tensors: list[torch.Tensor] = []
    seen: set[int] = set()
    if model is not None:
        for name, param in model.named_parameters():
            if param.requires_grad and id(param) not in seen:
                seen.add(id(param))
                names.append(name)
                tensors.append(param)
    if optimizer is not None:
        for g, group in enumerate(optimizer.param_groups):
            for index, param in enumerate(group["params"]):
                if id(param) not in seen:
                    seen.add(id(param))
                    names.append(f"group{g}.param{index}")
                    tensors.append(param)
    return names, tensors


def _foreach_norms(grads: list[torch.Tensor]) -> list[torch.Tensor]:
    """``torch.linalg.vector_norm`` of each gradient, in one call where PyTorch allows."""
    if not grads:
        return []
    try:
        return list(torch._foreach_norm(grads))
    except RuntimeError:  # a layout or dtype the fused call refuses: one at a time
        return [torch.linalg.vector_norm(g) for g in grads]


def _as_row(norms: list[torch.Tensor]) -> _Row:
    """One step's norms as one tensor (settling then reads one tensor a step, not one a
    parameter): ``torch.stack`` promotes mixed floating dtypes to the widest, which holds
    every value exactly; norms on several devices stay as they are."""
    try:
        return torch.stack(norms)
    except RuntimeError:
        return list(norms)


def _floats(pieces: Sequence[tuple[torch.Tensor | None, int]]) -> list[float]:
    """Tensors of (numel) values as Python floats, in order (None: that many ``NO_GRAD``),
    widened to float64 without rounding; one concatenation and one read per device and
    dtype."""
    starts: list[int] = []
    end = 0
    groups: dict[tuple[torch.device, torch.dtype], list[int]] = {}
    for index, (value, size) in enumerate(pieces):
        starts.append(end)
        end += size
        if value is not None:
            groups.setdefault((value.device, value.dtype), []).append(index)
    out = [NO_GRAD] * end
    for indices in groups.values():
        joined = torch.cat([pieces[i][0].reshape(-1) for i in indices])  # type: ignore[union-attr]
        numbers = joined.to(torch.float64).tolist()
        taken = 0
        for index in indices:
            size = pieces[index][1]
            out[starts[index] : starts[index] + size] = numbers[taken : taken + size]
            taken += size
    return out


def _stored_values(grad: torch.Tensor) -> torch.Tensor:
    if grad.layout == torch.sparse_coo:
        return grad.coalesce().values()
    return grad.values()


def _lrs(optimizer: torch.optim.Optimizer) -> list[float]:
    return [_lr(group) for group in optimizer.param_groups]


def _lr(group: dict[str, Any]) -> float:
    value = group.get("lr", float("nan"))
    return float(value.item() if isinstance(value, torch.Tensor) else value)
