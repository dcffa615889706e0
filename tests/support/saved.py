"""The tests' own count of what autograd saved, read from live nodes without gradviz: the
oracle that gradviz's memory figures are checked against."""

from __future__ import annotations

from typing import Any

import torch


def saved_bytes_of(node: object) -> dict[int, int]:
    """Every ``_saved_*`` tensor's storage of one live node: data pointer -> bytes."""
    found = {}
    for name in dir(node):
        if name.startswith("_saved_"):
            value = getattr(node, name)
            if isinstance(value, torch.Tensor):
                storage = value.untyped_storage()
                found[storage.data_ptr()] = storage.nbytes()
    return found


def saved_storages(root: Any) -> dict[int, int]:
    """``saved_bytes_of`` over every node a live graph reaches from ``root``."""
    found: dict[int, int] = {}
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        found.update(saved_bytes_of(node))
        stack.extend(child for child, _ in node.next_functions)
    return found
