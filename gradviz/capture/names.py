"""Where ``watch()`` finds the user's names: the assignment targets of the lines that ran.

Pure stdlib: source comes from ``linecache`` (scripts, modules, and notebook cells, which
IPython registers there too), parsed once per file with ``ast``.
"""

from __future__ import annotations

import ast
import linecache

__all__ = ["assignment_targets", "prime"]

_COMPOUND = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Match,
)

_PARSED: dict[tuple[str, int], list[ast.stmt] | None] = {}


def _statements(filename: str) -> list[ast.stmt] | None:
    lines = linecache.getlines(filename)
    if not lines:
        return None
    key = (filename, hash("".join(lines)))
    if key in _PARSED:
        return _PARSED[key]
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        _PARSED[key] = None
        return None
    found = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and not isinstance(n, _COMPOUND)]
    _PARSED[key] = found
    return found


def _statement_at(filename: str, lineno: int) -> ast.stmt | None:
    statements = _statements(filename)
    if not statements:
        return None
    best: ast.stmt | None = None
    for statement in statements:
        end = statement.end_lineno or statement.lineno
        if statement.lineno <= lineno <= end and (
            best is None or (end - statement.lineno) < ((best.end_lineno or 0) - best.lineno)
        ):
            best = statement
    return best


def _names(target: ast.expr) -> list[str | None] | str | None:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Tuple | ast.List):
        return [elt.id if isinstance(elt, ast.Name) else None for elt in target.elts]
    return None


def assignment_targets(filename: str, lineno: int) -> list[str | None] | str | None:
    """What the statement at ``filename:lineno`` assigns to: ``"c"`` for ``c = a * b``,
    ``["b", "c", "d"]`` for ``b, c, d = a.unbind()``, None when it assigns no plain name."""
    statement = _statement_at(filename, lineno)
    if isinstance(statement, ast.Assign) and statement.targets:
        return _names(statement.targets[-1])
    if isinstance(statement, ast.AnnAssign | ast.AugAssign):
        return _names(statement.target)
    return None


def prime(name: str, count: int) -> str:
    """The ``count``-th tensor called ``name``: x, x′, x″, x‴, x⁽⁴⁾ ..."""
    if count == 0:
        return name
    if count <= 3:
        return name + "′″‴"[count - 1]
    digits = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
    return f"{name}⁽{str(count).translate(digits)}⁾"
