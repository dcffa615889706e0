"""Graph and recording JSON is standard JSON: no bare NaN or Infinity.

Python's ``json`` writes ``NaN`` / ``Infinity`` by default, which ``JSON.parse``, jq, serde
and Go reject. gradviz writes them as the strings ``"NaN"``, ``"Infinity"`` and
``"-Infinity"`` where a number is due, and reads them back as floats (the round trip keeps
the values). Checked with ``json.loads(..., parse_constant=refuse)`` and with Chromium's
own ``JSON.parse``.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz import Graph, Summary
from gradviz.stepper.page import replay_html
from tests.support.inert import refuse_constant


def nonfinite_recording() -> gradviz.Recording:
    """Data with NaN and Inf, gradients with Inf (sqrt at 0) and NaN (0 * inf)."""
    with gradviz.watch() as watcher:
        x = torch.tensor([0.0, 4.0, float("nan")], requires_grad=True)
        w = torch.tensor([1.0, float("inf"), -float("inf")], requires_grad=True)
        y = x.sqrt() * w
        z = y * float("inf")
        loss = z.nansum()
    return watcher.record(loss, keep="summary")


def summaries(value: Any) -> list[dict[str, Any]]:
    """Every summary-like dict (one with ``values`` and ``numel``) inside ``value``."""
    found = []
    if isinstance(value, dict):
        if "values" in value and "numel" in value:
            found.append(value)
        for item in value.values():
            found += summaries(item)
    elif isinstance(value, list):
        for item in value:
            found += summaries(item)
    return found


def test_graph_json_is_standard_and_round_trips() -> None:
    graph = nonfinite_recording().graph
    text = graph.to_json()
    strict = json.loads(text, parse_constant=refuse_constant)
    texts = json.dumps(strict)
    assert '"NaN"' in texts and '"Infinity"' in texts and '"-Infinity"' in texts
    again = Graph.from_json(text)
    for before, after in zip(graph.tensors, again.tensors, strict=True):
        for mine, theirs in ((before.data, after.data), (before.grad, after.grad)):
            assert (mine is None) == (theirs is None)
            if mine is not None and theirs is not None:
                assert_same_summary(mine, theirs)
    assert graph.forward is not None and again.forward is not None
    constants = [a.value for op in graph.forward.ops for a in op.inputs if a.tensor is None]
    loaded = [a.value for op in again.forward.ops for a in op.inputs if a.tensor is None]
    assert math.inf in constants and loaded == constants
    assert again.to_json() == text


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b) and type(a) is type(b)


def assert_same_summary(a: Summary, b: Summary) -> None:
    assert len(a.values) == len(b.values)
    assert all(same(x, y) for x, y in zip(a.values, b.values, strict=True)), (a, b)
    for key in ("min", "max", "mean", "norm"):
        assert same(getattr(a, key), getattr(b, key)) or getattr(a, key) == getattr(b, key)
    assert (a.nan, a.inf, a.shape, a.numel) == (b.nan, b.inf, b.shape, b.numel)


def test_nonfinite_values_really_are_there() -> None:
    """The test above is only worth something if NaN and Inf reach the summaries."""
    recording = nonfinite_recording()
    found = summaries(recording.graph.to_dict()) + summaries(recording.to_dict())
    flat = [v for s in found for v in s["values"] if isinstance(v, float)]
    assert any(math.isnan(v) for v in flat) and math.inf in flat and -math.inf in flat


def test_recording_json_is_standard(tmp_path: Path) -> None:
    recording = nonfinite_recording()
    path = recording.save(tmp_path / "steps.json")
    text = path.read_text(encoding="utf-8")
    strict = json.loads(text, parse_constant=refuse_constant)
    assert '"Infinity"' in json.dumps(strict)
    (tmp_path / "graph.json").write_text(recording.graph.to_json(), encoding="utf-8")
    Graph.from_json((tmp_path / "graph.json").read_text(encoding="utf-8"))


def test_old_files_with_bare_nan_still_load() -> None:
    graph = nonfinite_recording().graph
    legacy = json.dumps(graph.to_dict())  # Python's default: bare NaN / Infinity
    assert "NaN" in legacy
    again = Graph.from_json(legacy)
    assert again.to_json() == graph.to_json()


PARSE = "(text) => { try { JSON.parse(text); return 'ok'; } catch (e) { return String(e); } }"


@pytest.mark.browser
@pytest.mark.needs_dot
def test_chromium_parses_page_data_and_json_files(tmp_path: Path) -> None:
    pytest.importorskip("playwright")
    from tests.support.browser import chromium, open_local

    recording = nonfinite_recording()
    page_path = tmp_path / "replay.html"
    page_path.write_text(replay_html(recording), encoding="utf-8")
    steps = recording.save(tmp_path / "steps.json").read_text(encoding="utf-8")
    files = [recording.graph.to_json(), steps]
    with chromium(tmp_path / "profile") as context:
        page, _, errors = open_local(context, page_path)
        page.wait_for_selector(".gv-stepper")
        parsed = page.evaluate(
            "() => JSON.parse(document.querySelector('.gv-replay-data').textContent) !== null"
        )
        assert parsed and errors == []
        for text in files:
            assert page.evaluate(PARSE, text) == "ok"
        legacy = json.dumps(recording.graph.to_dict())
        assert page.evaluate(PARSE, legacy) != "ok"  # what gradviz wrote before


def test_widget_state_is_standard_json() -> None:
    """Jupyter packs widget state as standard JSON (NaN falls back, with a warning that
    this is deprecated): NaN must arrive as text."""
    from gradviz.escape import wire_safe

    state = wire_safe({"data": {"values": [1.0, float("nan"), float("-inf")], "n": "x"}})
    assert state == {"data": {"values": [1.0, "NaN", "-Infinity"], "n": "x"}}
    json_packer = pytest.importorskip("jupyter_client.session").json_packer
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        json_packer(state)
