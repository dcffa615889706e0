"""Which tensor boxes of a default drawing show values: the first drawing a user asks for
of a big model must not wait on summarizing every weight.

A traced graph summarizes a tensor when a drawing first shows its values. With the
default ``values="auto"``, a drawing summarizes the tensors still waiting, smallest first,
until ``VALUE_BUDGET`` values have been read; the boxes of the rest show their shape and
dtype, and a tooltip says how to see their values (``values=True`` summarizes every tensor,
``values=False`` none). A teaching graph is far under the budget; ResNet-50's 25.5 M
parameter values are not, and its default drawing then costs no more than torchviz's.
"""

from __future__ import annotations

from collections.abc import Iterable

from gradviz.model.graph import TensorRecord

__all__ = ["UNSUMMARIZED_TIP", "VALUE_BUDGET", "over_budget"]

# 4 MB of float32: a millisecond of reductions, beside each tensor's own fixed cost
VALUE_BUDGET = 1_000_000

UNSUMMARIZED_TIP = (
    "values not summarized: the default drawing reads at most "
    f"{VALUE_BUDGET:,} values, smallest tensors first; values=True shows every tensor's"
)


def over_budget(records: Iterable[TensorRecord], budget: int = VALUE_BUDGET) -> frozenset[str]:
    """The ids of the records whose pending summaries fall beyond ``budget`` values, the
    smaller summarized first (ties in drawing order)."""
    waiting = [
        (count, index, record.id)
        for index, record in enumerate(records)
        if (count := record.pending_values())
    ]
    if sum(count for count, _, _ in waiting) <= budget:
        return frozenset()
    left = budget
    skipped: set[str] = set()
    for count, _, record_id in sorted(waiting):
        if count <= left:
            left -= count
        else:
            left = 0  # the rest are bigger still: none of them fits
            skipped.add(record_id)
    return frozenset(skipped)
