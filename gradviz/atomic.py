"""Files are written whole or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write"]


def atomic_write(path: Path, data: bytes | str) -> Path:
    """Write ``path`` whole or not at all: into a temporary file beside it, then renamed over
    it. A failing write (disk full, quota) leaves no truncated file and keeps the old one."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
        os.chmod(temp, 0o666 & ~_UMASK)  # as open() would have made it, not mkstemp's 0600
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


def _read_umask() -> int:
    mask = os.umask(0o022)  # read once, at import, before any thread writes files
    os.umask(mask)
    return mask


_UMASK = _read_umask()
