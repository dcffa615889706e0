"""``record_step``: the optimizer step after a recorded backward, checked against a twin
model and optimizer stepped plainly (``loss.backward(); optimizer.step()``)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch

import gradviz
from gradviz.errors import GradvizError
from gradviz.model.optstep import ParamStep
from gradviz.model.summarize import summarize

Factory = Callable[[list[torch.nn.Parameter]], torch.optim.Optimizer]

OPTIMIZERS: dict[str, Factory] = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
    "sgd_nesterov": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True),
    "adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1),
}


def twins(
    name: str,
) -> tuple[torch.nn.Module, torch.optim.Optimizer, torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    twin = copy.deepcopy(model)
    make = OPTIMIZERS[name]
    return model, make(list(model.parameters())), twin, make(list(twin.parameters()))


def loss_of(model: torch.nn.Module, data: torch.Tensor) -> torch.Tensor:
    return model(data).pow(2).mean()


def assert_same_state(a: torch.optim.Optimizer, b: torch.optim.Optimizer) -> None:
    for pa, pb in zip(
        (p for g in a.param_groups for p in g["params"]),
        (p for g in b.param_groups for p in g["params"]),
        strict=True,
    ):
        assert torch.equal(pa, pb)
        sa, sb = a.state.get(pa, {}), b.state.get(pb, {})
        assert sa.keys() == sb.keys()
        for key in sa:
            if isinstance(sa[key], torch.Tensor):
                assert torch.equal(sa[key], sb[key]), key


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_bitwise_equal_to_a_plain_step(name: str) -> None:
    model, opt, twin, twin_opt = twins(name)
    data = torch.randn(6, 3)
    for _ in range(3):
        opt.zero_grad()
        step = gradviz.record_step(opt, loss_of(model, data), params=model)
        twin_opt.zero_grad()
        loss_of(twin, data).backward()
        twin_opt.step()
        assert_same_state(opt, twin_opt)
        assert len(step.recording) > 0
        assert not step.accumulated
    assert step.settings.optimizer == type(opt).__name__
    assert [p.name for p in step.params] == [n for n, _ in model.named_parameters()]


def test_values_recomputed_sgd_momentum() -> None:
    model, opt, twin, _ = twins("sgd_momentum")
    data = torch.randn(6, 3)
    before = {n: p.detach().clone() for n, p in twin.named_parameters()}
    grads = torch.autograd.grad(loss_of(twin, data), list(twin.parameters()))
    step = gradviz.record_step(opt, loss_of(model, data), params=model)
    for (name, _), grad in zip(twin.named_parameters(), grads, strict=True):
        item = step.param(name)
        # first step: buf = g + weight_decay * w; w <- w - lr * buf
        buf = grad.add(before[name], alpha=0.01)  # as SGD computes it: one rounding
        expected = before[name] - 0.1 * buf
        assert torch.allclose(dict(model.named_parameters())[name], expected, atol=1e-7)
        update = dict(model.named_parameters())[name].detach() - before[name]
        norm = float(torch.linalg.vector_norm(update.double()))
        assert item.update_norm == pytest.approx(norm, rel=1e-12)
        weight = float(torch.linalg.vector_norm(before[name].double()))
        assert item.ratio == pytest.approx(norm / weight, rel=1e-12)
        assert item.grad_norm == pytest.approx(float(torch.linalg.vector_norm(grad.double())))
        assert item.state_before == {}
        momentum = item.state_after["momentum_buffer"]
        live = opt.state[dict(model.named_parameters())[name]]["momentum_buffer"]
        assert momentum == summarize(live)
        assert momentum == summarize(buf)
    assert "momentum" in step.text() and "buf" in step.text()


def test_adam_moments_match_the_formula() -> None:
    model, opt, twin, _ = twins("adam")
    data = torch.randn(6, 3)
    grads = torch.autograd.grad(loss_of(twin, data), list(twin.parameters()))
    step = gradviz.record_step(opt, loss_of(model, data), params=model)
    for (name, _), grad in zip(twin.named_parameters(), grads, strict=True):
        item = step.param(name)
        assert item.state_after["step"] == 1.0
        exp_avg = item.state_after["exp_avg"]
        exp_avg_sq = item.state_after["exp_avg_sq"]
        assert isinstance(exp_avg, gradviz.Summary) and isinstance(exp_avg_sq, gradviz.Summary)
        want_m = (1 - 0.9) * grad
        want_v = (1 - 0.999) * grad * grad
        assert torch.allclose(torch.tensor(exp_avg.values).view_as(grad), want_m, atol=1e-9)
        assert torch.allclose(torch.tensor(exp_avg_sq.values).view_as(grad), want_v, atol=1e-12)
        # first step: m_hat/sqrt(v_hat) = g/|g| (eps aside), so each update is about -lr*sign(g)
        update = torch.tensor(item.update.values).view_as(grad)
        assert torch.allclose(update, -0.01 * torch.sign(grad), atol=1e-5)


def test_accumulation_without_zero_grad() -> None:
    model, opt, twin, twin_opt = twins("sgd")
    first, second = torch.randn(6, 3), torch.randn(6, 3)
    loss_of(model, first).backward()  # no zero_grad before the next backward
    step = gradviz.record_step(opt, loss_of(model, second), params=model)
    assert step.accumulated and all(p.accumulated for p in step.params)
    loss_of(twin, first).backward()
    loss_of(twin, second).backward()
    twin_opt.step()
    assert_same_state(opt, twin_opt)
    # the gradient the step used is the sum of both backward passes
    for name, param in twin.named_parameters():
        assert step.param(name).grad == summarize(param.grad)
    assert "accumulation" in step.text()


def test_zeroed_grads_are_not_accumulation() -> None:
    model, opt, _, _ = twins("sgd")
    loss_of(model, torch.randn(6, 3)).backward()
    opt.zero_grad(set_to_none=False)
    step = gradviz.record_step(opt, loss_of(model, torch.randn(6, 3)), params=model)
    assert not step.accumulated
    assert "zero_grad()" in step.text()


def test_a_parameter_without_gradient_is_skipped() -> None:
    torch.manual_seed(1)
    used = torch.nn.Linear(2, 1)
    unused = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD([*used.parameters(), *unused.parameters()], lr=0.1)
    kept = [p.detach().clone() for p in unused.parameters()]
    step = gradviz.record_step(opt, used(torch.randn(3, 2)).sum())
    skipped = [p for p in step.params if p.skipped]
    assert len(skipped) == 2 and all(p.update_norm == 0.0 for p in skipped)
    assert all(torch.equal(a, b) for a, b in zip(unused.parameters(), kept, strict=True))
    assert "skipped" in step.text()


def test_param_step_round_trips() -> None:
    model, opt, _, _ = twins("adamw")
    step = gradviz.record_step(opt, loss_of(model, torch.randn(6, 3)), params=model)
    for item in step.params:
        assert ParamStep.from_dict(item.to_dict()) == item
    data = step.to_dict()
    assert data["format"] == "gradviz.optimizer-step/1" and len(data["params"]) == 4


def test_bad_input() -> None:
    x = torch.randn(2, requires_grad=True)
    with pytest.raises(GradvizError, match=r"torch\.optim\.Optimizer"):
        gradviz.record_step("sgd", x.sum())  # type: ignore[arg-type]
    opt = torch.optim.SGD([x], lr=0.1)
    with pytest.raises(GradvizError, match="loss tensor"):
        gradviz.record_step(opt, 3.0)  # type: ignore[arg-type]
