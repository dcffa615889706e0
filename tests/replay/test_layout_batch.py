"""A replay's views laid out together (``replay.layouts``): the Graphviz runs of every view
start at once, each view's DOT is written once, Graphviz's errors and fallback warnings reach
the caller, and the page is the same as when the views are laid out one by one."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import torch
from torch import nn

import gradviz
from gradviz.errors import GradvizWarning, GraphvizFailed
from gradviz.model.recording import Recording
from gradviz.render import backend, layered
from gradviz.replay import layouts
from gradviz.replay.frames import step_svg
from gradviz.replay.modules import view_options
from gradviz.stepper.page import available_views, replay_html, stepper_payload

pytestmark = pytest.mark.needs_dot


def _watched() -> Recording:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 1))
    with gradviz.watch(model) as w:
        loss = model(torch.randn(3, 5)).square().mean()
    return w.record(loss)


@pytest.fixture
def two_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh pool of two layout threads (whatever the machine's cores)."""
    monkeypatch.setattr(backend, "LAYOUT_WORKERS", 2)
    monkeypatch.setattr(backend, "_pool", None)


def test_the_views_graphviz_runs_overlap(
    two_workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = _watched()
    real = backend.run_graphviz
    both_running = threading.Barrier(2, timeout=20)
    met: list[bool] = []

    def meeting_dot(text: str, fmt: str = "svg", engine: str = "dot", seconds: Any = None) -> bytes:
        if not met:  # the first two runs wait for each other: one at a time would time out
            try:
                both_running.wait()
                met.append(True)
            except threading.BrokenBarrierError:
                met.append(False)
        return real(text, fmt, engine, seconds)

    monkeypatch.setattr(backend, "run_graphviz", meeting_dot)
    payload = stepper_payload(recording)
    assert met and all(met)
    assert set(payload["svgs"]) == set(available_views(recording))


def test_each_views_dot_is_written_once(monkeypatch: pytest.MonkeyPatch) -> None:
    recording = _watched()
    written: list[str] = []
    real_to_dot, real_sides = layouts.to_dot, layouts.combined_sides

    def to_dot(graph: Any, options: Any) -> str:
        written.append(str(options.view))
        return real_to_dot(graph, options)

    def combined_sides(graph: Any, options: Any) -> Any:
        written.append("combined")
        return real_sides(graph, options)

    monkeypatch.setattr(layouts, "to_dot", to_dot)
    monkeypatch.setattr(layouts, "combined_sides", combined_sides)
    stepper_payload(recording)
    # the page asks for each view's layout and for when its elements appear: one DOT each
    assert sorted(written) == sorted(
        str(view_options(v)["view"]) for v in available_views(recording)
    )


def test_the_page_is_the_one_laid_out_view_by_view(two_workers: None) -> None:
    together = _watched()
    page = replay_html(together)
    alone = _watched()
    for view in available_views(alone):  # the layouts cached one at a time, no batch
        step_svg(alone, 0, **view_options(view))
    assert replay_html(alone) == page


def test_a_fallback_in_a_worker_warns_the_caller_once_per_view(
    two_workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = _watched()
    monkeypatch.setattr(backend, "LAYOUT_WORK", 1)
    # taken to have module boxes (a view without them would go to the layered layout)
    monkeypatch.setattr(layered.LayoutCost, "flat", property(lambda cost: False))
    with pytest.warns(GradvizWarning, match="fewer optimisation rounds") as told:
        stepper_payload(recording, views=["backward", "combined"])
    # one warning per Graphviz run: the backward view, the combined view's two sides
    assert len([w for w in told if "fewer optimisation rounds" in str(w.message)]) == 3
    assert {w.filename for w in told} != {backend.__file__}  # said where the user called


def test_a_graphviz_failure_in_a_worker_reaches_the_caller(
    two_workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = _watched()

    def failing(text: str, fmt: str = "svg", engine: str = "dot", seconds: Any = None) -> bytes:
        raise GraphvizFailed("Graphviz 'dot' exited with status 1: syntax error")

    monkeypatch.setattr(backend, "run_graphviz", failing)
    with pytest.raises(GraphvizFailed, match="status 1"):
        stepper_payload(recording)
    assert recording not in layouts._BATCHES  # the batch ended with the error
    monkeypatch.undo()
    assert "backward" in stepper_payload(recording)["svgs"]  # nothing broken was cached


def test_layouts_run_together_share_the_budget_they_would_have_had_in_turn(
    two_workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = _watched()
    limits: list[float] = []
    real = backend.run_graphviz

    def spy(text: str, fmt: str = "svg", engine: str = "dot", seconds: Any = None) -> bytes:
        if engine == "dot":
            limits.append(seconds)
        return real(text, fmt, engine, seconds)

    monkeypatch.setattr(backend, "run_graphviz", spy)
    monkeypatch.setenv("GRADVIZ_LAYOUT_SECONDS", "7")
    stepper_payload(recording)
    assert limits and set(limits) == {14.0}  # two at a time: two budgets each
    limits.clear()
    backend.run_dot(recording.graph.to_dot())  # alone: its own budget
    assert limits == [7.0]
