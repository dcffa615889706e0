"""The command line on scripts shaped like real training scripts: a ``main()`` function,
a loop of ``backward()`` calls, ``sys.exit``, hooks that raise, a script that changes
directory; and the output folder and Graphviz checked before the script runs."""

from __future__ import annotations

import importlib
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

from gradviz.cli import main

record_module = importlib.import_module("gradviz.capture.record")

LOOP = """
import sys
import torch


def main():
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    for k in range(1, 4):
        loss = (w * w * k).sum()
        loss.backward()
    torch.save(w.grad.clone(), "grad.pt")
    return 0


if __name__ == "__main__":
    {ending}
"""


def script(folder: Path, body: str, name: str = "train.py") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(body))
    return path


def loaded(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def leaf_grad_after(data: dict[str, Any]) -> list[float]:
    step = next(s for s in data["steps"] if s["type_name"] == "AccumulateGrad")
    values: list[float] = step["leaf_grad_after"]["values"]
    return values


def grad_after_call(call: int) -> list[float]:
    """What PyTorch itself has in w.grad after the loop's ``call``-th backward."""
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    for k in range(1, call + 1):
        (w * w * k).sum().backward()
    assert w.grad is not None
    return [float(v) for v in w.grad]


@pytest.mark.parametrize("ending", ["main()", "sys.exit(main())"])
def test_a_script_with_main_is_drawn_from_its_last_backward_call(
    tmp_path: Path,
    ending: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = script(tmp_path, LOOP.replace("{ending}", ending))
    monkeypatch.chdir(tmp_path)
    assert main(["render", str(path), "-o", "out", "--format", "json"]) == 0
    printed = capsys.readouterr().out
    assert "recorded backward() call 3 of 3 (the last), of 'loss' at train.py:10" in printed
    data = loaded(tmp_path / "out" / "train.json")
    assert leaf_grad_after(data) == grad_after_call(3)
    names = {t["name"] for t in data["graph"]["tensors"]}
    assert {"loss", "w"} <= names  # named as main() names them
    assert torch.equal(torch.load(tmp_path / "grad.pt"), torch.tensor(grad_after_call(3)))


def test_call_n_records_only_that_call_and_runs_the_others_plain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = script(tmp_path, LOOP.replace("{ending}", "main()"))
    monkeypatch.chdir(tmp_path)
    recorded: list[int] = []
    real = record_module.record

    def counting(*roots: torch.Tensor, **options: Any) -> Any:
        recorded.append(len(roots))
        return real(*roots, **options)

    monkeypatch.setattr(record_module, "record", counting)
    assert main(["render", str(path), "-o", "out", "--format", "json", "--call", "2"]) == 0
    assert recorded == [1]  # calls 1 and 3 ran as plain PyTorch
    assert "recorded backward() call 2 of 3 (--call 2)" in capsys.readouterr().out
    data = loaded(tmp_path / "out" / "train.json")
    assert leaf_grad_after(data) == grad_after_call(2)
    # the forward frames are call 2's forward pass only: one mul by 2, not by 1 or 3
    constants = [a["value"] for op in data["graph"]["forward"]["ops"] for a in op["inputs"]]
    assert 2 in constants and 1 not in constants and 3 not in constants
    assert torch.equal(torch.load(tmp_path / "grad.pt"), torch.tensor(grad_after_call(3)))

    recorded.clear()
    assert main(["render", str(path), "-o", "out", "--format", "json"]) == 0
    assert recorded == [1, 1, 1]  # the last is only known at the end: each call recorded


def test_call_beyond_the_scripts_calls_says_how_many_there_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = script(tmp_path, LOOP.replace("{ending}", "main()"))
    monkeypatch.chdir(tmp_path)  # the script writes grad.pt
    out = str(tmp_path / "out")
    assert main(["render", str(path), "-o", out, "--format", "json", "--call", "7"]) == 2
    assert "made 3 backward() calls; choose one of 1..3" in capsys.readouterr().err
    assert main(["render", str(path), "-o", out, "--format", "json", "--call", "0"]) == 2
    assert "count from 1" in capsys.readouterr().err


@pytest.mark.parametrize(("ending", "code"), [("sys.exit(3)", 3), ("sys.exit('bad data')", 1)])
def test_the_scripts_exit_status_passes_through(
    tmp_path: Path,
    ending: str,
    code: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = script(tmp_path, LOOP.replace("{ending}", f"main()\n    {ending}"))
    monkeypatch.chdir(tmp_path)  # the script writes grad.pt
    out = tmp_path / "out"
    assert main(["render", str(path), "-o", str(out), "--format", "json"]) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert ("exited with status 3" in err) if code == 3 else ("bad data" in err)
    assert not (out / "train.json").exists()


def test_the_scripts_own_exception_from_its_hook_reaches_its_own_except(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = script(
        tmp_path,
        """
        import torch

        class Diverged(ValueError):
            pass

        def check(grad):
            if grad.abs().max() > 10:
                raise Diverged("gradient too large")

        def main():
            w = torch.tensor([1.0, 2.0], requires_grad=True)
            handle = w.register_hook(check)
            try:
                (w * 100).sum().backward()
            except Diverged as error:
                print("caught:", type(error).__name__, error)
            handle.remove()
            loss = (w * 3).sum()
            loss.backward()
            torch.save(w.grad.clone(), "grad.pt")

        main()
        """,
    )
    monkeypatch.chdir(tmp_path)
    assert main(["render", str(path), "-o", "out", "--format", "json"]) == 0
    assert "caught: Diverged gradient too large" in capsys.readouterr().out
    # the same .grad as without gradviz: the failed call accumulated nothing (the hook ran
    # before w's AccumulateGrad), the second call 3 per element
    assert torch.equal(torch.load(tmp_path / "grad.pt"), torch.tensor([3.0, 3.0]))
    data = loaded(tmp_path / "out" / "train.json")
    assert leaf_grad_after(data) == [3.0, 3.0]


def test_output_is_resolved_before_a_script_that_changes_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "elsewhere").mkdir()
    path = script(
        tmp_path,
        """
        import os
        import torch
        w = torch.tensor(2.0, requires_grad=True)
        loss = w * w
        os.chdir("elsewhere")
        """,
    )
    monkeypatch.chdir(tmp_path)
    assert main(["render", str(path), "-o", "out", "--format", "json"]) == 0
    assert (tmp_path / "out" / "train.json").exists()
    assert not (tmp_path / "elsewhere" / "out").exists()
    assert f"{tmp_path / 'out'}" in capsys.readouterr().out
    os.chdir(tmp_path)


MARK = "import pathlib\npathlib.Path('ran').write_text('yes')\n"


@pytest.mark.parametrize(
    ("out", "says"),
    [
        ("a-file", "is a file; give a folder"),
        ("a-file/sub", "which is a file; give a folder"),
        ("/proc/gradviz-cannot-be-here", "cannot write there"),
    ],
)
def test_an_unusable_output_folder_is_refused_before_the_script_runs(
    tmp_path: Path,
    out: str,
    says: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = script(tmp_path, MARK + "import torch\nloss = torch.ones(1, requires_grad=True) * 2\n")
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.chdir(tmp_path)
    assert main(["render", str(path), "-o", out, "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert not (tmp_path / "ran").exists()


def test_graphviz_is_checked_before_the_script_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = script(tmp_path, MARK + "import torch\nloss = torch.ones(1, requires_grad=True) * 2\n")
    monkeypatch.chdir(tmp_path)
    # neither backend can run: the system one is asked for and no dot is on PATH
    monkeypatch.setenv("GRADVIZ_GRAPHVIZ", "system")
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))
    assert main(["render", str(path), "-o", "out"]) == 2
    assert "Graphviz cannot run" in capsys.readouterr().err
    assert not (tmp_path / "ran").exists()
    assert main(["render", str(path), "-o", "out", "--format", "json"]) == 0  # needs no dot
    assert (tmp_path / "ran").exists()


MODEL = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x)) + x


def main():
    torch.manual_seed(0)
    model = nn.Sequential(Block(), Block(), Block(), nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4)
    for _ in range(2):
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_the_recording_is_watched_modules_and_forward_frames(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = script(tmp_path, MODEL)
    out = tmp_path / "out"
    assert main(["render", str(path), "-o", str(out), "--format", "json"]) == 0
    forward = loaded(out / "train.json")["graph"]["forward"]
    assert forward["ops"] and forward["node_modules"]
    paths = {m["path"] for m in forward["modules"]}
    assert {"0", "0.fc", "3"} <= paths
    # only the recorded (second) iteration's forward pass: 3 blocks' linear + relu + add,
    # the last linear, pow and mean, and no ops of the first iteration or of the optimizer
    assert sum(op["name"] == "linear" for op in forward["ops"]) == 4
    lines = [(op["line"] or {}).get("text", "") for op in forward["ops"]]
    assert not [line for line in lines if "optimizer" in line], "optimizer.step() is no forward"

    assert main(["render", str(path), "-o", str(out), "--format", "json", "--no-watch"]) == 0
    assert loaded(out / "train.json")["graph"].get("forward") is None


@pytest.mark.needs_dot
def test_the_views_of_a_watched_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = script(tmp_path, MODEL)
    out = tmp_path / "out"

    def drawn(*options: str) -> str:
        assert main(["render", str(path), "-o", str(out), *options]) == 0
        return (out / "train.svg").read_text()

    def module_boxes(svg: str) -> int:  # clusters other than the legend's
        return svg.count('class="cluster') - svg.count('class="cluster gv_legend')

    plain = drawn()
    assert module_boxes(plain) == 0
    assert module_boxes(drawn("--modules")) > 0
    collapsed = drawn("--collapse-depth", "0")
    assert "Sequential" in collapsed and collapsed.count("AddmmBackward0") == 0
    forward = drawn("--view", "forward")
    assert "linear" in forward and "AddmmBackward0" not in forward
    assert "× block" not in plain and "× block" in drawn("--fold")
    capsys.readouterr()
    assert main(["render", str(path), "-o", str(out), "--fold", "--view", "combined"]) == 2
    assert "--fold draws the backward graph" in capsys.readouterr().err


@pytest.mark.needs_dot
@pytest.mark.needs_dot
def test_fold_folds_a_chain_of_identical_blocks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = """
    import torch
    from torch import nn

    def main():
        model = nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(5)])
        model(torch.randn(2, 4)).sum().backward()

    main()
    """
    path = script(tmp_path, body)
    out = tmp_path / "out"
    assert main(["render", str(path), "-o", str(out)]) == 0
    assert "× block" not in (out / "train.svg").read_text()
    assert main(["render", str(path), "-o", str(out), "--fold"]) == 0
    assert "× block" in (out / "train.svg").read_text()
    assert "no run of identical blocks" not in capsys.readouterr().out


def test_fold_says_when_nothing_folds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = script(tmp_path, "import torch\nw = torch.ones(2, requires_grad=True)\nloss = w.sum()\n")
    assert main(["render", str(path), "-o", str(tmp_path / "o"), "--fold", "--format", "dot"]) == 0
    assert "--fold: nothing folded (the graph has" in capsys.readouterr().out


@pytest.mark.needs_dot
def test_a_png_is_scaled_to_max_size_and_says_by_how_much(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gradviz.cli.output import png_size

    path = script(tmp_path, MODEL)
    out = tmp_path / "out"
    assert main(["render", str(path), "-o", str(out), "--format", "png", "--max-size", "0"]) == 0
    full = png_size((out / "train.png").read_bytes())
    assert "scaled to" not in capsys.readouterr().out
    assert max(full) > 300
    args = ["render", str(path), "-o", str(out), "--format", "png", "--max-size", "300"]
    assert main(args) == 0
    small = png_size((out / "train.png").read_bytes())
    printed = capsys.readouterr().out
    assert max(small) <= 300
    assert printed.count("scaled to ") == 1 and "--max-size 300 px" in printed
    percent = int(printed.split("scaled to ")[1].split("%")[0])
    assert abs(percent - 100 * max(small) / max(full)) <= 3


def test_the_cli_runs_as_a_program_with_main_and_exit_status(tmp_path: Path) -> None:
    import subprocess

    path = script(tmp_path, LOOP.replace("{ending}", "main()\n    sys.exit(4)"))
    done = subprocess.run(
        [sys.executable, "-m", "gradviz", "render", str(path), "-o", "out", "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path(str(record_module.__file__)).parents[2])},
    )
    assert done.returncode == 4, done.stderr


def test_a_script_that_uses_gradviz_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = script(
        tmp_path,
        """
        import torch
        import gradviz

        def main():
            w = torch.tensor([1.0, 2.0], requires_grad=True)
            with gradviz.watch() as watching:
                loss = (w * w).sum()
            own = watching.record(loss)
            print("own recording:", len(own.steps), "steps")
            again = (w * 3).sum()
            again.backward()
            torch.save(w.grad.clone(), "grad.pt")

        main()
        """,
    )
    monkeypatch.chdir(tmp_path)
    assert main(["render", str(path), "-o", "out", "--format", "json"]) == 0
    printed = capsys.readouterr().out
    assert "own recording: 3 steps" in printed  # SumBackward0, MulBackward0, AccumulateGrad
    # the script's own record() is gradviz's, not one of the script's backward() calls
    assert "recorded backward() call 1 of 1 (the last), of 'again'" in printed
    assert torch.equal(torch.load(tmp_path / "grad.pt"), torch.tensor([5.0, 7.0]))
