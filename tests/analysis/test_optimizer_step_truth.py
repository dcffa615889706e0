"""What ``record_step`` and the command line say of an optimizer step is PyTorch's own
truth, and what gradviz cannot observe it leaves alone and says so: sparse gradients
(``SparseAdam``), optimizers whose ``step`` takes a closure (``LBFGS``), complex
parameters, and step pre-hooks that change ``.grad`` (gradient clipping)."""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

import gradviz
from gradviz.capture import optstep as optstep_module
from gradviz.cli import main
from gradviz.errors import GradvizError


def norm(tensor: torch.Tensor) -> float:
    """PyTorch's own L2 norm of the whole value (complex too), in double precision."""
    data = tensor.detach()
    if data.layout != torch.strided:
        data = data.to_dense()
    wide = torch.complex128 if data.is_complex() else torch.float64
    return float(torch.linalg.vector_norm(data.to(wide)))


def sparse_twins() -> tuple[torch.nn.Embedding, torch.nn.Embedding]:
    torch.manual_seed(0)
    model = torch.nn.Embedding(10, 3, sparse=True)
    return model, copy.deepcopy(model)


def sparse_loss(model: torch.nn.Embedding) -> torch.Tensor:
    return model(torch.tensor([1, 2, 2, 7])).pow(2).sum()


def test_sparse_adam_steps_exactly_as_plain_pytorch() -> None:
    model, twin = sparse_twins()
    opt = torch.optim.SparseAdam(model.parameters(), lr=0.1)
    twin_opt = torch.optim.SparseAdam(twin.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        step = gradviz.record_step(opt, sparse_loss(model), params=model)
        twin_opt.zero_grad()
        sparse_loss(twin).backward()
        grad = twin.weight.grad
        assert grad is not None and grad.is_sparse
        before = twin.weight.detach().clone()
        twin_opt.step()
        assert torch.equal(model.weight, twin.weight)
        item = step.param("weight")
        assert item.grad_norm == norm(grad)
        assert item.weight_norm == norm(before)
        assert item.update_norm == norm(twin.weight - before)
    assert torch.equal(opt.state[model.weight]["exp_avg"], twin_opt.state[twin.weight]["exp_avg"])


def test_an_observation_that_fails_is_a_note_never_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever gradviz cannot read of the step, the step still runs whole, as without it."""
    model, twin = sparse_twins()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    twin_opt = torch.optim.SGD(twin.parameters(), lr=0.1)

    def broken(tensor: torch.Tensor) -> float:
        raise RuntimeError("cannot read this layout")

    monkeypatch.setattr(optstep_module, "_norm", broken)
    with pytest.warns(gradviz.GradvizWarning, match="cannot read this layout"):
        step = gradviz.record_step(opt, sparse_loss(model), params=model)
    sparse_loss(twin).backward()
    twin_opt.step()
    assert torch.equal(model.weight, twin.weight)
    assert any("cannot read this layout" in note for note in step.notes)
    assert "cannot read this layout" in step.text()


def test_a_step_that_needs_a_closure_is_refused_before_anything_runs() -> None:
    w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    opt = torch.optim.LBFGS([w])
    with pytest.raises(GradvizError, match="closure"):
        gradviz.record_step(opt, (w**2).sum())
    assert w.grad is None
    assert torch.equal(w, torch.tensor([1.0, 2.0]))


def test_lbfgs_with_its_closure_steps_as_plain_pytorch() -> None:
    target = torch.tensor([3.0, -1.0])

    def make() -> tuple[torch.nn.Parameter, torch.optim.LBFGS, object]:
        w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
        opt = torch.optim.LBFGS([w], lr=0.5, max_iter=4)

        def closure() -> torch.Tensor:
            opt.zero_grad()
            loss = ((w - target) ** 2).sum()
            loss.backward()
            return loss

        return w, opt, closure

    w, opt, closure = make()
    twin, twin_opt, twin_closure = make()
    step = gradviz.record_step(opt, ((w - target) ** 2).sum(), closure=closure)  # type: ignore[arg-type]
    ((twin - target) ** 2).sum().backward()
    twin_opt.step(twin_closure)  # type: ignore[arg-type]
    assert torch.equal(w, twin)
    assert step.param("group0.param0").after_norm == norm(twin)
    assert any("closure" in note for note in step.notes)


def test_complex_parameters_get_the_norm_of_the_whole_value() -> None:
    w = torch.nn.Parameter(torch.tensor([3 + 4j, 1j, -2 + 0.5j], dtype=torch.complex64))
    before = w.detach().clone()
    opt = torch.optim.SGD([w], lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "casting complex values to real" on the way
        step = gradviz.record_step(opt, (w * w.conj()).real.sum())
    assert w.grad is not None
    item = step.params[0]
    assert item.weight_norm == norm(before)
    assert item.grad_norm == norm(w.grad)
    assert item.update_norm == norm(w - before)
    assert item.after_norm == norm(w)


def clip_to(limit: float, params: list[torch.nn.Parameter]) -> object:
    def hook(optimizer: torch.optim.Optimizer, args: object, kwargs: object) -> None:
        torch.nn.utils.clip_grad_norm_(params, limit)

    return hook


@pytest.mark.parametrize("where", ["optimizer", "global"])
def test_the_gradient_used_is_read_after_the_step_pre_hooks(where: str) -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    params = list(model.parameters())
    if where == "optimizer":
        handle = opt.register_step_pre_hook(clip_to(1e-3, params))  # type: ignore[arg-type]
    else:
        handle = register_optimizer_step_pre_hook(clip_to(1e-3, params))  # type: ignore[arg-type]
    try:
        step = gradviz.record_step(opt, model(torch.randn(5, 4)).pow(2).sum(), params=model)
    finally:
        handle.remove()
    for name, param in model.named_parameters():
        assert param.grad is not None  # SGD leaves .grad as the hook clipped it
        assert step.param(name).grad_norm == norm(param.grad)
    total = sum(step.param(n).grad_norm ** 2 for n in ("weight", "bias")) ** 0.5  # type: ignore[operator]
    assert total == pytest.approx(1e-3)


SPARSE_SCRIPT = """
import torch


def main():
    torch.manual_seed(0)
    emb = torch.nn.Embedding(10, 3, sparse=True)
    opt = torch.optim.SparseAdam(emb.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        loss = emb(torch.tensor([1, 2, 2, 7])).pow(2).sum()
        loss.backward()
        opt.step()
    torch.save({"emb": emb.state_dict(), "opt": opt.state_dict()}, "state.pt")


if __name__ == "__main__":
    main()
"""

CLIPPED_SCRIPT = """
import torch


def main():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(5, 4)
    loss = model(x).pow(2).sum()
    loss.backward()

    def clip(optimizer, args, kwargs):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-3)

    opt.register_step_pre_hook(clip)
    opt.step()
    torch.save([p.grad for p in model.parameters()], "grads.pt")


if __name__ == "__main__":
    main()
"""


def test_cli_sparse_adam_runs_and_steps_as_plain_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "train.py").write_text(textwrap.dedent(SPARSE_SCRIPT))
    subprocess.run([sys.executable, "train.py"], cwd=plain, check=True, timeout=300)
    cli = tmp_path / "cli"
    cli.mkdir()
    (cli / "train.py").write_text(textwrap.dedent(SPARSE_SCRIPT))
    monkeypatch.chdir(cli)
    argv = ["render", "train.py", "-o", "out", "--format", "json", "--call", "2"]
    assert main(argv) == 0
    assert (cli / "state.pt").read_bytes() == (plain / "state.pt").read_bytes()
    assert "==> then SparseAdam.step() over 1 parameters" in capsys.readouterr().out


def test_cli_reports_the_gradient_after_the_scripts_pre_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gradviz.cli import capture as capture_module

    kept: list[capture_module.Capture] = []
    real = capture_module.Capture

    def keeping(*args: object, **kwargs: object) -> capture_module.Capture:
        made = real(*args, **kwargs)  # type: ignore[arg-type]
        kept.append(made)
        return made

    monkeypatch.setattr("gradviz.cli.Capture", keeping)
    (tmp_path / "train.py").write_text(textwrap.dedent(CLIPPED_SCRIPT))
    monkeypatch.chdir(tmp_path)
    assert main(["render", "train.py", "-o", "out", "--format", "json"]) == 0
    step = kept[0].optimizer_step
    assert step is not None
    grads = torch.load(tmp_path / "grads.pt")
    assert step.param("model.weight").grad_norm == norm(grads[0])
    assert step.param("model.bias").grad_norm == norm(grads[1])
