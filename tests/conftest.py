"""Shared fixtures, and markers for tests that need Graphviz or a browser.

Locally a missing ``dot`` or Chromium skips those tests with the reason; in CI (CI=true),
where ``make test`` installs both, it fails them instead.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gradviz.render.backend import dot_available

GOLDEN = Path(__file__).parent / "golden"
KERNEL_NAME = "gradviz-tests"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden/* from the current output instead of comparing",
    )


def _missing(marker: str) -> str | None:
    if marker == "needs_dot" and not dot_available():
        return "neither the embedded Graphviz nor 'dot' can run (pip install torch-gradviz)"
    if marker == "browser" and shutil.which("chromium") is None:
        return "Debian's chromium is not installed (make test installs it)"
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in ("needs_dot", "browser"):
        if item.get_closest_marker(marker) is None:
            continue
        reason = _missing(marker)
        if reason is None:
            continue
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must have it")
        pytest.skip(reason)


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def check_golden(name: str, text: str, update: bool) -> None:
    """Compare with tests/golden/NAME; rewrite it only with --update-golden."""
    path = GOLDEN / name
    if update:
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path} is missing: run pytest --update-golden once and review it"
    assert text == path.read_text(encoding="utf-8"), (
        f"{name} differs from the golden file; if the change is intended, run "
        "pytest --update-golden and review the diff"
    )


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium context per test module (Debian's chromium, no network)."""
    from tests.support.browser import chromium

    with chromium(tmp_path_factory.mktemp("profile")) as context:
        yield context


@pytest.fixture(scope="session")
def kernel_name(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A kernelspec for this interpreter, found through JUPYTER_PATH (searched first)."""
    data_dir = tmp_path_factory.mktemp("jupyter-data")
    spec_dir = data_dir / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "gradviz tests",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(data_dir))
        patch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # no deprecation warning from jupyter_core
        # connection files and IPython's history stay out of the user's home
        patch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path_factory.mktemp("jupyter-runtime")))
        patch.setenv("IPYTHONDIR", str(tmp_path_factory.mktemp("ipython")))
        yield KERNEL_NAME
