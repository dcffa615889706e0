"""A small tensor's values nested by its shape, ``[[1, 2], [3, 4]]``, for every label and
panel that shows them (a flat ``[1, 2, 3, 4]`` hides that it is a matrix). Stdlib only."""

from __future__ import annotations

from gradviz.model.values import Scalar, Summary, format_number

__all__ = ["rows_text", "shaped_text"]


def rows_text(summary: Summary, max_chars: int = 60) -> str | None:
    """The values nested by the shape when all are kept and fit in ``max_chars``; else None
    (scalars and vectors: ``Summary.text`` says it already)."""
    if len(summary.shape) < 2 or not summary.complete or not summary.available:
        return None
    text = _rows(list(summary.values), summary.shape)
    return text if len(text) <= max_chars else None


def shaped_text(summary: Summary, max_chars: int = 60) -> str:
    """The values as they read best: nested rows, or ``Summary.text``."""
    return rows_text(summary, max_chars) or summary.text(max_chars)


def _rows(values: list[Scalar], shape: tuple[int, ...]) -> str:
    if len(shape) == 1:
        return "[" + ", ".join(format_number(v) for v in values) + "]"
    size = len(values) // shape[0] if shape[0] else 0
    parts = [_rows(values[i * size : (i + 1) * size], shape[1:]) for i in range(shape[0])]
    return "[" + ", ".join(parts) + "]"
