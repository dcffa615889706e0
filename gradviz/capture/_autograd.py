"""Every touch of PyTorch's autograd internals, behind small functions.

``next_functions``, ``variable``, ``_saved_*`` and ``_sequence_nr`` are not all public API;
keeping them here means a change in PyTorch breaks one module, not every module.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
from torch.autograd.graph import get_gradient_edge

__all__ = [
    "FREED_MARKER",
    "PackedByHooks",
    "checkpoint_inputs",
    "checkpointed",
    "current_graph_task",
    "gradient_edge",
    "has_other_hooks",
    "in_function_transform",
    "input_bytes",
    "is_accumulate_grad",
    "is_custom_function",
    "leaf_variable",
    "move_to_front",
    "next_functions",
    "next_functions_of",
    "node_facts",
    "read_saved",
    "reentrant_checkpoint",
    "saved_values",
    "variable_of",
    "version",
]

Node = Any  # torch.autograd.graph.Node; its concrete classes are generated in C++

FREED_MARKER = "backward through the graph a second time"


def _no_graph_task() -> int:
    return 0


# The id of the backward (graph task) the calling hook belongs to: hooks stay on a graph
# that other backward calls (another thread's, a nested one) may run at the same time.
current_graph_task: Callable[[], int] = getattr(torch._C, "_current_graph_task_id", _no_graph_task)


def input_bytes(node: Node) -> int:
    """How many bytes the gradients the node receives take (from the shapes and dtypes the
    engine checks them against); 0 where PyTorch does not say (nested, symbolic shapes)."""
    total = 0
    for metadata in getattr(node, "_input_metadata", ()):
        try:
            numel = 1
            for size in metadata.shape:
                numel *= int(size)
            total += numel * metadata.dtype.itemsize
        except (RuntimeError, TypeError, ValueError, AttributeError):
            continue
    return total


def version(tensor: torch.Tensor) -> int:
    """The tensor's ``_version``; 0 for a tensor made under ``torch.inference_mode()``,
    which has no version counter (and cannot be changed in place outside that mode)."""
    if tensor.is_inference():
        return 0
    return int(tensor._version)


def next_functions(node: Node) -> tuple[tuple[Node | None, int], ...]:
    """The node's inputs in the backward function's order: ``(node or None, input_nr)``."""
    return tuple(node.next_functions)


# ``next_functions`` and an AccumulateGrad's ``variable`` for a walk's hot loop: read
# without a Python call per node (``next_functions`` copies; ``leaf_variable`` checks)
next_functions_of: Callable[[Node], tuple[tuple[Node | None, int], ...]] = operator.attrgetter(
    "next_functions"
)
variable_of: Callable[[Node], object] = operator.attrgetter("variable")


def is_accumulate_grad(node: Node) -> bool:
    return type(node).__name__ == "AccumulateGrad"


_CUSTOM_FUNCTION_NODE = torch.autograd.function.BackwardCFunction  # looked up once


def is_custom_function(node: Node) -> bool:
    """Whether the node runs a custom ``autograd.Function``'s Python backward."""
    return isinstance(node, _CUSTOM_FUNCTION_NODE)


def leaf_variable(node: Node) -> torch.Tensor | None:
    """The leaf tensor an ``AccumulateGrad`` node feeds, or None for other nodes."""
    if not is_accumulate_grad(node):
        return None
    variable = node.variable
    return variable if isinstance(variable, torch.Tensor) else None


def node_facts(node: Node) -> tuple[str, str, int, torch.Tensor | None]:
    """What gradviz notes of every node at once: its type's name, ``name()``, the
    ``_sequence_nr()`` (a creation counter: the engine runs the ready node with the highest
    first) and the leaf tensor of an ``AccumulateGrad`` (else None)."""
    type_name = type(node).__name__
    leaf = None
    if type_name == "AccumulateGrad":
        variable = node.variable
        leaf = variable if isinstance(variable, torch.Tensor) else None
    return type_name, str(node.name()), int(node._sequence_nr()), leaf


def gradient_edge(tensor: torch.Tensor) -> tuple[Node, int]:
    """The node and output a tensor's gradient flows into (``AccumulateGrad`` for leaves)."""
    grad_fn = tensor.grad_fn
    if grad_fn is not None:  # what get_gradient_edge returns for it, without its wrapping
        return grad_fn, int(tensor.output_nr)
    try:
        edge = get_gradient_edge(tensor)
    except (RuntimeError, NotImplementedError):  # no view of it: a sparse or nested leaf
        return _accumulator_through_copy(tensor), 0
    return edge.node, int(edge.output_nr)


def _accumulator_through_copy(leaf: torch.Tensor) -> Node:
    """A leaf's ``AccumulateGrad``, found through a copy where torch finds it through a
    view, which sparse and nested tensors do not have (the leaf has one such node, shared
    by every op that uses it)."""
    with torch.enable_grad():
        copy = leaf.clone()
    if copy.grad_fn is None:
        raise RuntimeError("no gradient edge: the tensor's copy has no grad_fn")
    return copy.grad_fn.next_functions[0][0]


_FUNCTORCH = getattr(torch._C, "_functorch", None)


def in_function_transform(tensor: torch.Tensor) -> bool:
    """Whether the tensor is a ``torch.func`` transform's wrapper (``vmap``'s batched
    tensor, ``grad``'s tracking tensor): its history belongs to the transform, and a
    batched tensor hides it (``requires_grad`` False, no ``grad_fn``)."""
    check = getattr(_FUNCTORCH, "is_functorch_wrapped_tensor", None)
    return check is not None and bool(check(tensor))


_SAVED_ATTRIBUTES: dict[type, tuple[str, ...]] = {}


def _saved_attributes(node_type: type) -> tuple[str, ...]:
    """The ``_saved_*`` names of a node class; ``dir()`` is slow, so once per class."""
    names = _SAVED_ATTRIBUTES.get(node_type)
    if names is None:
        names = tuple(n for n in dir(node_type) if n.startswith("_saved_"))
        _SAVED_ATTRIBUTES[node_type] = names
    return names


_CHECKPOINT_MODULE = "torch.utils.checkpoint"


class PackedByHooks:
    """A saved value that the user's ``torch.autograd.graph.saved_tensors_hooks`` packed:
    gradviz does not read it, as reading runs their unpack hook (which may run once only,
    or cost a copy back from where it was put). ``packed`` is what their pack hook returned
    (what the graph holds: a tensor's memory counts), read without unpacking."""

    __slots__ = ("packed",)

    def __init__(self, packed: object) -> None:
        self.packed = packed

    def __repr__(self) -> str:
        return "not read: packed by saved_tensors_hooks (reading runs the unpack hook)"


def _packed(raw: object) -> PackedByHooks:
    """What the pack hook returned for a saved value (``SavedTensor.data`` runs no hook)."""
    try:
        return PackedByHooks(getattr(raw, "data", None))
    except RuntimeError:  # freed meanwhile
        return PackedByHooks(None)


def _users_unpack_hook(hook: object) -> bool:
    """Whether a saved value's unpack hook is the user's (not checkpoint's placeholder)."""
    return hook is not None and getattr(hook, "__module__", None) != _CHECKPOINT_MODULE


_RAW_ATTRIBUTES: dict[type, tuple[str, ...]] = {}


def _raw_attributes(node_type: type) -> tuple[str, ...]:
    """The saved attributes that hold a tensor (a ``_raw_saved_*`` twin), once per class."""
    names = _RAW_ATTRIBUTES.get(node_type)
    if names is None:
        every = set(dir(node_type))
        names = tuple(a for a in _saved_attributes(node_type) if "_raw" + a in every)
        _RAW_ATTRIBUTES[node_type] = names
    return names


def _checkpoint_placeholder(node: Node, attribute: str) -> bool:
    """Whether the saved value is a placeholder of ``torch.utils.checkpoint`` (non-reentrant):
    its unpack hook reruns the checkpointed forward, so gradviz must not read it."""
    if attribute not in _raw_attributes(type(node)):
        return False
    try:
        raw = getattr(node, "_raw" + attribute, None)
    except RuntimeError:  # freed already
        return False
    hook = getattr(raw, "unpack_hook", None)
    return getattr(hook, "__module__", None) == _CHECKPOINT_MODULE


def _packed_by_hooks(node: Node, attribute: str) -> object | None:
    """The saved value's ``_raw`` twin where it went through the user's
    ``saved_tensors_hooks``, else None."""
    if attribute not in _raw_attributes(type(node)):
        return None
    try:
        raw = getattr(node, "_raw" + attribute, None)
    except RuntimeError:  # freed already
        return None
    return raw if _users_unpack_hook(getattr(raw, "unpack_hook", None)) else None


def checkpointed(node: Node) -> bool:
    """Whether the node ran inside ``torch.utils.checkpoint(use_reentrant=False)``: its
    saved tensors are placeholders, recomputed by rerunning that forward in backward."""
    # inside a checkpoint every saved tensor goes through its hooks: the first one tells
    raw = _raw_attributes(type(node))
    return bool(raw) and _checkpoint_placeholder(node, raw[0])


def reentrant_checkpoint(node: Node) -> bool:
    """Whether the node is ``torch.utils.checkpoint(use_reentrant=True)``'s one backward
    node for a whole segment: the segment ran without building a graph, the node saved its
    inputs (ordinary ``saved_tensors``, safe to read), and backward reruns the segment."""
    forward = getattr(type(node), "_forward_cls", None)
    return getattr(forward, "__module__", None) == _CHECKPOINT_MODULE


def checkpoint_inputs(node: Node) -> list[torch.Tensor]:
    """The tensors a checkpointed node's segment kept to rerun its forward (its inputs),
    read from the checkpoint's frame without unpacking anything ([] if not found)."""
    for attribute in _saved_attributes(type(node)):
        if not _checkpoint_placeholder(node, attribute):
            continue
        hook = getattr(node, "_raw" + attribute).unpack_hook
        cells = dict(zip(hook.__code__.co_freevars, hook.__closure__ or (), strict=False))
        frame = cells["frame"].cell_contents if "frame" in cells else None
        found = []
        for arg in getattr(frame, "saved_args", None) or ():
            value = getattr(arg, "data", arg) if type(arg).__name__ == "SavedTensor" else arg
            if isinstance(value, torch.Tensor):
                found.append(value)
        return found
    return []


def saved_values(node: Node) -> tuple[list[tuple[str, object]], bool]:
    """The values the node saved for backward and whether they were freed already.

    Built-in nodes expose them as ``_saved_<name>``; custom ``autograd.Function`` nodes as
    ``saved_tensors``. After a backward without ``retain_graph`` reading them raises, which
    is how freed buffers are detected.
    """
    found: list[tuple[str, object]] = []
    names = _saved_attributes(type(node))
    if not names and hasattr(type(node), "saved_tensors"):
        try:
            raw = getattr(node, "_raw_saved_tensors", ())
            if any(_users_unpack_hook(getattr(r, "unpack_hook", None)) for r in raw):
                return [(f"saved_tensors[{i}]", _packed(r)) for i, r in enumerate(raw)], False
            tensors = node.saved_tensors
        except RuntimeError as error:
            if FREED_MARKER in str(error):
                return [], True
            raise
        return [(f"saved_tensors[{i}]", t) for i, t in enumerate(tensors)], False
    for attribute in names:
        if _checkpoint_placeholder(node, attribute):
            continue  # reading it would rerun the user's forward (``checkpointed``)
        raw = _packed_by_hooks(node, attribute)
        if raw is not None:
            found.append((attribute.removeprefix("_saved_"), _packed(raw)))
            continue
        try:
            value = getattr(node, attribute)
        except RuntimeError as error:
            if FREED_MARKER in str(error):
                return found, True
            # an in-place change makes reading raise too; show the reason, not a crash
            found.append((attribute.removeprefix("_saved_"), RuntimeError(str(error))))
            continue
        if value is None:
            continue
        found.append((attribute.removeprefix("_saved_"), value))
    return found, False


# per node class: each saved attribute (its name, the name without ``_saved_``, its
# ``_raw`` twin or None), whether it is a custom Function's ``saved_tensors`` instead, and
# whether it is a reentrant checkpoint's node
_ReadPlan = tuple[tuple[tuple[str, str, str | None], ...], bool, bool]
_READ_PLANS: dict[type, _ReadPlan] = {}


def _read_plan(node_type: type) -> _ReadPlan:
    raw = set(_raw_attributes(node_type))
    names = _saved_attributes(node_type)
    attributes = tuple(
        (a, a.removeprefix("_saved_"), "_raw" + a if a in raw else None) for a in names
    )
    custom = not names and hasattr(node_type, "saved_tensors")
    forward = getattr(node_type, "_forward_cls", None)
    reentrant = getattr(forward, "__module__", None) == _CHECKPOINT_MODULE
    plan = _READ_PLANS[node_type] = (attributes, custom, reentrant)
    return plan


def read_saved(node: Node) -> tuple[list[tuple[str, object]], bool, bool, bool]:
    """``saved_values``, ``checkpointed`` and ``reentrant_checkpoint`` of a node in one
    pass: what record() reads of every node before its backward. The facts of the node's
    class are looked up once per class, each ``_raw`` twin is read once (the first tells
    whether the node is checkpointed, each one whether its value is a placeholder)."""
    node_type = type(node)
    plan = _READ_PLANS.get(node_type) or _read_plan(node_type)
    attributes, custom, reentrant = plan
    if custom:
        values, freed = saved_values(node)
        return values, freed, False, reentrant
    found: list[tuple[str, object]] = []
    in_checkpoint: bool | None = None  # from the first ``_raw`` twin, as ``checkpointed``
    for attribute, name, raw_name in attributes:
        if raw_name is not None:
            try:
                raw = getattr(node, raw_name, None)
                hook = getattr(raw, "unpack_hook", None)
            except RuntimeError:  # freed already
                hook = None
            placeholder = hook is not None and (
                getattr(hook, "__module__", None) == _CHECKPOINT_MODULE
            )
            if in_checkpoint is None:
                in_checkpoint = placeholder
            if placeholder:
                continue  # reading it would rerun the user's forward (``checkpointed``)
            if hook is not None:  # the user's saved_tensors_hooks: reading runs them
                found.append((name, _packed(raw)))
                continue
        try:
            value = getattr(node, attribute)
        except RuntimeError as error:
            if FREED_MARKER in str(error):
                if in_checkpoint is None:
                    in_checkpoint = checkpointed(node)
                return found, True, in_checkpoint, reentrant
            # an in-place change makes reading raise too; show the reason, not a crash
            found.append((name, RuntimeError(str(error))))
            continue
        if value is not None:
            found.append((name, value))
    return found, False, bool(in_checkpoint), reentrant


def _hooks_dict(handle: Any) -> dict[int, object] | None:
    """The dict a node hook lives in: one per node and kind (prehooks, hooks), shared with
    every hook the user registered there. None when PyTorch stores them differently."""
    ref = getattr(handle, "hooks_dict_ref", None)
    hooks = ref() if callable(ref) else None
    return hooks if isinstance(hooks, dict) and handle.id in hooks else None


def has_other_hooks(handle: Any) -> bool:
    """Whether the node holds hooks of the same kind besides this one (the user's)."""
    hooks = _hooks_dict(handle)
    return hooks is not None and len(hooks) > 1


def move_to_front(handle: Any) -> bool:
    """Make this hook run before the others of its node (PyTorch runs them in the dict's
    order). The other hooks keep their ids and order, so their handles still remove them.
    False when the hooks are not stored in a dict gradviz knows."""
    hooks = _hooks_dict(handle)
    if hooks is None:
        return False
    mine = hooks.pop(handle.id)
    others = list(hooks.items())
    hooks.clear()
    hooks[handle.id] = mine
    hooks.update(others)
    return True
