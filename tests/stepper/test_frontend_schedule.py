"""The front end's class rules (frontend/src/schedule.js classesAt) give every element the
classes of gradviz.replay.classes_at, the Python reference, at every step of every view."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from torch import nn

import gradviz
from gradviz.replay.frames import classes_at
from gradviz.stepper.page import stepper_payload

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

CLASSES_AT = """
import { classesAt } from "./frontend/src/schedule.js";
let text = "";
for await (const chunk of process.stdin) text += chunk;
const { schedule, first, last, views } = JSON.parse(text);
const out = {};
for (const view of views) {
  for (let i = first; i <= last; i++) out[`${view} ${i}`] = classesAt(schedule, i, view);
}
process.stdout.write(JSON.stringify(out));
"""


@pytest.mark.needs_dot
def test_the_front_ends_classes_are_pythons() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Sequential(nn.Linear(3, 4), nn.Tanh()), nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    )
    x = torch.randn(2, 3)
    with gradviz.watch(model) as w:
        loss = model(x).log().sum()  # log of ReLU's zeros: NaN/Inf marks from a step on
    recording = w.record(loss)
    data = stepper_payload(recording)["data"]
    schedule = data["schedule"]
    views = sorted(schedule.get("born", {})) or ["backward"]
    assert schedule["nodes"] and schedule["edges"]
    sent = {"schedule": schedule, "first": data["first"], "last": data["count"] - 1, "views": views}
    done = subprocess.run(
        ["node", "--input-type=module", "-e", CLASSES_AT],
        cwd=ROOT,
        input=json.dumps(sent),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    got = json.loads(done.stdout)
    assert data["first"] < 0  # forward frames too
    for view in views:
        for index in range(data["first"], data["count"]):
            assert got[f"{view} {index}"] == classes_at(schedule, index, view), (view, index)
