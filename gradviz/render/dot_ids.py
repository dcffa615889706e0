"""The ids a DOT writer puts unquoted (node names, edge ends), checked to be inert by form.

Ids come from gradviz (``trace()`` makes ``n3``, ``t0``), never from the user; a graph
built by hand or loaded some other way is refused when one of its ids is not a plain
identifier, so no id can smuggle DOT syntax in.
"""

from __future__ import annotations

import re
from operator import itemgetter

from gradviz.errors import InvalidInput
from gradviz.model.graph import Graph

__all__ = ["check_ids", "dot_id"]

# What may stand unquoted in DOT as a node name: a plain identifier that is no DOT keyword
# (nor the legend's own name); every id gradviz makes ('n3', 't0', 'f12') is one.
_DOT_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_DOT_KEYWORDS = frozenset(("node", "edge", "graph", "digraph", "subgraph", "strict", "legend"))


def dot_id(text: object) -> str:
    """``text`` when it can stand as a DOT node name as it is; else ``InvalidInput``.

    The DOT writers put ids unquoted (and re-read their own DOT line by line), so an id
    is only let through when it is inert by its form: no quoting rule is relied on."""
    if type(text) is not str or _DOT_ID.fullmatch(text) is None or text.lower() in _DOT_KEYWORDS:
        shown = repr(text)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise InvalidInput(
            f"the graph holds the id {shown}, which gradviz does not draw: ids are letters, "
            "digits and '_' (as trace() makes them, 'n3', 't0')"
        )
    return text


# many ids at once, one per line: one regular-expression match instead of one per id
_DOT_IDS = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]{0,63}\n)*")

# a keyword on a line of its own, in any case (searched for in text the pattern above
# matched: ASCII only, where IGNORECASE is what lower() would do)
_KEYWORD_LINE = re.compile(
    "^(?:" + "|".join(sorted(_DOT_KEYWORDS)) + ")\n", re.MULTILINE | re.IGNORECASE
)


def _all_plain(ids: list[object]) -> bool:
    """Whether every id is a plain identifier (what ``dot_id`` lets through), at once."""
    if not ids:
        return True
    if not set(map(type, ids)) <= {str}:
        return False
    joined = "\n".join([*ids, ""])  # type: ignore[list-item]  # all str: checked above
    if _DOT_IDS.fullmatch(joined) is None:  # each id ends in a newline
        return False
    return _KEYWORD_LINE.search(joined) is None


def check_ids(graph: Graph) -> None:
    """Every id the DOT writers put unquoted is a plain identifier (``dot_id``): a graph
    built by hand or loaded some other way cannot smuggle DOT syntax in through an id.
    The rows of a fresh ``trace()`` hold only the ids the walk made (``n3``, ``t0``): no
    check needed while a drawing reads those rows alone (``Graph.rows_have_plain_ids``)."""
    if graph.rows_have_plain_ids():
        return
    try:
        plain = _all_plain(list(_unique_ids(graph)))
    except TypeError:  # an id that cannot be hashed: certainly no plain one
        plain = False
    if plain:
        return
    for node in graph.nodes:  # one is not: name it
        dot_id(node.id)
    for edge in graph.edges:
        dot_id(edge.src)
        if edge.dst is not None:
            dot_id(edge.dst)
    for record in graph.tensors:
        dot_id(record.id)
        if record.node_id is not None:
            dot_id(record.node_id)
    if graph.forward is not None:
        for item in graph.forward.tensors:
            dot_id(item.id)


def _unique_ids(graph: Graph) -> set[object]:
    """Every id a drawing writes unquoted, once each (an edge's ends repeat node ids);
    collected by C-level maps over the rows (the order does not matter to the check)."""
    first = itemgetter(0)
    columns = graph.node_columns()
    ids: set[object] = {n.id for n in graph.nodes} if columns is None else set(columns[0])
    srcs, _, dsts, _ = graph.edge_columns()
    ids.update(srcs)
    ends: set[object] = set(dsts)
    ends.discard(None)  # an input off the graph
    tensor_rows = graph.tensor_rows()
    if tensor_rows is None:
        ids.update([record.id for record in graph.tensors])
        ends.update([record.node_id for record in graph.tensors if record.node_id is not None])
    else:  # the same fields, before any record is built
        ids.update(map(first, tensor_rows))
        ends.update([row[5] for row in tensor_rows if row[5] is not None])
    if graph.forward is not None:
        ids.update([item.id for item in graph.forward.tensors])
    return ids | ends
