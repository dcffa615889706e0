"""Saving a page does work linear in the graph's size, however many nodes are ready at once
(thousands of leaves stacked or summed): the quiz's ready lists, the narration's symbols and
names, and the watched view's boxes and links.

Work is counted, not timed: the lines of gradviz code each function runs (``sys.settrace``;
a loop's every turn counts). A graph 4x larger may make any function run at most
``LINEAR`` times as many lines; one that scans the graph once per node runs ~16x as many.
"""

from __future__ import annotations

import sys
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import torch

import gradviz
from gradviz.errors import GradvizWarning
from gradviz.model.recording import Recording
from gradviz.replay.classroom import quiz_answers

ROOT = str(Path(gradviz.__file__).parent)
SMALL, LARGE = 40, 160  # leaves: 4x as many
LINEAR = 7.0  # n log n and fixed costs stay well under this; a per-node scan gives ~16x
NOTICED = 500  # fewer lines than this in the large run is too little work to judge


def _lines_run(run: Callable[[], object]) -> Counter[tuple[str, str]]:
    """Lines of gradviz code ``run()`` executes, per (file, function)."""
    counts: Counter[tuple[str, str]] = Counter()

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            counts[(frame.f_code.co_filename[len(ROOT) :], frame.f_code.co_name)] += 1
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(ROOT) else None

    sys.settrace(calls)
    try:
        run()
    finally:
        sys.settrace(None)
    return counts


def _superlinear(make: Callable[[int], Recording], save: Callable[[Recording], object]) -> str:
    recordings = make(SMALL), make(LARGE)  # recording is not what is counted
    small = _lines_run(lambda: save(recordings[0]))
    large = _lines_run(lambda: save(recordings[1]))
    grown = {
        key: large[key] / max(1, small[key])
        for key in large
        if large[key] >= NOTICED and large[key] > LINEAR * small[key]
    }
    return ", ".join(f"{f}:{name} {ratio:.1f}x" for (f, name), ratio in grown.items())


def _leaves(n: int) -> list[torch.Tensor]:
    torch.manual_seed(0)
    return [torch.randn((), requires_grad=True) for _ in range(n)]


def stacked(n: int) -> Recording:
    """All n AccumulateGrads are ready at once; none is named (placeholder symbols)."""
    return gradviz.record(torch.stack(_leaves(n)).sum())


def stacked_named(n: int) -> Recording:
    xs = _leaves(n)
    return gradviz.record(torch.stack(xs).sum(), names={f"x{i}": x for i, x in enumerate(xs)})


def squares(n: int) -> Recording:
    return gradviz.record(sum((x * x for x in _leaves(n)), torch.tensor(0.0)))


def doubled(n: int) -> Recording:
    """Every MulBackward0 saved an off-graph number (the constant lookups)."""
    return gradviz.record(sum((x * 2 for x in _leaves(n)), torch.tensor(0.0)))


def shifted(n: int) -> Recording:
    c = torch.tensor(3.0)
    xs = _leaves(n)
    return gradviz.record(sum((x + c for x in xs), torch.tensor(0.0)), names={"c": c})


def watched(n: int) -> Recording:
    xs = _leaves(n)
    with gradviz.watch() as w:
        loss = sum((x * 2 for x in xs), torch.tensor(0.0))
    return w.record(loss)


@pytest.mark.parametrize("make", [stacked, stacked_named, squares, doubled, shifted])
def test_the_page_data_is_linear_in_the_graph(make: Callable[[int], Recording]) -> None:
    from gradviz.replay.frames import replay_data

    assert _superlinear(make, replay_data) == ""


def test_the_quiz_lists_the_ready_nodes_in_linear_work() -> None:
    def quiz(recording: Recording) -> object:
        return quiz_answers(recording, recording.graph.prefix)

    assert _superlinear(stacked, quiz) == ""


@pytest.mark.parametrize("make", [stacked, watched])
def test_saving_the_page_is_linear_in_the_graph(
    make: Callable[[int], Recording], tmp_path: Path
) -> None:
    def save(recording: Recording) -> object:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", GradvizWarning)
            return recording.save(tmp_path / "page.html")

    assert _superlinear(make, save) == ""


def test_the_quiz_ready_lists_are_the_highest_sequence_numbers_first() -> None:
    """The faster ready list is the same list: at each step every node whose senders have
    all run, highest sequence number first (ties by id), at most eight."""
    recording = stacked(20)
    graph = recording.graph
    answers = quiz_answers(recording, graph.prefix)
    ran: set[str] = set()
    for step, answer in zip(recording.steps, answers, strict=True):
        ready = [
            node.id
            for node in graph.nodes
            if node.id not in ran
            and any(s.node_id == node.id for s in recording.steps)
            and all(e.src in ran for e in graph.in_edges(node.id))
        ]
        ready.sort(key=lambda n: (-graph.node(n).sequence_nr, n))
        assert [r["node"] for r in answer["ready"]] == [f"{graph.prefix}_{n}" for n in ready[:8]]
        ran.add(step.node_id)
