"""Helpers the test modules share: SVG ids, kept-tensor checks (browser helpers: ``browser``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import torch


def svg_ids(svg: bytes | str) -> set[str]:
    """Every ``id`` in an SVG document."""
    root = ET.fromstring(svg)
    return {el.attrib["id"] for el in root.iter() if "id" in el.attrib}


def as_tensor(value: object) -> torch.Tensor:
    """A kept gradient, which must be a tensor (``keep="all"``), not a summary."""
    assert isinstance(value, torch.Tensor), f"expected a kept tensor, got {type(value)}"
    return value
