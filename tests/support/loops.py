"""What a plain Python loop over a recording finds: the reference the breakpoints (rec.find,
the page's Run to) are checked against."""

from __future__ import annotations

from collections.abc import Callable

import torch

import gradviz


def norm(t: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(t.detach().double()))


def plain_loop(rec: gradviz.Recording, matches: Callable[[torch.Tensor], bool]) -> list[int]:
    """The steps a loop over the recorded tensors (keep="all") finds."""
    return [
        step.index
        for step in rec.steps
        if any(
            isinstance(g, torch.Tensor) and matches(g)
            for g in (*step.grad_outputs, *step.grad_inputs)
        )
    ]
