"""The lecture notebooks show gradviz's drawings as gradviz gives them (``rec.svg()``, a
``Picture``: at its own size, in a box that scrolls sideways when it is wider than the
output), never through IPython's ``SVG()``, which shows a wide drawing shrunk to the output's
width or running past its edge; and lesson 12 steps through the backward passes it explains.
Read from the source, so it needs no kernel (``test_notebooks.py`` runs them)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parents[2] / "notebooks").glob("*.ipynb"))
LESSON_12 = next(p for p in NOTEBOOKS if p.name.startswith("12-"))


def _code_cells(path: Path) -> list[ast.Module]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [ast.parse("".join(c["source"])) for c in cells if c["cell_type"] == "code"]


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    """Calls of ``name`` or of ``something.name``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called == name:
                found.append(node)
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_drawings_are_shown_in_their_scrolling_box(path: Path) -> None:
    wrapped = [
        ast.unparse(call)
        for tree in _code_cells(path)
        for call in _calls(tree, "SVG")
        if call.args and _calls(call.args[0], "svg")
    ]
    assert wrapped == [], f"{path.name} shows drawings through IPython's SVG(): {wrapped}"


def test_lesson_12_steps_through_the_backward_passes_it_explains() -> None:
    steppers = [call for tree in _code_cells(LESSON_12) for call in _calls(tree, "Stepper")]
    # the non-leaf cause, the saved tensors freed, the vanishing gradients, optimizer.step()
    assert len(steppers) >= 4, [ast.unparse(s) for s in steppers]
