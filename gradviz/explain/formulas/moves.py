"""Formulas of ops that move gradients around (sum, view, transpose, select, unbind ...)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from gradviz.explain.terms import (
    Formula,
    Term,
    _Ctx,
)
from gradviz.explain.text import (
    Tensor,
    _paren,
    _shape,
)


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


# -- the table: backward node type -> formula
MOVES: dict[str, Callable[[_Ctx], Formula]] = {
    "SumBackward0": lambda ctx: _sum(ctx, mean=False),
    "SumBackward1": lambda ctx: _sum(ctx, mean=False),
    "MeanBackward0": lambda ctx: _sum(ctx, mean=True),
    "MeanBackward1": lambda ctx: _sum(ctx, mean=True),
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
