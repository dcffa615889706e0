"""The formula check's NumPy path (``explain.text._agree_float64``) agrees with
``torch.allclose`` (``_agree_torch``) on every mix of NaN, Inf, zero and near values."""

from __future__ import annotations

import itertools

import torch

from gradviz.explain.text import _agree, _agree_float64, _agree_torch

VALUES = [0.0, 1.0, -1.0, 1.00005, 1.001, float("nan"), float("inf"), -float("inf"), 1e-30, 3e300]


def test_the_numpy_check_agrees_with_torch_allclose_on_edge_values() -> None:
    seen = set()
    for a, b, c in itertools.product(VALUES, VALUES, [2.0, float("inf"), 1e6]):
        expected = torch.tensor([a, c, 0.5], dtype=torch.float64)
        sent = torch.tensor([b, c, 0.5], dtype=torch.float64)
        want = _agree_torch(expected, sent)
        assert _agree_float64(expected.numpy(), sent.numpy()) == want, (a, b, c)
        assert _agree(expected, sent) == want
        seen.add(want)
    assert seen == {True, False}


def test_the_check_of_real_gradients_matches_torch_on_a_sample() -> None:
    torch.manual_seed(0)
    x = torch.randn(64, 128, dtype=torch.float64)
    for noise in (0.0, 1e-7, 1e-3):
        y = x + noise * torch.randn_like(x)
        assert _agree(x, y) == _agree_torch(x.reshape(-1)[::2], y.reshape(-1)[::2])
    assert _agree(x, x.clone())
    assert not _agree(x, x * 1.01)
    assert _agree(x.float(), x.float()) and not _agree(x, x[:3])
