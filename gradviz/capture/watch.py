"""``gradviz.watch()``: capture the forward pass that autograd never keeps.

A ``TorchFunctionMode`` sees every Python-level torch op with its inputs (tensors,
constants, Python scalars) and outputs; gradviz snapshots each tensor's ``grad_fn`` and
``_version`` at that moment, the autograd sequence numbers the op allocated, and the
source line. Global forward pre/post hooks on ``nn.Module`` (they return None) give the
module scopes. Everything is plain data (``gradviz.model.forward.Forward``); the live tensors are
held only weakly, so watching never keeps memory alive or changes a result.

    with gradviz.watch() as w:
        a = torch.tensor(2.0, requires_grad=True)
        c = a * 3
    graph = w.trace(c)          # names, constants and forward ops attached
    graph.save("c.svg", view="forward")
"""

from __future__ import annotations

import linecache
import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, Generic, cast

import torch
from typing_extensions import TypeVar

from gradviz.capture import op_values
from gradviz.capture._interrupts import deferred_interrupts
from gradviz.capture.moments import Moments, Seen, state_now
from gradviz.capture.names import Bindings, loop_variables, prime
from gradviz.capture.trace import Params, trace
from gradviz.capture.watch_mode import WatchMode
from gradviz.errors import BackwardFailed, GradvizError, WatchNestingError
from gradviz.model.forward import (
    Arg,
    FOp,
    Forward,
    FTensor,
    ModuleScope,
    SourceLine,
    VersionBump,
)
from gradviz.model.graph import Graph
from gradviz.model.public import built
from gradviz.model.recording import Recording
from gradviz.model.summarize import dtype_name

if TYPE_CHECKING:
    from typing_extensions import Self, Unpack

    from gradviz.capture.record import RecordKeywords

__all__ = ["Watch", "watch"]

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
# gradviz's own machinery; lessons.py and demo code count as user code
_OWN_FILES = frozenset(
    [
        _HERE + name
        for name in ("watch.py", "watch_mode.py", "moments.py", "names.py", "link.py", "record.py")
    ]
    + [os.path.dirname(_HERE.rstrip(os.sep)) + os.sep + "objects.py"]  # the public wrappers
)
_CONTEXTLIB = os.path.dirname(os.__file__) + os.sep + "contextlib.py"
# Libraries known to leave torch's functions wrapped in their own Python code once used
# (torchlens does, for the rest of the process): their frames are passed over like torch's,
# or every op's line and variable names would be the wrapper's.
TORCH_WRAPPERS: set[str] = {"torchlens"}

# every watch() block running now, in any thread; a block sees only its own thread
_ACTIVE: list[Watch[Any, Any]] = []
# the watches that ended, newest last (weakly): explain_inplace finds the one that saw the
# tensors of a backward that failed outside gradviz
_FINISHED: list[weakref.ref[Watch[Any, Any]]] = []
_ACTIVE_LOCK = threading.Lock()

_get_sequence_nr: Callable[[], int] = torch._C._autograd._get_sequence_nr


def watch(model: torch.nn.Module | None = None, names: Mapping[str, Any] | None = None) -> Watch:
    """Capture the forward pass run inside ``with gradviz.watch() as w:``.

    ``model`` names module scopes and parameters by their path (``fc1.weight``); without
    it, modules are still detected and named by attribute. ``names`` maps names to tensors
    and wins over every name gradviz finds itself.
    """
    return built(Watch)(model=model, names=names)


class _Registry:
    """Tensors by identity, held weakly: ``id()`` alone is reused after a tensor dies."""

    def __init__(self) -> None:
        self.refs: dict[int, tuple[weakref.ref[torch.Tensor], str]] = {}
        self.live: dict[str, weakref.ref[torch.Tensor]] = {}

    def find(self, tensor: torch.Tensor) -> str | None:
        entry = self.refs.get(id(tensor))
        if entry is None or entry[0]() is not tensor:
            return None
        return entry[1]

    def add(self, tensor: torch.Tensor, tensor_id: str) -> None:
        ref = weakref.ref(tensor)
        self.refs[id(tensor)] = (ref, tensor_id)
        self.live[tensor_id] = ref

    def get(self, tensor_id: str) -> torch.Tensor | None:
        ref = self.live.get(tensor_id)
        return None if ref is None else ref()


# what ``trace`` and ``record`` build: the classes the public API registered
# (``gradviz.model.public``); ``gradviz.Watch`` is ``Watch[gradviz.Graph, gradviz.Recording]``
_Graph = TypeVar("_Graph", bound=Graph, default=Graph)
_Recording = TypeVar("_Recording", bound=Recording, default=Recording)


class Watch(Generic[_Graph, _Recording]):
    """The context manager ``gradviz.watch()`` returns; see the module docstring."""

    def __init__(
        self, model: torch.nn.Module | None = None, names: Mapping[str, Any] | None = None
    ) -> None:
        self.model = model
        self.explicit = dict(names or {})
        self.forward = Forward()
        self.errors: list[str] = []  # internal failures; they never reach the user's code
        self._registry = _Registry()
        self._mode: WatchMode | None = None
        self._handles: list[Any] = []
        self._stack: list[tuple[int, torch.nn.Module]] = []
        self._module_paths: dict[int, str] = {}
        self._module_refs: dict[int, weakref.ref[torch.nn.Module]] = {}
        self._bindings = Bindings(self._find_any)
        self._module_names: dict[int, str] = {}  # id(top-level module) -> its variable
        # modules the caller holds in variables at the end of the block, by that variable
        self._local_modules: list[tuple[str, weakref.ref[torch.nn.Module]]] = []
        # tensor id -> (its grad_fn's sequence number, output_nr, device), for naming
        # tensors that are freed before the trace (the locals of a function that returned)
        self._grad_edges: dict[str, tuple[int, int, str]] = {}
        self._roots_by_name: dict[str, torch.Tensor] = {}
        self._moments = Moments(self.forward)  # each tensor's state per moment
        self._closed = False
        self._thread: int | None = None  # the thread that entered the block
        if model is not None:
            self._module_paths = {id(m): path for path, m in model.named_modules()}

    # -- entering and leaving ---------------------------------------------------------------
    def __enter__(self) -> Self:
        """Start watching this thread: the torch-function mode is thread-local in PyTorch,
        and the global module hooks skip calls made in other threads."""
        thread = threading.get_ident()
        if any(active._thread == thread for active in _ACTIVE):
            raise WatchNestingError(
                "gradviz.watch() is already active in this thread: nested watch blocks are "
                "not supported. Use one block around the whole forward pass."
            )
        if self._closed:
            raise GradvizError("this watch() was used already; start a new gradviz.watch()")
        self._thread = thread
        module_hooks = torch.nn.modules.module
        mode = WatchMode(self)
        entered = False
        try:
            # Ctrl-C is held until the hooks are stored and the mode is on: an interrupt
            # in between would leave them behind, as __exit__ never runs then
            with deferred_interrupts():
                self._handles = [
                    module_hooks.register_module_forward_pre_hook(self._pre_hook),
                    module_hooks.register_module_forward_hook(self._post_hook),
                ]
                with _ACTIVE_LOCK:
                    _ACTIVE.append(self)
                self._mode = mode
                mode.__enter__()  # type: ignore[no-untyped-call]
                entered = True
        except BaseException:
            if entered:
                mode.__exit__(None, None, None)  # type: ignore[no-untyped-call]
            self._restore()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if self._mode is not None:
                self._mode.__exit__(kind, error, traceback)  # type: ignore[no-untyped-call]
        finally:
            self._restore()
        caller = sys._getframe(1)
        self._guard(self._finish, caller)
        del caller

    def _restore(self) -> None:
        with deferred_interrupts():
            for handle in self._handles:
                handle.remove()
            self._handles = []
            self._mode = None
            with _ACTIVE_LOCK:
                if self in _ACTIVE:
                    _ACTIVE.remove(self)
            self._closed = True
            _FINISHED[:] = [ref for ref in _FINISHED if ref() is not None]
            _FINISHED.append(weakref.ref(self))

    def _guard(self, fn: Callable[..., None], *args: Any) -> None:
        """Run gradviz's own bookkeeping; a failure there never breaks the user's code."""
        try:
            fn(*args)
        except Exception as error:  # pragma: no cover - defensive
            self.errors.append(f"{getattr(fn, '__name__', fn)}: {type(error).__name__}: {error}")

    # -- tensors ------------------------------------------------------------------------------
    def _tensor_id(
        self,
        tensor: torch.Tensor,
        created_by: int | None,
        first: Seen | None = None,
        after: bool = True,
    ) -> str:
        """The tensor's id, registering it on first sight with its first state: ``first``
        (taken before the op that reads it ran) or as it is now."""
        found = self._registry.find(tensor)
        if found is not None:
            return found
        tensor_id = f"f{len(self.forward.tensors)}"
        base = getattr(tensor, "_base", None)
        base_id = self._registry.find(base) if isinstance(base, torch.Tensor) else None
        state, key = first or state_now(tensor, len(self.forward.ops), after)
        self.forward.tensors.append(
            FTensor(
                id=tensor_id,
                name=None,
                name_source=None,
                shape=tuple(tensor.shape),
                dtype=dtype_name(tensor.dtype),
                role=state.role,
                requires_grad=state.requires_grad,
                is_leaf=state.is_leaf,
                data=state.data,
                created_by=created_by,
                version=state.version,
                base=base_id,
                grad_fn=state.grad_fn,
                states=[state],
            )
        )
        self.forward._by_id[tensor_id] = self.forward.tensors[-1]
        self._registry.add(tensor, tensor_id)
        self._moments.seen[tensor_id] = key
        return tensor_id

    def _before(self, inputs: list[torch.Tensor], versions: list[int | None]) -> list[Seen | None]:
        try:
            return self._moments.before(self._registry.find, inputs, versions)
        except Exception as error:  # pragma: no cover - defensive, as _guard
            self.errors.append(f"_before: {type(error).__name__}: {error}")
            return [None] * len(inputs)

    def _attribute_set(self, tensor: torch.Tensor, values: bool) -> None:
        """``x.grad = ...`` or ``x.data = ...``: noted now, shown from the next op on."""
        found = self._registry.find(tensor)
        if found is not None:
            if values:
                self._moments.dirty.add(found)
            self._moments.observe(found, tensor, len(self.forward.ops), False)

    def _observe_all(self) -> None:
        self._moments.all((i, self._registry.get(i)) for i in list(self._registry.live))

    # -- what the mode and hooks report ------------------------------------------------------
    def _find_any(self, value: object) -> str | None:
        return self._registry.find(value) if isinstance(value, torch.Tensor) else None

    def _source(self) -> tuple[SourceLine | None, FrameType | None]:
        frame: FrameType | None = sys._getframe(2)
        while frame is not None and _passed_over(frame):
            frame = frame.f_back
        if frame is None:
            return None, None
        lineno = frame.f_lineno or 0
        filename = frame.f_code.co_filename
        text = linecache.getline(filename, lineno, frame.f_globals).strip()
        line = SourceLine(filename, lineno, frame.f_code.co_name, text)
        return line, frame

    def _append(self, op: FOp, frame: FrameType | None) -> None:
        self.forward.ops.append(op)
        if frame is not None and op.line is not None and op.kind != "requires_grad":
            self._bindings.saw(frame, op.line.lineno, op.outputs)
        else:
            self._bindings.settle()

    def _op(
        self,
        func: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        out: Any,
        inputs: list[torch.Tensor],
        before: list[int | None],
        seq_start: int,
        seq_end: int,
        name: str | None = None,
        first: list[Seen | None] | None = None,
    ) -> None:
        outputs = op_values.flat_tensors(out)
        name = name or op_values.op_name(func)
        bumps: list[VersionBump] = []
        index = len(self.forward.ops)
        find = self._registry.find
        input_ids: list[str] = []
        for position, tensor in enumerate(inputs):
            tensor_id = find(tensor)
            if tensor_id is None:
                state = first[position] if first else None
                tensor_id = self._tensor_id(tensor, None, state, after=False)
            input_ids.append(tensor_id)
            old = before[position]
            if old is None:
                continue
            new = op_values.version(tensor)
            if new is not None and new != old:
                bumps.append(VersionBump(tensor_id, old, new))
                base = getattr(tensor, "_base", None)
                base_id = find(base) if isinstance(base, torch.Tensor) else None
                if base_id is not None and all(b.tensor != base_id for b in bumps):
                    bumps.append(VersionBump(base_id, old, new))
        if not outputs and not bumps:
            return  # .item(), .dim(), repr, ...: nothing for the graph
        args_out = op_values.arguments(args, kwargs, input_ids, before)
        known = [find(t) is not None for t in outputs]  # in-place: self
        output_ids = [self._tensor_id(t, index) for t in outputs]
        nodes = [op_values.grad_fn(t) for t in outputs]  # under no_grad a view's may raise
        seqs: list[int | None] = []
        for tensor, tensor_id, node in zip(outputs, output_ids, nodes, strict=True):
            if node is None:
                seqs.append(None)
                continue
            seq = int(node._sequence_nr())
            seqs.append(seq)
            self._grad_edges[tensor_id] = (seq, int(tensor.output_nr), str(tensor.device))
        # as the op left them: what it may have changed (new outputs were noted as made)
        changed = bool(bumps) or name.endswith("_")  # requires_grad_(), detach_(), set_()
        observe = self._moments.observe
        if changed:
            for tensor, tensor_id in zip(inputs, input_ids, strict=True):
                observe(tensor_id, tensor, index, True)
        for tensor, tensor_id, was_known in zip(outputs, output_ids, known, strict=True):
            if was_known:
                observe(tensor_id, tensor, index, True)
        for bump in bumps:  # a view's base
            live = self._registry.get(bump.tensor)
            if live is not None:
                observe(bump.tensor, live, index, True)
        if name == "data" or bumps:
            bumped = [b.tensor for b in bumps]
            for source in self._moments.after_op(name, input_ids, output_ids, bumped):
                live = self._registry.get(source)
                if live is not None:
                    observe(source, live, index, True)
        kind = "op"
        if bumps:
            kind = "inplace"
        elif name in ("detach", "detach_", "data"):
            kind = "detach"
        elif name == "requires_grad_":
            kind = "requires_grad"
        elif not inputs:
            kind = "factory"
        elif any(_is_view_of(t, inputs) for t in outputs):
            kind = "view"
        line, frame = self._source()
        self._append(
            FOp(
                index=index,
                name=name,
                kind=kind,
                inputs=tuple(args_out),
                outputs=tuple(output_ids),
                output_versions=tuple([op_values.version(t) for t in outputs]),
                grad_fns=tuple([None if n is None else type(n).__name__ for n in nodes]),
                grad_fn_seqs=tuple(seqs),
                bumps=tuple(bumps),
                seq_start=seq_start,
                seq_end=seq_end,
                grad_enabled=torch.is_grad_enabled(),
                inference_mode=torch.is_inference_mode_enabled(),
                line=line,
                module=self._stack[-1][0] if self._stack else None,
            ),
            frame,
        )

    def _requires_grad_set(
        self, tensor: torch.Tensor, value: bool, first: list[Seen | None]
    ) -> None:
        index = len(self.forward.ops)
        tensor_id = self._tensor_id(tensor, None, first[0], after=False)
        self._moments.observe(tensor_id, tensor, index, True)
        seq = _get_sequence_nr()
        line, frame = self._source()
        self._append(
            FOp(
                index=index,
                name=f"requires_grad = {value}",
                kind="requires_grad",
                inputs=(Arg("0", tensor=tensor_id, version=op_values.version(tensor)),),
                outputs=(tensor_id,),
                output_versions=(op_values.version(tensor),),
                grad_fns=(None,),
                grad_fn_seqs=(None,),
                bumps=(),
                seq_start=seq,
                seq_end=seq,
                grad_enabled=torch.is_grad_enabled(),
                inference_mode=torch.is_inference_mode_enabled(),
                line=line,
                module=self._stack[-1][0] if self._stack else None,
            ),
            frame,
        )

    def _pre_hook(self, module: torch.nn.Module, inputs: Any) -> None:
        if threading.get_ident() == self._thread:  # module hooks are process-global
            self._guard(self._enter_module, module)

    def _post_hook(self, module: torch.nn.Module, inputs: Any, output: Any) -> None:
        if threading.get_ident() == self._thread:
            self._guard(self._leave_module, module)

    def _enter_module(self, module: torch.nn.Module) -> None:
        parent = self._stack[-1] if self._stack else None
        if parent is None and id(module) not in self._module_names:
            self._module_names[id(module)] = self._variable_for(module)
        path = self._module_paths.get(id(module))
        if path is None:
            path = ""
            if parent is not None:
                parent_path = self.forward.modules[parent[0]].path
                found = next((n for n, m in parent[1]._modules.items() if m is module), None)
                child = found or type(module).__name__
                path = f"{parent_path}.{child}" if parent_path else child
        index = len(self.forward.modules)
        self.forward.modules.append(
            ModuleScope(
                index=index,
                path=path,
                type_name=type(module).__name__,
                depth=len(self._stack),
                parent=None if parent is None else parent[0],
                seq_start=_get_sequence_nr(),
                seq_end=-1,
            )
        )
        self._module_refs[index] = weakref.ref(module)
        self._stack.append((index, module))

    def _leave_module(self, module: torch.nn.Module) -> None:
        while self._stack:
            index, top = self._stack.pop()
            self.forward.modules[index].seq_end = _get_sequence_nr()
            if top is module:
                break

    # -- names, at the end of the block ------------------------------------------------------
    def _finish(self, caller: FrameType) -> None:
        for index in range(len(self.forward.modules)):
            if self.forward.modules[index].seq_end < 0:
                self.forward.modules[index].seq_end = _get_sequence_nr()
        self._stack = []
        self._observe_all()  # a change seen only now: after every op, in no frame
        candidates: dict[str, tuple[int, str]] = {}  # tensor id -> (priority, name)

        def offer(tensor: object, name: str, priority: int, extend: bool = True) -> None:
            if not isinstance(tensor, torch.Tensor):
                return
            tensor_id = self._registry.find(tensor)
            if tensor_id is None:
                if not extend:
                    return
                tensor_id = self._tensor_id(tensor, None)
            current = candidates.get(tensor_id)
            if current is None or priority < current[0]:
                candidates[tensor_id] = (priority, name)

        for name, tensor in self.explicit.items():
            offer(tensor, name, 0)
        self._local_modules = [
            (name, weakref.ref(value))
            for name, value in list(caller.f_locals.items())
            if isinstance(value, torch.nn.Module) and not name.startswith("_")
        ]
        for path, tensor in self._parameters():
            offer(tensor, path, 1, extend=False)
        loops = loop_variables(caller.f_code.co_filename)
        for name, value in list(caller.f_locals.items()):
            if not name.startswith("_"):  # a loop variable names only what nothing else does
                offer(value, name, 4 if name in loops else 2, extend=False)
        self._assignment_names(candidates)
        sources = {0: "names", 1: "param", 2: "locals", 3: "assign", 4: "locals"}
        taken: dict[str, int] = {}
        order = sorted(candidates.items(), key=lambda item: (item[1][0] != 0, int(item[0][1:])))
        for tensor_id, (priority, name) in order:
            item = self.forward._by_id[tensor_id]
            count = taken.get(name, 0)
            taken[name] = count + 1
            item.name = name if priority == 0 else prime(name, count)
            item.name_source = sources[priority]

    def _variable_for(self, module: torch.nn.Module) -> str:
        """The name the user's code calls ``module`` by (``model``), else its type name."""
        _, frame = self._source()
        try:
            if frame is not None:
                for name, value in frame.f_locals.items():
                    if value is module and not name.startswith("_"):
                        return str(name)
            return type(module).__name__
        finally:
            del frame

    def _parameters(self) -> Iterator[tuple[str, torch.Tensor]]:
        """Parameters by module path (``encoder.0.weight``, and ``class_token``
        for one a model registers on itself). A path that would read like a number
        (``2.bias``), or the bare ``weight`` of a single layer watched alone, is qualified by
        the module's variable: ``model.2.bias``, ``layer.weight``."""
        roots: list[torch.nn.Module] = []
        if self.model is not None:
            roots = [self.model]
        else:
            for index, ref in self._module_refs.items():
                module = ref()
                if module is not None and self.forward.modules[index].depth == 0:
                    roots.append(module)
        for module in roots:
            owner = self._module_names.get(id(module)) or type(module).__name__
            single = next(module.children(), None) is None  # a layer: its own "weight"
            for path, tensor in _named_tensors(module):
                head = path.split(".", 1)[0]
                qualify = head.isdigit() or (single and "." not in path)
                yield (f"{owner}.{path}" if qualify else path), tensor
        if self.model is None:  # layers the code used without calling them: layer.bias
            for name, ref in self._local_modules:
                held = ref()
                if held is not None and all(held is not root for root in roots):
                    for path, tensor in _named_tensors(held):
                        if self._registry.find(tensor) is not None:  # only what ran
                            yield f"{name}.{path}", tensor

    def _assignment_names(self, candidates: dict[str, tuple[int, str]]) -> None:
        """Each tensor the user's code bound to a plain name, in any frame (Bindings)."""
        for tensor_id, name in self._bindings.finish().items():
            current = candidates.get(tensor_id)
            if (current is None or current[0] > 3) and not name.startswith("_"):
                candidates[tensor_id] = (3, name)

    # -- results ------------------------------------------------------------------------------
    def tensor(self, tensor_id: str) -> torch.Tensor | None:
        """The live tensor behind a forward tensor id, or None when it was freed."""
        return self._registry.get(tensor_id)

    def find(self, tensor: torch.Tensor) -> str | None:
        """The forward tensor id (``f3``) of a live tensor the watched code touched."""
        return self._registry.find(tensor)

    def names(self) -> dict[str, torch.Tensor]:
        """Name -> live tensor for every named tensor still alive."""
        found: dict[str, torch.Tensor] = {}
        for item in self.forward.tensors:
            tensor = self._registry.get(item.id)
            if item.name and tensor is not None and item.name_source != "param":
                found[item.name] = tensor
        return found

    def _check_done(self) -> None:
        if not self._closed:
            raise GradvizError(
                "call w.trace()/w.record() after the with gradviz.watch() block has ended"
            )

    def _merged_names(self, names: Mapping[str, torch.Tensor] | None) -> dict[str, torch.Tensor]:
        merged = self.names()
        if names:
            given = {id(t) for t in names.values()}
            merged = {n: t for n, t in merged.items() if id(t) not in given and n not in names}
            merged.update(names)
        return merged

    def _params(self, params: Params | None) -> Params | None:
        if params is not None:
            return params
        return list(self._parameters()) or None

    def trace(
        self,
        *roots: torch.Tensor,
        params: Params | None = None,
        names: Mapping[str, torch.Tensor] | None = None,
    ) -> _Graph:
        """``gradviz.trace`` with the watched names, constants and forward ops attached."""
        self._check_done()
        graph = trace(*roots, params=self._params(params), names=self._merged_names(names))
        self._link(graph, names)
        return cast(_Graph, graph)

    def _link(self, graph: Graph, names: Mapping[str, torch.Tensor] | None) -> None:
        """Attach the forward pass, with the named tensors that were freed meanwhile."""
        from gradviz.capture.link import link, name_freed

        freed = name_freed(graph, self.forward, self._grad_edges, self._registry.get)
        graph.forward = link(graph, self.forward, self._registry.find, names)
        graph.forward.tensor_links.update(freed)

    def record(
        self,
        *roots: torch.Tensor,
        names: Mapping[str, torch.Tensor] | None = None,
        params: Params | None = None,
        **options: Unpack[RecordKeywords],
    ) -> _Recording:
        """``gradviz.record`` whose graph knows the forward ops; each step links to one.

        A failing backward raises ``BackwardFailed`` as ``record()`` does; its
        ``recording.graph.forward`` is linked too, for ``gradviz.explain_inplace``.
        """
        from gradviz.capture.record import record

        self._check_done()
        merged = self._merged_names(names)
        try:
            recording = record(*roots, names=merged, params=self._params(params), **options)
        except BackwardFailed as failed:
            failed_recording = failed.recording
            if isinstance(failed_recording, Recording):
                self._link(failed_recording.graph, names)
            raise
        self._link(recording.graph, names)
        return cast(_Recording, recording)


def _named_tensors(module: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """The module's parameters by path. Buffers stay unnamed: a named tensor is drawn, and
    a ResNet-50's 106 batch-norm running statistics would crowd its forward and combined
    views (and take its page over its weight budget) with boxes no gradient reaches."""
    yield from module.named_parameters()


def watch_that_saw(tensor: torch.Tensor) -> Watch[Any, Any] | None:
    """The newest ended watch that saw ``tensor`` (None: none did, or it is gone)."""
    for ref in reversed(_FINISHED):
        found: Watch[Any, Any] | None = ref()
        if found is not None and found._registry.find(tensor) is not None:
            return found
    return None


_PASSED_OVER: dict[str, bool] = {}  # filename -> whether its frames are passed over


def _passed_over(frame: FrameType) -> bool:
    """True for a frame of torch, of gradviz's own machinery, of ``contextlib`` or of a
    library in ``TORCH_WRAPPERS``: not where the user's op ran. The file's part is decided
    once per file; a wrapper library is asked of the frame (the set may change)."""
    filename = frame.f_code.co_filename
    found = _PASSED_OVER.get(filename)
    if found is None:
        found = filename.startswith(_TORCH_DIR) or filename in _OWN_FILES or filename == _CONTEXTLIB
        if len(_PASSED_OVER) > 10_000:  # a long session of notebook cells
            _PASSED_OVER.clear()
        _PASSED_OVER[filename] = found
    return found or str(frame.f_globals.get("__name__", "")).partition(".")[0] in TORCH_WRAPPERS


def _is_view_of(tensor: torch.Tensor, inputs: list[torch.Tensor]) -> bool:
    """True when ``tensor`` shares memory with an input as a view (slice, view, t, ...)."""
    if not tensor._is_view():
        return False
    base = tensor._base
    return any(base is i or (i._is_view() and i._base is base) for i in inputs)
