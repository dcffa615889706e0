"""Driving Debian's Chromium with Playwright, shared by the browser tests.

Playwright's own browser download does not work on these machines (no network), so
Debian's Chromium is launched with a fresh profile and everything that phones home off.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# What a page opened from disk may load: its own files, inline data, and blobs it makes.
LOCAL_SCHEMES = ("file:", "data:", "blob:")


@contextmanager
def chromium(profile: Path) -> Iterator[Any]:
    """A Chromium context with a fresh profile that accepts downloads."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            args=ARGS,
            headless=True,
            accept_downloads=True,
            viewport={"width": 1200, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


def open_local(context: Any, path: Path) -> tuple[Any, list[str], list[str]]:
    """A new page at ``path`` (file://), with every request URL and page error it sees."""
    page = context.new_page()
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri(), wait_until="load")
    return page, requests, errors
