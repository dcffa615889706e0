"""Griffe extension for the API reference: gradviz writes each public function's signature
and docstring once, where the work is done, and the public API names it
(``record = _handing_out(_analysed(_record.record), Recording)`` in objects.py, ``find =
find_steps`` in a class body), which static analysis sees as attributes; this documents
each such name as the function it names (its parameters, without ``self``'s for a method,
and its docstring), so the site needs no import of gradviz."""

from __future__ import annotations

import ast
from typing import Any

import griffe


def _named_function(value: ast.expr) -> str | None:
    """The dotted name of the function an assignment's value names: itself, or the first
    argument of the calls around it (``_analysed(_record.record)``), past a subscript
    (``Watch[Graph, Recording].record``)."""
    while True:
        match value:
            case ast.Call(args=[first, *_]):
                value = first
            case ast.Attribute(value=ast.Subscript(value=inner), attr=attr):
                base = _named_function(inner)
                return None if base is None else f"{base}.{attr}"
            case ast.Name() | ast.Attribute():
                return ast.unparse(value)
            case _:
                return None


class CopiedDocstrings(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for module in pkg.modules.values():
            self._copy_in(module)

    def _copy_in(self, module: griffe.Module) -> None:
        if module.filepath is None or isinstance(module.filepath, list):
            return
        tree = ast.parse(module.filepath.read_text(encoding="utf-8"))
        self._copy_body(module, module, tree.body, method=False)
        for statement in tree.body:
            if isinstance(statement, ast.ClassDef):
                klass = module.members.get(statement.name)
                if isinstance(klass, griffe.Class):
                    self._copy_body(module, klass, statement.body, method=True)
        for child in module.modules.values():
            self._copy_in(child)

    def _copy_body(
        self, module: griffe.Module, owner: Any, body: list[ast.stmt], method: bool
    ) -> None:
        for statement in body:
            match statement:
                case ast.Assign(targets=[ast.Name(id=name)], value=value):
                    path = _named_function(value)
                    if path is not None and path != name:
                        self._document(module, owner, name, path, method)

    @staticmethod
    def _document(module: griffe.Module, owner: Any, name: str, path: str, method: bool) -> None:
        target = owner.members.get(name)
        if not isinstance(target, griffe.Attribute):
            return
        first, *rest = path.split(".")
        source: Any = owner.members.get(first) if method else None
        source = source if source is not None else module.members.get(first)
        try:
            for part in rest:
                source = None if source is None else source.members.get(part)
            if source is None or not source.is_function:
                return
            parameters = list(source.parameters)
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            return  # from outside gradviz: left as it is
        if method and parameters:
            parameters = parameters[1:]  # bound: self (the recording, the graph) goes
        function = griffe.Function(
            name,
            parameters=griffe.Parameters(*parameters),
            returns=source.returns,
            docstring=None
            if source.docstring is None
            else griffe.Docstring(source.docstring.value, parent=None),
            lineno=target.lineno,
            endlineno=target.endlineno,
        )
        owner.set_member(name, function)
        if function.docstring is not None:
            function.docstring.parent = function
