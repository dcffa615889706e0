"""Formulas of matrix products (mm, addmm, mv, dot): g times the other factor, transposed."""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from gradviz.explain.formulas.elementwise import _alpha_text
from gradviz.explain.formulas.moves import _safe
from gradviz.explain.terms import (
    Formula,
    Term,
    _Ctx,
)
from gradviz.explain.text import (
    Tensor,
    _paren,
    _transposed,
)
from gradviz.model.values import format_number

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


# -- the table: backward node type -> formula
MATRIX: dict[str, Callable[[_Ctx], Formula]] = {
    "MmBackward0": _mm,
    "BmmBackward0": _mm,
    "AddmmBackward0": _addmm,
    "MvBackward0": _mv,
    "DotBackward0": _dot,
}
