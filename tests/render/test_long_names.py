"""Names of any length in bytes render: Graphviz's limits are counted in bytes.

Graphviz scans one quoted or HTML-like string into a 16 KiB buffer. A name is drawn
shortened, but its whole text went into the tooltip: 10,000 ASCII characters fit, 10,000
'é' (20,000 bytes of UTF-8) or 4,200 emoji (16,800 bytes) made every render fail with
"This is a gradviz bug". Quoted strings and HTML-like label lines are now cut by bytes,
counting what escaping adds.
"""

from __future__ import annotations

import html
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import pytest
import torch

import gradviz
from gradviz import Edge, Graph, Node, Role, TensorRecord
from gradviz.escape import (
    ELLIPSIS,
    MAX_DOT_STRING_BYTES,
    MAX_HTML_TEXT_BYTES,
    dot_quote,
    html_text,
    shorten_bytes,
)
from gradviz.render.dot import MAX_FOLDED_LINES
from gradviz.stepper.page import stepper_payload
from tests.support.inert import assert_inert_payload, assert_inert_svg

LONG_NAMES = {
    "e-acute": "é" * 10_000,
    "emoji": "😀" * 4_200,
    "family": "👩‍👩‍👧‍👦" * 1_000,
    "cjk": "漢" * 6_000,
    "quotes": '"' * 9_000,
    "backslashes": "\\" * 9_000,
    "markup": "<&>" * 3_000,
    "ascii": "a" * 20_000,
}


@pytest.mark.parametrize("text", LONG_NAMES.values(), ids=LONG_NAMES.keys())
def test_quoted_and_html_text_fit_graphviz_in_bytes(text: str) -> None:
    inside = dot_quote(text)[1:-1]
    assert len(inside.encode("utf-8")) <= MAX_DOT_STRING_BYTES
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    if len(escaped.encode("utf-8")) > MAX_DOT_STRING_BYTES:
        assert inside.endswith(ELLIPSIS)
        body = inside[: -len(ELLIPSIS)]
        assert escaped.startswith(body) and (len(body) - len(body.rstrip("\\"))) % 2 == 0
    else:
        assert inside == escaped
    label = html_text(text, None)
    assert len(label.encode("utf-8")) <= MAX_HTML_TEXT_BYTES
    if len(html.escape(text).encode("utf-8")) > MAX_HTML_TEXT_BYTES:
        assert label.endswith(ELLIPSIS) and "&" not in label.rsplit(";", 1)[-1]
    else:
        assert label == html.escape(text)


def test_short_text_is_untouched() -> None:
    for text in ("x", "é" * 100, '"' * 100):
        assert dot_quote(text).replace('\\"', '"')[1:-1] == text
        assert html_text(text, None) == html_text(text, 10**6)
    assert shorten_bytes("é" * 5, 10) == "é" * 5
    assert shorten_bytes("é" * 6, 10) == "ééé" + ELLIPSIS  # 6 + 3 bytes
    assert shorten_bytes("😀" * 3, 11) == "😀😀" + ELLIPSIS  # 8 + 3 bytes


@pytest.mark.needs_dot
@pytest.mark.parametrize("name", LONG_NAMES.values(), ids=LONG_NAMES.keys())
def test_long_names_render(name: str) -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    recording = gradviz.record((x * 3).sum(), names={name: x})
    for view in ("backward", "combined"):
        svg = recording.graph.svg(view=view)
        assert_inert_svg(svg)
        titles = [v for e in ET.fromstring(svg).iter() for k, v in e.attrib.items() if "title" in k]
        assert any(t.startswith(name[:100]) for t in titles)  # the tooltip keeps the start
    assert_inert_payload(stepper_payload(recording))
    assert any(name in text for text in strings(stepper_payload(recording)["data"]))  # whole


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@pytest.mark.needs_dot
def test_long_type_names_in_a_folded_block() -> None:
    """A folded block's box lists its node types: long ones (cut by bytes), and at most
    ``MAX_FOLDED_LINES`` lines of them."""
    from gradviz.render.fold import FoldedNode

    contents = "\n".join(f"Op{i}{'é' * 3_000}" for i in range(20))
    box = FoldedNode("fold0", "3 × block", "blocks", 5, repeats=3, contents=contents)
    acc = Node("n1", "AccumulateGrad", "acc", 0)
    leaf = TensorRecord(
        "t0", "w", (2,), "torch.float32", "cpu", True, True, 0, None, None, None,
        Role.LEAF, "n1", None,
    )  # fmt: skip
    graph = Graph([box, acc], [Edge("fold0", 0, "n1", 0)], ["fold0"], [leaf])
    svg = graph.svg()
    assert_inert_svg(svg)
    assert "3 × block" in svg and "Op0" in svg
    assert f"Op{MAX_FOLDED_LINES - 2}" in svg and f"Op{MAX_FOLDED_LINES - 1}" not in svg
