"""Progress for long work (laying out a big replay's views): a bar where tqdm is installed
(``tqdm.auto``: a widget in the notebook, text in the terminal), a line per item on stderr
where it is not, and nothing for small graphs, which finish before anyone would look."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["PROGRESS_MIN_NODES", "progress"]

T = TypeVar("T")
PROGRESS_MIN_NODES = 300  # below this many nodes a replay is laid out in a few seconds


def progress(items: Iterable[T], what: str, nodes: int) -> Iterator[T]:
    """``items`` one by one, telling the user how far ``what`` got when the graph is big."""
    listed = list(items)
    if nodes < PROGRESS_MIN_NODES or len(listed) < 2:
        yield from listed
        return
    try:
        tqdm: Any = importlib.import_module("tqdm.auto").tqdm  # optional: not a dependency
    except ImportError:
        for position, item in enumerate(listed, 1):
            print(f"{what}: {position}/{len(listed)} ({item})", file=sys.stderr, flush=True)
            yield item
        return
    bar = tqdm(listed, desc=what, leave=False, unit="view")
    for item in bar:
        bar.set_postfix_str(str(item))
        yield item
