"""Summaries never copy a whole tensor: broadcast gradients (every ``.sum()`` loss sends
one) and float16 ones are summarized in place or chunk by chunk (``gradviz.model.lowmem``).

Peak memory is Linux's ``VmHWM`` after a reset through ``/proc/self/clear_refs``; where
that is refused, the memory tests are skipped. The copies they catch are 160 MB, the
allowance 48 MB."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import math

import pytest
import torch

import gradviz
from gradviz.model.summarize import summarize

N = 20_000_000  # a float64 copy: 160 MB


def _kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def peak_growth_mib(run: object) -> float:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
    except OSError:
        pytest.skip("the peak RSS cannot be reset here")
    gc.collect()
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    base = _kib("VmRSS")
    with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
        handle.write("5")
    run()  # type: ignore[operator]
    return (_kib("VmHWM") - base) / 1024


def test_a_broadcast_gradient_is_summarized_from_the_memory_it_repeats() -> None:
    grad = torch.full((), 0.5).expand(N)
    summary = summarize(grad)
    assert (summary.min, summary.max, summary.mean) == (0.5, 0.5, 0.5)
    assert summary.norm == pytest.approx(0.5 * math.sqrt(N), rel=1e-12)
    assert summary.values[:3] == (0.5, 0.5, 0.5) and not summary.complete
    assert peak_growth_mib(lambda: summarize(grad)) < 48


def test_a_partly_broadcast_tensor_matches_its_materialized_copy() -> None:
    torch.manual_seed(0)
    row = torch.randn(1, 300)
    wide = row.expand(200, 300)
    got, want = summarize(wide), summarize(wide.contiguous())
    assert (got.min, got.max, got.values) == (want.min, want.max, want.values)
    # both sum float32 values in float32 (NumPy's dot), in different orders
    assert got.mean == pytest.approx(want.mean, rel=1e-4)
    assert got.norm == pytest.approx(want.norm, rel=1e-5)


def test_a_float16_tensor_is_summed_in_float64_chunk_by_chunk() -> None:
    torch.manual_seed(0)
    half = torch.randn(N // 4).to(torch.float16)
    wide = half.double()
    summary = summarize(half)
    assert summary.min == float(wide.min()) and summary.max == float(wide.max())
    assert summary.mean == pytest.approx(float(wide.mean()), rel=1e-9, abs=1e-12)
    assert summary.norm == pytest.approx(float(wide.norm()), rel=1e-9)
    del wide
    big = torch.zeros(N, dtype=torch.float16)
    assert peak_growth_mib(lambda: summarize(big)) < 48


def test_non_finite_values_are_found_in_any_chunk() -> None:
    values = torch.zeros(3 * (1 << 18) + 5, dtype=torch.float16)
    values[-1] = float("inf")
    values[1 << 18] = float("nan")
    summary = summarize(values)
    assert summary.nan and summary.inf


def test_recording_a_sum_loss_copies_no_whole_gradient() -> None:
    x = torch.zeros(N // 2, requires_grad=True)

    def run() -> None:
        x.grad = None
        gradviz.record((x * 2).sum(), keep="summary")

    run()
    bare_x = torch.zeros(N // 2, requires_grad=True)

    def bare() -> None:
        bare_x.grad = None
        (bare_x * 2).sum().backward()

    bare()
    plain, recorded = peak_growth_mib(bare), peak_growth_mib(run)
    assert recorded < plain + 48, (plain, recorded)
