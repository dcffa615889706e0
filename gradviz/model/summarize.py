"""Cheap, detached summaries of tensor values (no ``std``: it is 15-100x slower on CPU).

Small tensors (up to ``SMALL_NUMEL`` values) are read once with ``tolist()`` and summed in
Python. Bigger float32/float64 tensors take three reductions (``aminmax``, ``sum`` and a
``dot`` of the tensor with itself for the norm) and four ``item()`` reads: each torch call
costs about a microsecond of Python overhead, which dominates for the many small
gradients of a backward pass. Dense CPU ones are read through a NumPy view of the same
memory (no copy), whose calls cost a third of torch's and whose BLAS ``dot`` (for the
squares, and for the sum of up to ``NUMPY_MAX`` values) is faster than torch's; NumPy runs
a sum only where no float overflow can occur (else it would warn): infinities and NaNs
are summed by torch.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

try:  # NumPy is optional: torch works without it, and so does the torch path below
    import numpy

    torch.zeros(1).numpy()
except (ImportError, RuntimeError):  # pragma: no cover - depends on the environment
    numpy = None  # type: ignore[assignment]

from gradviz.model.lowmem import chunked_stats, expanded_base
from gradviz.model.values import Scalar, Summary

__all__ = [
    "SMALL_NUMEL",
    "covers",
    "dtype_name",
    "plain_values",
    "shape_of",
    "sparse_nbytes",
    "summarize",
    "summarize_view",
]

SMALL_NUMEL = 16  # tensors up to this size keep every value
PREVIEW = 6  # bigger tensors keep this many leading values

NUMPY_MAX = 1 << 16  # sums above this size: torch.sum beats dot(x, ones)
_SPLIT_MINMAX = 1 << 20  # from this size amin() + amax() take ~20% less than aminmax()

_DTYPE_NAMES: dict[torch.dtype, str] = {}
_FAST_DTYPES = (torch.float32, torch.float64)  # dot() is exact enough and one pass
# largest max(|min|, |max|)**2 * numel for which sums and squares cannot overflow
_SAFE_SQUARES = {torch.float32: 1e37, torch.float64: 1e306}
_ONES: dict[torch.dtype, Any] = {}  # NUMPY_MAX ones per dtype: sum(x) as dot(x, ones)
_MINIMUM = None if numpy is None else numpy.minimum.reduce
_MAXIMUM = None if numpy is None else numpy.maximum.reduce
# small tensors whose tolist() gives Python bools, ints or floats (the general path's values)
_FLOAT_DTYPES = frozenset((torch.float16, torch.bfloat16, torch.float32, torch.float64))
_SMALL_DTYPES = _FLOAT_DTYPES | {torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32}
_SMALL_DTYPES |= {torch.int64}
_COMPRESSED = (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)


def dtype_name(dtype: torch.dtype) -> str:
    """'float32' for torch.float32 (cached: ``str(dtype)`` builds a new string each time)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


def _plain(values: list[object]) -> tuple[Scalar, ...]:
    out: list[Scalar] = []
    for value in values:
        if isinstance(value, bool | int | float):
            out.append(value)
        else:
            out.append(str(value))
    return tuple(out)


def summarize(tensor: torch.Tensor, small_numel: int = SMALL_NUMEL) -> Summary:
    """All values of a small tensor, or shape, first values, min, max, mean and norm.

    Reductions run on the tensor's own device; only a few numbers reach the CPU. A meta
    tensor has no values to read, nor has a subclass that keeps its values elsewhere
    (``__torch_dispatch__``: a fake tensor, a wrapper of two tensors): their summaries say
    so (``available=False``), as does a tensor whose values torch will not give (a real
    one inside ``FakeTensorMode``). A sparse or nested one is summarized from its stored
    values, a ZeroTensor (no memory, all zeros) as zeros.
    """
    try:
        small = _small_cpu_summary(tensor, small_numel)
        if small is not None:
            return small
        if numpy is not None:
            fast = _dense_cpu_summary(tensor, small_numel)
            if fast is not None:
                return fast
        return _summary_of(tensor, small_numel)
    except RuntimeError:  # under FakeTensorMode even a real tensor's ops make fake ones
        return _unavailable(tensor)


def _small_cpu_summary(tensor: torch.Tensor, small_numel: int) -> Summary | None:
    """The commonest small case with as few tensor calls as it takes: a plain (or
    ``nn.Parameter``) real CPU tensor of 1 to ``small_numel`` values with memory
    of its own (``watch()`` summarizes every bias and scalar it sees). The same numbers as
    the general path, bit for bit; None for every other tensor."""
    dtype = tensor.dtype
    if dtype not in _SMALL_DTYPES:
        return None
    kind = type(tensor)
    if kind is not torch.Tensor and kind is not torch.nn.Parameter:
        return None
    numel = tensor.numel()
    if not 0 < numel <= small_numel or not tensor.is_cpu or tensor.layout != torch.strided:
        return None
    if not tensor.data_ptr():  # a ZeroTensor
        return None
    shape = tuple(tensor.shape)
    flat: list[Any] = tensor.tolist()  # no tensor made: reshape(-1) would cost 4x
    if len(shape) != 1:
        flat = [flat] if not shape else _flattened(flat)
    floats = flat if dtype in _FLOAT_DTYPES else [float(v) for v in flat]
    name = _DTYPE_NAMES.get(dtype) or dtype_name(dtype)
    return _small_summary(shape, name, numel, tuple(flat), floats)


def _flattened(nested: list[Any]) -> list[float]:
    """A nested ``tolist()`` in row-major order."""
    out: list[float] = []
    for item in nested:
        if isinstance(item, list):
            out.extend(_flattened(item))
        else:
            out.append(item)
    return out


def _small_summary(
    shape: tuple[int, ...],
    dtype: str,
    numel: int,
    values: tuple[Scalar, ...],
    floats: list[float],
) -> Summary:
    """Every value of a small real tensor, with its statistics computed in Python."""
    total = sum(floats)
    if math.isfinite(total):  # no NaN and no Inf among them (either would spread)
        nan = inf = False
    else:
        nan = any(v != v for v in floats)
        inf = any(math.isinf(v) for v in floats)
    # Python's min() and max() skip NaN by accident (comparisons are False): say NaN,
    # as torch.aminmax does
    low, high = (math.nan, math.nan) if nan else (min(floats), max(floats))
    norm = float(sum([v * v for v in floats]) ** 0.5)
    return _summary(shape, dtype, numel, values, low, high, total / numel, norm, nan, inf, True)


def _summary_of(tensor: torch.Tensor, small_numel: int) -> Summary:
    """``summarize`` past its fast path."""
    if tensor.is_nested:  # strided or jagged (a subclass of its own)
        return _nested_summary(tensor.detach())
    kind = type(tensor)
    if kind is not torch.Tensor:
        if not _values_inside(kind):
            return _unavailable(tensor)
        # its values, without the subclass's own __torch_function__ (the user's code)
        tensor = tensor.as_subclass(torch.Tensor)
    data = tensor.detach()  # detached: nothing below is recorded by autograd
    numel = data.numel()
    shape = tuple(data.shape)
    dtype = dtype_name(data.dtype)
    if data.is_meta:
        return Summary(shape, dtype, numel, (), False, available=False)
    if data.layout != torch.strided:
        sparse = _sparse_summary(data, small_numel, shape, dtype, numel)
        return dataclasses.replace(sparse, nbytes=sparse_nbytes(data))
    if numel and not data.data_ptr():  # a ZeroTensor: no memory behind its zeros
        return summarize(torch.zeros((), dtype=data.dtype).expand(shape), small_numel)
    if numel <= small_numel:
        if numel == 0:
            return Summary(shape, dtype, numel, (), True)
        floats: list[float]
        if data.dtype in _FAST_DTYPES:  # tolist() gives floats already
            floats = data.reshape(-1).tolist()
            values: tuple[Scalar, ...] = tuple(floats)
        else:
            raw = data.reshape(-1).tolist()
            values = _plain(raw)
            if data.is_complex():
                return _complex_small(shape, dtype, numel, values, raw)
            floats = [float(v) for v in values]
        return _small_summary(shape, dtype, numel, values, floats)
    expanded = expanded_base(data)
    if expanded is not None:  # a broadcast: summarize the memory it repeats (gradviz.model.lowmem)
        return _expanded_summary(data, *expanded, shape, dtype, numel)
    if data.dtype in _FAST_DTYPES:
        contiguous = data.is_contiguous()
        flat = data.view(-1) if contiguous else _dense_flat(data)
        if flat is not None:
            if numpy is not None and data.is_cpu and not data.is_neg():
                return _numpy_summary(data, flat, contiguous, shape, dtype, numel)
            return _torch_summary(data, flat, shape, dtype, numel)
    return _other_summary(data, _plain(_head(data, PREVIEW)), shape, dtype, numel)


_VALUES_INSIDE: dict[type, bool] = {}


def _values_inside(kind: type) -> bool:
    """Whether a tensor subclass holds its values as a plain tensor does (``nn.Parameter``,
    a subclass with only ``__torch_function__``), rather than behind its own
    ``__torch_dispatch__`` (a fake tensor, a wrapper of other tensors). Once per class."""
    inside = _VALUES_INSIDE.get(kind)
    if inside is None:
        own = getattr(kind, "__torch_dispatch__", None)
        inside = _VALUES_INSIDE[kind] = own is getattr(torch.Tensor, "__torch_dispatch__", None)
    return inside


def plain_values(tensor: torch.Tensor) -> bool:
    """Whether torch's ordinary ops reach the tensor's values (what gradviz's analyses
    compute with): not a nested tensor, nor a subclass with its own ``__torch_dispatch__``."""
    kind = type(tensor)
    if kind is torch.Tensor:
        return not tensor.is_nested
    return _values_inside(kind) and not tensor.is_nested


def shape_of(tensor: torch.Tensor) -> tuple[int, ...]:
    """The tensor's sizes as numbers. A nested tensor's ragged sizes are none: it gets its
    padded shape (its number of tensors, then the largest size in each dimension)."""
    if not tensor.is_nested:
        return tuple(tensor.shape)
    pieces = tensor.unbind()
    largest = [max(sizes) for sizes in zip(*(piece.shape for piece in pieces), strict=True)]
    return (len(pieces), *(int(size) for size in largest))


def _unavailable(tensor: torch.Tensor) -> Summary:
    """What gradviz keeps of a tensor whose values it cannot read: shape and dtype."""
    try:
        shape = tuple(int(size) for size in tensor.shape)
    except (RuntimeError, TypeError, ValueError, AttributeError):  # sizes not numbers yet
        shape = ()
    return Summary(shape, dtype_name(tensor.dtype), tensor.numel(), (), False, available=False)


def _nested_summary(data: torch.Tensor) -> Summary:
    """A nested tensor from all its values (its tensors one after the other), with its
    padded shape (``shape_of``) and its true number of values."""
    pieces = [piece.reshape(-1) for piece in data.unbind()]
    numel = sum(piece.numel() for piece in pieces)
    shape = shape_of(data)
    dtype = dtype_name(data.dtype)
    if not pieces or numel == 0:
        return Summary(shape, dtype, numel, (), True)
    inner = summarize(torch.cat(pieces), small_numel=0)
    return Summary(
        shape,
        dtype,
        numel,
        inner.values,
        False,
        inner.min,
        inner.max,
        inner.mean,
        inner.norm,
        inner.nan,
        inner.inf,
        inner.available,
    )


def _dense_cpu_summary(tensor: torch.Tensor, small_numel: int) -> Summary | None:
    """The commonest case first, with as few tensor calls as it takes: a contiguous
    float32/float64 CPU tensor of more than ``small_numel`` values (most gradients of a
    backward pass). The same NumPy reductions as ``_numpy_summary``, so the same numbers
    bit for bit; None for every other tensor (the general path below)."""
    dtype = tensor.dtype
    if dtype is not torch.float32 and dtype is not torch.float64:
        return None
    numel = tensor.numel()
    if numel <= small_numel or not tensor.is_cpu or tensor.layout != torch.strided:
        return None
    contiguous = tensor.is_contiguous()
    order: tuple[int, ...] | None = None  # the dims in memory order, when not contiguous
    if not contiguous:
        # a transposed matrix (TBackward's, a weight's gradient) or a permuted tensor
        # (attention's heads): its memory read in order
        order = _memory_order(tensor)
        if order is None:
            return None
    if tensor.is_neg():
        return None
    if tensor.requires_grad:
        tensor = tensor.detach()
    try:
        whole = tensor.numpy()
    except RuntimeError:  # no memory of its own (a ZeroTensor, a wrapper subclass)
        return None
    # the values in memory order, a view (no copy): the order _dense_flat reads them in
    array = whole.reshape(-1) if order is None else whole.transpose(order).reshape(-1)
    if numel <= NUMPY_MAX:
        low = float(_MINIMUM(array))
        high = float(_MAXIMUM(array))
    else:  # one pass instead of NumPy's two (min and max are exact either way)
        flat = tensor.view(-1) if order is None else tensor.permute(order).view(-1)
        low_t, high_t = torch.aminmax(flat)
        low, high = low_t.item(), high_t.item()
    big = max(-low, high)
    safe = big * big * numel < _SAFE_SQUARES[dtype]  # False for NaN and inf too
    if safe and numel <= NUMPY_MAX:
        ones = _ONES.get(dtype)
        if ones is None:
            ones = _ONES[dtype] = numpy.ones(NUMPY_MAX, dtype=array.dtype)
        total = float(array.dot(ones[:numel]))
        squares = float(array.dot(array))
    else:
        flat = tensor.view(-1) if order is None else tensor.permute(order).view(-1)
        total = flat.sum().item()
        squares = float(array.dot(array)) if safe else torch.dot(flat, flat).item()
    nan, inf = _nonfinite(low, high, array)
    head = array[:PREVIEW] if contiguous else whole.flat[:PREVIEW]  # row-major
    return _summary(
        tuple(tensor.shape),
        _DTYPE_NAMES.get(dtype) or dtype_name(dtype),
        numel,
        tuple(head.tolist()),
        low,
        high,
        total / numel,
        math.sqrt(squares),
        nan,
        inf,
    )


def _memory_order(tensor: torch.Tensor) -> tuple[int, ...] | None:
    """The dims of a dense non-contiguous tensor in memory order (``_dense_flat``'s), or
    None when its values do not fill their memory densely."""
    if tensor.dim() == 2:  # the commonest: a transpose
        return (1, 0) if tensor.t().is_contiguous() else None
    strides = tensor.stride()
    shape = tensor.shape
    order = tuple(sorted(range(len(strides)), key=lambda d: (-strides[d], -shape[d])))
    return order if tensor.permute(order).is_contiguous() else None


_SUMMARY_NEW = object.__new__


def _summary(
    shape: tuple[int, ...],
    dtype: str,
    numel: int,
    values: tuple[Scalar, ...],
    low: float,
    high: float,
    mean: float,
    norm: float,
    nan: bool,
    inf: bool,
    complete: bool = False,
) -> Summary:
    """``Summary(shape, dtype, numel, values, complete, low, high, mean, norm, nan, inf)``
    without the frozen dataclass's ``__init__`` (one ``object.__setattr__`` per field: a
    third of a small gradient's summary)."""
    summary: Summary = _SUMMARY_NEW(Summary)
    summary.__dict__.update(
        shape=shape,
        dtype=dtype,
        numel=numel,
        values=values,
        complete=complete,
        min=low,
        max=high,
        mean=mean,
        norm=norm,
        nan=nan,
        inf=inf,
        available=True,
    )
    return summary


def _nonfinite(low: float, high: float, values: Any) -> tuple[bool, bool]:
    """(has NaN, has Inf) from the min and max, which are NaN when any value is; only
    then are the values (``values``: a NumPy array or a tensor) searched for Inf."""
    if math.isnan(low) or math.isnan(high):
        if isinstance(values, torch.Tensor):
            return True, bool(torch.isinf(values).any())
        return True, bool(numpy.isinf(values).any())
    return False, math.isinf(low) or math.isinf(high)


def _complex_small(
    shape: tuple[int, ...], dtype: str, numel: int, values: tuple[Scalar, ...], raw: list[Any]
) -> Summary:
    """Every complex value (kept exactly as text) and the norm; complex numbers have no
    order, so no min or max, and a complex mean does not fit a float."""
    nan = any(math.isnan(v.real) or math.isnan(v.imag) for v in raw)
    inf = any(math.isinf(v.real) or math.isinf(v.imag) for v in raw)
    norm = math.sqrt(sum(abs(v) ** 2 for v in raw))
    return Summary(shape, dtype, numel, values, True, norm=norm, nan=nan, inf=inf)


def _other_summary(
    data: torch.Tensor, values: tuple[Scalar, ...], shape: tuple[int, ...], dtype: str, numel: int
) -> Summary:
    """Complex, half precision, integer and boolean tensors, and float views that do not fill
    their memory: reductions on the tensor's device, no full-size copy of floats."""
    if data.is_complex():
        norm = float(torch.linalg.vector_norm(data))
        nan = inf = False
        if not math.isfinite(norm):
            nan, inf = bool(torch.isnan(data).any()), bool(torch.isinf(data).any())
        return Summary(shape, dtype, numel, values, False, norm=norm, nan=nan, inf=inf)
    # float64 sums one chunk at a time: no whole-tensor copy (gradviz.model.lowmem)
    low, high, total, norm, nan, inf = chunked_stats(data)
    return Summary(shape, dtype, numel, values, False, low, high, total / numel, norm, nan, inf)


def _expanded_summary(
    data: torch.Tensor,
    base: torch.Tensor,
    repeat: int,
    shape: tuple[int, ...],
    dtype: str,
    numel: int,
) -> Summary:
    """A broadcast tensor from the memory it repeats ``repeat`` times: the same min, max,
    mean, NaN and Inf, the norm times the square root of ``repeat``."""
    inner = summarize(base)
    norm = None if inner.norm is None else inner.norm * math.sqrt(repeat)
    return Summary(
        shape,
        dtype,
        numel,
        _plain(_head(data, PREVIEW)),
        False,
        inner.min,
        inner.max,
        inner.mean,
        norm,
        inner.nan,
        inner.inf,
        inner.available,
    )


def sparse_nbytes(tensor: torch.Tensor) -> int | None:
    """The bytes a sparse tensor stores: the storages of its indices and values (COO; CSR,
    CSC, BSR, BSC: compressed and plain indices); None for a strided tensor or a layout
    without them."""

    def size(*parts: torch.Tensor) -> int:
        storages: dict[object, int] = {}
        for index, part in enumerate(parts):
            storage = part.untyped_storage()
            pointer = storage.data_ptr()  # 0 without memory (empty, meta): not shared
            storages[pointer or ("part", index)] = storage.nbytes()
        return sum(storages.values())

    layout = tensor.layout
    try:
        if layout == torch.sparse_coo:
            return size(tensor._indices(), tensor._values())
        if layout in (torch.sparse_csr, torch.sparse_bsr):
            return size(tensor.crow_indices(), tensor.col_indices(), tensor.values())
        if layout in (torch.sparse_csc, torch.sparse_bsc):
            return size(tensor.ccol_indices(), tensor.row_indices(), tensor.values())
    except (RuntimeError, NotImplementedError):  # pragma: no cover - a tensor subclass
        return None
    return None


def _sparse_summary(
    data: torch.Tensor, small_numel: int, shape: tuple[int, ...], dtype: str, numel: int
) -> Summary:
    """A sparse tensor from its stored values (the others are zeros): small ones in full."""
    if numel <= small_numel:
        return summarize(data.to_dense(), small_numel)
    if data.layout == torch.sparse_coo:
        stored = data.coalesce().values()  # duplicates summed, as the tensor means them
    elif data.layout in _COMPRESSED:
        stored = data.values()
    else:
        return Summary(shape, dtype, numel, (), False, available=False)
    if stored.numel() == 0:
        return summarize(torch.zeros((), dtype=data.dtype, device=data.device).expand(shape))
    dense = _other_summary(stored, (), shape, dtype, numel)
    if dense.min is None or dense.max is None or dense.mean is None:  # complex: the norm
        return dense
    zeros = stored.numel() < numel  # values not stored are zeros
    return Summary(
        shape,
        dtype,
        numel,
        (),
        False,
        min(dense.min, 0.0) if zeros else dense.min,
        max(dense.max, 0.0) if zeros else dense.max,
        dense.mean,  # the sum of the stored values over all numel values
        dense.norm,
        dense.nan,
        dense.inf,
    )


def _numpy_summary(
    data: torch.Tensor,
    flat: torch.Tensor,
    contiguous: bool,
    shape: tuple[int, ...],
    dtype: str,
    numel: int,
) -> Summary:
    """A dense float tensor on the CPU, through a NumPy view of its memory (no copy)."""
    array = flat.numpy()
    # the ufuncs' own reduce: what array.min() runs, without NumPy's Python wrapper
    low = float(_MINIMUM(array))
    high = float(_MAXIMUM(array))
    big = max(-low, high)
    safe = big * big * numel < _SAFE_SQUARES[data.dtype]  # False for NaN and inf too
    if safe and numel <= NUMPY_MAX:
        ones = _ONES.get(data.dtype)
        if ones is None:
            ones = _ONES[data.dtype] = numpy.ones(NUMPY_MAX, dtype=array.dtype)
        total = float(array.dot(ones[:numel]))
    else:
        total = flat.sum().item()  # torch's sum: faster on big tensors, no NumPy warnings
    # BLAS dot for the squares (NumPy's is faster than torch's); it would warn on overflow
    squares = float(array.dot(array)) if safe else torch.dot(flat, flat).item()
    head = array if contiguous else data.numpy().flat
    nan, inf = _nonfinite(low, high, array)
    values = tuple(head[:PREVIEW].tolist())
    return _summary(
        shape, dtype, numel, values, low, high, total / numel, math.sqrt(squares), nan, inf
    )


def _torch_summary(
    data: torch.Tensor, flat: torch.Tensor, shape: tuple[int, ...], dtype: str, numel: int
) -> Summary:
    """A dense float tensor anywhere: three reductions and four item() reads."""
    if numel >= _SPLIT_MINMAX:  # two plain passes beat aminmax's one on big tensors
        low, high = flat.amin().item(), flat.amax().item()
    else:
        low_t, high_t = torch.aminmax(flat)
        low, high = low_t.item(), high_t.item()
    nan, inf = _nonfinite(low, high, flat)
    return Summary(
        shape,
        dtype,
        numel,
        _plain(_head(data, PREVIEW)),
        False,
        low,
        high,
        flat.sum().item() / numel,
        math.sqrt(torch.dot(flat, flat).item()),
        nan,
        inf,
    )


def covers(view: torch.Tensor, base: torch.Tensor) -> bool:
    """True when ``view`` is a dense float view of exactly ``base``'s memory (``base``
    itself, a transpose, a permute, a reshape): then its values in memory order, hence
    its min, max, mean and norm as ``summarize`` computes them, are ``base``'s bit for bit."""
    if view is base:
        return view.dtype in _FAST_DTYPES and view.layout == torch.strided and view.is_contiguous()
    return (
        type(view) is type(base) is torch.Tensor  # no subclass: a fake one has no memory
        and view.dtype in _FAST_DTYPES
        and view.dtype == base.dtype
        and view.layout == torch.strided
        and base.layout == torch.strided
        and view.numel() == base.numel()
        and view.data_ptr() == base.data_ptr() != 0  # 0: no memory (a ZeroTensor)
        and view.is_neg() == base.is_neg()
        and view.is_cpu == base.is_cpu
        and base.is_contiguous()
        and _dense_flat(view.detach()) is not None
    )


def summarize_view(view: torch.Tensor, summary: Summary) -> Summary:
    """``summarize(view)`` from ``summary``, the summary of another view of the same memory
    (both must ``covers()`` it): only the shape and the first values are the view's own."""
    data = view.detach()
    if numpy is not None and data.is_cpu and not data.is_neg():
        values = tuple(data.numpy().flat[:PREVIEW].tolist())
    else:
        values = _plain(_head(data, PREVIEW))
    return Summary(
        tuple(data.shape),
        summary.dtype,
        summary.numel,
        values,
        False,
        summary.min,
        summary.max,
        summary.mean,
        summary.norm,
        summary.nan,
        summary.inf,
    )


def _head(data: torch.Tensor, count: int) -> list[object]:
    """The first ``count`` values in row-major order, without copying a whole
    non-contiguous tensor (``reshape(-1)`` would)."""
    part = data
    while part.dim() > 1:
        inner = part.numel() // part.shape[0]
        if inner >= count:
            part = part[0]
        else:
            part = part[: -(-count // inner)]
            break
    return part.reshape(-1)[:count].tolist()


def _dense_flat(data: torch.Tensor) -> torch.Tensor | None:
    """The values as one 1-D view in memory order (the order does not matter for min, max,
    sum and norm), or None when they do not fill their memory densely."""
    if data.is_contiguous():
        return data.view(-1)
    if data.dim() == 2:  # the commonest: a transpose (the sort below gives the same order)
        swapped = data.t()
        return swapped.view(-1) if swapped.is_contiguous() else None
    strides = data.stride()
    order = sorted(range(data.dim()), key=lambda d: (-strides[d], -data.shape[d]))
    permuted = data.permute(order)
    return permuted.view(-1) if permuted.is_contiguous() else None
