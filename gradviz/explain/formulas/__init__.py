"""Per-op formulas: one table per op family, merged into ``FORMULAS``.

A new op formula goes into its family's module and table (see docs/architecture.md,
"Adding an op formula"); a formula is shown only when its numbers agree with the
gradient the engine really sent.
"""

from __future__ import annotations

from collections.abc import Callable

from gradviz.explain.formulas.elementwise import ELEMENTWISE
from gradviz.explain.formulas.matrix import MATRIX
from gradviz.explain.formulas.moves import MOVES
from gradviz.explain.terms import Formula, _Ctx

__all__ = ["FALLBACK_SYMBOLS", "FORMULAS", "OPERAND_SAVED"]

FORMULAS: dict[str, Callable[[_Ctx], Formula]] = {**ELEMENTWISE, **MOVES, **MATRIX}

# where the value of an input is saved when the input itself is a constant (for its name)
OPERAND_SAVED: dict[str, dict[int, str]] = {
    "MulBackward0": {0: "self", 1: "other"},
    "DivBackward0": {0: "self", 1: "other"},
    "PowBackward1": {0: "self", 1: "exponent"},
    "MmBackward0": {0: "self", 1: "mat2"},
    "AddmmBackward0": {1: "mat1", 2: "mat2"},
}
FALLBACK_SYMBOLS: dict[str, tuple[str, ...]] = {
    "MmBackward0": ("A", "B"),
    "BmmBackward0": ("A", "B"),
    "AddmmBackward0": ("b", "A", "B"),
    "MvBackward0": ("A", "v"),
}
