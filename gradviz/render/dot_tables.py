"""The text inside a tensor box's label: its value line, its shape line and the whole table
of the combined view (``render.dot`` and ``render.watched`` draw them). Pure string
building, every user text through ``gradviz.escape``."""

from __future__ import annotations

from gradviz.escape import MAX_LABEL_CHARS, html_text
from gradviz.model.graph import TensorRecord
from gradviz.model.value_rows import shaped_text

__all__ = ["shape_line", "tensor_table", "value_line"]


def value_line(record: TensorRecord) -> str:
    """A box's value line: a scalar's value, else its shape and then its first values."""
    assert record.data is not None
    if record.data.shape == ():
        return record.data.text()
    shape = f"shape {record.data.shape_text()}"  # apart from the values: not '3 [1, 2, 3]'
    return f"{shape} · {shaped_text(record.data, 40)}"


def shape_line(shape: tuple[int, ...], dtype: str) -> str:
    """Shape and dtype from the record itself: no summary is computed."""
    text = "×".join(str(n) for n in shape) if shape else "scalar"
    return f"{text} {dtype}"


def tensor_table(record: TensorRecord, shapes: bool, values: bool = True) -> str:
    """A full tensor box's table (data, grad, grad_fn, is_leaf, requires_grad, shape)."""

    def row(key: str, value: str, limit: int | None = None) -> str:
        return (
            f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="9">{key}</FONT></TD>'
            f'<TD ALIGN="LEFT">{html_text(value, limit)}</TD></TR>'
        )

    if not values:  # a structure-only drawing: no summary is computed
        data, grad = shape_line(record.shape, record.dtype), "not shown"
        shapes = False
    else:
        data = "?" if record.data is None else record.data.text(40)
        grad = "None" if record.grad is None else record.grad.text(40)
    rows = [
        f'<TR><TD COLSPAN="2"><B>{html_text(record.label)}</B></TD></TR>',
        row("data", data),
        row("grad", grad),
        row("grad_fn", record.grad_fn or "None", MAX_LABEL_CHARS),  # a type name
        row("is_leaf", str(record.is_leaf)),
        row("requires_grad", str(record.requires_grad)),
    ]
    if shapes and record.data is not None and record.data.shape != ():
        rows.append(row("shape", f"{record.data.shape_text()} {record.dtype}"))
    return (
        '<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
        + "".join(rows)
        + "</TABLE>"
    )
