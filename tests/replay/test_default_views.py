"""A page saved without ``views=`` leaves out the watched combined view where Graphviz dot
would not lay it out (gradviz's layered layout would draw it, at great cost and size), says
so once, and ``views=`` still adds it; elsewhere every view is in the page."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

import gradviz
from gradviz.errors import GradvizWarning
from gradviz.render import backend, layered
from gradviz.stepper.page import available_views, stepper_payload, unpack_state

pytestmark = pytest.mark.needs_dot


def watched() -> gradviz.Recording:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
    with gradviz.watch(model) as w:
        loss = model(torch.randn(3, 4)).square().mean()
    return w.record(loss)


def test_every_view_when_dot_lays_them_all_out(tmp_path: Path) -> None:
    rec = watched()
    page = rec.save(tmp_path / "replay.html").read_text(encoding="utf-8")
    assert set(unpack_state(page)["svgs"]) == set(available_views(rec))


def test_the_combined_view_beyond_dot_is_left_out_and_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = watched()
    # one side of the combined view weighs more than this (so do the backward and module
    # views: those stay in the page, laid out by the layered layout, which says so), and
    # is taken to have module boxes, which the layered layout would leave out (a view
    # without them it draws whole, and the page keeps)
    monkeypatch.setattr(backend, "LAYERED_WORK", 60)
    monkeypatch.setattr(layered.LayoutCost, "flat", property(lambda cost: False))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GradvizWarning)
        page = rec.save(tmp_path / "replay.html").read_text(encoding="utf-8")
    told = [str(w.message) for w in caught if "leaves it out" in str(w.message)]
    assert len(told) == 1 and "combined view" in told[0] and "views=" in told[0]
    state = unpack_state(page)
    assert "combined" not in state["svgs"] and "combined" not in state["data"]["views"]
    assert set(state["svgs"]) == set(available_views(rec)) - {"combined"}
    # asked for by name, it is there (laid out by the layered layout, which says so)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GradvizWarning)
        every = rec.save(tmp_path / "every.html", views=available_views(rec))
    assert "combined" in unpack_state(every.read_text(encoding="utf-8"))["svgs"]
    # the widget lays views out when first chosen: its menu keeps every view
    assert "combined" in stepper_payload(rec, lazy=True)["data"]["views"]
