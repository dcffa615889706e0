"""From the picture to the code: the source line that made each node, for the stepper's panel.

Under ``gradviz.watch()`` every forward op knows the file and line that ran it
(``SourceLine``). The panel shows it with the line's text, and a ``vscode://file/...`` link
where the file is a real file; code typed into a notebook cell has no file to open, so the
panel names the cell (its execution count where the running IPython knows it). Texts are
bounded: a path or a line of any length never makes a page heavy.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gradviz.model.forward import SourceLine
from gradviz.model.recording import Recording

__all__ = ["MAX_PATH_CHARS", "MAX_TEXT_CHARS", "source_data", "source_lines"]

MAX_TEXT_CHARS = 200  # the source line's text shown
MAX_PATH_CHARS = 300  # the file's path shown (its end: the file's name is what one reads)
_MAX_LINK_CHARS = 2000  # a longer path gets no link (a link must hold the whole path)
_IPYTHON_INPUT = re.compile(r"^<ipython-input-(\d+)-")


def source_data(line: SourceLine) -> dict[str, Any]:
    """The panel's data for one source line: ``file`` and ``text`` (bounded), ``line``,
    ``where`` ("model.py:12", "cell [5] line 3"), ``cell`` (the execution count, or None)
    and ``href`` (a ``vscode://file`` link, or None: not a file one can open)."""
    in_cell = _in_cell(line.filename)
    count = _cell_count(line.filename) if in_cell else None
    if in_cell:
        where = f"cell [{count}] line {line.lineno}" if count else f"cell line {line.lineno}"
    else:
        where = line.short()
    return {
        "file": _tail(line.filename, MAX_PATH_CHARS),
        "line": line.lineno,
        "text": _head(line.text.strip(), MAX_TEXT_CHARS),
        "where": _tail(where, MAX_PATH_CHARS),
        "cell": count,
        "href": None if in_cell else _editor_link(line.filename, line.lineno),
    }


def source_lines(recording: Recording) -> dict[str, Any] | None:
    """The page's ``sources``: ``lines``, each source line once (``source_data``), and per
    backward step 0..N (``steps``) and per forward frame (``forward``, in order) the index
    in ``lines`` of the line of the op that made its node, or None. None without
    ``watch()``."""
    forward = recording.graph.forward
    if forward is None:
        return None
    lines: list[dict[str, Any]] = []
    seen: dict[SourceLine, int] = {}  # a line that made many nodes is shipped once

    def index_of(line: SourceLine | None) -> int | None:
        if line is None:
            return None
        if line not in seen:
            seen[line] = len(lines)
            lines.append(source_data(line))
        return seen[line]

    by_step: list[int | None] = [None]  # the seed
    for step in recording.steps:
        op = forward.op_for_node(step.node_id)
        by_step.append(index_of(None if op is None else op.line))
    by_frame = [index_of(op.line) for op in forward.replayed]
    if not lines:
        return None
    return {"lines": lines, "steps": by_step, "forward": by_frame}


def _in_cell(filename: str) -> bool:
    path = filename.replace("\\", "/")
    return "/ipykernel_" in path or path.startswith("<ipython-input-")


def _cell_count(filename: str) -> int | None:
    """The execution count of the cell that compiled ``filename``: in its name
    (``<ipython-input-5-...>``), else from the IPython running here (never imported here)."""
    match = _IPYTHON_INPUT.match(filename)
    if match:
        return int(match.group(1))
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython else None
    known = getattr(getattr(shell, "compile", None), "_filename_map", None)
    count = known.get(filename) if isinstance(known, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def _editor_link(filename: str, lineno: int) -> str | None:
    """``vscode://file/<absolute path>:<line>``, URL-encoded, for a file that exists."""
    if len(filename) > _MAX_LINK_CHARS or "\x00" in filename:
        return None
    try:
        if not os.path.isfile(filename):
            return None
        path = Path(filename).resolve().as_posix()
    except (OSError, ValueError):
        return None
    if not path.startswith("/"):
        path = "/" + path  # a Windows drive: vscode://file/C:/...
    return f"vscode://file{quote(path, safe='/:')}:{lineno}"


def _head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]
