"""Each view's Graphviz run starts as soon as its DOT is written, the heaviest views first:
the machine's cores do not wait while the lighter views' DOT is written."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

import gradviz
from gradviz.replay import layouts
from gradviz.stepper.page import available_views, stepper_payload

pytestmark = pytest.mark.needs_dot


def test_each_run_starts_once_its_dot_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(*(nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(4)))
    with gradviz.watch(model) as w:
        loss = model(torch.randn(3, 4)).square().mean()
    recording = w.record(loss)
    views = available_views(recording)
    assert "modules" in views and "collapsed-0" in views
    events: list[str] = []
    real_to_dot, real_sides, real_start = layouts.to_dot, layouts.combined_sides, layouts.start_dot

    def to_dot(graph: Any, options: Any) -> str:
        depth = options.collapse_depth
        name = (
            f"collapsed-{depth}"
            if depth is not None
            else "modules"
            if options.modules
            else "backward"
        )
        events.append(f"write {name}")
        return real_to_dot(graph, options)

    def combined_sides(graph: Any, options: Any) -> Any:
        events.append("write combined")
        return real_sides(graph, options)

    def start_dot(text: str, **kwargs: Any) -> Any:
        events.append("start")
        return real_start(text, **kwargs)

    monkeypatch.setattr(layouts, "to_dot", to_dot)
    monkeypatch.setattr(layouts, "combined_sides", combined_sides)
    monkeypatch.setattr(layouts, "start_dot", start_dot)
    stepper_payload(recording)
    writes = [e[6:] for e in events if e.startswith("write ")]
    depths = sorted((int(v[10:]) for v in views if v.startswith("collapsed-")), reverse=True)
    assert writes == ["combined", "modules", "backward", *(f"collapsed-{d}" for d in depths)]
    # combined's two runs start before the next DOT is written, and so on for every view
    expected = ["write combined", "start", "start"]
    for view in writes[1:]:
        expected += [f"write {view}", "start"]
    assert events == expected
