"""The shared vocabulary of every layer: colour roles, value summaries and number text.

A leaf module (it imports nothing from gradviz), so the data classes, the renderers and the
themes can all use it without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from gradviz.escape import float_from_json

__all__ = ["Role", "Scalar", "Summary", "format_number"]


class Role(str, Enum):
    """The colour roles of the seeds' diagrams."""

    LEAF = "leaf"  # leaf on the graph (green): is_leaf and requires_grad
    CONSTANT = "constant"  # leaf off the graph (yellow): requires_grad=False, scalars
    BRANCH = "branch"  # non-leaf (brown): output of a recorded op
    NODE = "node"  # backward node (blue): grad_fn objects, AccumulateGrad


Scalar = float | int | bool | str


def format_number(value: Scalar) -> str:
    """Short, stable text for one number: 36.0 -> '36', 1/3 -> '0.3333'."""
    if isinstance(value, str):
        return _complex_text(value)
    if isinstance(value, bool | int):
        return str(value)
    text = f"{value:.4g}"
    return "0" if text == "-0" else text


def _complex_text(text: str) -> str:
    """'(1.5-0.25j)' (how summaries keep complex values, exactly) as '1.5-0.25j'; other
    strings unchanged."""
    if not (text.startswith("(") and text.endswith("j)")):
        return text
    try:
        value = complex(text)
    except ValueError:
        return text
    imag = f"{value.imag:+.4g}"
    imag = "+0" if imag == "-0" else imag
    return f"{format_number(value.real)}{imag}j"


@dataclass(frozen=True)
class Summary:
    """What gradviz keeps of a tensor's values: all of them if small, statistics if not."""

    shape: tuple[int, ...]
    dtype: str
    numel: int
    values: tuple[Scalar, ...]  # every value when ``complete``, else the first few
    complete: bool
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    norm: float | None = None
    nan: bool = False  # some value is NaN
    inf: bool = False  # some value is +-Inf
    available: bool = True  # False: the values cannot be read (a meta tensor)
    # bytes a sparse tensor stores (its indices and values); None for a dense one
    nbytes: int | None = None

    @property
    def finite(self) -> bool | None:
        """True when every value is finite; None when the values are not available."""
        return None if not self.available else not (self.nan or self.inf)

    def text(self, max_chars: int = 60) -> str:
        """One line for labels: '2', '[1, 2, 3]' or 'min -1 · max 2 · mean 0.1'."""
        if not self.available:
            return f"{self.shape_text()} {self.dtype}: values not available"
        if self.complete:
            if self.shape == ():
                return format_number(self.values[0]) if self.values else "?"
            body = ", ".join(format_number(v) for v in self.values)
            text = f"[{body}]"
            if len(text) <= max_chars:
                return text
        parts = []
        if self.min is not None and self.max is not None:
            parts.append(f"min {format_number(self.min)}")
            parts.append(f"max {format_number(self.max)}")
        if self.mean is not None:
            parts.append(f"mean {format_number(self.mean)}")
        elif self.norm is not None:  # complex values: no order, so no min or max
            first = ", ".join(format_number(v) for v in self.values[:2])
            parts.append(f"norm {format_number(self.norm)} · [{first}, …]")
        if not parts:
            first = ", ".join(format_number(v) for v in self.values[:3])
            return f"[{first}, …]"
        return " · ".join(parts)

    def short(self) -> str:
        """Compact text for an edge label: the value(s) if few, else shape and norm."""
        if not self.available or (self.complete and self.numel <= 4):
            return self.text()
        norm = "" if self.norm is None else f" ‖{format_number(self.norm)}‖"
        return f"{self.shape_text()}{norm}"

    def shape_text(self) -> str:
        return "×".join(str(n) for n in self.shape) if self.shape else "scalar"

    def to_dict(self) -> dict[str, Any]:
        return {
            "shape": list(self.shape),
            "dtype": self.dtype,
            "numel": self.numel,
            "values": list(self.values),
            "complete": self.complete,
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "norm": self.norm,
            "nan": self.nan,
            "inf": self.inf,
            "available": self.available,
            **({} if self.nbytes is None else {"nbytes": self.nbytes}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Summary:
        return cls(
            shape=tuple(data["shape"]),
            dtype=data["dtype"],
            numel=data["numel"],
            values=tuple(float_from_json(v) for v in data["values"]),
            complete=data["complete"],
            min=float_from_json(data.get("min")),
            max=float_from_json(data.get("max")),
            mean=float_from_json(data.get("mean")),
            norm=float_from_json(data.get("norm")),
            nan=data.get("nan", False),
            inf=data.get("inf", False),
            available=data.get("available", True),
            nbytes=data.get("nbytes"),
        )
