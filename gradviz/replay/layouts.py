"""A replay's views laid out together: every view's Graphviz run started at once.

Each layout is its own Graphviz child process (``render.backend.start_dot``), so the views of
a page are laid out side by side on the machine's cores while Python writes the page's other
data (the steps' narration, the schedule) and post-processes the views already done. Within a
batch each view's DOT is written once, however often the page asks for it.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Container, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from gradviz.model.recording import Recording
from gradviz.render.backend import PendingSvg, start_dot
from gradviz.render.links import CombinedSides
from gradviz.render.options import RenderOptions
from gradviz.render.views import to_dot
from gradviz.render.watched import combined_sides

__all__ = ["ViewDot", "layout_batch", "pending_svgs", "view_dot"]


@dataclass(frozen=True)
class ViewDot:
    """One view's DOT: ``dot`` names the layout (``key``) and says when elements appear;
    the combined view is laid out as its two ``sides`` (``render.sidebyside``)."""

    dot: str
    sides: CombinedSides | None
    key: str

    @property
    def texts(self) -> tuple[str, ...]:
        """What Graphviz lays out for this view, one run each."""
        if self.sides is not None:
            return (self.sides.forward, self.sides.backward)
        return (self.dot,)


@dataclass
class _Batch:
    dots: dict[str, ViewDot] = field(default_factory=dict)  # options -> the view's DOT
    pending: dict[str, list[PendingSvg]] = field(default_factory=dict)  # key -> its runs


_BATCHES: weakref.WeakKeyDictionary[Recording, _Batch] = weakref.WeakKeyDictionary()


def view_dot(recording: Recording, options: RenderOptions, memo: str) -> ViewDot:
    """The view's DOT for ``options`` (written once per ``memo`` inside a batch)."""
    batch = _BATCHES.get(recording)
    if batch is not None and memo in batch.dots:
        return batch.dots[memo]
    sides = None
    if options.view == "combined" and recording.graph.forward is not None:
        sides = combined_sides(recording.graph, options)  # laid out apart: see sidebyside
        dot = sides.full
    else:
        dot = to_dot(recording.graph, options)
    view = ViewDot(dot, sides, hashlib.sha1(dot.encode()).hexdigest())
    if batch is not None:
        batch.dots[memo] = view
    return view


# _ONE_THREAD: while a batch's Graphviz children hold the machine's cores, the page's data
# (gradient summaries, norms) is computed with torch on one thread. torch's parallel ops
# would otherwise wait for a core at every reduction: measured on 2 cores, the GPT replay's
# save took 6.1-6.6 s with torch's 2 threads and 1.2-1.6 s with one (a busy machine, load 4).
# The user's setting is restored when the batch ends; the user's results are never computed
# inside it.


@contextmanager
def layout_batch(
    recording: Recording, views: Sequence[tuple[RenderOptions, str]], done: Container[str]
) -> Iterator[list[int]]:
    """Start laying out every view (options, memo key) whose layout key is not ``done``;
    inside the block ``pending_svgs`` hands their SVGs over. Each view's Graphviz run
    starts as soon as its DOT is written, the views expected to be heaviest first
    (``_expected_weight``: the workers then finish close together, and the cores do not
    wait for the lighter views' DOT); the block gets the views' positions in the order they
    should finish (those with nothing to lay out first), so the caller can post-process
    each view while the others are still laid out. Runs not started when the block ends
    (an error) are left out; every started one ends within its time limit."""
    outer = _BATCHES.get(recording)
    batch = _BATCHES[recording] = outer or _Batch()  # inside another batch: join it
    threads = torch.get_num_threads()
    if outer is None:
        torch.set_num_threads(1)  # see _ONE_THREAD
    try:
        order = sorted(range(len(views)), key=lambda position: _expected_weight(views[position][0]))
        sharing = len(views) + sum(options.view == "combined" for options, _ in views)
        started: dict[int, int] = {}
        for position in order:
            options, memo = views[position]
            view = view_dot(recording, options, memo)
            if view.key in done or view.key in batch.pending:
                continue
            batch.pending[view.key] = [start_dot(text, sharing=sharing) for text in view.texts]
            started[position] = len(started)
        yield sorted(range(len(views)), key=lambda position: started.get(position, -1))
    finally:
        if outer is None:  # the outermost block ends the batch
            torch.set_num_threads(threads)
            del _BATCHES[recording]
            for runs in batch.pending.values():
                for run in runs:
                    run.cancel()


def pending_svgs(recording: Recording, key: str) -> list[str] | None:
    """The SVGs of the view with layout ``key`` started by the open batch (waiting for
    them; Graphviz's errors and fallback warnings surface here), else None."""
    batch = _BATCHES.get(recording)
    runs = None if batch is None else batch.pending.pop(key, None)
    if runs is None:
        return None
    try:
        return [run.result().decode("utf-8") for run in runs]
    except BaseException:  # Ctrl-C or an error: stop this view's runs still going
        for run in runs:
            run.cancel()
        raise


def _expected_weight(options: RenderOptions) -> tuple[int, int]:
    """Sorts views heaviest first before their DOT is written: the watched combined view
    (two layouts), the full graph in module clusters, the plain backward graph, then the
    collapsed module views, deepest (most nodes) first. On ResNet-50 their DOT weighs
    501, 209, 181, 68, 15, 5 and 2 kB in that order."""
    if options.view == "combined":
        return (0, 0)
    if options.collapse is not None:
        return (2, 0)
    if options.collapse_depth is not None:
        return (2, -options.collapse_depth)
    return (1, 0 if options.modules else 1)
