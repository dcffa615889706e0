"""The layers of docs/architecture.md as assertions: lower packages never import higher ones,
and no module imports itself back through others. Function-level imports count; only
``if TYPE_CHECKING:`` imports (never run) do not."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gradviz

PACKAGE = Path(gradviz.__file__).parent

# The layers in the order the data flows, bottom to top: plain data, capture (torch in,
# plain data out), analysis (facts about that data: no drawing, no capture runs),
# narration, drawing, replay, the notebook page and widget. Each part may import the
# leaves and every part below it (see each package's __init__ docstring). Files are written
# by export alone, so only export imports ``atomic``.
LEAVES = {"errors", "escape"}
ORDER = ["model", "capture", "analysis", "explain", "render", "replay", "stepper"]
# the exceptions to "everything below": drawing never sees torch, so never capture
NOT_BELOW: dict[str, set[str]] = {"render": {"capture"}, "replay": {"capture"}}
ALLOWED: dict[str, set[str]] = {"errors": set(), "escape": set(), "atomic": set()}
ALLOWED["progress"] = set()
for _index, _part in enumerate(ORDER):
    ALLOWED[_part] = LEAVES | set(ORDER[:_index]) - NOT_BELOW.get(_part, set())
ALLOWED["stepper"] |= {"progress"}
# export writes every file, of every layer below it; the public API sits on top of it
ALLOWED["export"] = set(ALLOWED) - {"progress"}
BELOW_OBJECTS = set(ALLOWED) - {"atomic"}
ALLOWED["reports"] = BELOW_OBJECTS
ALLOWED["objects"] = BELOW_OBJECTS | {"reports"}
ALLOWED["teaching"] = BELOW_OBJECTS | {"objects", "reports"}
ALLOWED["cli"] = BELOW_OBJECTS | {"objects", "reports", "teaching"}
ALLOWED["__main__"] = {"cli"}
ALLOWED["__init__"] = BELOW_OBJECTS | {"objects", "reports"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_in(source: str, package: str) -> set[str]:
    """Every gradviz module the source imports when it runs, at any depth of the code;
    ``package`` resolves relative imports."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names if a.name.startswith("gradviz"))
            elif isinstance(child, ast.ImportFrom):
                target = child.module or ""
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    target = ".".join([*base, *([child.module] if child.module else [])])
                if target.startswith("gradviz"):
                    found.add(target)
                    # "from gradviz.x import y" imports the module gradviz.x.y when there is one
                    found.update(
                        f"{target}.{a.name}" for a in child.names if is_module(target, a.name)
                    )
            visit(child)

    visit(ast.parse(source))
    return found


def is_module(package: str, name: str) -> bool:
    path = PACKAGE.parent.joinpath(*package.split("."), name)
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def run_time_imports(path: Path) -> set[str]:
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return imports_in(path.read_text(encoding="utf-8"), package)


def part_of(module: str) -> str:
    """The layer a module belongs to: its sub-package, or its top-level module's name."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def all_imports() -> dict[str, set[str]]:
    return {module_name(p): run_time_imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_part_has_rules() -> None:
    parts = {part_of(m) for m in all_imports()}
    assert parts == set(ALLOWED), parts ^ set(ALLOWED)


def test_lower_layers_never_import_higher_ones() -> None:
    wrong = []
    for module, imported in all_imports().items():
        part = part_of(module)
        for target in imported:
            other = part_of(target)
            if other != part and other not in ALLOWED[part]:
                wrong.append(f"{module} imports {target}")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycles() -> None:
    graph = all_imports()
    modules = set(graph)
    edges = {m: {t for t in targets if t in modules and t != m} for m, targets in graph.items()}
    # a package's __init__ only documents, so importing a submodule does not run its siblings
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def walk(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                cycles.append([*stack[stack.index(target) :], target])
            elif target not in state:
                walk(target)
        stack.pop()
        state[module] = 2

    for module in sorted(modules):
        if module not in state:
            walk(module)
    assert not cycles, "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_analysis_and_narration_run_no_capture() -> None:
    """Analysis and narration work on what capture made: they never trace, record or watch
    (the layer above capture runs them on its results)."""
    runners = {"gradviz.capture.trace", "gradviz.capture.record", "gradviz.capture.watch"}
    wrong = [
        f"{module} imports {target}"
        for module, imported in all_imports().items()
        if part_of(module) in ("analysis", "explain")
        for target in imported & runners
    ]
    assert not wrong, "\n".join(sorted(wrong))


def test_no_module_is_over_700_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 700
    }
    assert not long, long


def test_the_checker_sees_function_level_imports_and_skips_type_checking() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from gradviz.replay.frames import Frame\n"
        "def draw():\n"
        "    from gradviz.render.views import to_dot\n"
        "    from . import values\n"
    )
    found = imports_in(source, "gradviz.model")
    assert "gradviz.render.views" in found and "gradviz.model.values" in found
    assert "gradviz.replay.frames" not in found


def test_pyproject_ships_every_sub_package() -> None:
    """The wheel's package list (explicit, for the assets mapping) misses no sub-package."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {module_name(p) for p in PACKAGE.rglob("__init__.py")}
    assert found | {"gradviz.assets"} == listed
