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


def small_cases() -> list[torch.Tensor]:
    torch.manual_seed(1)
    out: list[torch.Tensor] = []
    for dtype in (torch.float32, torch.float64):
        out += [torch.randn((), dtype=dtype), torch.randn(16, dtype=dtype)]
        out += [torch.randn(2, 3, dtype=dtype), torch.randn(3, 4, dtype=dtype).t()]
        out += [torch.randn(1, 2, 2, dtype=dtype).permute(2, 0, 1)]
    out.append(torch.nn.Parameter(torch.randn(8)))
    out.append(torch.randn(5, requires_grad=True) * 2)  # a branch
    out.append(torch.tensor([1.0, math.nan, math.inf]))
    out.append(torch.tensor([-math.inf, 2.0]))
    out.append(torch.tensor([3e38, 3e38]))  # a finite tensor whose sum overflows
    out.append(torch.tensor([-0.0, 0.0]))
    out.append(torch.randn(4)._neg_view())
    out += [torch.tensor([1, -2, 3]), torch.tensor(7, dtype=torch.int32)]
    out += [torch.tensor([[True, False]]), torch.tensor([250, 3], dtype=torch.uint8)]
    out += [torch.randn(3, dtype=torch.float16), torch.randn(2, 2, dtype=torch.bfloat16)]
    return out


@pytest.mark.parametrize("tensor", small_cases(), ids=lambda t: f"{tuple(t.shape)}-{t.dtype}")
def test_the_small_fast_path_gives_the_general_paths_summary(tensor: torch.Tensor) -> None:
    """Small tensors (every value kept): what ``watch()`` summarizes for each bias and
    scalar it sees. NaN never equals itself, so the fields are compared as text."""
    fast = summaries._small_cpu_summary(tensor, summaries.SMALL_NUMEL)
    assert fast is not None
    assert repr(fast) == repr(summaries._summary_of(tensor, summaries.SMALL_NUMEL))


def test_the_small_fast_path_leaves_other_tensors_to_the_general_path() -> None:
    others = [
        torch.randn(3, dtype=torch.complex64),
        torch.randn(17),  # past SMALL_NUMEL
        torch.randn(0),
        torch.randn(4).to_sparse(),
        torch.empty(3, device="meta"),
    ]
    for tensor in others:
        assert summaries._small_cpu_summary(tensor, summaries.SMALL_NUMEL) is None
