"""The explanation as data: ``Term`` and ``Formula``, and ``_Ctx``, what a formula reads."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from gradviz.capture import _autograd
from gradviz.explain.text import (
    Tensor,
    _as_tensor,
)
from gradviz.model.graph import Edge, Node
from gradviz.model.recording import Recording, Step


# -- the explanation as data --------------------------------------------------------------------
@dataclass(frozen=True)
class Term:
    """One outgoing edge of a node, told as the chain rule.

    ``head`` is the local derivative ("∂(j·i)/∂j = i") or, for ops that only move
    gradients around, what they do ("sum(x) copies g into all 6 elements of x");
    ``local`` its value for element-wise ops; ``expected`` what the node must send, computed
    from what it got and its saved values (None when those were not kept); ``how`` the
    product in tensor form ("g ⊙ i").
    """

    slot: int
    head: str
    expected: Tensor | None
    local: Tensor | None = None
    rule: str = ""
    how: str = ""


@dataclass(frozen=True)
class Formula:
    """An op's chain rule: ``op`` ("mul"), the forward expression ("j·i") and its terms."""

    op: str
    expr: str
    terms: tuple[Term, ...]
    outputs: tuple[str, ...] = ()  # labels of a multi-output op's outputs ('a[0]', ...)


@dataclass
class _Ctx:
    """What a formula needs about one step: symbols, the received and sent numbers, saved values."""

    recording: Recording
    step: Step
    node: Node
    edges: list[Edge]
    syms: list[str]
    grads: list[Tensor | None]
    sent: list[Tensor | None]
    fallback: bool = False  # True when some input has no name and got a placeholder (u, const)
    placeholders: dict[str, str] = field(default_factory=dict)  # 'u' -> what it stands for
    names_only: bool = False  # building an expression: no saved tensors needed
    _saved: dict[str, object] | None = field(default=None, repr=False)

    @property
    def g(self) -> Tensor | None:
        return self.grads[0] if self.grads else None

    def sym(self, slot: int) -> str:
        return self.syms[slot] if slot < len(self.syms) else "x"

    def saved_raw(self, name: str) -> object:
        """A saved value: the trace's copy when complete, else the live node's (if not freed)."""
        for saved in self.node.saved:
            if saved.name == name:
                if saved.summary is not None:
                    return saved.summary
                if not saved.text.startswith("unreadable"):
                    try:
                        return ast.literal_eval(saved.text)
                    except (ValueError, SyntaxError):
                        pass
        return self._live().get(name)

    def _live(self) -> dict[str, object]:
        if self._saved is None:
            self._saved = {}
            if self.node.torch_node is not None:
                try:
                    values, _ = _autograd.saved_values(self.node.torch_node)
                except RuntimeError:
                    values = []
                self._saved = {k: v for k, v in values if not isinstance(v, RuntimeError)}
        return self._saved

    def saved(self, name: str) -> Tensor | None:
        return None if self.names_only else _as_tensor(self.saved_raw(name))

    def number(self, name: str, default: float | None = None) -> float | None:
        value = self.saved_raw(name)
        if isinstance(value, bool | int | float):
            return float(value)
        tensor = _as_tensor(value)
        return float(tensor) if tensor is not None and tensor.numel() == 1 else default

    def sizes(self, name: str = "self_sym_sizes") -> tuple[int, ...] | None:
        value = self.saved_raw(name)
        if isinstance(value, tuple | list) and all(isinstance(v, int) for v in value):
            return tuple(value)
        return None

    def ints(self, name: str) -> tuple[int, ...] | None:
        """Saved dims and indices; negative dims come back as unsigned 64-bit numbers."""
        value = self.saved_raw(name)
        if isinstance(value, int) and not isinstance(value, bool):
            value = (value,)
        if isinstance(value, tuple | list) and all(isinstance(v, int) for v in value):
            return tuple(v - 2**64 if v >= 2**63 else v for v in value)
        return None

    def shape_of(self, slot: int) -> tuple[int, ...] | None:
        sent = self.sent[slot] if slot < len(self.sent) else None
        return None if sent is None else tuple(sent.shape)
