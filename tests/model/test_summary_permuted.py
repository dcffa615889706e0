"""``summarize``'s fast path also reads permuted tensors (attention's heads: a gradient of
shape (batch, heads, seq, dim) laid out as (batch, seq, heads, dim)) in memory order: the
general path's summary bit for bit, at a third less of its cost, without a copy."""

from __future__ import annotations

import math

import pytest
import torch

from gradviz.model import summarize as summaries
from gradviz.model.summarize import summarize
from tests.model.test_lowmem import peak_growth_mib
from tests.model.test_summary_fast_path import general


def cases() -> list[torch.Tensor]:
    torch.manual_seed(0)
    out = []
    for dtype in (torch.float32, torch.float64):
        out.append(torch.randn(1, 32, 8, 32, dtype=dtype).permute(0, 2, 1, 3))
        out.append(torch.randn(32, 8, 32, dtype=dtype).permute(1, 0, 2))
        out.append(torch.randn(3, 4, 5, dtype=dtype).permute(2, 0, 1))
        out.append(torch.randn(5, 1, 7, 1, dtype=dtype).permute(3, 2, 1, 0))  # ones in shape
        out.append(torch.randn(70, 40, 30, dtype=dtype).permute(2, 0, 1))  # past NUMPY_MAX
    with_nan = torch.randn(6, 7, 8)
    with_nan[1, 2, 3] = math.nan
    with_inf = torch.randn(90, 30, 40)  # past NUMPY_MAX
    with_inf[2, 7, 1] = -math.inf
    out += [with_nan.permute(1, 2, 0), with_inf.permute(2, 1, 0)]
    out.append((torch.randn(6, 7, 8) * 1e18).permute(2, 0, 1))  # squares overflow float32
    return out


@pytest.mark.parametrize("tensor", cases(), ids=lambda t: f"{tuple(t.shape)}-{t.stride()}")
def test_a_permuted_tensor_takes_the_fast_path_with_the_general_paths_summary(
    tensor: torch.Tensor,
) -> None:
    assert summaries._dense_cpu_summary(tensor, summaries.SMALL_NUMEL) is not None
    got, want = summarize(tensor), general(tensor)
    assert got.shape == want.shape and repr(got.values) == repr(want.values)
    assert (got.nan, got.inf) == (want.nan, want.inf)
    if want.nan:
        assert math.isnan(got.min) and math.isnan(got.max)  # type: ignore[arg-type]
    else:
        assert got == want  # every statistic, bit for bit
    head = tensor.reshape(-1)[: len(got.values)].tolist()
    assert repr(list(got.values)) == repr(head)  # the first values in row-major order


def test_a_view_with_gaps_still_takes_the_general_path() -> None:
    sliced = torch.randn(8, 10, 12).permute(2, 0, 1)[:, :, ::2]
    assert summaries._dense_cpu_summary(sliced, summaries.SMALL_NUMEL) is None
    got = summarize(sliced)
    dense = sliced.contiguous()
    assert got.min == float(dense.min()) and got.max == float(dense.max())


def test_a_permuted_gradient_is_read_without_a_copy() -> None:
    big = torch.randn(40, 500, 1000).permute(2, 0, 1)  # 80 MB
    grown = peak_growth_mib(lambda: summarize(big))
    assert grown < 40
