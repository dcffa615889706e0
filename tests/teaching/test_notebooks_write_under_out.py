"""The lecture notebooks write what they generate under ``out/`` (ignored by git), never
beside themselves in ``notebooks/``: every file-writing call's path is built from ``out``
(a ``Path`` that starts at ``"out"``) or is a string under ``out/``. Read from the source,
so it needs no kernel (``test_notebooks.py`` runs them)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parents[2] / "notebooks").glob("*.ipynb"))
# methods and functions that write the file named by their first argument
WRITERS = {"save", "save_steps", "write_text", "write_bytes", "savefig", "to_csv"}


def _code(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    lines = []
    for cell in cells:
        if cell["cell_type"] == "code":  # IPython magics and shell lines are no Python
            source = "".join(cell["source"]).splitlines()
            lines += [line for line in source if not line.lstrip().startswith(("%", "!"))]
    return "\n".join(lines)


def _out_names(tree: ast.AST) -> set[str]:
    """Names bound to a path under out/: ``out = Path("out") / ...`` and the like."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _starts_at_out(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _starts_at_out(value: ast.expr) -> bool:
    """``Path("out") / ...`` or ``Path("out/...")``."""
    while isinstance(value, ast.BinOp):
        value = value.left
    if isinstance(value, ast.Call) and value.args:
        value = value.args[0]
    return isinstance(value, ast.Constant) and str(value.value).split("/")[0] == "out"


def _under_out(argument: ast.expr, names: set[str]) -> bool:
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        return argument.value.startswith("out/")
    while isinstance(argument, ast.BinOp):  # out / "a" / "b.pdf"
        argument = argument.left
    return isinstance(argument, ast.Name) and argument.id in names


def _writes(tree: ast.AST) -> list[ast.Call]:
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in WRITERS and node.args:
            calls.append(node)
        elif isinstance(func, ast.Name) and func.id == "open" and len(node.args) > 1:
            mode = node.args[1]
            if isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax"):
                calls.append(node)
    return calls


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_notebook_writes_only_under_out(path: Path) -> None:
    tree = ast.parse(_code(path))
    names = _out_names(tree)
    outside = [ast.unparse(c) for c in _writes(tree) if not _under_out(c.args[0], names)]
    assert outside == [], f"{path.name} writes outside out/: {outside}"


def test_the_check_sees_a_file_written_beside_the_notebook() -> None:
    tree = ast.parse('rec.save("ten-ops.pdf")\nout = Path("out") / "x"\nrec.save(out / "a.pdf")')
    names = _out_names(tree)
    assert [_under_out(c.args[0], names) for c in _writes(tree)] == [False, True]


def test_generated_files_are_ignored_by_git() -> None:
    ignored = (Path(__file__).parents[2] / ".gitignore").read_text(encoding="utf-8").split()
    assert "out/" in ignored
