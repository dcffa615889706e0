"""From the picture to the code: each node's panel data names the file and line that made it
(under ``gradviz.watch()``), with the line's text and a ``vscode://file`` link to a real file;
code from a notebook cell names the cell instead. Hostile file names and lines stay data."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from urllib.parse import unquote

import pytest
import torch
from torch import nn

import gradviz
from gradviz.model.forward import SourceLine
from gradviz.replay.frames import replay_data
from gradviz.replay.sources import MAX_PATH_CHARS, MAX_TEXT_CHARS, source_data
from gradviz.stepper.page import unpack_state


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.tensor([2.0, 3.0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * self.scale  # the mul
        return torch.tanh(y).sum()  # tanh and sum


def line_of(marker: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(number for number, text in enumerate(lines, 1) if text.endswith(marker))


def node_of(rec: gradviz.Recording, grad_fn: object) -> str:
    return next(n.id for n in rec.graph.nodes if n.torch_node is grad_fn)


def watched() -> tuple[gradviz.Recording, torch.Tensor]:
    model = Small()
    x = torch.tensor([0.5, -1.0])
    with gradviz.watch(model) as w:
        loss = model(x)
    return w.record(loss), loss


def test_each_step_names_the_line_of_this_file_that_made_its_node() -> None:
    rec, loss = watched()
    data = replay_data(rec)
    steps, sources = data["steps"], data["sources"]
    lines = sources["lines"]
    assert len(sources["steps"]) == len(steps) and len(sources["forward"]) == len(data["forward"])
    by_node = {step["node"]: sources["steps"][step["index"]] for step in steps if step["node"]}
    sum_node = node_of(rec, loss.grad_fn)
    tanh_node = node_of(rec, loss.grad_fn.next_functions[0][0])
    mul_node = node_of(rec, loss.grad_fn.next_functions[0][0].next_functions[0][0])
    here = str(Path(__file__).resolve())
    for node, marker, text in [
        (sum_node, "# tanh and sum", "return torch.tanh(y).sum()  # tanh and sum"),
        (tanh_node, "# tanh and sum", "return torch.tanh(y).sum()  # tanh and sum"),
        (mul_node, "# the mul", "y = x * self.scale  # the mul"),
    ]:
        source = lines[by_node[node]]
        assert source["file"] == __file__
        assert source["line"] == line_of(marker)
        assert source["text"] == text
        assert source["where"] == f"test_source_links.py:{line_of(marker)}"
        assert source["cell"] is None
        assert source["href"].startswith("vscode://file/")
        assert unquote(source["href"]) == f"vscode://file{here}:{line_of(marker)}"
    # the parameter's AccumulateGrad was made by no op: no source
    accumulate = [s["index"] for s in steps if s["type"] == "AccumulateGrad"]
    assert accumulate and all(sources["steps"][i] is None for i in accumulate)
    assert sources["steps"][0] is None  # the seed
    # one line that made two nodes is shipped once
    assert by_node[sum_node] == by_node[tanh_node]
    assert len(lines) == len({(s["file"], s["line"]) for s in lines})
    # the forward frames too
    frames = zip(data["forward"], sources["forward"], strict=True)
    muls = [lines[at]["line"] for frame, at in frames if frame["type"] == "mul"]
    assert muls == [line_of("# the mul")]


def test_without_watch_there_is_no_source() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    rec = gradviz.record((x * 3).sum())
    data = replay_data(rec)
    assert "sources" not in data


def test_code_from_a_cell_names_the_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    old = source_data(SourceLine("<ipython-input-7-0a1b2c>", 3, "<module>", "y = x * 2"))
    assert (old["where"], old["cell"], old["href"]) == ("cell [7] line 3", 7, None)
    name = "/tmp/ipykernel_4242/1234567.py"
    plain = source_data(SourceLine(name, 2, "<module>", "y = x * 2"))
    assert (plain["where"], plain["cell"], plain["href"]) == ("cell line 2", None, None)
    # the running IPython knows which execution compiled the cell's file
    shell = types.SimpleNamespace(compile=types.SimpleNamespace(_filename_map={name: 12}))
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: shell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    known = source_data(SourceLine(name, 2, "<module>", "y = x * 2"))
    assert (known["where"], known["cell"], known["href"]) == ("cell [12] line 2", 12, None)


def test_a_file_that_is_gone_gets_no_link(tmp_path: Path) -> None:
    gone = source_data(SourceLine(str(tmp_path / "gone.py"), 4, "f", "x = 1"))
    assert gone["href"] is None and gone["where"] == "gone.py:4"


HOSTILE_NAME = "<script>alert(1)<\\script> \"q\" 'a' %20 #x ?y &amp; ]]> <!-- 👍.py"
HOSTILE_LINE = "</script><img src=x onerror=alert(1)>"


def test_hostile_file_names_and_lines_stay_data(tmp_path: Path) -> None:
    path = tmp_path / HOSTILE_NAME
    body = f"def make(x):\n    return (x * 2).sum()  # {HOSTILE_LINE}{'z' * 500}\n"
    path.write_text(body, encoding="utf-8")
    namespace: dict[str, object] = {}
    exec(compile(body, str(path), "exec"), namespace)  # a module from that file
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with gradviz.watch() as w:
        loss = namespace["make"](x)  # type: ignore[operator]
    rec = w.record(loss)
    data = replay_data(rec)
    source = next(data["sources"]["lines"][at] for at in data["sources"]["steps"] if at is not None)
    assert source["file"] == str(path) and source["line"] == 2
    assert len(source["text"]) == MAX_TEXT_CHARS and source["text"].endswith("…")
    assert HOSTILE_LINE in source["text"]
    assert unquote(source["href"]) == f"vscode://file{path.resolve()}:2"
    assert not set(source["href"]) & set(" \"'<>#?&")  # one URL, nothing to break out of
    long = source_data(SourceLine("/" + "d" * 5000 + "/m.py", 1, "f", "x"))
    assert len(long["file"]) == MAX_PATH_CHARS and long["file"].endswith("/m.py")


@pytest.mark.needs_dot
def test_the_page_carries_hostile_sources_whole_and_inert(tmp_path: Path) -> None:
    path = tmp_path / HOSTILE_NAME
    body = f"def make(x):\n    return (x * 2).sum()  # {HOSTILE_LINE}\n"
    path.write_text(body, encoding="utf-8")
    namespace: dict[str, object] = {}
    exec(compile(body, str(path), "exec"), namespace)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with gradviz.watch() as w:
        loss = namespace["make"](x)  # type: ignore[operator]
    page = w.record(loss).save(tmp_path / "replay.html").read_text(encoding="utf-8")
    assert "<script>alert" not in page and "<img src=x" not in page
    data = unpack_state(page)["data"]
    sources = data["sources"]["lines"]
    assert sources and all(s["file"] == str(path) for s in sources)
    assert all(HOSTILE_LINE in s["text"] for s in sources)
