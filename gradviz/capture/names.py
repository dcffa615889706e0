"""Where ``watch()`` finds the user's names: the assignment targets of the lines that ran.

Pure stdlib: source comes from ``linecache`` (scripts, modules, and notebook cells, which
IPython registers there too), parsed once per file with ``ast``. A target names a tensor
only once the code really bound that very tensor to it (``Bindings`` looks in the frame's
locals), so ``it = iter([...])`` or ``total = sum(...)`` name nothing on the way.
"""

from __future__ import annotations

import ast
import linecache
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

__all__ = ["Bindings", "assignment_targets", "loop_variables", "prime"]

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

_PER_STATEMENT = 4  # one statement's ops still waiting to bind (see Bindings.settle)

_PARSED: dict[tuple[str, int], tuple[list[ast.stmt], frozenset[str]] | None] = {}
# Python 3.11's ast.parse is not safe in two threads at once (watch() blocks in threads)
_PARSE_LOCK = threading.Lock()


def _parsed(filename: str) -> tuple[list[ast.stmt], frozenset[str]] | None:
    """The file's simple statements and its loop variables, parsed once per version."""
    lines = linecache.getlines(filename)
    if not lines:
        return None
    key = (filename, hash("".join(lines)))
    with _PARSE_LOCK:
        if key in _PARSED:
            return _PARSED[key]
        try:
            tree = ast.parse("".join(lines))
        except (SyntaxError, ValueError, RecursionError):
            _PARSED[key] = None
            return None
        statements: list[ast.stmt] = []
        loops: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND):
                statements.append(node)
            if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                loops.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        _PARSED[key] = (statements, frozenset(loops))
        return _PARSED[key]


def _statements(filename: str) -> list[ast.stmt] | None:
    parsed = _parsed(filename)
    return None if parsed is None else parsed[0]


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


def loop_variables(filename: str) -> frozenset[str]:
    """The names ``for`` loops in the file bind (``for param in model.parameters()``): a
    loop variable is left holding its last item, which is no name for that tensor."""
    parsed = _parsed(filename)
    return frozenset() if parsed is None else parsed[1]


# (filename, lineno) -> (the linecache lines it was read from, (first, last, names) or None)
_AT: dict[tuple[str, int], tuple[list[str], tuple[int, int, tuple[str, ...]] | None]] = {}


def _assignment(filename: str, lineno: int) -> tuple[int, int, tuple[str, ...]] | None:
    """The lines of the assignment at ``filename:lineno`` and every plain name it binds
    (``a = b = x * 2`` binds both), remembered while linecache holds the same source."""
    lines = linecache.getlines(filename)
    hit = _AT.get((filename, lineno))
    if hit is not None and hit[0] is lines:
        return hit[1]
    statement = _statement_at(filename, lineno)
    names: tuple[str, ...] = ()
    if isinstance(statement, ast.Assign):
        names = tuple(n for target in statement.targets for n in _flat(_names(target)))
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
        names = _flat(_names(statement.target))
    found = None
    if statement is not None and names:
        found = (statement.lineno, statement.end_lineno or statement.lineno, names)
    if len(_AT) > 50_000:  # a long session of notebook cells
        _AT.clear()
    _AT[(filename, lineno)] = (lines, found)
    return found


def _flat(targets: list[str | None] | str | None) -> tuple[str, ...]:
    if targets is None:
        return ()
    if isinstance(targets, str):
        return (targets,)
    return tuple(name for name in targets if name)


@dataclass
class _Pending:
    """An op whose outputs the statement at ``first..last`` may bind to ``names``."""

    frame: FrameType
    first: int
    last: int
    names: tuple[str, ...]
    outputs: frozenset[str]
    instruction: int  # the frame's ``f_lasti`` at the op: it only grows within one run


class Bindings:
    """The names the user's code bound to the outputs of the ops it ran.

    After each op, the statement it ran in is noted; at the next op (or when the watch
    ends) the frame's locals say which tensor each target now holds. Only an output that is
    that very tensor gets the name, in any frame: module level, a function, a method, a
    nested function, a loop body or a notebook cell. ``find`` maps a tensor to its id.
    """

    _LIMIT = 64  # statements still waiting to bind; older ones are settled early

    def __init__(self, find: Callable[[object], str | None]) -> None:
        self.find = find
        self.pending: list[_Pending] = []
        self.names: dict[str, str] = {}  # tensor id -> the first name it was bound to

    def saw(self, frame: FrameType, lineno: int, outputs: tuple[str, ...]) -> None:
        """An op ran at ``frame``'s ``lineno`` and made ``outputs``."""
        self.settle(frame)
        if not outputs:
            return
        found = _assignment(frame.f_code.co_filename, lineno)
        if found is not None:
            first, last, names = found
            self.pending.append(
                _Pending(frame, first, last, names, frozenset(outputs), frame.f_lasti)
            )

    def settle(self, now: FrameType | None = None, final: bool = False) -> None:
        """Name what is bound now; forget statements that have run to their end.

        A statement has ended when its frame runs another line, or (``now``: the frame of
        the op being noted) runs it again from an earlier instruction, as a loop body does
        (``h = torch.tanh(h @ w)``). Each frame's locals are read once per call, and one
        statement keeps its newest ``_PER_STATEMENT`` ops waiting: a loop over a one-op
        line (``h = torch.tanh(h)``) repeats the same instruction."""
        keep: list[_Pending] = []
        overflow = len(self.pending) - self._LIMIT
        scopes: dict[int, dict[str, object] | None] = {}
        waiting: dict[tuple[int, int], int] = {}
        ran_again: set[int] = set()  # statements of ``now`` run again: entry.first
        if now is not None:
            ran_again = {
                e.first for e in self.pending if e.frame is now and now.f_lasti < e.instruction
            }
        for index in range(len(self.pending) - 1, -1, -1):  # newest first
            entry = self.pending[index]
            frame = entry.frame
            if id(frame) not in scopes:
                scopes[id(frame)] = _locals(frame)
            scope = scopes[id(frame)]
            bound = scope is not None and self._bind(entry, scope)
            line = frame.f_lineno or 0
            running = entry.first <= line <= entry.last
            if running and frame is now and entry.first in ran_again:
                running = False  # the same statement, run again
            statement = (id(frame), entry.first)
            count = waiting.get(statement, 0)
            if bound or final or index < overflow or not running or count >= _PER_STATEMENT:
                continue
            waiting[statement] = count + 1
            keep.append(entry)
        keep.reverse()
        self.pending = keep

    def _bind(self, entry: _Pending, scope: dict[str, object]) -> bool:
        found = False
        for name in entry.names:
            tensor_id = self.find(scope.get(name))
            if tensor_id is not None and tensor_id in entry.outputs:
                self.names.setdefault(tensor_id, name)
                found = True
        return found

    def finish(self) -> dict[str, str]:
        """Settle every statement still waiting, drop the frames, return the names."""
        self.settle(final=True)
        self.pending = []
        return self.names


def _locals(frame: FrameType) -> dict[str, object] | None:
    try:
        return frame.f_locals
    except Exception:  # pragma: no cover - a frame whose locals cannot be read
        return None


def prime(name: str, count: int) -> str:
    """The ``count``-th tensor called ``name``: x, x′, x″, x‴, x⁽⁴⁾ ..."""
    if count == 0:
        return name
    if count <= 3:
        return name + "′″‴"[count - 1]
    digits = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
    return f"{name}⁽{str(count).translate(digits)}⁾"
