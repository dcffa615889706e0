"""Random expression graphs for the property tests, as instruction lists that replay exactly.

A ``Program`` is plain data: leaf specs, then ops that each read earlier values by index
and append their results, then the values summed into a scalar root. ``build`` replays it
on fresh tensors, so the same graph can be built twice (once plain, once under gradviz)
and a failing case can be pinned as an ``@example``. ``programs()`` draws only programs
that PyTorch runs: it replays each op as it draws it (tiny tensors) and keeps the op only
if it ran and its results are finite and moderate, so later ops see real shapes, dtypes
and contiguity.

No op ever writes into a value that is already in the pool: in-place ops (``mul_``,
``add_``, ``relu_``, ``y[0] = z``, a scaled slice) act on a fresh ``clone()``. Writing
into a tensor that an earlier op saved for backward is refused by PyTorch itself
("modified by an inplace operation"), and in-place ops on leaves that require grad are
refused at once, so the generator stays clear of both.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from hypothesis import strategies as st

__all__ = ["Built", "Leaf", "Op", "Program", "build", "programs"]

DTYPES = {"float32": torch.float32, "float64": torch.float64}
LEAF_SHAPES: tuple[tuple[int, ...], ...] = (
    (),
    (3,),
    (2,),
    (2, 3),
    (1, 3),
    (2, 1),
    (3, 3),
    (3, 2),
)
MAX_ABS = 1e3  # values stay this small, so gradients stay finite in float32
MAX_NUMEL = 64
MAX_NDIM = 3
SCALARS = (-3.0, -1.0, 0.5, 2.0)
SPECIALS = (None, math.nan, math.inf, -math.inf)


@dataclass(frozen=True)
class Leaf:
    """A leaf tensor (``requires_grad``) or a constant; ``grid`` rounds its values to
    halves, so ties (``maximum``, ``amax``) and zeros (``relu``, ``abs``) happen."""

    shape: tuple[int, ...]
    dtype: str
    requires_grad: bool
    seed: int
    grid: bool = False
    special: float | None = None  # nan or inf as the first value: a diverging model


@dataclass(frozen=True)
class Op:
    """``name`` applied to the values at ``args`` with ``params``; appends its results."""

    name: str
    args: tuple[int, ...]
    params: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Program:
    leaves: tuple[Leaf, ...]
    ops: tuple[Op, ...]
    root: tuple[int, ...]  # values summed (each with .sum()) into the scalar root


@dataclass
class Built:
    """One replay: the leaf tensors (constants included), every value, and the root."""

    leaves: list[torch.Tensor]
    values: list[torch.Tensor]
    root: torch.Tensor

    @property
    def grad_leaves(self) -> list[torch.Tensor]:
        return [leaf for leaf in self.leaves if leaf.requires_grad]


# -- replay ----------------------------------------------------------------------------------
def make_leaf(spec: Leaf) -> torch.Tensor:
    generator = torch.Generator().manual_seed(spec.seed)
    values = torch.rand(spec.shape, generator=generator, dtype=DTYPES[spec.dtype]) * 4 - 2
    if spec.grid:
        values = (values * 2).round() / 2
    if spec.special is not None and values.numel():
        values.view(-1)[0] = spec.special
    return values.requires_grad_(spec.requires_grad)


def _clone_then(method: str) -> Callable[[list[torch.Tensor], Op], list[torch.Tensor]]:
    def apply(values: list[torch.Tensor], op: Op) -> list[torch.Tensor]:
        out = values[op.args[0]].clone()
        getattr(out, method)(*(values[i] for i in op.args[1:]))
        return [out]

    return apply


def _set_first_row(values: list[torch.Tensor], op: Op) -> list[torch.Tensor]:
    out = values[op.args[0]].clone()
    out[0] = values[op.args[1]]  # CopySlices
    return [out]


def _scale_tail(values: list[torch.Tensor], op: Op) -> list[torch.Tensor]:
    out = values[op.args[0]].clone()
    out[1:].mul_(op.params[0])  # an in-place op on a view: CopySlices around MulBackward
    return [out]


def _one(fn: Callable[..., torch.Tensor]) -> Callable[[list[torch.Tensor], Op], list[torch.Tensor]]:
    def apply(values: list[torch.Tensor], op: Op) -> list[torch.Tensor]:
        return [fn(*(values[i] for i in op.args), *op.params)]

    return apply


def _many(
    fn: Callable[..., tuple[torch.Tensor, ...]],
) -> Callable[[list[torch.Tensor], Op], list[torch.Tensor]]:
    def apply(values: list[torch.Tensor], op: Op) -> list[torch.Tensor]:
        return list(fn(*(values[i] for i in op.args), *op.params))

    return apply


APPLY: dict[str, Callable[[list[torch.Tensor], Op], list[torch.Tensor]]] = {
    # unary
    "sin": _one(torch.sin),
    "exp": _one(lambda x: torch.exp(torch.tanh(x))),  # exp of a bounded input
    "tanh": _one(torch.tanh),
    "relu": _one(torch.relu),
    "neg": _one(torch.neg),
    "abs": _one(torch.abs),
    "square": _one(lambda x: x.pow(2)),
    "sigmoid": _one(torch.sigmoid),
    "soft_sqrt": _one(lambda x: torch.sqrt(x * x + 1)),
    "detach": _one(lambda x: x.detach()),
    # Python scalars
    "add_scalar": _one(lambda x, c: x + c),
    "mul_scalar": _one(lambda x, c: x * c),
    "rsub_scalar": _one(lambda x, c: c - x),
    "div_scalar": _one(lambda x, c: x / c),
    # binary, broadcasting
    "add": _one(torch.add),
    "sub": _one(torch.sub),
    "mul": _one(torch.mul),
    "div": _one(lambda x, y: x / (1 + y * y)),  # a denominator that is never near 0
    "maximum": _one(torch.maximum),
    "matmul": _one(torch.matmul),
    "matmul_t": _one(lambda x, y: x @ y.transpose(-1, -2)),  # (a, k) @ (k, b): matrix products
    # reductions
    "sum_dim": _one(lambda x, dim, keepdim: x.sum(dim, keepdim=keepdim)),
    "mean": _one(torch.mean),
    "amax": _one(lambda x, dim: x.amax(dim)),
    "sum_all": _one(torch.sum),
    # views and slices
    "t": _one(lambda x: x.t()),
    "transpose": _one(lambda x, a, b: x.transpose(a, b)),
    "reshape": _one(lambda x, shape: x.reshape(shape)),
    "view_flat": _one(lambda x: x.view(-1)),
    "tail": _one(lambda x: x[1:]),
    "first_column": _one(lambda x: x[:, 0]),
    "unsqueeze": _one(torch.unsqueeze),
    "expand": _one(lambda x, shape: x.expand(shape)),
    "select": _one(torch.select),
    "narrow": _one(torch.narrow),
    # several outputs of one node
    "unbind": _many(torch.unbind),
    "split": _many(lambda x, size, dim: x.split(size, dim)),
    "chunk": _many(lambda x, n, dim: x.chunk(n, dim)),
    "max_dim": _one(lambda x, dim: x.max(dim).values),
    "topk": _one(lambda x, k, dim: x.topk(k, dim).values),
    # in-place on a fresh clone
    "mul_": _clone_then("mul_"),
    "add_": _clone_then("add_"),
    "relu_": _clone_then("relu_"),
    "set_first_row": _set_first_row,
    "scale_tail": _scale_tail,
}


def apply(values: list[torch.Tensor], op: Op) -> list[torch.Tensor]:
    """The op's results (the pool itself is never changed: in-place ops work on clones)."""
    return APPLY[op.name](values, op)


def make_root(values: list[torch.Tensor], indices: tuple[int, ...]) -> torch.Tensor:
    root = values[indices[0]].sum()
    for index in indices[1:]:
        root = root + values[index].sum()
    return root


def build(program: Program) -> Built:
    """Replay ``program`` on fresh tensors: same values, same graph, every time."""
    leaves = [make_leaf(spec) for spec in program.leaves]
    values = list(leaves)
    for op in program.ops:
        values.extend(apply(values, op))
    return Built(leaves, values, make_root(values, program.root))


# -- drawing ---------------------------------------------------------------------------------
def _shape(draw: st.DrawFn, x: torch.Tensor, name: str) -> tuple[Any, ...] | None:
    """The params of a shape-changing view, or None where it does not apply."""
    if name == "reshape":
        if x.numel() % 2 == 0 and x.numel() > 2 and draw(st.booleans()):
            return ((2, -1),)
        return ((-1,),)
    if name == "expand":
        shape = [draw(st.sampled_from((2, 3))) if n == 1 else n for n in x.shape]
        if x.ndim < MAX_NDIM and draw(st.booleans()):
            shape.insert(0, 2)
        return (tuple(shape),)
    return None


def _dim(draw: st.DrawFn, x: torch.Tensor) -> int:
    return draw(st.integers(0, x.ndim - 1))


def _params(draw: st.DrawFn, x: torch.Tensor, name: str) -> tuple[Any, ...] | None:
    """Draw the params of a one-input op on ``x``; None when the op does not fit ``x``."""
    needs_dim = {"sum_dim", "amax", "select", "narrow", "unbind", "split", "chunk", "max_dim"}
    sliced = needs_dim | {"topk", "transpose", "tail", "first_column", "scale_tail"}
    if name in sliced and (x.ndim == 0 or (name in ("transpose", "first_column") and x.ndim < 2)):
        return None
    if name in ("add_scalar", "mul_scalar", "rsub_scalar", "div_scalar", "scale_tail"):
        return (draw(st.sampled_from(SCALARS)),)
    if name in ("reshape", "expand"):
        return _shape(draw, x, name)
    if name == "sum_dim":
        return (_dim(draw, x), draw(st.booleans()))
    if name in ("amax", "max_dim", "unbind"):
        return (_dim(draw, x),)
    if name == "transpose":
        return (_dim(draw, x), _dim(draw, x))
    if name == "unsqueeze":
        return (draw(st.integers(0, x.ndim)),)
    if name == "select":
        dim = _dim(draw, x)
        return (dim, draw(st.integers(0, max(x.shape[dim] - 1, 0))))
    if name == "narrow":
        dim = _dim(draw, x)
        start = draw(st.integers(0, max(x.shape[dim] - 1, 0)))
        return (dim, start, draw(st.integers(1, max(x.shape[dim] - start, 1))))
    if name == "split":
        return (draw(st.integers(1, 2)), _dim(draw, x))
    if name == "chunk":
        return (2, _dim(draw, x))
    if name == "topk":
        dim = _dim(draw, x)
        return (draw(st.integers(1, max(x.shape[dim], 1))), dim)
    if name == "t" and x.ndim > 2:
        return None
    if name == "view_flat" and not x.is_contiguous():
        return None
    return ()


BINARY = (
    "add",
    "sub",
    "mul",
    "div",
    "maximum",
    "matmul",
    "matmul_t",
    "mul_",
    "add_",
    "set_first_row",
)
UNARY = tuple(name for name in APPLY if name not in BINARY)


def _fits(values: list[torch.Tensor], op: Op, special: bool) -> list[torch.Tensor] | None:
    """The op's results if PyTorch runs it and they are small, moderate and finite
    (``special``: non-finite values may spread, they come from the leaves)."""
    try:
        results = apply(values, op)
    except (RuntimeError, IndexError):  # shapes or dtypes that do not go together
        return None
    for result in results:
        if result.numel() > MAX_NUMEL or result.ndim > MAX_NDIM:
            return None
        finite = result.detach()[result.detach().isfinite()]
        if finite.numel() and not bool(finite.abs().amax() <= MAX_ABS):
            return None
        if not special and finite.numel() != result.numel():
            return None
    return results


@st.composite
def leaves(draw: st.DrawFn, special: bool = False) -> tuple[Leaf, ...]:
    def one(requires_grad: bool) -> Leaf:
        return Leaf(
            shape=draw(st.sampled_from(LEAF_SHAPES)),
            dtype=draw(st.sampled_from(tuple(DTYPES))),
            requires_grad=requires_grad,
            seed=draw(st.integers(0, 2**16)),
            grid=draw(st.booleans()),
            special=draw(st.sampled_from(SPECIALS)) if special else None,
        )

    first = one(True)  # at least one leaf requires grad
    rest = draw(st.lists(st.booleans(), max_size=3))
    return (first, *(one(flag) for flag in rest))


@st.composite
def programs(draw: st.DrawFn, max_ops: int = 14, special: bool = False) -> Program:
    """Random valid programs: 1-4 leaves, up to ``max_ops`` ops, a scalar root.
    ``special``: leaves may hold a nan or an infinity, as in a model that diverged."""
    specs = draw(leaves(special))
    values: list[torch.Tensor] = [make_leaf(spec) for spec in specs]
    ops: list[Op] = []
    for _ in range(draw(st.integers(2, max_ops))):
        # the newest value is the likeliest operand: deeper graphs that reach the root
        newest = draw(st.booleans())
        first = len(values) - 1 if newest else draw(st.integers(0, len(values) - 1))
        name = draw(st.sampled_from(UNARY + BINARY))
        x = values[first]
        if name in BINARY:  # a second operand that fits (matmul, in-place ops are picky)
            fitting = {}
            for other in range(len(values)):
                results = _fits(values, Op(name, (first, other)), special)
                if results is not None:
                    fitting[other] = results
            if not fitting:
                continue
            op = Op(name, (first, draw(st.sampled_from(sorted(fitting)))))
            results = fitting[op.args[1]]
        else:
            params = _params(draw, x, name)
            if params is None:
                continue
            op = Op(name, (first,), params)
            results = _fits(values, op, special)
        if results is not None:
            ops.append(op)
            values.extend(results)
    live = [i for i, value in enumerate(values) if value.requires_grad]
    extra = draw(st.lists(st.sampled_from(live), max_size=3))
    root = tuple(dict.fromkeys([live[-1], *extra]))
    return Program(specs, tuple(ops), root)
