"""The lecture notebooks: each runs top to bottom, and each is committed without outputs.

Every notebook ends in check cells that compare gradviz's numbers with PyTorch's, so a
notebook that runs is a notebook whose diagrams agree with autograd. The kernel is the
interpreter running these tests (the project's .venv under ``make test``): a kernelspec for
``sys.executable`` is written into a temporary Jupyter data directory, so whatever kernels
the machine or the user have installed play no part.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 120  # seconds per cell; each notebook takes a few seconds in all
CHECK = "## Check against PyTorch"


def _ids(paths: list[Path]) -> list[str]:
    return [path.stem for path in paths]


def test_every_lesson_has_a_notebook() -> None:
    numbers = [path.name[:2] for path in NOTEBOOKS]
    assert numbers[0] == "00", "the tour of gradviz comes first"
    assert numbers == [f"{n:02d}" for n in range(len(numbers))], f"gaps in {numbers}"
    assert len(numbers) >= 11, "the tour and the ten lessons"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_is_committed_clean(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert "widgets" not in notebook.metadata, "widget state is saved in the notebook"
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        where = f"{path.name}, cell {index}"
        assert cell.outputs == [], f"{where} has outputs: clear them before committing"
        assert cell.execution_count is None, f"{where} has an execution count"
        assert "execution" not in cell.metadata, f"{where} has execution timing metadata"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_checks_against_pytorch(path: Path) -> None:
    """Each notebook ends with a visible check section whose cells assert."""
    cells = nbformat.read(path, as_version=4).cells
    headings = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and CHECK in c.source]
    assert headings, f"{path.name} has no '{CHECK}' section"
    checks = [c.source for c in cells[headings[-1] :] if c.cell_type == "code"]
    assert any("assert " in source for source in checks), f"{path.name}: the checks assert nothing"


@pytest.mark.slow
@pytest.mark.needs_dot
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_runs(path: Path, kernel_name: str, tmp_path: Path) -> None:
    """Top to bottom in a fresh kernel; any failing cell (a check included) fails the test.

    The notebook runs in a temporary directory, so the files it saves land there.
    """
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT,
        kernel_name=kernel_name,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()

    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count is not None for cell in code_cells)
    warnings = [
        output.get("text", "")
        for cell in code_cells
        for output in cell.outputs
        if output.get("name") == "stderr" and "GradvizWarning" in output.get("text", "")
    ]
    assert not warnings, f"gradviz warned while running {path.name}: {warnings}"
