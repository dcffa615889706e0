"""The wheel is the whole install: built by ``python -m build``, installed into a bare venv
with no Graphviz program on PATH, it renders SVG, PNG and PDF and writes a replay page. Its
metadata tells the truth: the version is ``gradviz.__version__``, the license file ships."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import gradviz

ROOT = Path(__file__).resolve().parents[2]

USE_IT = r"""
import sys
from importlib.metadata import version
from pathlib import Path
import gradviz
from gradviz.teaching.lessons import lesson

assert "/site-packages/" in gradviz.__file__.replace("\\", "/"), gradviz.__file__
assert version("torch-gradviz") == gradviz.__version__, version("torch-gradviz")
out = Path(sys.argv[1])
built = lesson("ten-ops").build()
graph = gradviz.trace(*built.roots, names=built.names)
svg = graph.save(out / "g.svg").read_text(encoding="utf-8")
assert "<svg" in svg and "MulBackward0" in svg
assert graph.save(out / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
assert graph.save(out / "g.pdf").read_bytes()[:4] == b"%PDF"
built = lesson("ten-ops").build()
recording = gradviz.record(*built.roots, names=built.names)
page = recording.save(out / "replay.html").read_text(encoding="utf-8")
assert "<svg" in page and "stepper" in page.lower()
print("rendered", sorted(p.name for p in out.iterdir()))
"""


@pytest.mark.slow
def test_the_wheel_renders_everything_in_a_bare_venv_without_dot(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = dist.glob("torch_gradviz-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for asset in (
        "stepper-page.js",
        "stepper-widget.js",
        "stepper-embedded.js",
        "stepper.css",
        "themes.json",
        "filmstrip.js",
        "filmstrip-widget.js",
        "filmstrip.css",
    ):
        assert f"gradviz/assets/{asset}" in names
    assert "gradviz/py.typed" in names
    # the version written once, in gradviz/__init__.py; the license the metadata names
    assert wheel.name.startswith(f"torch_gradviz-{gradviz.__version__}-"), wheel.name
    info = f"torch_gradviz-{gradviz.__version__}.dist-info"
    assert f"{info}/licenses/LICENSE" in names
    metadata = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
    assert f"\nVersion: {gradviz.__version__}\n" in metadata
    assert "\nLicense-Expression: MIT\n" in metadata
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    for needed in ("torch>=2.13", "typing-extensions>=4.10"):
        assert any(needed in line.replace("_", "-") for line in requires), (needed, requires)

    # nothing of this checkout may be seen: PYTHONPATH would show pip the build's egg-info
    # as an installed torch-gradviz, and gradviz itself to the script
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GRADVIZ_GRAPHVIZ")}
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env, timeout=300)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run(
        [*pip, "torch==2.13.0", str(wheel)], check=True, env=env, cwd=tmp_path, timeout=1800
    )

    out = tmp_path / "out"
    out.mkdir()
    env["PATH"] = "/nonexistent"  # no dot, no graphviz-pure on PATH: the wheel's own is found
    done = subprocess.run(
        [str(python), "-c", USE_IT, str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "replay.html" in done.stdout
