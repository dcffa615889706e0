"""The command line renders an unmodified training-step script, and says what went wrong."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch

from gradviz.cli import main

TRAINING_STEP = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 4)
y = torch.randint(0, 2, (16,))
loss = nn.functional.cross_entropy(model(x), y)
optimizer.zero_grad()
loss.backward()
grads = {name: p.grad.clone() for name, p in model.named_parameters()}
optimizer.step()
torch.save(grads, "grads.pt")
"""


def script(tmp_path: Path, body: str, name: str = "model.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


@pytest.mark.needs_dot
def test_renders_a_training_step_unmodified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = script(tmp_path, TRAINING_STEP)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    assert (
        main(
            [
                "render",
                str(path),
                "--root",
                "loss",
                "--view",
                "combined",
                "-o",
                str(out),
                "--steps",
                "--html",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "recorded backward() call 1 of 1 (the last), of 'loss'" in printed

    svg = (out / "model.svg").read_text()
    texts = {t.text for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")}
    assert {"model.0.weight", "model.2.bias", "loss"} <= texts
    steps = sorted((out / "model-steps").glob("step-*.svg"))
    assert len(steps) == 12  # the seed and 11 nodes: 2 Linear layers, ReLU, loss
    assert (out / "model.html").read_text().count("<script") >= 1

    # the script's own gradients were left exactly as PyTorch made them
    plain = subprocess.run([sys.executable, str(path)], cwd=tmp_path / "out", check=True)
    assert plain.returncode == 0
    with_gradviz = torch.load(tmp_path / "grads.pt")
    without = torch.load(tmp_path / "out" / "grads.pt")
    assert with_gradviz.keys() == without.keys()
    for key in without:
        assert torch.equal(with_gradviz[key], without[key]), key


@pytest.mark.parametrize(
    "call",
    [
        "torch.autograd.backward(loss)",
        "torch.autograd.backward([loss], grad_tensors=[torch.tensor(2.0)])",
        "from torch.autograd import backward\nbackward(loss)",
    ],
)
def test_records_torch_autograd_backward_calls(
    tmp_path: Path,
    call: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    body = f"""
import torch
w = torch.tensor([1.5, -2.0], requires_grad=True)
other = torch.tensor(3.0, requires_grad=True)
loss = (w * w).sum() * other
other_loss = other * 5
{call}
torch.save(w.grad.clone(), "grad.pt")
"""
    path = script(tmp_path, body)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(tmp_path)
    args = ["render", str(path), "-o", str(out), "--format", "json", "--root"]
    assert main([*args, "other_loss"]) == 0
    printed = capsys.readouterr().out
    # other_loss was never run backward: the recorded call is loss's, so the CLI records anew
    assert "recording the backward pass of 'other_loss'" in printed

    assert main([*args, "loss"]) == 0
    assert "call 1 of 1 (the last), of 'loss'" in capsys.readouterr().out
    plain = subprocess.run([sys.executable, str(path)], cwd=out, check=True)
    assert plain.returncode == 0
    assert torch.equal(torch.load(tmp_path / "grad.pt"), torch.load(out / "grad.pt"))


@pytest.mark.needs_dot
def test_picks_the_last_scalar_with_a_graph_and_records_when_the_script_did_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = script(
        tmp_path,
        """
        import torch
        a = torch.tensor(2.0, requires_grad=True)
        b = a * 3
        c = b.exp()
        note = "no backward here"
    """,
    )
    assert main(["render", str(path), "-o", str(tmp_path / "o"), "--format", "json"]) == 0
    assert "recording the backward pass of 'c'" in capsys.readouterr().out
    assert (tmp_path / "o" / "model.json").exists()


def test_script_arguments_pass_through(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = script(
        tmp_path,
        """
        import sys, torch
        w = torch.tensor(float(sys.argv[1]), requires_grad=True)
        loss = w * w
    """,
    )
    assert main(["render", str(path), "-o", str(tmp_path / "o"), "--format", "dot", "--", "5"]) == 0
    assert "loss" in (tmp_path / "o" / "model.dot").read_text()


def test_missing_script(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "no/such/script.py"]) == 2
    assert "no such script: no/such/script.py" in capsys.readouterr().err


def test_missing_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = script(tmp_path, "import torch\nw = torch.ones(2, requires_grad=True)\nz = w.sum()\n")
    assert main(["render", str(path), "--root", "loss"]) == 2
    err = capsys.readouterr().err
    assert "no tensor named 'loss'" in err and "w, z" in err


def test_no_scalar_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = script(tmp_path, "import torch\nw = torch.ones(2)\n")
    assert main(["render", str(path)]) == 2
    assert "--root" in capsys.readouterr().err


def test_script_that_raises_shows_its_traceback_then_what_gradviz_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = script(tmp_path, "import torch\n\ndef f():\n    raise KeyError('boom')\n\nf()\n")
    assert main(["render", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "KeyError: 'boom'" in err and "line 4" in err
    assert err.index("KeyError") < err.index("runs to the end")


def test_help_shows_examples() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gradviz", "render", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "examples:" in out and "--root loss" in out
