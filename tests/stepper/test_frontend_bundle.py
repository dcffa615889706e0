"""The committed bundles (assets/stepper-*.js) are what frontend/build.mjs makes of the
sources in frontend/: a change to a module without a rebuild fails here."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def test_the_committed_bundles_match_their_sources() -> None:
    if not (ROOT / "node_modules" / "esbuild").is_dir():
        pytest.fail("esbuild is not installed: run `make setup-dev` (npm ci) first")
    done = subprocess.run(
        ["node", "frontend/build.mjs", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr or done.stdout
