"""The seeds' lesson graphs, built live, so demos, tests and notebooks share one source.

Each builder returns the roots and the names the lecture uses. Values follow the lessons:
the deeper chain uses a=2, b=3, d=4; the ten-op lesson sets every input to 2.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = ["LESSONS", "Built", "Lesson", "lesson"]


@dataclass(frozen=True)
class Built:
    roots: tuple[torch.Tensor, ...]
    names: dict[str, torch.Tensor]


@dataclass(frozen=True)
class Lesson:
    slug: str
    title: str
    build: Callable[[], Built]


def _one_grad() -> Built:
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0)
    c = a * b
    return Built((c,), {"a": a, "b": b, "c": c})


def _chain() -> Built:
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    c = a * b
    d = torch.tensor(4.0, requires_grad=True)
    e = c * d
    return Built((e,), {"a": a, "b": b, "c": c, "d": d, "e": e})


def _unbind() -> Built:
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b, c, d = a.unbind()
    e = b * c * d
    return Built((e,), {"a": a, "b": b, "c": c, "d": d, "e": e})


def _ten_ops() -> Built:
    a = torch.tensor(2.0)
    b = torch.tensor(2.0)
    c = a * b
    c.requires_grad = True
    d = torch.tensor(2.0)
    e = c * d
    f = torch.tensor(2.0)
    g = f * e
    h = torch.tensor(2.0, requires_grad=True)
    i = g / h
    j = i + h
    k = j * i
    names = {"a": a, "b": b, "c": c, "d": d, "e": e, "f": f, "g": g, "h": h, "i": i, "j": j}
    names["k"] = k
    return Built((k,), names)


LESSONS: tuple[Lesson, ...] = (
    Lesson("01-one-grad", "c = a * b, only a requires grad", _one_grad),
    Lesson("02-chain", "e = (a * b) * d", _chain),
    Lesson("04-unbind", "b, c, d = a.unbind(); e = b * c * d", _unbind),
    Lesson("05-ten-ops", "the ten-op lesson: k = j * i", _ten_ops),
)


def lesson(slug: str) -> Lesson:
    """A lesson by its slug (or the part after the number, e.g. 'ten-ops')."""
    for item in LESSONS:
        if slug in (item.slug, item.slug.split("-", 1)[1]):
            return item
    raise KeyError(f"no lesson {slug!r}; lessons: {[item.slug for item in LESSONS]}")
