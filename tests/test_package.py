"""The package's shape: the public API, what importing it loads, and who may import what."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import gradviz

PACKAGE = Path(gradviz.__file__).parent


def imports_of(module: str) -> set[str]:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_public_api_is_curated() -> None:
    for name in gradviz.__all__:
        assert hasattr(gradviz, name), name
    assert {"trace", "Graph", "NotOnGraph", "GraphvizNotFound", "GraphFreed"} <= set(
        gradviz.__all__
    )


def test_import_loads_no_notebook_machinery() -> None:
    code = (
        "import sys, gradviz; "
        "bad = [m for m in ('IPython', 'ipywidgets', 'anywidget', 'jupyterlab') "
        "if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_data_theme_and_render_never_import_torch() -> None:
    for module in ("graph", "theme", "render"):
        assert "torch" not in imports_of(module), module


def test_only_graphviz_run_starts_graphviz() -> None:
    for path in PACKAGE.glob("*.py"):
        if path.stem == "graphviz_run":
            continue
        used = imports_of(path.stem)
        assert "subprocess" not in used and "graphviz" not in used, path.name


def test_ships_type_information() -> None:
    assert (PACKAGE / "py.typed").exists()
