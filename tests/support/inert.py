"""What "inert" means for gradviz's outputs, checked the same way by every input test.

An SVG is inert when it parses as XML, has no processing instruction (a stylesheet one
would make a browser fetch a URL), only SVG elements and none that acts (script,
foreignObject), no ``on*`` attribute, no link at all (gradviz draws none) and no
``javascript:`` outside a tooltip's text. A page is
inert when its only scripts are gradviz's own three (the damaged-file check, the JSON data
and the module), and no element carries an ``on*`` attribute.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from typing import Any

SVG_NS = "{http://www.w3.org/2000/svg}"
ACTIVE = {"script", "foreignObject", "iframe", "use", "animate", "set", "handler"}
_PI = re.compile(r"<\?(?!xml\s)")


def assert_inert_svg(svg: str) -> None:
    body = svg.split("?>", 1)[1] if svg.lstrip().startswith("<?xml") else svg
    assert _PI.search(body) is None, "the SVG holds a processing instruction"
    assert "<!ENTITY" not in svg
    root = ET.fromstring(svg.encode("utf-8"))
    for element in root.iter():
        assert isinstance(element.tag, str) and element.tag.startswith(SVG_NS), element.tag
        assert element.tag[len(SVG_NS) :] not in ACTIVE, element.tag
        for name, value in element.attrib.items():
            local = name.rsplit("}", 1)[-1].lower()
            assert not local.startswith("on"), (name, value)
            assert not local.endswith("href"), (name, value)
            if local != "title":  # a tooltip is text: it may say anything
                assert "javascript:" not in value.lower().replace(" ", ""), (name, value)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[dict[str, str | None]] = []
        self.handlers: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.scripts.append(dict(attrs))
        self.handlers += [(tag, k) for k, _ in attrs if k.lower().startswith("on")]


def assert_inert_page(page: str) -> None:
    tags = _Tags()
    tags.feed(page)
    kinds = [script.get("type") or script.get("class") for script in tags.scripts]
    assert kinds == ["gv-damaged-check", "application/json", "module"], kinds
    assert tags.handlers == [], tags.handlers
    assert "'unsafe-inline'" not in page.split("script-src", 1)[1].split(";", 1)[0]


def assert_inert_payload(payload: dict[str, Any]) -> None:
    """The widget's state: inert SVGs, data in standard JSON."""
    for svg in payload["svgs"].values():
        assert_inert_svg(svg)
    json.dumps(payload["data"], allow_nan=False)
    for css in payload["css"].values():
        assert "<" not in css and "\\" not in css, css


def refuse_constant(name: str) -> Any:
    """For ``json.loads(..., parse_constant=...)``: NaN and Infinity are not JSON."""
    raise ValueError(f"not standard JSON: bare {name}")
