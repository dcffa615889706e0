"""What each step means, in words, with the recorded numbers.

For the ops a lecture meets (add ... clone, AccumulateGrad) a step is told as the chain
rule: what the node got, each local derivative with its value, and what it sent where,
e.g. "got ∂k/∂k = 1; ∂(j·i)/∂j = i = 8 → sends 8 to AddBackward0". The local
derivatives come from the node's saved values, and every number a formula predicts is
checked against the gradient the engine really sent: a formula that does not agree is
never shown (the step falls back to the plain "received X; sends Y to Z" sentence).
"""

from __future__ import annotations

import ast
import functools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from gradviz import _autograd
from gradviz.escape import isolated
from gradviz.graph import Edge, Graph, Node, Role, Summary, format_number
from gradviz.recording import GradValue, Recording, Step, _same_sum, value_text

__all__ = ["Explanation", "Formula", "Term", "describe_step", "explain_step", "narrate", "show"]

Tensor = torch.Tensor
SHOW_MAX_CHARS = 64  # longer value lists read as "a 2×8 gradient, norm 1.2"


# -- turning recorded values into numbers and text ---------------------------------------------
def _as_tensor(value: object) -> Tensor | None:
    """A float64 copy of a recorded value, or None when only statistics were kept."""
    if isinstance(value, Tensor):
        if value.is_complex() or value.layout != torch.strided or value.is_meta:
            return None
        return value.detach().to(torch.float64)
    if isinstance(value, Summary):
        numbers = all(isinstance(v, int | float) for v in value.values)
        if not value.available or not value.complete or not numbers:
            return None
        return torch.tensor(value.values, dtype=torch.float64).reshape(value.shape)
    if isinstance(value, bool | int | float):
        return torch.tensor(float(value), dtype=torch.float64)
    return None


def _nested(t: Tensor) -> str:
    if t.dim() == 0:
        return format_number(float(t))
    return "[" + ", ".join(_nested(row) for row in t) + "]"


def _shape(shape: tuple[int, ...] | torch.Size) -> str:
    if len(shape) == 1:
        return f"{shape[0]}-element"
    return "×".join(str(n) for n in shape) if len(shape) else "scalar"


def show(value: GradValue | None, noun: str = "gradient") -> str:
    """Scalars as numbers, small tensors as their values, big ones as shape and norm."""
    if value is None:
        return "nothing"
    small = value.numel() <= 16 if isinstance(value, Tensor) else True
    tensor = _as_tensor(value) if small else None
    if tensor is not None and tensor.numel() <= 16:
        text = _nested(tensor)
        if len(text) <= SHOW_MAX_CHARS:
            return text
    if isinstance(value, Summary):
        shape, norm = value.shape, value.norm
    elif isinstance(value, Tensor) and (value.is_meta or value.layout != torch.strided):
        return value_text(value)  # the summary says what can be said (not available, sparse)
    elif isinstance(value, Tensor) and value.is_floating_point():
        shape = tuple(value.shape)
        norm = float(torch.linalg.vector_norm(value.detach(), dtype=torch.float64))
    else:
        return value_text(value)
    tail = "" if norm is None else f", norm {format_number(norm)}"
    return f"a {_shape(shape)} {noun}{tail}"


def _is_scalar(t: Tensor | None) -> bool:
    return t is not None and t.numel() == 1


def _equals(t: Tensor | None, number: float) -> bool:
    return t is not None and bool((t == number).all())


_ATOM = re.compile(r"[\w′]+(?:ᵀ|\.[\w′]+|\[[^\[\]]*\]|\([^()]*\))*|\|[^|]+\|")


def _paren(text: str) -> str:
    """Brackets around a compound symbol or a negative number, for products."""
    return text if _is_atom(text) else f"({text})"


def _is_atom(text: str) -> bool:
    """'x', 'fc1.weightᵀ', 'x[0:1]', 'exp(x)' and '(b·c)' need no brackets in a product."""
    if _ATOM.fullmatch(text) and not text.startswith("-"):
        return True
    return _is_call(text) or (text.startswith("(") and _is_call("f" + text))


def _is_call(text: str) -> bool:
    """'exp(x)' is one term; 'exp(x)·(1 - y)' is not."""
    head, _, rest = text.partition("(")
    if not head.isalpha() or not rest.endswith(")"):
        return False
    depth = 1
    for char in rest[:-1]:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return False
    return True


def _transposed(sym: str) -> str:
    return sym[:-1] if sym.endswith("ᵀ") else f"{_paren(sym)}ᵀ"


CHECKED_ELEMENTS = 4096  # a formula is checked on at most this many evenly spread elements


def _agree(expected: Tensor, sent: Tensor) -> bool:
    if tuple(expected.shape) != tuple(sent.shape):
        return False
    if not expected.numel():
        return True
    if expected.numel() > CHECKED_ELEMENTS:
        # a real model's gradients have millions of elements: the same evenly spread sample
        # of both (seconds per replay saved; a wrong formula still disagrees almost anywhere)
        stride = -(-expected.numel() // CHECKED_ELEMENTS)
        expected = expected.reshape(-1)[::stride]
        sent = sent.reshape(-1)[::stride]
    # float32 rounding is relative to the biggest finite entry (cancellation in sums and
    # products); NaN and Inf must sit where the formula puts them
    both = torch.cat([expected.reshape(-1), sent.reshape(-1)]).abs()
    finite = both[both.isfinite()]
    scale = float(finite.max()) if finite.numel() else 0.0
    return bool(torch.allclose(expected, sent, rtol=1e-4, atol=1e-4 * scale, equal_nan=True))


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


# -- element-wise ops ---------------------------------------------------------------------------
def _d(expr: str, sym: str) -> str:
    """'∂(j·i)/∂j', or '∂exp(x)/∂x' when the expression is already a call."""
    wrapped = expr if _is_call(expr) else f"({expr})"
    sym = _paren(sym)
    return f"∂{wrapped}/∂{sym}"


def _times_g(ctx: _Ctx, slot: int, local: Tensor | None) -> Tensor | None:
    """g ⊙ local, summed back to the input's shape when the op broadcast it."""
    if ctx.g is None or local is None:
        return None
    product = ctx.g * local
    shape = ctx.shape_of(slot)
    if shape is not None and tuple(product.shape) != shape:
        try:
            product = product.sum_to_size(shape)
        except RuntimeError:
            return None
    return product


def _elementwise(
    ctx: _Ctx, op: str, expr: str, rules: Mapping[int, tuple[str, Tensor | None]]
) -> Formula:
    terms = []
    for slot, (rule, local) in rules.items():
        sym = ctx.sym(slot)
        how = "g" if rule == "1" else f"g ⊙ {_paren(rule)}"
        shape = ctx.shape_of(slot)
        if ctx.g is not None and shape is not None and tuple(ctx.g.shape) != shape:
            how += f", summed back to {sym}'s shape {_shape(shape)}"
        terms.append(
            Term(
                slot=slot,
                head=f"{_d(expr, sym)} = {rule}",
                expected=_times_g(ctx, slot, local),
                local=local,
                rule=rule,
                how=how,
            )
        )
    return Formula(op, expr, tuple(terms))


def _alpha_text(alpha: float, sym: str) -> str:
    return sym if alpha == 1 else f"{format_number(alpha)}·{_paren(sym)}"


def _add(ctx: _Ctx) -> Formula:
    alpha = ctx.number("alpha", 1.0) or 1.0
    x, y = ctx.sym(0), ctx.sym(1)
    one = torch.tensor(1.0, dtype=torch.float64)
    rules = {0: ("1", one), 1: (format_number(alpha), one * alpha)}
    return _elementwise(ctx, "add", f"{x} + {_alpha_text(alpha, y)}", rules)


def _sub(ctx: _Ctx) -> Formula:
    alpha = ctx.number("alpha", 1.0) or 1.0
    x, y = ctx.sym(0), ctx.sym(1)
    one = torch.tensor(1.0, dtype=torch.float64)
    rules = {0: ("1", one), 1: (format_number(-alpha), -one * alpha)}
    return _elementwise(ctx, "sub", f"{x} - {_alpha_text(alpha, y)}", rules)


def _rsub(ctx: _Ctx) -> Formula:
    """``2 - x`` (one edge, the constant not kept) and ``torch.rsub(x, y)`` = y - alpha·x."""
    alpha = ctx.number("alpha", 1.0) or 1.0
    one = torch.tensor(1.0, dtype=torch.float64)
    rules: dict[int, tuple[str, Tensor | None]] = {0: (format_number(-alpha), -one * alpha)}
    if len(ctx.edges) > 1:
        rules[1] = ("1", one)
        expr = f"{ctx.sym(1)} - {_alpha_text(alpha, ctx.sym(0))}"
    else:
        expr = f"C - {_alpha_text(alpha, ctx.sym(0))}"
    return _elementwise(ctx, "sub", expr, rules)


def _mul(ctx: _Ctx) -> Formula:
    x, y = ctx.sym(0), ctx.sym(1)
    rules = {0: (y, ctx.saved("other")), 1: (x, ctx.saved("self"))}
    return _elementwise(ctx, "mul", f"{_paren(x)}·{_paren(y)}", rules)


def _scalar_other(ctx: _Ctx, op: str) -> Formula:
    """``x·c`` and ``x/c`` with a Python number c (``MulBackward1``, ``DivBackward1``): what
    autograd's own backward formulas record, e.g. the ``2·`` in the gradient of ``x**2``."""
    c = ctx.number("other")
    x = ctx.sym(0)
    if c is None:
        raise ValueError("the number was not saved")
    one = torch.tensor(1.0, dtype=torch.float64)
    number = _paren(format_number(c))
    if op == "mul":
        return _elementwise(ctx, op, f"{_paren(x)}·{number}", {0: (format_number(c), one * c)})
    return _elementwise(ctx, op, f"{_paren(x)}/{number}", {0: (f"1/{number}", one / c)})


def _div(ctx: _Ctx) -> Formula:
    x, y = ctx.sym(0), ctx.sym(1)
    a, b = ctx.saved("self"), ctx.saved("other")
    local_y = None if a is None or b is None else -a / (b * b)
    rules = {
        0: (f"1/{_paren(y)}", None if b is None else 1 / b),
        1: (f"-{_paren(x)}/{_paren(y)}²", local_y),
    }
    return _elementwise(ctx, "div", f"{_paren(x)}/{_paren(y)}", rules)


def _neg(ctx: _Ctx) -> Formula:
    minus_one = torch.tensor(-1.0, dtype=torch.float64)
    return _elementwise(ctx, "neg", f"-{_paren(ctx.sym(0))}", {0: ("-1", minus_one)})


_SUPERSCRIPTS = {2: "²", 3: "³", 4: "⁴"}


def _power(sym: str, p: float) -> str:
    if p == 1:
        return sym
    if p in _SUPERSCRIPTS:
        return _paren(sym) + _SUPERSCRIPTS[int(p)]
    return f"{_paren(sym)}^{_paren(format_number(p))}"


def _pow_scalar(ctx: _Ctx) -> Formula:
    """``x ** p`` with a number p: p·x^(p-1)."""
    p = ctx.number("exponent")
    x, base = ctx.sym(0), ctx.saved("self")
    if p is None:
        return _elementwise(ctx, "pow", f"{x}^p", {0: ("p·x^(p-1)", None)})
    local = None if base is None else p * base.pow(p - 1)
    rule = "0" if p == 0 else f"{format_number(p)}·{_power(x, p - 1)}" if p != 1 else "1"
    # x**1 is a new tensor (autograd's backward of x**2 makes one): never just "x"
    expr = f"{_paren(x)}¹" if p == 1 else _power(x, p)
    return _elementwise(ctx, "pow", expr, {0: (rule, local)})


def _pow_tensor(ctx: _Ctx) -> Formula:
    """``x ** y`` with tensors: y·x^(y-1) and x^y·ln x."""
    x, y = ctx.sym(0), ctx.sym(1)
    base, exponent, result = ctx.saved("self"), ctx.saved("exponent"), ctx.saved("result")
    local_x = None if base is None or exponent is None else exponent * base.pow(exponent - 1)
    local_y = None if base is None or result is None else result * base.log()
    expr = f"{_paren(x)}^{_paren(y)}"
    rules = {
        0: (f"{_paren(y)}·{_paren(x)}^({y} - 1)", local_x),
        1: (f"{expr}·ln {_paren(x)}", local_y),
    }
    return _elementwise(ctx, "pow", expr, rules)


def _pow_base(ctx: _Ctx) -> Formula:
    """``c ** x`` with a number c: c^x·ln c."""
    c, result = ctx.number("self"), ctx.saved("result")
    x = ctx.sym(0)
    base = "c" if c is None else format_number(c)
    local = None if c is None or result is None or c <= 0 else result * math.log(c)
    return _elementwise(
        ctx, "pow", f"{base}^{_paren(x)}", {0: (f"{base}^{_paren(x)}·ln {base}", local)}
    )


def _unary(op: str, expr: str, rule: str, saved: str, local: Callable[[Tensor], Tensor]) -> Any:
    """An element-wise op of one input whose local derivative is a function of one saved value."""

    def formula(ctx: _Ctx) -> Formula:
        x = ctx.sym(0)
        value = ctx.saved(saved)
        rules = {0: (rule.format(x=x, p=_paren(x)), None if value is None else local(value))}
        return _elementwise(ctx, op, expr.format(x=x, p=_paren(x)), rules)

    return formula


# -- ops that move gradients around ---------------------------------------------------------------
def _moved(ctx: _Ctx, op: str, expr: str, head: str, expected: Tensor | None) -> Formula:
    return Formula(op, expr, (Term(slot=0, head=head, expected=expected),))


def _safe(make: Callable[[], Tensor]) -> Tensor | None:
    """A formula's prediction, or None when the recorded shapes do not fit it."""
    try:
        return make()
    except (RuntimeError, IndexError, ValueError, TypeError):
        return None


def _sum(ctx: _Ctx, mean: bool) -> Formula:
    x, g, sizes = ctx.sym(0), ctx.g, ctx.sizes()
    dims = ctx.ints("dim")
    keepdim = ctx.saved_raw("keepdim") is True
    op, name = ("mean", "mean") if mean else ("sum", "sum")
    where = "" if dims is None else f", dim={dims[0] if len(dims) == 1 else list(dims)}"
    expr = f"{name}({x}{where})"
    if sizes is None:
        return _moved(ctx, op, expr, f"{expr} spreads g back over {x}", None)
    rank = len(sizes)
    chosen = sorted({d % rank for d in dims}) if dims is not None and rank else list(range(rank))
    count = math.prod(sizes[d] for d in chosen) if chosen else 1

    def predict() -> Tensor:
        assert g is not None
        spread = g
        if dims is not None and not keepdim:
            for d in chosen:
                spread = spread.unsqueeze(d)
        spread = spread.expand(sizes)
        return spread / count if mean else spread

    along = "" if dims is None else f" along dim {', '.join(str(d) for d in chosen)}"
    if mean:
        head = (
            f"{expr} averages {count} values: ∂/∂{_paren(x)}ᵢ = 1/{count}, so g/{count} is "
            f"copied{along} into all of {x} ({_shape(sizes)})"
        )
    else:
        head = (
            f"{expr}: ∂/∂{_paren(x)}ᵢ = 1 for every element, so g is copied{along} into all of "
            f"{x} ({_shape(sizes)})"
        )
    return _moved(ctx, op, expr, head, None if g is None else _safe(predict))


def _reshape(ctx: _Ctx) -> Formula:
    x, g = ctx.sym(0), ctx.g
    sizes = ctx.sizes() or ctx.shape_of(0)
    kind = ctx.node.type_name
    dim = (ctx.ints("dim") or (0,))[0]
    expr = (
        f"{_paren(x)}.unsqueeze({dim})"
        if kind.startswith("Unsqueeze")
        else f"{_paren(x)}.squeeze(…)"
        if kind.startswith("Squeeze")
        else f"{_paren(x)}.reshape(…)"
        if kind.startswith("ReshapeAlias")
        else f"{_paren(x)}.view(…)"
    )
    if sizes is None:
        return _moved(ctx, "view", expr, f"{expr} hands g back in {x}'s shape", None)
    head = f"{expr} only changed the shape: g is reshaped back to {x}'s {_shape(sizes)}"
    return _moved(ctx, "view", expr, head, None if g is None else _safe(lambda: g.reshape(sizes)))


def _transpose(ctx: _Ctx) -> Formula:
    x, g = ctx.sym(0), ctx.g
    kind = ctx.node.type_name
    if kind.startswith("Permute"):
        dims = ctx.ints("dims")
        expr = f"{_paren(x)}.permute{dims}"
        inverse = None if dims is None else tuple(sorted(range(len(dims)), key=lambda i: dims[i]))

        def predict() -> Tensor:
            assert g is not None and inverse is not None
            return g.permute(inverse)

        head = f"{expr} only reorders the axes: g is permuted back"
        expected = None if g is None or inverse is None else _safe(predict)
        return _moved(ctx, "permute", expr, head, expected)
    pair = (ctx.ints("dim0") or (0,))[0], (ctx.ints("dim1") or (1,))[0]
    expr = f"{_paren(x)}ᵀ"
    head = f"{expr}: the gradient of a transpose is the transposed g"
    expected = None if g is None else _safe(lambda: g.transpose(*pair) if g.dim() >= 2 else g)
    return _moved(ctx, "t", expr, head, expected)


def _expand(ctx: _Ctx) -> Formula:
    x, g, sizes = ctx.sym(0), ctx.g, ctx.sizes()
    expr = f"{_paren(x)}.expand(…)"
    if sizes is None:
        return _moved(ctx, "expand", expr, f"{expr} sums g over the copies", None)
    head = (
        f"{expr} reused each element of {x} several times: g is summed over the copies "
        f"back to {_shape(sizes)}"
    )
    return _moved(
        ctx, "expand", expr, head, None if g is None else _safe(lambda: g.sum_to_size(sizes))
    )


def _select(ctx: _Ctx) -> Formula:
    x, g, sizes = ctx.sym(0), ctx.g, ctx.sizes()
    dim, index = (ctx.ints("dim") or (0,))[0], (ctx.ints("index") or (0,))[0]
    expr = f"{_paren(x)}[{':, ' * dim}{index}]"
    if sizes is None:
        return _moved(ctx, "select", expr, f"{expr}: g goes back to the picked entries", None)

    def predict() -> Tensor:
        assert g is not None and sizes is not None
        full = torch.zeros(sizes, dtype=torch.float64)
        full.select(dim, index).copy_(g)
        return full

    head = f"{expr} picked one slice: g goes back into it, zeros elsewhere in {x}'s {_shape(sizes)}"
    return _moved(ctx, "select", expr, head, None if g is None else _safe(predict))


def _slice(ctx: _Ctx) -> Formula:
    x, g, sizes = ctx.sym(0), ctx.g, ctx.sizes()
    dim = (ctx.ints("dim") or (0,))[0]
    start = (ctx.ints("start") or (0,))[0]
    end_raw = ctx.ints("end")
    end = None if end_raw is None or end_raw[0] >= 2**62 else end_raw[0]
    step = (ctx.ints("step") or (1,))[0]
    bounds = f"{start}:{'' if end is None else end}" + ("" if step == 1 else f":{step}")
    expr = f"{_paren(x)}[{':, ' * dim}{bounds}]"
    if sizes is None:
        return _moved(ctx, "slice", expr, f"{expr}: g goes back to the sliced entries", None)

    def predict() -> Tensor:
        assert g is not None and sizes is not None
        full = torch.zeros(sizes, dtype=torch.float64)
        index: list[slice] = [slice(None)] * dim + [slice(start, end, step)]
        full[tuple(index)] = g
        return full

    head = f"{expr} took a slice: g goes back into it, zeros elsewhere in {x}'s {_shape(sizes)}"
    return _moved(ctx, "slice", expr, head, None if g is None else _safe(predict))


def _unbind(ctx: _Ctx) -> Formula:
    x = ctx.sym(0)
    dim = (ctx.ints("dim") or (0,))[0]
    expr = f"{_paren(x)}.unbind({dim})" if dim else f"{_paren(x)}.unbind()"
    shape = ctx.shape_of(0)

    def predict() -> Tensor:
        assert shape is not None
        part = list(shape)
        del part[dim % len(shape)]
        pieces = [torch.zeros(part, dtype=torch.float64) if g is None else g for g in ctx.grads]
        return torch.stack(pieces, dim)

    head = (
        f"{expr} split {x} into {len(ctx.grads)} parts: their gradients are stacked back "
        f"along dim {dim}"
    )
    if any(g is None for g in ctx.grads):
        head += " (zeros for a part that got none)"
    known = shape is not None and any(g is not None for g in ctx.grads)
    term = Term(slot=0, head=head, expected=_safe(predict) if known else None)
    labels = tuple(f"{_paren(x)}[{':, ' * dim}{nr}]" for nr in range(len(ctx.grads)))
    return Formula("unbind", expr, (term,), labels)


def _clone(ctx: _Ctx) -> Formula:
    x = ctx.sym(0)
    expr = f"{_paren(x)}.clone()"
    head = f"{expr} copied {x}: ∂/∂{_paren(x)} = 1, g passes through unchanged"
    return _moved(ctx, "clone", expr, head, ctx.g)


# -- matrix products --------------------------------------------------------------------------
Predict = Callable[[Tensor], Tensor]  # what an input must get, from the received g


def _matrix_terms(ctx: _Ctx, parts: list[tuple[int, str, Predict | None]]) -> tuple[Term, ...]:
    terms = []
    g = ctx.g
    for slot, how, predict in parts:
        expected = None
        if predict is not None and g is not None:
            expected = _safe(functools.partial(predict, g))
        terms.append(Term(slot=slot, head=f"{ctx.sym(slot)} gets {how}", expected=expected))
    return tuple(terms)


def _g_at_mt(m: Tensor | None, scale: float = 1.0) -> Predict | None:
    """g @ mᵀ: what the left factor of a product gets."""
    return None if m is None else lambda g: scale * (g @ m.transpose(-2, -1))


def _mt_at_g(m: Tensor | None, scale: float = 1.0) -> Predict | None:
    """mᵀ @ g: what the right factor of a product gets."""
    return None if m is None else lambda g: scale * (m.transpose(-2, -1) @ g)


def _mm(ctx: _Ctx) -> Formula:
    a, b = ctx.sym(0), ctx.sym(1)
    parts = [
        (0, f"g@{_transposed(b)}", _g_at_mt(ctx.saved("mat2"))),
        (1, f"{_transposed(a)}@g", _mt_at_g(ctx.saved("self"))),
    ]
    op = "bmm" if ctx.node.type_name.startswith("Bmm") else "mm"
    return Formula(op, f"{_paren(a)}@{_paren(b)}", _matrix_terms(ctx, parts))


def _addmm(ctx: _Ctx) -> Formula:
    """``beta·b + alpha·(A@B)``, what ``F.linear`` and ``nn.Linear`` record."""
    bias, a, b = ctx.sym(0), ctx.sym(1), ctx.sym(2)
    alpha = ctx.number("alpha", 1.0) or 1.0
    beta = ctx.number("beta", 1.0)
    beta = 1.0 if beta is None else beta
    scale = "" if alpha == 1 else f"{format_number(alpha)}·"
    shape, g = ctx.shape_of(0), ctx.g
    bias_how = "g" if beta == 1 else f"{format_number(beta)}·g"
    if shape is not None and g is not None and tuple(g.shape) != shape:
        bias_how += " summed over the rows"

    def to_bias(grad: Tensor) -> Tensor:
        return (grad * beta).sum_to_size(shape) if shape is not None else grad * beta

    parts = [
        (0, bias_how, to_bias),
        (1, f"{scale}g@{_transposed(b)}", _g_at_mt(ctx.saved("mat2"), alpha)),
        (2, f"{scale}{_transposed(a)}@g", _mt_at_g(ctx.saved("mat1"), alpha)),
    ]
    expr = f"{_alpha_text(beta, bias)} + {scale}{_paren(a)}@{_paren(b)}"
    return Formula("addmm", expr, _matrix_terms(ctx, parts))


def _mv(ctx: _Ctx) -> Formula:
    a, v = ctx.sym(0), ctx.sym(1)
    vec = ctx.saved("vec")
    outer: Predict | None = None if vec is None else lambda g: torch.outer(g, vec)
    parts = [
        (0, f"the outer product g⊗{_paren(v)}", outer),
        (1, f"{_transposed(a)}@g", _mt_at_g(ctx.saved("self"))),
    ]
    return Formula("mv", f"{_paren(a)}@{_paren(v)}", _matrix_terms(ctx, parts))


def _dot(ctx: _Ctx) -> Formula:
    x, y = ctx.sym(0), ctx.sym(1)

    def times(t: Tensor | None) -> Predict | None:
        return None if t is None else lambda g: g * t

    parts = [
        (0, f"g·{_paren(y)}", times(ctx.saved("tensor"))),
        (1, f"g·{_paren(x)}", times(ctx.saved("self"))),
    ]
    return Formula("dot", f"{_paren(x)}·{_paren(y)}", _matrix_terms(ctx, parts))


def _sigmoid_local(r: Tensor) -> Tensor:
    return r * (1 - r)


FORMULAS: dict[str, Callable[[_Ctx], Formula]] = {
    "AddBackward0": _add,
    "SubBackward0": _sub,
    "RsubBackward0": _rsub,
    "RsubBackward1": _rsub,
    "MulBackward0": _mul,
    "DivBackward0": _div,
    "MulBackward1": lambda ctx: _scalar_other(ctx, "mul"),
    "DivBackward1": lambda ctx: _scalar_other(ctx, "div"),
    "NegBackward0": _neg,
    "PowBackward0": _pow_scalar,
    "PowBackward1": _pow_tensor,
    "PowBackward2": _pow_base,
    "ExpBackward0": _unary("exp", "exp({x})", "exp({x})", "result", lambda r: r),
    "LogBackward0": _unary("log", "log({x})", "1/{p}", "self", lambda s: 1 / s),
    "SinBackward0": _unary("sin", "sin({x})", "cos({x})", "self", torch.cos),
    "CosBackward0": _unary("cos", "cos({x})", "-sin({x})", "self", lambda s: -torch.sin(s)),
    "TanhBackward0": _unary("tanh", "tanh({x})", "1 - tanh({x})²", "result", lambda r: 1 - r * r),
    "SigmoidBackward0": _unary(
        "sigmoid", "σ({x})", "σ({x})·(1 - σ({x}))", "result", _sigmoid_local
    ),
    "ReluBackward0": _unary(
        "relu", "relu({x})", "(1 if {x} > 0, else 0)", "result", lambda r: (r > 0).double()
    ),
    "AbsBackward0": _unary("abs", "|{x}|", "sign({x})", "self", torch.sign),
    "ReciprocalBackward0": _unary("reciprocal", "1/{x}", "-1/{p}²", "result", lambda r: -r * r),
    "SqrtBackward0": _unary("sqrt", "√{p}", "1/(2·√{p})", "result", lambda r: 1 / (2 * r)),
    "SumBackward0": lambda ctx: _sum(ctx, mean=False),
    "SumBackward1": lambda ctx: _sum(ctx, mean=False),
    "MeanBackward0": lambda ctx: _sum(ctx, mean=True),
    "MeanBackward1": lambda ctx: _sum(ctx, mean=True),
    "MmBackward0": _mm,
    "BmmBackward0": _mm,
    "AddmmBackward0": _addmm,
    "MvBackward0": _mv,
    "DotBackward0": _dot,
    "TBackward0": _transpose,
    "TransposeBackward0": _transpose,
    "PermuteBackward0": _transpose,
    "ViewBackward0": _reshape,
    "UnsafeViewBackward0": _reshape,
    "ReshapeAliasBackward0": _reshape,
    "SqueezeBackward0": _reshape,
    "SqueezeBackward1": _reshape,
    "UnsqueezeBackward0": _reshape,
    "ExpandBackward0": _expand,
    "SelectBackward0": _select,
    "SliceBackward0": _slice,
    "UnbindBackward0": _unbind,
    "CloneBackward0": _clone,
}

# where the value of an input is saved when the input itself is a constant (for its name)
_OPERAND_SAVED: dict[str, dict[int, str]] = {
    "MulBackward0": {0: "self", 1: "other"},
    "DivBackward0": {0: "self", 1: "other"},
    "PowBackward1": {0: "self", 1: "exponent"},
    "MmBackward0": {0: "self", 1: "mat2"},
    "AddmmBackward0": {1: "mat1", 2: "mat2"},
}
_FALLBACK_SYMBOLS: dict[str, tuple[str, ...]] = {
    "MmBackward0": ("A", "B"),
    "BmmBackward0": ("A", "B"),
    "AddmmBackward0": ("b", "A", "B"),
    "MvBackward0": ("A", "v"),
}


# -- names ----------------------------------------------------------------------------------------
def _tensor_name(graph: Graph, node_id: str, output_nr: int) -> str | None:
    for record in graph.tensors_at(node_id):
        if record.name and (record.output_nr or 0) == output_nr:
            return isolated(record.name)
    return None


def _root_name(graph: Graph) -> str:
    roots = [t for t in graph.tensors if t.is_root]
    return isolated(roots[0].name) if len(roots) == 1 and roots[0].name else "L"


def _leaf_name(graph: Graph, node_id: str) -> str | None:
    names = [t.name for t in graph.tensors_at(node_id) if t.role is Role.LEAF and t.name]
    return isolated(names[0]) if names else None


def _target(graph: Graph, edge: Edge) -> str:
    """Where an edge's gradient goes: 'AddBackward0', 'AccumulateGrad(h)', '... output 1'."""
    assert edge.dst is not None
    node = graph.node(edge.dst)
    if node.is_accumulate_grad:
        name = _leaf_name(graph, node.id)
        return f"AccumulateGrad({name})" if name else "AccumulateGrad"
    if graph.is_multi_output(node.id):
        return f"{node.type_name} output {edge.input_nr}"
    return node.type_name


def _same_storage(a: object, b: object) -> bool | None:
    """Whether two live tensors are one tensor's data; None when that cannot be told."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor) or not a.numel() or not b.numel():
        return None
    try:
        return bool(a.data_ptr() == b.data_ptr() and a.shape == b.shape)
    except RuntimeError:
        return None


def _constant_name(ctx: _Ctx, saved: str) -> str | None:
    """An off-graph operand the node saved: the one named constant with its value, else the
    value itself. A named constant that is provably another tensor (the live saved value lives
    elsewhere, e.g. the ones of a seed saved by a gradient's graph) is not it."""
    graph = ctx.recording.graph
    tensor = _as_tensor(ctx.saved_raw(saved))
    if tensor is None:
        return None
    raw, live = ctx.saved_raw(saved), ctx._live().get(saved)
    dtype = _dtype(raw) or _dtype(live)
    matches = []
    for record in graph.tensors:
        data = None if record.data is None else _as_tensor(record.data)
        if record.role is not Role.CONSTANT or not record.name or data is None:
            continue
        if data.shape != tensor.shape or not torch.equal(data, tensor):
            continue
        # a Python number (x * 2) is saved as an int64 or float64 tensor: not a float32 constant
        if dtype is not None and dtype != record.dtype:
            continue
        if _same_storage(live, record.tensor) is False:
            continue
        matches.append(isolated(record.name))
    if len(matches) == 1:
        return matches[0]
    return format_number(float(tensor)) if tensor.numel() == 1 else None


def _dtype(value: object) -> str | None:
    if isinstance(value, Summary):
        return value.dtype
    if isinstance(value, Tensor):
        return str(value.dtype).removeprefix("torch.")
    return None


def _forward_operand(ctx: _Ctx, slot: int) -> tuple[bool, str | None]:
    """What ``gradviz.watch()`` saw in an off-graph slot: (True, its name, or the Python
    number's value, or None for an unnamed tensor), or (False, None) when it cannot tell.

    Only for a node its forward op made directly, whose positional operands line up with
    the node's inputs (``add(s, bias)`` → AddBackward0's slots 0 and 1)."""
    graph, node = ctx.recording.graph, ctx.node
    forward = graph.forward
    op = None if forward is None else forward.op_for_node(node.id)
    if forward is None or op is None or node.sequence_nr not in op.grad_fn_seqs:
        return False, None
    operands = [arg for arg in op.inputs if arg.position.isdigit()]
    if len(operands) != len(ctx.edges) or slot >= len(operands):
        return False, None
    arg = operands[slot]
    if arg.tensor is None:
        number = arg.value
        if isinstance(number, int | float) and not isinstance(number, bool):
            return True, format_number(float(number))
        return False, None
    item = forward.tensor(arg.tensor)
    if item.requires_grad:
        return False, None
    linked = {f: r for r, f in forward.tensor_links.items()}
    records = {record.id: record for record in graph.tensors}
    record = records.get(linked.get(item.id, ""))
    name = record.name if record is not None and record.name else item.name
    return True, isolated(name) if name and _fits(tuple(item.shape), _output_shape(ctx)) else None


def _fits(shape: tuple[int, ...], out: tuple[int, ...] | None) -> bool:
    """Whether an operand of this shape can broadcast into an output of shape ``out``."""
    if out is None:
        return True
    if len(shape) > len(out):
        return False
    return all(n in (1, m) for n, m in zip(reversed(shape), reversed(out), strict=False))


def _output_shape(ctx: _Ctx) -> tuple[int, ...] | None:
    grads = ctx.step.grad_outputs
    value = grads[0] if len(grads) == 1 else None
    return None if value is None else tuple(value.shape)


def _unkept_constant(ctx: _Ctx) -> str | None:
    """The name of an off-graph operand the node did not save (``y = s + bias``: AddBackward0
    keeps only alpha), without ``gradviz.watch()``: only when it is the one named constant of
    the graph and its shape fits the output. (A Python number, ``s + 0.25``, leaves no trace
    to tell it from that constant; under ``watch()`` the forward op tells.)
    """
    graph = ctx.recording.graph
    constants = [t for t in graph.tensors if t.role is Role.CONSTANT and t.name]
    if len(constants) != 1 or not _fits(tuple(constants[0].shape), _output_shape(ctx)):
        return None
    return isolated(constants[0].name or "")


def _expression(recording: Recording, node_id: str, depth: int) -> str | None:
    """A short expression for an unnamed tensor from its named inputs: '(b·c)', 'wᵀ'."""
    graph = recording.graph
    node = graph.node(node_id)
    make = FORMULAS.get(node.type_name)
    if depth <= 0 or make is None or graph.is_multi_output(node_id):
        return None
    step = recording.step_for(node_id) or Step(0, node_id, node.type_name, ())
    ctx = _context(recording, step, depth - 1, grads=False)
    if ctx.fallback:
        return None
    try:
        expr = make(ctx).expr
    except (RuntimeError, ValueError, TypeError, IndexError):
        return None
    if len(expr) > 16:
        return None
    return expr


_PLACEHOLDERS = ("u", "v", "w", "p", "q", "r", "s")
_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _fresh(candidates: tuple[str, ...], used: set[str]) -> str:
    """The first candidate no tensor is called, else the first with a subscript: 'u₂'.

    Never a prime: 'x′' reads as a derivative (and as the real x) in a lesson on them."""
    for candidate in candidates:
        if candidate not in used:
            return candidate
    number = 2
    while f"{candidates[0]}{number}".translate(_SUBSCRIPTS) in used:
        number += 1
    return f"{candidates[0]}{number}".translate(_SUBSCRIPTS)


def _stands_for(graph: Graph, edge: Edge) -> str:
    """What a placeholder symbol is: 'an unnamed constant', 'the unnamed output of X'."""
    if edge.dst is None:
        return "an unnamed constant"
    node = graph.node(edge.dst)
    if node.is_accumulate_grad:
        return "an unnamed leaf"
    if graph.is_multi_output(node.id):
        return f"output {edge.input_nr} of {node.type_name}, unnamed"
    return f"the unnamed output of {node.type_name}"


def _known_names(graph: Graph) -> set[str]:
    names = {t.name for t in graph.tensors if t.name}
    if graph.forward is not None:
        names |= set(graph.forward.names())
    return names


def _symbols(ctx: _Ctx, depth: int) -> list[str]:
    """A symbol per input slot: the tensor's name or expression, a named constant, a value,
    or, when nothing better is known, a placeholder that is nobody's name ('u', 'const'),
    whose meaning goes to ``ctx.placeholders``."""
    graph, kind = ctx.recording.graph, ctx.node.type_name
    fallback = _FALLBACK_SYMBOLS.get(kind, ())
    names: list[str | None] = []
    for edge in ctx.edges:
        name = None
        if edge.dst is not None:
            name = _tensor_name(graph, edge.dst, edge.input_nr)
            if name is None and edge.input_nr == 0:
                name = _expression(ctx.recording, edge.dst, depth)
        else:
            saved = _OPERAND_SAVED.get(kind, {}).get(edge.slot)
            known, name = _forward_operand(ctx, edge.slot)
            if not known:
                name = _unkept_constant(ctx) if saved is None else _constant_name(ctx, saved)
            elif name is None and saved is not None:  # an unnamed tensor: its value, if one
                value = _as_tensor(ctx.saved_raw(saved))
                scalar = value is not None and value.numel() == 1
                name = format_number(float(value)) if value is not None and scalar else None
        names.append(name)
    used = {n for n in names if n} | _known_names(graph)
    out = []
    for edge, name in zip(ctx.edges, names, strict=True):
        if name is None:
            ctx.fallback = True
            if edge.dst is None:
                candidates: tuple[str, ...] = ("const",)
            else:
                own = fallback[edge.slot : edge.slot + 1]
                candidates = own + tuple(c for c in _PLACEHOLDERS if c not in own)
            name = _fresh(candidates, used)
            used.add(name)
            ctx.placeholders[name] = _stands_for(graph, edge)
        out.append(name)
    return out


# -- received gradients ---------------------------------------------------------------------------
def _streams(recording: Recording, step: Step, nr: int) -> list[tuple[str, GradValue]]:
    """What each producer sent into output ``nr`` of the step's node, in forward order."""
    graph = recording.graph
    streams: list[tuple[int, str, GradValue]] = []
    seed = recording.seeds.get((step.node_id, nr))
    if seed is not None:
        streams.append((-1, "the seed", seed))
    for edge in graph.in_edges(step.node_id):
        producer = recording.step_for(edge.src)
        if edge.input_nr != nr or producer is None or producer.index > step.index:
            continue
        value = producer.grad_inputs[edge.slot] if edge.slot < len(producer.grad_inputs) else None
        if value is not None:
            node = graph.node(edge.src)
            streams.append((node.sequence_nr, node.type_name, value))
    streams.sort(key=lambda s: s[0])
    return [(label, value) for _, label, value in streams]


def _received(recording: Recording, step: Step, outputs: list[str | None]) -> str:
    """'∂k/∂i = 10 from MulBackward0 + 8 from AddBackward0 = 18' for each output.

    When a hook changed the gradient on the way, what arrived is not the sum of what was
    sent: then it says what arrived, what the producers sent and their sum, and no ∂ label
    (the changed value is not the derivative of anything the graph computed).
    """
    root = _root_name(recording.graph)
    parts = []
    for nr, value in enumerate(step.grad_outputs):
        if value is None:
            continue
        label = outputs[nr] if nr < len(outputs) else None
        streams = _streams(recording, step, nr)
        if not _same_sum(value, [v for _, v in streams]):
            parts.append(_changed(value, streams, label))
            continue
        text = "" if label is None else f"∂{root}/∂{label} = "
        if len(streams) > 1:
            text += " + ".join(f"{show(v)} from {who}" for who, v in streams) + " = "
        parts.append(text + show(value))
    return ", ".join(parts) or "nothing"


def _changed(value: GradValue, streams: list[tuple[str, GradValue]], label: str | None) -> str:
    """'[60, 120], not what was sent towards y ([3, 6] from A + [3, 6] from B = [6, 12]): ...'."""
    towards = "" if label is None else f" towards {label}"
    if not streams:
        return f"{show(value)}, though nothing was sent{towards}: something changed it on the way"
    sent = " + ".join(f"{show(v)} from {who}" for who, v in streams)
    tensors = [_as_tensor(v) for _, v in streams]
    if len(streams) > 1:
        if all(t is not None for t in tensors):
            total = functools.reduce(lambda a, b: a + b, [t for t in tensors if t is not None])
            sent += f" = {show(total)}"
        else:
            sent = f"the sum of {sent}"
    return (
        f"{show(value)}, not what was sent{towards} ({sent}): a hook changed the gradient "
        "on the way"
    )


def _output_labels(recording: Recording, step: Step, expr: str | None) -> list[str | None]:
    """The name of each output, else its expression ('(j·i)', 'x.unbind()[1]'), else None."""
    graph = recording.graph
    labels: list[str | None] = []
    for nr in range(max(1, len(step.grad_outputs))):
        name = _tensor_name(graph, step.node_id, nr)
        if name is None and expr is not None:
            name = _paren(expr) if len(step.grad_outputs) <= 1 else f"{_paren(expr)}[{nr}]"
        labels.append(name)
    return labels


# -- putting it together ---------------------------------------------------------------------
@dataclass(frozen=True)
class Explanation:
    """A step told in words, with the parts the side panel shows separately."""

    text: str
    op: str
    formula: tuple[str, ...]
    checked: bool


def _context(recording: Recording, step: Step, depth: int = 2, grads: bool = True) -> _Ctx:
    """What the formulas need about a step (``grads=False``: only names, for expressions)."""
    graph = recording.graph
    node = graph.node(step.node_id)
    edges = graph.out_edges(step.node_id)
    sent = [_as_tensor(v) for v in step.grad_inputs] if grads and step.grad_inputs else []
    ctx = _Ctx(
        recording=recording,
        step=step,
        node=node,
        edges=edges,
        syms=[],
        grads=[_as_tensor(g) for g in step.grad_outputs] if grads else [],
        names_only=not grads,
        sent=sent,
    )
    ctx.syms = _symbols(ctx, depth)
    return ctx


def _term_text(ctx: _Ctx, term: Term, edge: Edge) -> str:
    """One edge: '∂(g/h)/∂h = -g/h² = -4 → sends 18·(-4) = -72 to AccumulateGrad(h)'."""
    graph = ctx.recording.graph
    if edge.dst is None:
        sym = ctx.sym(edge.slot)
        what = f"the constant {sym}" if _is_number(sym) else sym
        return f"{what} is off the graph: nothing sent"
    value = ctx.step.grad_inputs[edge.slot] if edge.slot < len(ctx.step.grad_inputs) else None
    sent = ctx.sent[edge.slot] if edge.slot < len(ctx.sent) else None
    head, local, g = term.head, term.local, ctx.g
    if local is not None and _is_scalar(local) and format_number(float(local)) != term.rule:
        head += f" = {format_number(float(local))}"
    elif local is not None and not _is_scalar(local) and term.rule not in ("1", "-1"):
        shown = show(local, "tensor")
        if not shown.startswith("a "):
            head += f" = {shown}"
    if value is None:
        return f"{head} → sends nothing to {_target(graph, edge)}"
    if local is not None and _is_scalar(g) and _is_scalar(local) and _is_scalar(sent):
        assert g is not None and sent is not None
        product = ""
        if not _equals(g, 1) and not _equals(local, 1):
            product = f"{format_number(float(g))}·{_paren(format_number(float(local)))} = "
        return f"{head} → sends {product}{show(value)} to {_target(graph, edge)}"
    how = f"{term.how} = " if term.how and local is not None else ""
    return f"{head} → sends {how}{show(value)} to {_target(graph, edge)}"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _formula(ctx: _Ctx) -> tuple[Formula, bool] | None:
    """The op's formula and whether its numbers were checked; None when it disagrees."""
    make = FORMULAS.get(ctx.node.type_name)
    if make is None or not ctx.step.finished:
        return None
    try:
        formula = make(ctx)
    except (RuntimeError, ValueError, TypeError, IndexError):
        return None
    slots = {edge.slot for edge in ctx.edges if edge.dst is not None}
    checked = bool(slots)
    for term in formula.terms:
        if term.slot not in slots:
            continue
        sent = ctx.sent[term.slot] if term.slot < len(ctx.sent) else None
        if term.expected is None or sent is None:
            checked = False
            continue
        if not _agree(term.expected, sent):
            return None
    if slots - {term.slot for term in formula.terms}:
        return None
    return formula, checked


def _chain_rule(ctx: _Ctx, formula: Formula, checked: bool) -> Explanation:
    outputs = _output_labels(ctx.recording, ctx.step, formula.expr)
    for nr, label in enumerate(formula.outputs):
        if nr < len(outputs) and _tensor_name(ctx.recording.graph, ctx.node.id, nr) is None:
            outputs[nr] = label
    terms = {term.slot: term for term in formula.terms}
    parts = []
    for edge in ctx.edges:
        term = terms.get(edge.slot, Term(slot=edge.slot, head="", expected=None))
        parts.append(_term_text(ctx, term, edge))
    name = _tensor_name(ctx.recording.graph, ctx.node.id, 0) if len(outputs) == 1 else None
    made = f"{name} = {formula.expr}" if name else formula.expr
    if ctx.placeholders:
        made += ", where " + ", ".join(f"{s} is {what}" for s, what in ctx.placeholders.items())
    text = f"{ctx.node.type_name} ({made}): got {_received(ctx.recording, ctx.step, outputs)}"
    text += "".join(f"; {part}" for part in parts) + "."
    return Explanation(text, formula.op, tuple(parts), checked)


def _generic(recording: Recording, step: Step) -> Explanation:
    """'XBackward0 received 18; sends 9 to Y' for nodes without a formula (or one that failed)."""
    graph = recording.graph
    outputs = _output_labels(recording, step, None)
    received = _received(recording, step, outputs) if step.grad_outputs else "nothing"
    parts = []
    for edge in graph.out_edges(step.node_id):
        value = step.grad_inputs[edge.slot] if edge.slot < len(step.grad_inputs) else None
        if edge.dst is None:
            parts.append(f"input {edge.slot} is off the graph: nothing sent")
        elif step.finished:
            parts.append(f"sends {show(value)} to {_target(graph, edge)}")
    text = f"{step.type_name} received {received}" + "".join(f"; {p}" for p in parts) + "."
    if not step.finished:
        text += " It did not finish (backward stopped here)."
    return Explanation(text, "", tuple(parts), False)


def _accumulate(recording: Recording, step: Step) -> Explanation:
    """'AccumulateGrad(h): ∂k/∂h = -72 from DivBackward0 + 8 from AddBackward0 = -64; ...'."""
    graph = recording.graph
    leaf = _leaf_name(graph, step.node_id)
    label = leaf or "the leaf"
    received = _received(recording, step, [label])
    grad = f"{leaf}.grad" if leaf else ".grad"
    if step.leaf_grad_after is None:
        change = f"adds it to {grad}"
    elif step.leaf_grad_before is None:
        change = f"adds it to {grad}: None → {show(step.leaf_grad_after)}"
    else:
        change = (
            f"adds it to {grad}: {show(step.leaf_grad_before)} + {show(step.grad_outputs[0])} "
            f"= {show(step.leaf_grad_after)}"
        )
    head = f"AccumulateGrad({leaf})" if leaf else "AccumulateGrad"
    return Explanation(f"{head}: got {received}; {change}.", "accumulate", (change,), True)


def explain_step(recording: Recording, index: int) -> Explanation:
    """Frame ``index`` in words: the chain rule where gradviz knows the op, plain otherwise."""
    if index == 0:
        return Explanation(_seed_text(recording), "seed", (), True)
    step = recording.steps[index - 1]
    if step.type_name == "AccumulateGrad" and step.grad_outputs:
        explanation = _accumulate(recording, step)
    else:
        # a user's node hook may have replaced what the node sent: tell (and check the
        # formula against) what the op computed; the flow note says what the hook made of it
        told = step if step.sent_by_op is None else replace(step, grad_inputs=step.sent_by_op)
        ctx = _context(recording, told)
        found = _formula(ctx)
        explanation = _generic(recording, told) if found is None else _chain_rule(ctx, *found)
    extra = ""
    if step.nonfinite_origin:
        extra += " " + _nonfinite_text(recording, step)
    if not step.flow_ok:
        extra += f" Flow check: {step.flow_note}."
    elif not step.flow_checked:
        extra += f" Flow check {step.flow_note}."
    if extra:
        text = explanation.text + extra
        explanation = Explanation(text, explanation.op, explanation.formula, explanation.checked)
    return explanation


def _nonfinite_sent(recording: Recording, step: Step) -> list[dict[str, Any]]:
    """Each non-finite gradient the step made: slot, where it went, NaN or Inf."""
    graph = recording.graph
    targets = {edge.slot: edge for edge in graph.out_edges(step.node_id)}
    out = []
    for slot, kind in step.nonfinite_origin:
        edge = targets.get(slot)
        to = "off the graph" if edge is None or edge.dst is None else _target(graph, edge)
        out.append({"slot": slot, "to": to, "kind": kind})
    return out


def _nonfinite_text(recording: Recording, step: Step) -> str:
    """'Inf first appears here: SqrtBackward0 sent Inf to AccumulateGrad(x) (input 0),
    although everything it received was finite.'"""
    sent = _nonfinite_sent(recording, step)
    kinds = [kind for kind in ("NaN", "Inf") if any(kind in s["kind"] for s in sent)]
    verb = "appear" if len(kinds) > 1 else "appears"
    where = ", ".join(f"{s['kind']} to {s['to']} (input {s['slot']})" for s in sent)
    return (
        f"{' and '.join(kinds)} first {verb} here: {step.type_name} sent {where}, although "
        "everything it received was finite."
    )


def _seed_text(recording: Recording) -> str:
    graph = recording.graph
    root = _root_name(graph)
    parts = []
    for (node_id, nr), value in recording.seeds.items():
        node = graph.node(node_id)
        name = _tensor_name(graph, node_id, nr) or _leaf_name(graph, node_id)
        what = f"∂{name}/∂{name} = {show(value)}" if name and root == name else show(value)
        made = f", the node that made {name}" if name and not node.is_accumulate_grad else ""
        parts.append(f"the seed {what} enters {node.type_name}{made}")
    text = "; ".join(parts) or "no seed gradient"
    return text[0].upper() + text[1:] + "."


def narrate(recording: Recording, index: int) -> str:
    """One or two sentences for frame ``index``."""
    return explain_step(recording, index).text


def forward_text(recording: Recording, node_id: str) -> str | None:
    """The forward op and source line a node came from (recorded under ``watch()``)."""
    op = recording.forward_op(node_id)
    if op is None:
        return None
    if op.line is None:
        return op.name
    return f"{op.name} at {op.line.short()}: {op.line.text.strip()}"


def describe_step(recording: Recording, index: int) -> dict[str, Any]:
    """The side panel's data for frame ``index``: plain strings only."""
    explanation = explain_step(recording, index)
    if index == 0:
        return {
            "index": 0,
            "node": None,
            "type": "seed",
            "forward": None,
            "op": "seed",
            "narration": explanation.text,
            "formula": [],
            "checked": True,
            "received": [],
            "sent": [],
            "flow_ok": True,
            "hooks": [],
            "flow_checked": True,
            "nonfinite": [],
        }
    step = recording.steps[index - 1]
    graph = recording.graph
    sent = []
    for edge in graph.out_edges(step.node_id):
        value = step.grad_inputs[edge.slot] if edge.slot < len(step.grad_inputs) else None
        target = "off the graph" if edge.dst is None else _target(graph, edge)
        sent.append({"slot": edge.slot, "to": target, "value": value_text(value)})
    return {
        "index": index,
        "node": step.node_id,
        "type": step.type_name,
        "forward": forward_text(recording, step.node_id),
        "op": explanation.op,
        "narration": explanation.text,
        "formula": list(explanation.formula),
        "checked": explanation.checked,
        "received": [value_text(g) for g in step.grad_outputs],
        "sent": sent,
        "flow_ok": step.flow_ok,
        "hooks": [change.text() for change in step.hook_changes],
        "flow_checked": step.flow_checked,
        "nonfinite": _nonfinite_sent(recording, step),
    }
