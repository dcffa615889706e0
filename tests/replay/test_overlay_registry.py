"""An overlay is registered in one place, ``gradviz.replay.overlays.OVERLAYS``: the replay
makes its data, the page ships the explanations' front end for its key, and the front end's
build finds its module by that key (``frontend/src/overlays/<key>.js``)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz.model.recording import Recording
from gradviz.replay import overlays
from gradviz.replay.overlays import OVERLAYS, Overlay
from gradviz.stepper.page import page_script, replay_html, unpack_state

ROOT = Path(__file__).resolve().parents[2]
FRONT_END = ROOT / "frontend" / "src" / "overlays"


def _recording() -> gradviz.Recording:
    x = torch.randn(4, requires_grad=True)
    return gradviz.record((x * 3).tanh().sum())


def test_each_registered_overlay_has_its_front_end_module_and_no_other_has_one() -> None:
    keys = [overlay.key for overlay in OVERLAYS]
    assert len(keys) == len(set(keys))
    modules = {
        path.stem
        for path in FRONT_END.glob("*.js")
        if re.search(r"^export default class ", path.read_text(encoding="utf-8"), re.M)
    }
    assert modules == set(keys)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_front_end_build_reads_the_same_registry() -> None:
    keys = "m => console.log(JSON.stringify(m.overlayKeys()))"
    script = f'import("./frontend/build.mjs").then({keys})'
    done = subprocess.run(
        ["node", "-e", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout) == [overlay.key for overlay in OVERLAYS]


def test_a_new_overlay_is_made_and_shipped_from_its_registration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def counts(recording: Recording, schedule: dict[str, Any], prefix: str) -> dict[str, Any]:
        return {"steps": len(recording.steps), "edges": len(schedule["edges"])}

    recording = _recording()
    monkeypatch.setattr(overlays, "OVERLAYS", (*OVERLAYS, Overlay("counts", counts)))
    data = unpack_state(replay_html(recording))["data"]
    assert data["counts"] == {"steps": len(recording), "edges": len(data["schedule"]["edges"])}

    # an overlay whose page adds its data: the explanations' code ships with that data alone
    monkeypatch.setattr(overlays, "OVERLAYS", (*OVERLAYS, Overlay("added")))
    page = replay_html(recording, explain=False, extra_data={"added": [1]})
    assert page_script(lazy=False, explain=True) in page
    assert page_script(lazy=False, explain=False) in replay_html(recording, explain=False)
