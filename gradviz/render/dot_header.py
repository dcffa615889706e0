"""The opening lines every gradviz DOT shares (graph, node and edge defaults) and DOT
attribute lists written so that nothing typed into a value can break the DOT."""

from __future__ import annotations

from collections.abc import Mapping

from gradviz.escape import dot_quote
from gradviz.render.dot_texts import DotTexts, texts_for
from gradviz.render.theme import Theme

__all__ = ["attribute_list", "dot_attributes", "dot_header", "kept_header"]


def dot_attributes(**attributes: str | float | None) -> str:
    return "[" + attribute_list(attributes) + "]"


_LABELS = frozenset(("label", "headlabel", "taillabel", "xlabel"))


def attribute_list(attributes: Mapping[str, str | float | None]) -> str:
    """``key=value`` pairs: HTML-like labels (``<...>``, built by gradviz from ``html_text``)
    as they are, any other text quoted (a tooltip of ``<b>`` stays text)."""
    parts = []
    for key, value in attributes.items():
        if value is None:
            continue
        if key[-1] == "_":
            key = key.rstrip("_")
        if isinstance(value, str):
            if key in _LABELS and value[:1] == "<" and value[-1:] == ">":
                parts.append(f"{key}={value}")
            else:
                parts.append(f"{key}={dot_quote(value)}")
        else:
            parts.append(f"{key}={value}")
    return " ".join(parts)


def dot_header(theme: Theme, prefix: str, direction: str, **graph_extra: str) -> list[str]:
    """The opening lines every gradviz DOT shares: graph, node and edge defaults (a new
    list; its text is kept per theme, prefix and direction: ``dot_texts``)."""
    # checks the theme again (a new value): its values go into DOT (and the SVG) as they are
    return kept_header(texts_for(theme, True), theme, prefix, direction, graph_extra)


def kept_header(
    texts: DotTexts, theme: Theme, prefix: str, direction: str, graph_extra: dict[str, str]
) -> list[str]:
    """``dot_header`` from a theme's store (the header does not depend on ``shapes``, so
    either store of the theme serves)."""
    headers = texts.headers
    key = (prefix, direction, tuple(graph_extra.items()))
    lines = headers.get(key)
    if lines is None:
        lines = headers[key] = tuple(_header(theme, prefix, direction, graph_extra))
    return list(lines)


def _header(theme: Theme, prefix: str, direction: str, graph_extra: dict[str, str]) -> list[str]:
    t = theme
    graph = dot_attributes(
        id=prefix,
        rankdir=direction,
        bgcolor=t.background,
        fontname=t.font,
        nodesep="0.35",
        ranksep="0.45",
        pad="0.2",
        **graph_extra,
    )
    node = dot_attributes(
        fontname=t.font, fontsize=11, fontcolor=t.text, margin="0.12,0.05", penwidth=1.4
    )
    edge = dot_attributes(
        fontname=t.font, fontsize=10, color=t.edge, fontcolor=t.edge_label, arrowsize=0.7
    )
    return ["digraph gradviz {", f"  graph {graph};", f"  node {node};", f"  edge {edge};"]
