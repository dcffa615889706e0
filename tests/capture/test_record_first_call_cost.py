"""A first ``record()`` in a process costs what a plain backward costs: gradviz lets the
engine make the 1s of scalar roots, as ``loss.backward()`` does, instead of passing them.
Passing ``grad_tensors`` makes torch import its symbolic-shape checks (sympy, about 0.35 s)
on the first call; the seeds, and so the gradients, are the same either way."""

from __future__ import annotations

import subprocess
import sys

import torch

import gradviz

PROBE = """
import sys, torch, gradviz
x = torch.randn(3, requires_grad=True)
gradviz.record((x * 2).sum())
y = torch.randn(3, requires_grad=True)
gradviz.record_grad((y * 3).sum(), y)
print("sympy" in sys.modules)
"""


def test_a_first_record_does_not_import_what_a_plain_backward_does_not() -> None:
    plain = PROBE.replace("gradviz.record((x * 2).sum())", "(x * 2).sum().backward()")
    plain = plain.replace(
        "gradviz.record_grad((y * 3).sum(), y)", "torch.autograd.grad((y * 3).sum(), y)"
    )
    for code, expected in ((plain, "False"), (PROBE, "False")):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
        )
        assert done.stdout.strip() == expected, code


def test_implicit_and_explicit_seeds_give_the_same_gradients() -> None:
    torch.manual_seed(0)
    w = torch.randn(4, 3, requires_grad=True)
    x = torch.randn(5, 4)
    expected = torch.autograd.grad((x @ w).tanh().sum(), w)[0]
    gradviz.record((x @ w).tanh().sum())
    assert w.grad is not None and torch.equal(w.grad, expected)
    w.grad = None
    gradviz.record((x @ w).tanh().sum(), gradient=torch.tensor(1.0))
    assert torch.equal(w.grad, expected)
    (grad,), _ = gradviz.record_grad((x @ w).tanh().sum(), w)
    assert grad is not None and torch.equal(grad, expected)
