"""Summaries without a whole-tensor copy: broadcast tensors and low-precision ones.

A ``.sum()`` loss sends ``grad.expand(shape)`` backward: a tensor of millions of values
held in one number (stride 0). Its statistics are those of the memory it expands (the
norm scaled by the square root of the repeat), so that memory is summarized, never the
expansion. float16, bfloat16, integer and boolean tensors, and float views that do not
fill their memory, are summed in float64 one chunk at a time (``CHUNK`` values): torch's
``sum(dtype=float64)`` on the CPU converts the whole tensor first.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch

__all__ = ["CHUNK", "chunked_stats", "expanded_base"]

CHUNK = 1 << 18  # values per float64 chunk: 2 MiB


def expanded_base(data: torch.Tensor) -> tuple[torch.Tensor, int] | None:
    """The memory a broadcast tensor repeats and how often, or None when no dimension of
    more than one value has stride 0."""
    shape, strides = data.shape, data.stride()
    if not any(stride == 0 and size > 1 for size, stride in zip(shape, strides, strict=True)):
        return None
    base = data
    for dim, (size, stride) in enumerate(zip(shape, strides, strict=True)):
        if stride == 0 and size > 1:
            base = base.narrow(dim, 0, 1)
    return base, data.numel() // max(base.numel(), 1)


def _chunks(data: torch.Tensor) -> Iterator[torch.Tensor]:
    """The values as views of at most ``CHUNK`` values (slices along the first dimension,
    never a reshape, which would copy a tensor that does not fill its memory)."""
    if data.numel() <= CHUNK or data.dim() == 0:
        yield data
        return
    inner = data.numel() // data.shape[0]
    if inner == 0:
        return
    rows = max(1, CHUNK // inner)
    for start in range(0, data.shape[0], rows):
        part = data[start : start + rows]
        if rows == 1 and inner > CHUNK:
            yield from _chunks(part[0])
        else:
            yield part


def chunked_stats(data: torch.Tensor) -> tuple[float, float, float, float, bool, bool]:
    """min, max, sum and norm of a real tensor, summed in float64 chunk by chunk; and
    whether it holds NaN or Inf. The reductions read each chunk where it lies (floats) or
    from a float64 copy of at most ``CHUNK`` values (integers, booleans)."""
    low, high = math.inf, -math.inf
    total = squares = 0.0
    nan = inf = False
    floating = data.is_floating_point()
    for view in _chunks(data):
        chunk = view if floating else view.to(torch.float64)
        lo_t, hi_t = torch.aminmax(chunk)
        lo, hi = float(lo_t), float(hi_t)
        if math.isnan(lo) or math.isnan(hi):
            nan = True
            inf = inf or bool(torch.isinf(chunk).any())
        else:
            low, high = min(low, lo), max(high, hi)
            inf = inf or math.isinf(lo) or math.isinf(hi)
        total += float(chunk.sum(dtype=torch.float64))
        squares += float(torch.linalg.vector_norm(chunk, dtype=torch.float64)) ** 2
    if nan:
        low = high = math.nan
    return low, high, total, math.sqrt(squares), nan, inf
