"""The command line records the ``optimizer.step()`` after the recorded ``backward()``:
the parameters and optimizer state stay bitwise those of a plain ``python train.py``, and
the step's numbers are PyTorch's own (recomputed here by a plain run of the same loop)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from gradviz.cli import main

TRAIN = """
import sys
import torch
from torch import nn


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    kind = sys.argv[1]
    if kind == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    elif kind == "adamw":
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(16, 4)
    y = torch.randn(16, 1)
    for k in range(4):
        if {zero}:
            optimizer.zero_grad()
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        if k % {every} == {every} - 1:
            optimizer.step()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "state.pt")


if __name__ == "__main__":
    main()
"""


def write(folder: Path, zero: str = "True", every: int = 1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "train.py"
    path.write_text(textwrap.dedent(TRAIN.replace("{zero}", zero).replace("{every}", str(every))))
    return path


def plain_run(path: Path, kind: str) -> bytes:
    """``python train.py KIND`` in its own process, without gradviz: the saved state."""
    subprocess.run([sys.executable, str(path), kind], cwd=path.parent, check=True, timeout=300)
    return (path.parent / "state.pt").read_bytes()


def weights_after(steps: int, kind: str) -> list[torch.Tensor]:
    """The same training loop in plain PyTorch: each parameter after ``steps`` steps."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    optimizer: torch.optim.Optimizer
    if kind == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    for _ in range(steps):
        optimizer.zero_grad()
        (model(x) - y).pow(2).mean().backward()
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("kind", ["sgd", "adam", "adamw"])
def test_state_dict_bytes_equal_a_plain_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    plain = plain_run(write(tmp_path / "plain"), kind)
    path = write(tmp_path / "cli")
    monkeypatch.chdir(path.parent)
    argv = ["render", str(path), "-o", "out", "--format", "json", "--call", "2", "--", kind]
    assert main(argv) == 0
    assert (path.parent / "state.pt").read_bytes() == plain
    printed = capsys.readouterr().out
    name = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW"}[kind]
    assert f"==> then {name}.step() over 4 parameters" in printed
    text = (path.parent / "out" / "train-optimizer-step.txt").read_text()
    assert text.startswith(f"{name} step over 4 parameters.")
    assert "model.0.weight:" in text  # named by the script's module paths


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_the_recorded_step_is_the_calls_own_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """--call 2's step moves each weight from its value after step 1 to that after step 2."""
    from gradviz.cli import capture as capture_module

    kept: list[capture_module.Capture] = []
    real = capture_module.Capture

    def keeping(*args: object, **kwargs: object) -> capture_module.Capture:
        made = real(*args, **kwargs)  # type: ignore[arg-type]
        kept.append(made)
        return made

    monkeypatch.setattr("gradviz.cli.Capture", keeping)
    path = write(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert (
        main(["render", str(path), "-o", "out", "--format", "json", "--call", "2", "--", kind]) == 0
    )
    assert kept and kept[0].optimizer_step is not None
    step = kept[0].optimizer_step
    first, second = weights_after(1, kind), weights_after(2, kind)
    names = ["model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"]
    for name, w1, w2 in zip(names, first, second, strict=True):
        item = step.param(name)
        assert item.weight_norm == float(torch.linalg.vector_norm(w1.double()))
        assert item.update_norm == float(torch.linalg.vector_norm((w2 - w1).double()))
        assert not item.accumulated
    state = step.param("model.2.bias").state_after
    if kind == "adam":
        assert state["step"] == 2.0
    else:
        assert "momentum_buffer" in state
    assert step.recording is kept[0].recording


def test_accumulated_gradients_are_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No zero_grad(): call 2's step uses the sum of calls 1 and 2, and says so."""
    plain = plain_run(write(tmp_path / "plain", zero="False"), "sgd")
    path = write(tmp_path / "cli", zero="False")
    monkeypatch.chdir(path.parent)
    assert (
        main(["render", str(path), "-o", "out", "--format", "json", "--call", "2", "--", "sgd"])
        == 0
    )
    assert (path.parent / "state.pt").read_bytes() == plain
    assert "on accumulated gradients (no zero_grad before)" in capsys.readouterr().out
    assert "accumulation" in (path.parent / "out" / "train-optimizer-step.txt").read_text()


def test_a_step_after_the_next_backward_is_not_this_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stepping every second backward: call 1 has no step of its own, call 2 has one."""
    path = write(tmp_path, every=2)
    monkeypatch.chdir(tmp_path)
    assert (
        main(["render", str(path), "-o", "out", "--format", "json", "--call", "1", "--", "sgd"])
        == 0
    )
    assert ".step()" not in capsys.readouterr().out
    assert not (tmp_path / "out" / "train-optimizer-step.txt").exists()
    assert (
        main(["render", str(path), "-o", "out", "--format", "json", "--call", "2", "--", "sgd"])
        == 0
    )
    assert "==> then SGD.step()" in capsys.readouterr().out


def test_no_optimizer_step_leaves_it_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = ["render", str(path), "-o", "out", "--format", "json", "--no-optimizer-step"]
    assert main([*argv, "--", "adam"]) == 0
    assert ".step()" not in capsys.readouterr().out
    assert not (tmp_path / "out" / "train-optimizer-step.txt").exists()
    # the default (the last call) records every call; the last call's step is the one shown
    assert main(["render", str(path), "-o", "out", "--format", "json", "--", "adam"]) == 0
    text = (tmp_path / "out" / "train-optimizer-step.txt").read_text()
    assert "state after:  step=4" in text
