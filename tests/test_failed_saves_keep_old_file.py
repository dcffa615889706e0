"""A save that fails half-way (a full disk) leaves the previous file as it was, and no
temporary file beside it: slides (.pdf, .pptx) and a diff's files go through
``gradviz.atomic`` like every other save."""

from __future__ import annotations

import builtins
import errno
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz


class _FullDisk:
    """A file whose disk fills up: the first write gets half its bytes out, then fails."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, data: Any) -> int:
        self._stream.write(data[: len(data) // 2])
        self._stream.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.close()


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[], None]:
    """Call it to make every file opened for writing under ``tmp_path`` (by name or, as
    ``os.fdopen`` does, by descriptor) fail half-way through its first write."""
    real_open = io.open

    def failing_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        stream = real_open(file, mode, *args, **kwargs)
        writing = any(flag in mode for flag in "wax+")
        under = isinstance(file, int) or str(tmp_path) in str(file)
        return _FullDisk(stream) if writing and under else stream

    def start() -> None:
        monkeypatch.setattr(io, "open", failing_open)
        monkeypatch.setattr(builtins, "open", failing_open)

    return start


def _recording(scale: float = 1.0) -> gradviz.Recording:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)
    return gradviz.record((x * w * scale).tanh().sum(), names={"x": x, "w": w})


def _check_kept(path: Path, save: Callable[[], object], full_disk: Callable[[], None]) -> None:
    before = path.read_bytes()
    assert before, "the first save wrote nothing"
    full_disk()
    with pytest.raises(OSError, match="No space"):
        save()
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temp file left


@pytest.mark.needs_dot
@pytest.mark.parametrize("suffix", [".pdf", ".pptx"])
def test_a_failed_slides_save_keeps_the_previous_file(
    suffix: str, tmp_path: Path, full_disk: Callable[[], None]
) -> None:
    path = tmp_path / f"slides{suffix}"
    _recording().save(path)
    again = _recording(2.0)
    _check_kept(path, lambda: again.save(path), full_disk)


@pytest.mark.needs_dot
@pytest.mark.parametrize("suffix", [".html", ".svg", ".dot", ".json"])
def test_a_failed_diff_save_keeps_the_previous_file(
    suffix: str, tmp_path: Path, full_disk: Callable[[], None]
) -> None:
    path = tmp_path / f"diff{suffix}"
    diff = _recording().diff(_recording(2.0))
    diff.save(path)
    _check_kept(path, lambda: diff.save(path), full_disk)
