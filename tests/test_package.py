"""The package's shape: the public API, what importing it loads, and who may import what."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import gradviz

PACKAGE = Path(gradviz.__file__).parent


def imports_of(module: str) -> set[str]:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())  # module: "model/graph" ...
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
    drawing = [f"render/{p.stem}" for p in (PACKAGE / "render").glob("*.py")]
    for module in ("model/graph", "model/values", *drawing):
        assert "torch" not in imports_of(module), module


def test_only_the_backend_starts_graphviz() -> None:
    for path in PACKAGE.rglob("*.py"):
        module = path.relative_to(PACKAGE).with_suffix("").as_posix()
        if module == "render/backend":
            continue
        used = imports_of(module)
        assert "subprocess" not in used and "graphviz" not in used, path.name


def test_ships_type_information() -> None:
    assert (PACKAGE / "py.typed").exists()
