"""Recorded values as numbers and text: what the narration shows of a gradient."""

from __future__ import annotations

import re
from typing import Any

import torch

from gradviz.model.recording import GradValue, value_text
from gradviz.model.values import Summary, format_number

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


def _as_sent(value: object) -> Tensor | None:
    """A gradient a node sent, as ``_agree`` checks it: a real tensor as recorded (``_agree``
    converts to float64 only the elements it checks: the same numbers, since the conversion
    is exact and element by element; a TransformerEncoder's weight gradients were copied
    whole), anything else as ``_as_tensor`` gives it."""
    plain = isinstance(value, Tensor) and value.layout == torch.strided
    if isinstance(value, Tensor) and plain and not (value.is_complex() or value.is_meta):
        return value.detach()
    return _as_tensor(value)


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
    if expected.dtype == torch.float64 and sent.dtype != torch.float64:
        sent = sent.to(torch.float64)  # a recorded tensor (``_as_sent``): its checked elements
    plain = all(t.dtype == torch.float64 and t.device.type == "cpu" for t in (expected, sent))
    if not plain or not _HAS_NUMPY:
        return _agree_torch(expected, sent)
    return _agree_float64(expected.detach().numpy(), sent.detach().numpy())


try:  # an optional dependency: without it the check runs in torch
    import numpy as np

    _HAS_NUMPY = True
except ImportError:  # pragma: no cover - the bare-venv wheel test runs this
    _HAS_NUMPY = False


def _agree_float64(expected: Any, sent: Any) -> bool:
    """``_agree_torch`` in NumPy, the same float64 arithmetic (what ``torch.allclose``
    computes): a formula is checked some 240 times a TransformerEncoder replay, and torch's
    per-call overhead made it 50-60 ms of the save, NumPy's 30 ms."""
    expected, sent = expected.reshape(-1), sent.reshape(-1)
    size_e, size_s = np.abs(expected), np.abs(sent)
    finite_e, finite_s = np.isfinite(expected), np.isfinite(sent)
    scale = max(
        float(size_e.max(where=finite_e, initial=0.0)),
        float(size_s.max(where=finite_s, initial=0.0)),
    )
    with np.errstate(invalid="ignore", over="ignore"):
        near = np.abs(expected - sent) <= 1e-4 * scale + 1e-4 * size_s
    both_nan = np.isnan(expected) & np.isnan(sent)
    close = (expected == sent) | both_nan | (finite_e & finite_s & near)
    return bool(close.all())


def _agree_torch(expected: Tensor, sent: Tensor) -> bool:
    # float32 rounding is relative to the biggest finite entry (cancellation in sums and
    # products); NaN and Inf must sit where the formula puts them
    both = torch.cat([expected.reshape(-1), sent.reshape(-1)]).abs()
    finite = both[both.isfinite()]
    scale = float(finite.max()) if finite.numel() else 0.0
    return bool(torch.allclose(expected, sent, rtol=1e-4, atol=1e-4 * scale, equal_nan=True))
