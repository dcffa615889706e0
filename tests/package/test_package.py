"""The package's shape: the public API, what importing it loads, and who may import what."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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


# --- what pyproject.toml claims is true ---------------------------------------------------

ROOT = PACKAGE.parent
# import names whose distribution is named otherwise (import name -> distribution)
DISTRIBUTION_OF = {
    "IPython": "ipython",
    "PIL": "pillow",
    "pptx": "python-pptx",
    "resvg_py": "resvg-py",
}


def pyproject() -> dict[str, Any]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config


def declared(requirements: list[str]) -> dict[str, str]:
    """Distribution name (normalised) -> its requirement."""
    found = {}
    for requirement in requirements:
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        assert name, requirement
        found[re.sub(r"[-_.]+", "-", name.group().lower())] = requirement
    return found


def third_party_imports() -> dict[str, set[str]]:
    """Top-level module -> the gradviz modules that import it (stdlib and gradviz left out)."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        module = path.relative_to(PACKAGE).with_suffix("").as_posix()
        for name in imports_of(module):
            if name not in sys.stdlib_module_names and name not in ("gradviz", "__future__"):
                found.setdefault(name, set()).add(module)
    return found


def test_every_import_is_a_declared_dependency() -> None:
    """Each third-party package gradviz imports is in ``dependencies`` or, for the notebook
    widgets (the stepper, the explorer, the film strip) and the optional NumPy fast paths, in the
    ``notebook`` extra, or, for the video
    writer alone, in the ``video`` extra."""
    project = pyproject()["project"]
    required = declared(project["dependencies"])
    notebook = declared(project["optional-dependencies"]["notebook"])
    video = declared(project["optional-dependencies"]["video"])
    imported = third_party_imports()
    assert {"torch", "typing_extensions", "anywidget"} <= set(imported)  # the scan sees them
    missing = []
    for name, modules in sorted(imported.items()):
        distribution = re.sub(r"[-_.]+", "-", DISTRIBUTION_OF.get(name, name).lower())
        if distribution in required:
            continue
        only_widget = modules <= {"stepper/widget", "stepper/explore", "stepper/filmwidget"}
        if distribution in notebook and (only_widget or name == "numpy"):
            continue  # numpy: every import of it is guarded (the wheel test runs without it)
        if distribution in video and modules == {"replay/video"}:
            continue
        missing.append(f"{name} (imported by {', '.join(sorted(modules))})")
    assert not missing, missing


def test_the_version_is_written_once() -> None:
    """pyproject.toml reads the version from gradviz/__init__.py, as a literal that the
    build reads without importing the package."""
    config = pyproject()
    assert "version" not in config["project"]
    assert "version" in config["project"]["dynamic"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "gradviz.__version__"}
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    literals = [
        node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [getattr(t, "id", None) for t in node.targets] == ["__version__"]
        and isinstance(node.value, ast.Constant)
    ]
    assert literals == [gradviz.__version__]
    assert re.fullmatch(r"\d+\.\d+\.\d+", gradviz.__version__)


def test_mypy_checks_the_lowest_python_claimed() -> None:
    config = pyproject()
    lowest = re.fullmatch(r">=(\d+\.\d+)", config["project"]["requires-python"])
    assert lowest, config["project"]["requires-python"]
    assert config["tool"]["mypy"]["python_version"] == lowest.group(1)
    assert sys.version_info[:2] >= tuple(int(p) for p in lowest.group(1).split("."))


def test_the_torch_claimed_is_the_torch_tested() -> None:
    """The lowest torch in ``dependencies`` is the Makefile's default TORCH_SPEC (the one
    ``make test`` runs with) or lower only where ``make test-torch`` ran it."""
    (torch_requirement,) = [
        r for r in pyproject()["project"]["dependencies"] if re.match(r"torch\b", r)
    ]
    lowest = re.fullmatch(r"torch>=([\d.]+)", torch_requirement)
    assert lowest, torch_requirement
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    default = re.search(r"^TORCH_SPEC \?= torch==([\d.]+)$", makefile, re.MULTILINE)
    assert default, "the Makefile pins a default TORCH_SPEC"
    assert default.group(1).startswith(lowest.group(1)), (lowest.group(1), default.group(1))
    assert re.search(r"^test-torch:", makefile, re.MULTILINE)


def test_the_license_file_is_the_license_claimed() -> None:
    assert pyproject()["project"]["license"] == "MIT"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "Copyright (c) 2026 the gradviz developers" in text
