"""Driving Debian's Chromium with Playwright, shared by the browser tests.

Playwright's own browser download does not work on these machines (no network), so
Debian's Chromium is launched with a fresh profile and everything that phones home off.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.person import click

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
# The most any Playwright action or wait may take (ms) before it fails: every wait is on a
# state, so a generous bound costs nothing when the page is fine, and a busy machine (other
# tests, a CPU burner) slows a page well past Playwright's default of 30 s.
LIMIT_MS = 180_000
# What a page opened from disk may load: its own files, inline data, and blobs it makes.
LOCAL_SCHEMES = ("file:", "data:", "blob:")


@contextmanager
def chromium(profile: Path, **options: Any) -> Iterator[Any]:
    """A Chromium context with a fresh profile that accepts downloads; ``options`` go to
    Playwright's context (``has_touch=True`` for a touch screen)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            args=ARGS,
            headless=True,
            accept_downloads=True,
            viewport={"width": 1200, "height": 900},
            **options,
        )
        context.set_default_timeout(LIMIT_MS)
        context.set_default_navigation_timeout(LIMIT_MS)
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


# Where the active element is and how tall its text is on screen, inside one stepper.
ACTIVE = """(root) => {
  const step = Number(root.dataset.step);
  const canvas = root.querySelector(".gv-canvas").getBoundingClientRect();
  const el = root.querySelector("svg .gv_active");
  if (!el) return { step, active: null };
  const r = el.getBoundingClientRect();
  const svg = root.querySelector(".gv-canvas > svg");
  const scale = svg.getScreenCTM().a;
  const text = el.querySelector("text");
  const size = text ? Number(text.getAttribute("font-size")) * scale : 0;
  const cx = (r.left + r.right) / 2;
  const cy = (r.top + r.bottom) / 2;
  const inside = cx >= canvas.left && cx <= canvas.right && cy >= canvas.top && cy <= canvas.bottom;
  return { step, active: el.id, inside, textPx: size };
}"""


def readable_steps(page: Any, root: Any, steps: int) -> int:
    """Step over ``steps`` times; every active element drawn must be on screen with text at
    least 12 px tall (the camera's promise). Returns how many steps drew one. Over is
    clicked with the mouse, and each step waited for until the last."""
    seen = 0
    for _ in range(steps):
        if root.query_selector(".gv-next").is_disabled():
            break  # the last step: Over stays there
        before = int(root.get_attribute("data-step"))
        click(page, root.query_selector(".gv-over"))
        page.wait_for_function(
            "([r, s]) => r.dataset.step !== String(s)", arg=[root, before], timeout=LIMIT_MS
        )
        where = page.evaluate(ACTIVE, root)
        if where["active"] is None:
            continue
        seen += 1
        assert where["inside"], where
        assert where["textPx"] >= 12 - 1e-6, where
    return seen
