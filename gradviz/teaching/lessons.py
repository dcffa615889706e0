"""The lessons the notebooks teach, built live, so demos, tests and notebooks share one source.

Each builder returns the roots and the names the lecture uses, and what a faithful replay
needs besides: ``gradient`` for a non-scalar root (``backward(gradient=...)``) and
``inputs`` for a lesson about ``torch.autograd.grad``. ``Built.record()`` replays it.
Slugs and numbers follow the notebooks (``notebooks/NN-...``); values follow the lessons:
the deeper chain uses a=2, b=3, d=4; the ten-op lesson sets every input to 2.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from gradviz.objects import Recording, Watch

__all__ = ["LESSONS", "Built", "Lesson", "lesson", "ten_ops"]


@dataclass(frozen=True)
class Built:
    """A lesson's graph: ``roots``, ``names``, and how the lesson runs its backward pass.

    ``gradient``: the gradient entering each root (``backward(gradient=...)``; None: 1 for
    scalar roots). ``inputs``: set, the lesson calls ``torch.autograd.grad(roots, inputs)``
    instead of ``backward``, so no ``AccumulateGrad`` runs.
    """

    roots: tuple[torch.Tensor, ...]
    names: dict[str, torch.Tensor]
    gradient: tuple[torch.Tensor, ...] | None = None
    inputs: tuple[torch.Tensor, ...] | None = None

    def record(self, watching: Watch | None = None) -> Recording:
        """Run the lesson's backward pass once, recorded (under ``watching``'s names).

        ``watching`` links each step to its forward op; ``torch.autograd.grad`` lessons are
        recorded with ``gradviz.record_grad``, which ``watch`` does not wrap.
        """
        from gradviz.objects import record, record_grad

        if self.inputs is not None:
            _, recording = record_grad(
                self.roots, self.inputs, grad_outputs=self.gradient, names=self.names
            )
            return recording
        if watching is not None:
            return watching.record(*self.roots, gradient=self.gradient, names=self.names)
        return record(*self.roots, gradient=self.gradient, names=self.names)


@dataclass(frozen=True)
class Lesson:
    slug: str
    title: str
    build: Callable[[], Built]
    about: str = ""  # what to look at, one or two sentences for the gallery
    # Its roots are scalars with no hooks on the way, no leaf holds a .grad from an earlier
    # pass and every named tensor is on the graph: generic tests of record() (a plain
    # backward of the roots) hold as they stand. The other lessons are each an exception to
    # one of these, which is their point; test_lessons.py checks them one by one.
    plain: bool = True

    @property
    def number(self) -> str:
        return self.slug.split("-", 1)[0]


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


def _in_place() -> Built:
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    c = a * b
    d = torch.tensor(4.0, requires_grad=True)
    e = c + d  # AddBackward0 saves neither input ...
    c += 1  # ... so bumping c._version after the fact is harmless (with * it is not)
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


def ten_ops(c: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """The ten-op lesson as a function of its two leaves on the graph (a, b, d and f are the
    constants 2 there, c = a * b = 4): ``gradviz.explore(ten_ops, c=4.0, h=2.0)`` edits it."""
    d = torch.tensor(2.0, dtype=c.dtype)
    f = torch.tensor(2.0, dtype=c.dtype)
    e = c * d
    g = f * e
    i = g / h
    j = i + h
    return j * i


def _accumulate() -> Built:
    A = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    first = (5 * (A + 3)).mean()
    torch.autograd.backward(first)  # the first pass: A.grad now holds one gradient
    B = 5 * (A + 3)
    B.retain_grad()  # a non-leaf keeps its .grad only when asked
    loss = B.mean()
    return Built((loss,), {"A": A, "B": B, "loss": loss})


def _second_derivative() -> Built:
    x = torch.tensor(4.0, requires_grad=True)
    y = torch.tensor(1.0, requires_grad=True)
    f = 5 * x**2 * y
    (df_dx,) = torch.autograd.grad(f, x, create_graph=True)  # a graph of its own
    return Built((df_dx,), {"x": x, "y": y, "df_dx": df_dx}, inputs=(x,))


def _gradient_arg() -> Built:
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x**2
    v = torch.tensor([1.0, 0.1, 0.01])  # y is not a scalar: backward needs dL/dy
    return Built((y,), {"x": x, "y": y}, gradient=(v,))


def _hooks() -> Built:
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    y = w * 3
    # torch's register_hook has no type hints, hence the ignores
    y.register_hook(lambda grad: grad * 10)  # type: ignore[no-untyped-call]  # y's node gets 10×
    w.register_hook(lambda grad: grad / 2)  # type: ignore[no-untyped-call]  # w.grad gets half
    z = (y * y).sum()
    return Built((z,), {"w": w, "y": y, "z": z})


def _no_grad_eval() -> Built:
    layer = torch.nn.Linear(4, 2, device="meta")  # no memory, no random numbers: ...
    layer.weight = torch.nn.Parameter(
        torch.tensor([[0.5, -1.0, 0.25, 0.0], [1.0, 0.5, -0.5, 0.25]])
    )
    layer.bias = torch.nn.Parameter(torch.tensor([0.1, -0.2]))  # ... the lesson's own values
    model = torch.nn.Sequential(layer, torch.nn.Dropout(p=0.5))
    model.eval()  # dropout passes values through; the graph is still built
    layer.weight.requires_grad_(False)  # frozen: off the graph
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    with torch.no_grad():  # no graph: scale enters what follows as a constant
        scale = x.abs().max()
    out = model(x / scale)
    loss = out.sum()
    names = {"x": x, "scale": scale, "weight": layer.weight, "bias": layer.bias}
    names.update(out=out, loss=loss)
    return Built((loss,), names)


def _copy_slices() -> Built:
    x = torch.tensor(1.0, requires_grad=True)
    s = torch.tensor([3.0, 1.0])
    s[1] = s[0].clone() * x  # writing into a slice: s's node becomes CopySlices
    total = s.sum()
    return Built((total,), {"x": x, "s": s, "total": total})


def _detach_cut() -> Built:
    x = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    w = torch.tensor([3.0, 1.0, -1.0], requires_grad=True)
    h = x.detach() * 2  # the same values, no history: x.grad stays None
    loss = (h * w).sum()
    return Built((loss,), {"x": x, "w": w, "h": h, "loss": loss})


LESSONS: tuple[Lesson, ...] = (
    Lesson(
        "01-one-grad",
        "c = a * b, only a requires grad",
        _one_grad,
        "requires_grad spreads from a to c; b is off the graph, so MulBackward0 sends "
        "None towards it: the (None, 0) entry of next_functions.",
    ),
    Lesson(
        "02-chain",
        "e = (a * b) * d",
        _chain,
        "A deeper chain: each MulBackward0 multiplies what it receives by the other input; "
        "c is not a leaf, so it keeps no .grad.",
    ),
    Lesson(
        "03-in-place",
        "c += 1 after e = c + d: harmless for Add",
        _in_place,
        "c._version goes up after e used it. AddBackward0 saved nothing, so this backward "
        "runs; with e = c * d it would fail (notebook 03).",
        plain=False,
    ),
    Lesson(
        "04-unbind",
        "b, c, d = a.unbind(); e = b * c * d",
        _unbind,
        "One UnbindBackward0 for three outputs: the edges into it carry the indices 0, 1, 2.",
    ),
    Lesson(
        "05-ten-ops",
        "the ten-op lesson: k = j * i",
        _ten_ops,
        "c joins the graph late (c.requires_grad = True); two streams converge on "
        "AccumulateGrad(h) and two on DivBackward0.",
    ),
    Lesson(
        "06-accumulate",
        "retain_grad() and a second backward pass into A.grad",
        _accumulate,
        "A.grad already holds one pass; this pass adds to it. B.retain_grad() keeps the "
        "gradient of a non-leaf.",
        plain=False,
    ),
    Lesson(
        "07-second-derivative",
        "d²f/dx² with torch.autograd.grad through a create_graph=True graph",
        _second_derivative,
        "df_dx = grad(f, x, create_graph=True) has a graph of its own; grad(df_dx, x) walks "
        "it. No AccumulateGrad runs under autograd.grad.",
    ),
    Lesson(
        "08-gradient-arg",
        "y = x**2 is not a scalar: backward(gradient=v)",
        _gradient_arg,
        "The seed entering PowBackward0 is v, not 1: x.grad is the vector-Jacobian product.",
        plain=False,
    ),
    Lesson(
        "09-hooks",
        "tensor hooks: y.register_hook(g * 10), w.register_hook(g / 2)",
        _hooks,
        "The hooks change gradients on the way; the replay flags the steps where what a "
        "node received is not what was sent.",
        plain=False,
    ),
    Lesson(
        "10-no-grad-eval",
        "no_grad, eval() and a frozen weight in a Linear layer",
        _no_grad_eval,
        "scale, computed under torch.no_grad(), enters as a constant; eval() turns dropout "
        "off but still builds the graph; the frozen weight is off the graph.",
    ),
    Lesson(
        "11-copy-slices",
        "s[1] = s[0].clone() * x: writing into a slice",
        _copy_slices,
        "The slice assignment turns s's node into CopySlices, which routes the gradient of "
        "the written slice into the new value's graph.",
    ),
    Lesson(
        "12-detach-cut",
        "h = x.detach() * 2: why x.grad is None",
        _detach_cut,
        "detach() cut x off: the backward graph of loss never reaches it, so x.grad stays "
        "None while w gets its gradient; gradviz.why_no_grad names the line (notebook 12).",
        plain=False,
    ),
)


def lesson(slug: str) -> Lesson:
    """A lesson by its slug (or the part after the number, e.g. 'ten-ops')."""
    for item in LESSONS:
        if slug in (item.slug, item.slug.split("-", 1)[1]):
            return item
    raise KeyError(f"no lesson {slug!r}; lessons: {[item.slug for item in LESSONS]}")
