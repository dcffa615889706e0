"""Shared fixtures, and markers for tests that need Graphviz or a browser.

Locally a missing ``dot`` or Chromium skips those tests with the reason; in CI (CI=true),
where ``make test`` installs both, it fails them instead.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).parent / "golden"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden/* from the current output instead of comparing",
    )


def _missing(marker: str) -> str | None:
    if marker == "needs_dot" and shutil.which("dot") is None:
        return "Graphviz 'dot' is not installed (make test installs it)"
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
