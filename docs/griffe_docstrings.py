"""Griffe extension for the API reference: gradviz's public functions take their docstrings
from the functions they wrap (``trace.__doc__ = _trace.trace.__doc__`` in objects.py), which
static analysis does not run; this copies them, so the site needs no import of gradviz."""

from __future__ import annotations

import ast
from typing import Any

import griffe


class CopiedDocstrings(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for module in pkg.modules.values():
            self._copy_in(module)

    def _copy_in(self, module: griffe.Module) -> None:
        if module.filepath is None or isinstance(module.filepath, list):
            return
        tree = ast.parse(module.filepath.read_text(encoding="utf-8"))
        for statement in tree.body:
            match statement:
                case ast.Assign(
                    targets=[ast.Attribute(value=ast.Name(id=name), attr="__doc__")],
                    value=ast.Attribute(value=source, attr="__doc__"),
                ):
                    self._copy(module, name, ast.unparse(source))
        for child in module.modules.values():
            self._copy_in(child)

    @staticmethod
    def _copy(module: griffe.Module, name: str, source_path: str) -> None:
        target = module.members.get(name)
        first, *rest = source_path.split(".")
        source: Any = module.members.get(first)
        for part in rest:
            source = None if source is None else source.members.get(part)
        if target is None or source is None or target.docstring is not None:
            return
        docstring = source.docstring
        if docstring is not None:
            target.docstring = griffe.Docstring(docstring.value, parent=target)
