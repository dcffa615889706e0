"""Each forward frame draws every tensor as it was at that moment, not as the block left it.

The code is the ten-op lesson of notebook 05 (``c`` joins the graph only on the line after
``c = a * b``), then a few lines that change the other fields of a tensor: a backward pass
writes ``.grad`` (no op does: it shows from the next op on), ``c.data.add_(1)`` changes
``c``'s values without a new version, and ``n.mul_(h)`` turns a leaf off the graph into a
branch (a grad_fn, no longer a leaf). The test takes each tensor's real state from PyTorch
right after every line, and compares it with what the frame of that line's op draws: per
tensor, its latest box (earlier boxes are its history, as a version's are). The combined
view draws every field; the stepper page ships the same drawing and timing.
"""

from __future__ import annotations

import json
import math
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

import pytest
import torch

import gradviz
from gradviz.model.recording import Recording
from gradviz.model.values import Role
from gradviz.render.theme import DEFAULT
from gradviz.replay.frames import replay_born, step_svg
from gradviz.stepper.page import stepper_payload

pytestmark = pytest.mark.needs_dot

SVG = "{http://www.w3.org/2000/svg}"


@dataclass(frozen=True)
class Real:
    """One tensor as PyTorch has it at one moment."""

    data: float
    grad: float | None
    grad_fn: str | None
    is_leaf: bool
    requires_grad: bool

    @property
    def role(self) -> Role:  # the legend: leaf on / off the graph, branch
        if not self.requires_grad:
            return Role.CONSTANT
        return Role.LEAF if self.is_leaf else Role.BRANCH


def _real(tensor: torch.Tensor) -> Real:
    grad = tensor.grad if tensor.is_leaf or tensor.retains_grad else None
    return Real(
        data=tensor.item(),
        grad=None if grad is None else grad.item(),
        grad_fn=None if tensor.grad_fn is None else type(tensor.grad_fn).__name__,
        is_leaf=tensor.is_leaf,
        requires_grad=tensor.requires_grad,
    )


@dataclass(frozen=True)
class Run:
    recording: Recording
    moments: dict[int, dict[str, Real]]  # source line -> each tensor right after it ran


def _snap(moments: dict[int, dict[str, Real]]) -> None:
    """Each local tensor of the caller as it is now, for the line just above this call."""
    caller = sys._getframe(1)
    tensors = {k: v for k, v in caller.f_locals.items() if isinstance(v, torch.Tensor)}
    moments[caller.f_lineno - 1] = {name: _real(t) for name, t in tensors.items()}
    del caller


@pytest.fixture(scope="module")
def run() -> Run:
    moments: dict[int, dict[str, Real]] = {}
    with gradviz.watch() as w:
        a = torch.tensor(2.0)
        _snap(moments)
        b = torch.tensor(2.0)
        _snap(moments)
        c = a * b  # nothing tracked yet: c is an ordinary leaf
        _snap(moments)
        c.requires_grad = True  # ... until now
        _snap(moments)
        d = torch.tensor(2.0)
        _snap(moments)
        e = c * d
        _snap(moments)
        f = torch.tensor(2.0)
        _snap(moments)
        g = f * e
        _snap(moments)
        h = torch.tensor(2.0, requires_grad=True)
        _snap(moments)
        i = g / h
        _snap(moments)
        j = i + h
        _snap(moments)
        k = j * i
        _snap(moments)
        k.backward(retain_graph=True)  # c.grad and h.grad: no op writes them
        m = c * 2  # the first op to read c since
        _snap(moments)
        c.data.add_(1)  # c's values change, its version does not
        _snap(moments)
        n = torch.tensor(2.0)
        _snap(moments)
        n.mul_(h)  # a leaf off the graph becomes a branch
        _snap(moments)
    del a, b, d, e, f, g, i, j, m
    return Run(w.record(k, n), moments)  # n a root too: the graph has a record of it


def _boxes(svg: str, born: dict[str, int], step: int) -> dict[str, dict[str, Any]]:
    """What the drawing shows of each tensor at ``step``: its latest visible box (born
    last; a later state of the same tensor breaks a tie), as text per field plus its fill."""
    latest: dict[str, tuple[tuple[float, int], dict[str, Any]]] = {}
    for group in ET.fromstring(svg).iter(f"{SVG}g"):
        classes = (group.get("class") or "").split()
        if "gv_tensor" not in classes and "gv_ftensor" not in classes:
            continue
        element = group.get("id", "")
        at = born.get(element)
        if at is not None and at > step:
            continue  # not made yet
        texts = [t.text or "" for t in group.iter(f"{SVG}text")]
        shown: dict[str, Any] = {"fill": group.find(f"{SVG}polygon").get("fill")}  # type: ignore[union-attr]
        if "data" in texts:  # a table: key, value, key, value, ...
            shown.update(zip(texts[1::2], texts[2::2], strict=False))
        elif len(texts) > 1:  # a compact box: name, maybe its version, its value
            shown["value"] = texts[-1]
        title = group.findtext(f"{SVG}title") or ""
        state = int(title.rpartition("_s")[2]) if "_s" in title else 0
        order = (-math.inf if at is None else at, state)
        name = texts[0]
        if name not in latest or order > latest[name][0]:
            latest[name] = (order, shown)
    return {name: shown for name, (_, shown) in latest.items()}


def _frames(
    run: Run, view: str, page: bool = False, records: bool = True
) -> list[tuple[str, dict[str, Any], Real]]:
    """(tensor name, what its latest box shows, its real state) for every tensor drawn at
    every forward frame, in ``view``: as ``step_svg`` draws it, or the stepper page ships it.
    ``records``: only the tensors the graph has a record of (the combined view draws their
    whole table; any other is a compact box: name, value and role colour)."""
    recording = run.recording
    count = len(recording.forward_ops)
    if page:
        payload = stepper_payload(recording, step=-count, views=[view])
        svg_at = {step: payload["svgs"][view] for step in range(-count, 0)}
        born = payload["data"]["schedule"]["born"][view]
    else:
        svg_at = {step: step_svg(recording, step, view=view) for step in range(-count, 0)}
        born = replay_born(recording, [view])[view]
    recorded = {t.name for t in recording.graph.tensors if t.name}
    assert {"a", "c", "h", "k", "n"} <= recorded
    checked = []
    ops = recording.forward_ops
    for position, op in enumerate(ops):
        assert op.line is not None
        later = ops[position + 1].line if position + 1 < len(ops) else None
        if later is not None and later.lineno == op.line.lineno:
            continue  # c.data.add_(1) is two ops; the line's state is after its last one
        truth = run.moments[op.line.lineno]
        step = position - count
        drawn = _boxes(svg_at[step], born, step)
        made = {recording.graph.forward.label(t) for t in op.outputs}  # type: ignore[union-attr]
        assert made <= set(drawn), (op.line.text, made, set(drawn))
        for name, shown in drawn.items():
            if name not in truth:  # an unnamed tensor (c.data's alias), labelled by its op
                assert name in {o.name for o in ops}, (op.line.text, name)
                continue
            if name in recorded or not records:
                checked.append((f"{op.line.text} [{name}]", shown, truth[name]))
    return checked


def _number(text: str) -> float | None:
    return None if text == "None" else float(text)


def _final(run: Run, where: str) -> Real:
    """The tensor as the block left it (the line of its frame says which tensor)."""
    name = where.rpartition("[")[2].rstrip("]")
    return run.moments[max(run.moments)][name]


def _standing(real: Real) -> tuple[bool, bool, float | None]:
    return real.requires_grad, real.is_leaf, real.grad


def _check(run: Run, field: str, expected: Any) -> list[tuple[str, Real]]:
    """Every record's latest box at every frame shows ``field`` as PyTorch had it then:
    ``expected(real)`` is its text. A compact box (no table) is only allowed where the
    tensor stood on the graph as in the end (an earlier version an in-place op replaced)."""
    checked = _frames(run, "combined")
    for where, shown, real in checked:
        if field in shown:
            assert shown[field] == expected(real), where
        else:
            assert _standing(real) == _standing(_final(run, where)), (where, "not drawn")
    return [(where, real) for where, shown, real in checked if field in shown]


def test_data_is_the_value_at_that_moment(run: Run) -> None:
    checked = _frames(run, "combined")
    for where, shown, real in checked:
        assert _number(shown.get("data", shown.get("value", "nan"))) == real.data, where
    assert any(real.data == 5.0 for _, _, real in checked)  # c after c.data.add_(1) was seen
    assert any(real.data == 4.0 for where, _, real in checked if "[c]" in where)


def test_grad_is_none_until_a_backward_wrote_it(run: Run) -> None:
    shown = _check(run, "grad", lambda real: "None" if real.grad is None else _text(real.grad))
    assert {real.grad for where, real in shown if "[c]" in where} == {None, 36.0}


def _text(value: float) -> str:
    return f"{value:g}"


def test_grad_fn_is_the_one_the_tensor_had_then(run: Run) -> None:
    shown = _check(run, "grad_fn", lambda real: str(real.grad_fn))
    assert {real.grad_fn for where, real in shown if "[n]" in where} == {None, "MulBackward0"}


def test_is_leaf_is_what_it_was_then(run: Run) -> None:
    shown = _check(run, "is_leaf", lambda real: str(real.is_leaf))
    assert {real.is_leaf for where, real in shown if "[n]" in where} == {True, False}


def test_requires_grad_turns_true_only_where_the_code_sets_it(run: Run) -> None:
    shown = _check(run, "requires_grad", lambda real: str(real.requires_grad))
    c_at = {where: real.requires_grad for where, real in shown if "[c]" in where}
    assert c_at["c = a * b  # nothing tracked yet: c is an ordinary leaf [c]"] is False
    assert c_at["c.requires_grad = True  # ... until now [c]"] is True


@pytest.mark.parametrize("view", ["combined", "forward"])
def test_role_colour_is_the_role_then(run: Run, view: str) -> None:
    checked = _frames(run, view, records=False)
    for where, shown, real in checked:
        assert shown["fill"] == DEFAULT.role(real.role).fill, (where, real.role)
    roles = {real.role for where, _, real in checked if "[c]" in where}
    assert roles == {Role.CONSTANT, Role.LEAF}  # yellow at c = a * b, green from then on


def test_the_stepper_page_draws_the_same_moments(run: Run) -> None:
    """The page payload (its combined SVG and when each element appears) shows each
    tensor as ``step_svg`` does, frame by frame: the same per-moment states."""
    page = _frames(run, "combined", page=True)
    drawn = _frames(run, "combined")
    assert [(w, s) for w, s, _ in page] == [(w, s) for w, s, _ in drawn]
    assert any("requires_grad" in s for _, s, _ in page)
    for where, shown, real in page:
        if "requires_grad" in shown:
            assert shown["requires_grad"] == str(real.requires_grad), where
        assert shown["fill"] == DEFAULT.role(real.role).fill, where


def test_states_survive_a_json_round_trip(run: Run) -> None:
    graph = run.recording.graph
    loaded = type(graph).from_json(graph.to_json())
    assert loaded.forward is not None and graph.forward is not None
    assert loaded.forward.to_dict() == graph.forward.to_dict()
    c = loaded.forward.tensor("c")
    assert [s.requires_grad for s in c.states][:2] == [False, True]
    assert loaded.to_dot(view="combined") == graph.to_dot(view="combined")


def test_forward_data_saved_without_states_draws_one_box_per_version(run: Run) -> None:
    """JSON written before states were kept: each version an op read or made is a state,
    drawn with the fields the tensor had when last seen (all that data knows)."""
    graph = run.recording.graph
    data = json.loads(graph.to_json())
    for item in data["forward"]["tensors"]:
        del item["states"]
    old = type(graph).from_json(json.dumps(data))
    assert old.forward is not None
    c = old.forward.tensor("c")
    assert [s.version for s in c.states] == [0]  # c.data.add_(1) made no new version
    assert all(s.requires_grad for s in c.states)  # as last seen: the flip is unknown
    n = old.forward.tensor("n")
    assert [s.version for s in n.states] == [0, 1]  # n.mul_(h) made version 1
    dot = old.to_dot(view="forward")
    assert f" {n.id} [" in dot and f" {n.id}_s1 [" in dot
