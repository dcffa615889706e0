"""Formulas of element-wise ops (add ... relu): each input gets g times a local derivative."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import torch

from gradviz.explain.terms import (
    Formula,
    Term,
    _Ctx,
)
from gradviz.explain.text import (
    Tensor,
    _is_call,
    _paren,
    _shape,
)
from gradviz.model.values import format_number


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


def _sigmoid_local(r: Tensor) -> Tensor:
    return r * (1 - r)


# -- the table: backward node type -> formula
ELEMENTWISE: dict[str, Callable[[_Ctx], Formula]] = {
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
}
