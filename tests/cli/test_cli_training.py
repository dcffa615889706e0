"""``gradviz render train.py --training``: an unmodified script's training loop, watched
from its first ``optimizer.step()``; the page and JSON written, the script's results the
same as when it runs alone."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from gradviz.cli import main

DIVERGES = """
import torch
from torch import nn

def main():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(net.parameters(), lr=1.2)
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    norms = []
    for _ in range(25):
        opt.zero_grad()
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        norms.append({n: float(p.grad.norm()) for n, p in net.named_parameters()})
        opt.step()
    torch.save({"weights": dict(net.state_dict()), "norms": norms}, "result.pt")

main()
"""


def test_training_flag_writes_the_film_strip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(DIVERGES))
    (tmp_path / "alone").mkdir()
    subprocess.run([sys.executable, str(path)], cwd=tmp_path / "alone", check=True, timeout=300)
    alone = torch.load(tmp_path / "alone" / "result.pt")
    monkeypatch.chdir(tmp_path)
    assert main(["render", str(path), "--training", "-o", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "25 training steps of net, 4 parameter tensors" in printed

    watched = torch.load(tmp_path / "result.pt")
    for name, value in alone["weights"].items():  # NaN == NaN bitwise: compare the bytes
        assert torch.equal(value.view(torch.int32), watched["weights"][name].view(torch.int32))
    data = json.loads((tmp_path / "out" / "train-training.json").read_text(encoding="utf-8"))
    assert data["params"] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert [row["step"] for row in data["steps"]] == list(range(25))
    for row, expected in zip(data["steps"], alone["norms"], strict=True):
        got = [float(v) for v in row["grad_norms"]]  # "NaN" and "Infinity" read back
        want = list(expected.values())
        assert [repr(g) for g in got] == [repr(w) for w in want]
    bad = next(
        step
        for step, norms in enumerate(alone["norms"])
        if any(v != v for v in norms.values()) or any(v == float("inf") for v in norms.values())
    )
    assert data["first_nonfinite"]["step"] == bad
    assert f"first non-finite value: step {bad}" in printed
    assert data["steps"][0]["loss"] is None  # the first step's loss ran before gradviz knew
    assert "gv-strip-data" in (tmp_path / "out" / "train-training.html").read_text()


def test_a_script_without_an_optimizer_step_is_told_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nostep.py"
    path.write_text(
        "import torch\nx = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["render", str(path), "--training", "-o", str(tmp_path / "out")]) == 2
    assert "never called optimizer.step()" in capsys.readouterr().err
