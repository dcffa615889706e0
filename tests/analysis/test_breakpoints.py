"""rec.find(): breakpoints in the backward pass stop where PyTorch's own gradients say."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import gradviz
from gradviz.analysis.breakpoints import DEFAULT_NORM_BELOW
from gradviz.errors import InvalidArgument
from gradviz.replay.frames import replay_data
from gradviz.stepper.page import unpack_state
from tests.support.loops import norm, plain_loop


def node_of(rec: gradviz.Recording, grad_fn: object) -> str:
    return next(n.id for n in rec.graph.nodes if n.torch_node is grad_fn)


# -- NaN: the log of a zero ------------------------------------------------------------
def log_of_zero() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    a = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
    b = a * 2
    c = torch.log(b)  # log(0) = -inf; its backward divides 0 by 0
    loss = (c * 0).sum()
    return loss, b, c


def test_nonfinite_stops_where_the_first_nan_is_made() -> None:
    loss, b, c = log_of_zero()
    grad_c, grad_b = torch.autograd.grad(loss, [c, b], retain_graph=True)
    assert torch.isfinite(grad_c).all() and grad_b.isnan().any()  # PyTorch: log's step sends it
    rec = gradviz.record(loss, keep="all")
    found = rec.find(nonfinite=True)
    assert found[0].node_id == node_of(rec, c.grad_fn)
    assert found[0].type_name == "LogBackward0"
    nonfinite = plain_loop(rec, lambda g: not bool(torch.isfinite(g).all()))
    assert [s.index for s in found] == nonfinite
    # from the step after, the next one; summaries give the same answer as tensors
    assert [s.index for s in rec.find(nonfinite=True, start=found[0].index + 1)] == nonfinite[1:]
    summary = gradviz.record(log_of_zero()[0], keep="summary")
    assert [s.index for s in summary.find(nonfinite=True)] == nonfinite
    # the page's data says where the first one is
    data = replay_data(rec)["breakpoints"]
    assert data["nonfinite"] == found[0].index
    assert data["nonfinite_steps"] == nonfinite


def test_no_nonfinite_finds_nothing() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    rec = gradviz.record((x * 3).sum())
    assert rec.find(nonfinite=True) == []
    assert replay_data(rec)["breakpoints"]["nonfinite"] is None


# -- vanishing: 20 sigmoid layers --------------------------------------------------------
class Deep(nn.Module):
    def __init__(self, depth: int, activation: type[nn.Module] | None, gain: float) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for _ in range(depth):
            linear = nn.Linear(8, 8, bias=activation is not None)
            with torch.no_grad():
                linear.weight.mul_(gain)
            layers += [linear] if activation is None else [linear, activation()]
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.layers(x)
        return out


def run_deep(
    activation: type[nn.Module] | None, gain: float, scale: float = 1.0
) -> tuple[Deep, gradviz.Watch, list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
    """The model (without an activation: linear layers without bias), its watch, each
    Linear's output z and input h, and the loss; every tensor kept by forward hooks
    registered here. ``scale`` scales the input."""
    torch.manual_seed(0)
    model = Deep(20, activation, gain)
    zs: list[torch.Tensor] = []
    hs: list[torch.Tensor] = []

    def keep(_module: nn.Module, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
        hs.append(inputs[0])
        zs.append(output)

    for layer in model.layers:
        if isinstance(layer, nn.Linear):
            layer.register_forward_hook(keep)
    x = torch.randn(4, 8) * scale
    with gradviz.watch(model) as w:
        loss = model(x).sum()
    return model, w, zs, hs, loss


def test_norm_below_stops_at_the_first_vanishing_sigmoid() -> None:
    _, w, zs, hs, loss = run_deep(nn.Sigmoid, 1.0)
    # a sigmoid's output is the next Linear's input h
    grads = torch.autograd.grad(loss, [*zs, *hs[1:]], retain_graph=True)
    by_z = dict(zip(range(20), grads[:20], strict=True))
    by_h = dict(zip(range(1, 20), grads[20:], strict=True))
    rec = w.record(loss, keep="all")
    threshold = 1e-6
    # the sigmoid after Linear k received dL/dh_{k+1} (or the seed's) and sent dL/dz_k
    expected = None
    for k in reversed(range(20)):
        received = norm(by_h[k + 1]) if k + 1 in by_h else float("inf")
        if min(received, norm(by_z[k])) < threshold:
            expected = k
            break
    assert expected is not None and 0 < expected < 19, "the net must vanish part way down"
    found = rec.find(type="SigmoidBackward0", norm_below=threshold)
    assert found[0].node_id == node_of(rec, hs[expected + 1].grad_fn)
    sent = found[0].grad_inputs[0]
    assert isinstance(sent, torch.Tensor) and torch.equal(sent, by_z[expected])
    # every gradient condition agrees with a plain loop over the recorded tensors
    assert [s.index for s in rec.find(norm_below=threshold)] == plain_loop(
        rec, lambda g: norm(g) < threshold
    )
    assert [s.index for s in rec.find(norm_above=1.0)] == plain_loop(rec, lambda g: norm(g) > 1.0)
    both = rec.find(norm_below=threshold, type="SigmoidBackward0")
    assert [s.index for s in both] == [
        s.index for s in rec.find(norm_below=threshold) if s.type_name == "SigmoidBackward0"
    ]


def test_norm_above_stops_at_the_first_exploding_layer() -> None:
    # a linear net: the gradients grow by the weights' gain per layer down; a small input
    # keeps the weights' gradients (input times gradient) small
    _, w, zs, hs, loss = run_deep(None, 3.0, scale=1e-6)
    grads = torch.autograd.grad(loss, [*zs, *hs[1:]], retain_graph=True)
    by_z, by_h = grads[:20], (None, *grads[20:])
    rec = w.record(loss, keep="all")
    threshold = 1e3
    # Linear k's MmBackward0 receives dL/dz_k and sends dL/dh_k (none for the input) and
    # the weight's gradient (through its TBackward0)
    expected = None
    for k in reversed(range(20)):
        weight_grad = hs[k].T @ by_z[k]
        h_grad = by_h[k]
        sent = [weight_grad, *([] if h_grad is None else [h_grad])]
        if max(norm(g) for g in [by_z[k], *sent]) > threshold:
            expected = k
            break
    assert expected is not None and 0 < expected < 19
    found = rec.find(type="MmBackward0", norm_above=threshold)
    assert found[0].node_id == node_of(rec, zs[expected].grad_fn)
    assert [s.index for s in rec.find(norm_above=threshold)] == plain_loop(
        rec, lambda g: norm(g) > threshold
    )
    data = replay_data(rec)["breakpoints"]
    assert data["norm_above"] == {"threshold": 1e3, "step": rec.find(norm_above=1e3)[0].index}
    assert len(data["norms"]) == len(rec) + 1


# -- modules and types -------------------------------------------------------------------
def test_module_and_type_and_start() -> None:
    _, w, zs, hs, loss = run_deep(nn.Sigmoid, 1.0)
    rec = w.record(loss)
    in_layer = rec.find(module="layers.6")  # the fourth Linear: zs[3]
    assert node_of(rec, zs[3].grad_fn) in {s.node_id for s in in_layer}
    assert node_of(rec, zs[4].grad_fn) not in {s.node_id for s in in_layer}
    assert all(s.index < t.index for s, t in pairwise(in_layer))
    # a parent module's steps include its children's
    whole = {s.index for s in rec.find(module="layers")}
    assert {s.index for s in in_layer} <= whole
    # run to the next: from the step after the first
    after = rec.find(module="layers.6", start=in_layer[0].index + 1)
    assert after == in_layer[1:]
    typed = rec.find(type="SigmoidBackward0")
    assert [s.index for s in typed] == [
        s.index for s in rec.steps if s.type_name == "SigmoidBackward0"
    ]
    assert len(typed) == 20
    # layers.7 is the fourth sigmoid: its output is the fifth Linear's input
    in_sigmoid = rec.find(type="SigmoidBackward0", module="layers.7")
    assert [s.node_id for s in in_sigmoid] == [node_of(rec, hs[4].grad_fn)]


def test_unknown_names_list_close_matches() -> None:
    _, w, _, _, loss = run_deep(nn.Sigmoid, 1.0)
    rec = w.record(loss)
    with pytest.raises(InvalidArgument, match=r"did you mean 'SigmoidBackward0'"):
        rec.find(type="SigmoidBackward")
    with pytest.raises(InvalidArgument, match=r"no module 'layer\.6'.*'layers\.6'"):
        rec.find(module="layer.6")
    with pytest.raises(InvalidArgument, match="needs something to look for"):
        rec.find()
    with pytest.raises(InvalidArgument, match="norm_above= takes a number"):
        rec.find(norm_above="big")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="outside the backward steps"):
        rec.find(nonfinite=True, start=len(rec) + 1)
    x = torch.tensor([1.0], requires_grad=True)
    plain = gradviz.record((x * 2).sum())
    with pytest.raises(InvalidArgument, match=r"gradviz\.watch\(model\)"):
        plain.find(module="layers.0")


@pytest.mark.needs_dot
def test_the_page_carries_the_breakpoints(tmp_path: Path) -> None:
    loss, _, c = log_of_zero()
    rec = gradviz.record(loss)
    page = rec.save(tmp_path / "replay.html").read_text(encoding="utf-8")
    data = unpack_state(page)["data"]["breakpoints"]
    first = rec.find(nonfinite=True)[0]
    assert first.node_id == node_of(rec, c.grad_fn)
    assert data["nonfinite"] == first.index
    assert data["norm_below"]["threshold"] == DEFAULT_NORM_BELOW
    assert len(data["norms"]) == len(rec) + 1  # the seed, then steps 1..N


# -- the page's data: the same answers for any threshold ---------------------------------
def page_steps(data: dict[str, Any], kind: str, arg: object) -> list[int]:
    """The steps the page's Run to visits, read from its data as frontend/src/breakpoints.js
    reads it."""
    norms, scopes, inner = data["norms"], data.get("scopes", []), data.get("step_scopes", [])

    def chain(index: int) -> list[str]:
        paths, scope = [], inner[index]
        while scope is not None:
            paths.append(scopes[scope][0])
            scope = scopes[scope][1]
        return paths

    found = []
    for i in range(1, len(norms)):
        low, high = norms[i]
        if kind == "above" and high is not None and float(high) > arg:  # type: ignore[operator]
            found.append(i)
        if kind == "below" and low is not None and float(low) < arg:  # type: ignore[operator]
            found.append(i)
        if kind == "module" and arg in chain(i):
            found.append(i)
    return found


def test_the_page_data_stops_where_find_does_at_every_threshold() -> None:
    _, w, _, _, loss = run_deep(nn.Sigmoid, 1.0)
    rec = w.record(loss)
    data = replay_data(rec)["breakpoints"]
    # each norm the page holds is a threshold where rounding would tip the answer
    thresholds = {float(n) for row in data["norms"][1:] for n in row if n is not None}
    assert len(thresholds) > 40
    for t in sorted(thresholds):
        assert page_steps(data, "above", t) == [s.index for s in rec.find(norm_above=t)], t
        assert page_steps(data, "below", t) == [s.index for s in rec.find(norm_below=t)], t
    for path in ["layers", "layers.0", "layers.6", "layers.7", "layers.39"]:
        assert page_steps(data, "module", path) == [s.index for s in rec.find(module=path)]
    x = torch.tensor([1.0], requires_grad=True)
    assert "scopes" not in replay_data(gradviz.record((x * 2).sum()))["breakpoints"]
