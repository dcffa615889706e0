"""The fast path of ``summarize`` (contiguous or transposed float32/float64 CPU tensors,
most gradients of a backward pass) gives the summaries of the general path bit for bit,
without copying the tensor."""

from __future__ import annotations

import math

import pytest
import torch

from gradviz.model import summarize as summaries
from gradviz.model.summarize import summarize
from gradviz.model.values import Summary
from tests.model.test_lowmem import peak_growth_mib


def general(tensor: torch.Tensor) -> Summary:
    """What ``summarize`` computed before its fast path: the NumPy summary of the values
    in memory order (``_dense_flat``)."""
    data = tensor.detach()
    flat = summaries._dense_flat(data)
    assert flat is not None
    shape, dtype = tuple(data.shape), summaries.dtype_name(data.dtype)
    return summaries._numpy_summary(data, flat, data.is_contiguous(), shape, dtype, data.numel())


def cases() -> list[torch.Tensor]:
    torch.manual_seed(0)
    out = []
    for dtype in (torch.float32, torch.float64):
        for shape in ((17,), (16, 64), (64, 64), (300, 2), (1, 50), (50, 1), (70_000,)):
            out.append(torch.randn(shape, dtype=dtype))
        out.append(torch.randn(64, 16, dtype=dtype).t())  # TBackward's transpose
        out.append(torch.randn(1, 40, dtype=dtype).t())
        out.append(torch.randn(3, 4, 5, dtype=dtype).permute(2, 0, 1))  # the general path
    with_nan = torch.randn(1000)
    with_nan[3] = math.nan
    with_inf = torch.randn(40, 30)
    with_inf[2, 7] = -math.inf
    big_nan = torch.randn(70_000)  # past NUMPY_MAX: torch's aminmax, sum and dot
    big_nan[5] = math.nan
    big_inf = torch.randn(300, 300)
    big_inf[7, 2] = math.inf
    out += [with_nan, with_inf, with_inf.t(), torch.randn(1000) * 1e18]
    out += [big_nan, big_inf, big_inf.t(), torch.randn(70_000) * 1e18]
    out.append(torch.randn(8, 9, requires_grad=True))
    return out


@pytest.mark.parametrize("tensor", cases(), ids=lambda t: f"{tuple(t.shape)}-{t.stride()}")
def test_the_fast_path_gives_the_general_paths_summary(tensor: torch.Tensor) -> None:
    got, want = summarize(tensor), general(tensor)
    assert got.shape == want.shape and repr(got.values) == repr(want.values)  # NaN too
    assert (got.nan, got.inf) == (want.nan, want.inf)
    if want.nan:
        assert math.isnan(got.min) and math.isnan(got.max)  # type: ignore[arg-type]
    else:
        assert got == want  # every statistic, bit for bit
    head = tensor.detach().reshape(-1)[: len(got.values)].tolist()
    assert repr(list(got.values)) == repr(head)  # the first values in row-major order


def test_the_fast_path_reads_a_transposed_gradient_without_copying_it() -> None:
    big = torch.randn(4000, 5000)  # 80 MB
    grown = peak_growth_mib(lambda: summarize(big.t()))
    assert grown < 40
