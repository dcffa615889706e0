"""The standalone replay page: self-contained, escaped, and the front end ships in the wheel."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import gradviz
from gradviz.model.recording import Recording
from gradviz.replay import overlays
from gradviz.stepper.page import (
    asset_text,
    compact_css,
    json_for_script,
    page_script,
    replay_html,
)
from gradviz.teaching.lessons import lesson

EVIL = "</script><img src=x onerror=alert(1)><!--"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def evil_recording() -> Recording:
    a = torch.tensor(2.0, requires_grad=True)
    b = a * 3
    return gradviz.record(b, names={EVIL: a, "b&<b>": b})


def _data_script(page: str) -> str:
    match = re.search(
        r'<script type="application/json" class="gv-replay-data">(.*?)</script>', page
    )
    assert match
    return match.group(1)


def test_json_for_script_cannot_close_the_script() -> None:
    text = json_for_script({"name": EVIL, "amp": "a & b", "sep": "\u2028"})
    for bad in ("<", ">", "&", "\u2028"):
        assert bad not in text
    assert json.loads(text) == {"name": EVIL, "amp": "a & b", "sep": "\u2028"}


@pytest.mark.needs_dot
def test_user_names_cannot_inject_markup(evil_recording: Recording, tmp_path: Path) -> None:
    page = evil_recording.save(tmp_path / "replay.html").read_text(encoding="utf-8")
    # the damaged-file check, the data script and the module, nothing else
    assert page.lower().count("</script") == 3
    assert page.count("<!--") == 0
    assert "<img" not in page.lower()
    # the words stay text: no tag has an onerror attribute (they may sit, escaped, inside a
    # quoted attribute value such as the tooltip of a shortened name)
    assert not re.search(r"<[^>]*\sonerror=", re.sub(r'"[^"]*"', '""', page))
    state = json.loads(_data_script(page))
    svg = state["svgs"]["backward"]
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in svg  # shown as text
    assert "<img" not in svg and "<script" not in svg


@pytest.mark.needs_dot
def test_page_is_self_contained(tmp_path: Path) -> None:
    built = lesson("ten-ops").build()
    recording = gradviz.record(*built.roots, names=built.names)
    page = replay_html(recording)
    assert "<link" not in page and " src=" not in page and "@import" not in page
    assert "url(" not in page.replace("url(#", "")  # no external fonts or images
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    state = json.loads(_data_script(page))
    assert state["step"] == 0 and state["data"]["count"] == len(recording) + 1
    assert set(state["svgs"]) == {"backward", "combined"}
    explained = overlays.explained(state["data"])
    assert page_script(lazy=False, explain=explained) in page
    assert compact_css(asset_text("stepper.css")) in page


def test_assets_are_the_checkouts() -> None:
    js = asset_text("stepper-widget.js")
    assert js == (ROOT / "assets" / "stepper-widget.js").read_text(encoding="utf-8")
    assert "as default}" in js and "</script" not in js.lower()
    with pytest.raises(FileNotFoundError, match="reinstall"):
        asset_text("missing.js")


@pytest.mark.slow
def test_wheel_ships_the_front_end(tmp_path: Path) -> None:
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    subprocess.run([*build, "-q", "-w", str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"gradviz/assets/stepper-page.js", "gradviz/assets/stepper.css"} <= names
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "gradviz").rglob("*.py")}
    assert sources <= names, sorted(sources - names)  # package discovery misses no sub-package
    target = tmp_path / "site"
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target"]
    subprocess.run([*install, str(target), str(wheel)], check=True, capture_output=True)
    code = (
        "import gradviz, gradviz.stepper.page as h; print(gradviz.__file__); "
        "h.asset_text('stepper-page.js')"
    )
    env = {"PYTHONPATH": str(target), "PATH": ""}
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert out.stdout.strip().startswith(str(target))
