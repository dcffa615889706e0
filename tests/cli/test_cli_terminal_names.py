"""The command line never prints a right-to-left override, an escape sequence or another
hidden character from a user's file or tensor name raw: each shows as its escape."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gradviz.cli import main

HIDDEN = ("\u202e", "\u2066", "\u200f", "\x1b", "\r")
SCRIPT = """
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
loss = (x * x).sum()
{tail}
"""


def script(folder: Path, tail: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "gpj.\u202eexe\x1b[31m\r.py"  # shows as "...yp.exe" without escapes
    path.write_text(textwrap.dedent(SCRIPT.format(tail=tail)), encoding="utf-8")
    return path


def printed_raw(text: str) -> list[str]:
    return [char for char in HIDDEN if char in text]


def test_the_escapes_are_visible_and_plain_text_is_kept() -> None:
    from gradviz.cli.terminal import terminal_text

    shown = terminal_text("a\u202eb\x1bc\r\u2066d\udcff\n\tété 日本")
    assert shown == "a\\u202eb\\x1bc\\x0d\\u2066d\\udcff\n\tété 日本"


def test_a_run_prints_the_names_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = script(tmp_path / "in\u202eside")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "o\u2066ut\x1b]0;title\x07"
    assert main(["render", str(path), "-o", str(out), "--format", "json"]) == 0
    printed = capsys.readouterr()
    assert printed_raw(printed.out + printed.err) == []
    assert "\\u202e" in printed.out and "\\u2066" in printed.out and "\\x1b" in printed.out


@pytest.mark.parametrize("tail", ["raise ValueError('no')", "import sys; sys.exit(3)"])
def test_a_failing_script_is_named_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tail: str
) -> None:
    path = script(tmp_path, tail)
    monkeypatch.chdir(tmp_path)
    assert main(["render", str(path), "-o", "out", "--format", "json"]) != 0
    printed = capsys.readouterr()
    assert printed_raw(printed.out + printed.err) == []
    assert "\\u202e" in printed.err


def test_a_missing_script_and_a_bad_folder_are_named_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["render", "no\u202ene.py", "--format", "json"]) == 2
    assert "no\\u202ene.py" in capsys.readouterr().err
    path = script(tmp_path)
    blocker = tmp_path / "fi\u202ele"
    blocker.write_text("")
    assert main(["render", str(path), "-o", str(blocker / "x"), "--format", "json"]) == 2
    printed = capsys.readouterr()
    assert printed_raw(printed.out + printed.err) == []
    assert "fi\\u202ele" in printed.err
