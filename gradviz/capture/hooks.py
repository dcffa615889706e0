"""gradviz's hooks on a backward graph: which nodes need two, and all taken off together.

The engine hands a node's hook both what the node received (``grad_outputs``, after any
prehooks) and what it sent (``grad_inputs``). For most nodes that one hook, after the node
ran, records the whole step; registering and calling a second one (a prehook) cost about
as much again. A prehook is still needed where the step must open before the node runs:

- an ``AccumulateGrad`` whose leaf already holds a ``.grad`` (its value before) or has
  post-accumulate-grad hooks;
- a node whose non-leaf output ``retains_grad`` (that ``.grad`` as the node receives it);
- a custom ``autograd.Function``: its Python backward may change what it received in
  place, or fail;
- a node whose saved values were changed in place (it will fail: the failed step opens).

(Anomaly detection checks a node's results after its hooks ran: no prehook needed.)

Under ``keep="all"`` the gradients on their way are kept by reference instead of copied
(``by_reference_safe``), as detached aliases: the engine adds into a buffer in place only
when it holds the last reference to its memory, so it changes none that gradviz holds,
and whether ``AccumulateGrad`` moves a gradient into ``.grad`` or copies it (the tensor's
own refcount) stays its own choice; what it moved is copied after the backward
(``gradviz.capture.by_reference``). Only Python code inside the backward could change a
held gradient in place. gradviz sees most such code: a custom ``autograd.Function`` (its
backward may change what it received), the user's node hooks, tensor hooks on leaves and
traced tensors, post-accumulate-grad hooks; with any of them on the graph every gradient
is copied. A tensor hook on an intermediate tensor it cannot see; one that changes its
gradient in place (PyTorch's rule: return a new one) is reported after the backward,
from the version counters. ``.grad`` values are always copied.

The hooks return None. Every handle is kept in one ``HookHandles`` and removed with the
others, with Ctrl-C held back meanwhile (``deferred_interrupts``).
"""

from __future__ import annotations

from torch.utils.hooks import RemovableHandle

from gradviz.capture._autograd import is_custom_function
from gradviz.capture._interrupts import deferred_interrupts
from gradviz.model.graph import Node

__all__ = ["HookHandles", "by_reference_safe", "one_hook_will_do"]

UNREADABLE = "unreadable: "  # how trace() notes a saved value it could not read


def one_hook_will_do(node: Node, retains_grad: bool) -> bool:
    """Whether one hook after the node ran records its step exactly (else: two hooks)."""
    if retains_grad:
        return False
    leaf = node.leaf_tensor
    if leaf is not None and (
        leaf.grad is not None or getattr(leaf, "_post_accumulate_grad_hooks", None)
    ):
        return False
    if is_custom_function(node.torch_node):
        return False
    # a list, not any(generator): cheaper for the few saved values of a node
    return not [saved for saved in node.saved if saved.text.startswith(UNREADABLE)]


def by_reference_safe(node: Node) -> bool:
    """Whether no Python code of the user's runs at this node with the gradients in hand
    (besides the node hooks, which ``has_other_hooks`` finds as gradviz registers its own)."""
    if is_custom_function(node.torch_node):
        return False
    leaf = node.leaf_tensor
    return leaf is None or not (
        getattr(leaf, "_backward_hooks", None) or getattr(leaf, "_post_accumulate_grad_hooks", None)
    )


class HookHandles:
    """Every handle of one recording, in one place; ``remove_all`` takes them all off."""

    def __init__(self) -> None:
        self.handles: list[RemovableHandle] = []

    def add(self, handle: RemovableHandle) -> RemovableHandle:
        self.handles.append(handle)
        return handle

    def drop_last(self) -> None:
        """Remove the handle added last (a node that turned out to need two hooks)."""
        self.handles.pop().remove()

    def remove_all(self) -> None:
        with deferred_interrupts():  # a handle lost to Ctrl-C would leave its hook
            for handle in self.handles:
                handle.remove()
            self.handles.clear()

    def __len__(self) -> int:
        return len(self.handles)
