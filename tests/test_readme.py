"""The README's Python examples run as printed: every ```python block, in order, in one
namespace (as a reader would paste them into one session), in an empty folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.teaching.lessons import lesson

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def as_tensor(value: object) -> torch.Tensor:
    assert isinstance(value, torch.Tensor), type(value)
    return value


def python_blocks() -> list[str]:
    """The blocks, less notebook-only lines (``%pip install ...`` is for a notebook cell)."""
    blocks = BLOCK.findall(README.read_text(encoding="utf-8"))
    runnable = [
        "".join(line for line in b.splitlines(True) if not line.startswith("%")) for b in blocks
    ]
    return [block for block in runnable if block.strip()]


def test_the_readme_has_python_examples() -> None:
    assert len(python_blocks()) >= 4


@pytest.mark.needs_dot
def test_every_python_block_runs_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for number, block in enumerate(python_blocks(), 1):
        code = compile(block, f"README.md python block {number}", "exec")
        exec(code, namespace)  # a failing block fails the test with its own traceback
        if "rec = gradviz.record(k" in block:
            ten_ops = namespace["rec"]
    # what the blocks say they write is there
    for written in ("c.svg", "c.png", "replay.html"):
        assert (tmp_path / written).stat().st_size > 0, written
    assert len(list((tmp_path / "steps").glob("step-*.svg"))) > 3
    # and what the record block's comments claim is what PyTorch computes
    assert isinstance(ten_ops, gradviz.Recording)
    div = ten_ops.steps[2]
    assert div.type_name == "DivBackward0"
    built = lesson("ten-ops").build()
    k, i, g, h = (built.names[n] for n in "kigh")
    (dk_di,) = torch.autograd.grad(k, i, retain_graph=True)
    dk_dg, dk_dh_through_i = torch.autograd.grad(i, (g, h), grad_outputs=dk_di)
    assert torch.equal(as_tensor(div.grad_outputs[0]), dk_di)  # "(18,)"
    assert torch.equal(as_tensor(div.grad_inputs[0]), dk_dg)  # "(9, -72)"
    assert torch.equal(as_tensor(div.grad_inputs[1]), dk_dh_through_i)


def test_the_readme_counts_the_lessons() -> None:
    from gradviz.teaching.lessons import LESSONS

    text = README.read_text(encoding="utf-8")
    words = {10: "ten", 11: "eleven", 12: "twelve"}
    count = len(LESSONS)
    assert f"the {words.get(count, count)} lessons" in text or f"the {count} lessons" in text
    wrong = [w for n, w in words.items() if n != count and f"the {w} lessons" in text]
    assert not wrong, wrong
