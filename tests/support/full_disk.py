"""A disk that fills up half-way through a write: for the tests that a failed save leaves
the previous file whole and no temporary file behind."""

from __future__ import annotations

import builtins
import errno
import io
from pathlib import Path
from typing import Any

import pytest


class FullDisk:
    """A file whose disk fills up: the first write gets half its bytes out, then fails."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, data: Any) -> int:
        self._stream.write(data[: len(data) // 2])
        self._stream.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __enter__(self) -> FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.close()


def fill_disk(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """From now on every file opened for writing under ``folder`` (by name or, as
    ``os.fdopen`` does, by descriptor) fails half-way through its first write."""
    real_open = io.open

    def failing_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        stream = real_open(file, mode, *args, **kwargs)
        writing = any(flag in mode for flag in "wax+")
        under = isinstance(file, int) or str(folder) in str(file)
        return FullDisk(stream) if writing and under else stream

    monkeypatch.setattr(io, "open", failing_open)
    monkeypatch.setattr(builtins, "open", failing_open)
