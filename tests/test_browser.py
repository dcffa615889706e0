"""The stepper in a real browser: the offline page, and the widget inside JupyterLab.

Playwright's own browser download does not work on these machines (DESIGN §9), so
Debian's Chromium is launched with a fresh profile and everything that phones home off.
Each test prints the per-step latency it measured; none asserts on time.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import gradviz
from gradviz.lessons import lesson
from gradviz.recording import Recording
from gradviz.replay import classes_at, replay_data

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

# The class each scheduled element carries, read inside one stepper only.
READ_CLASSES = """([root, ids]) => {
  const replay = ["gv_done","gv_active","gv_pending","gv_notrun","gv_hidegrad","gv_flowing"];
  const out = {};
  for (const id of ids) {
    const el = root.querySelector(`svg [id="${id}"]`);
    if (!el) { out[id] = "missing"; continue; }
    const cls = replay.filter((c) => el.classList.contains(c));
    if (cls.length) out[id] = cls.join(" ");
  }
  return out;
}"""

# Which gradient labels show: id -> visible, for edges and links that carry one.
READ_LABELS = """(root) => {
  const out = {};
  for (const text of root.querySelectorAll("svg .gv_grad")) {
    const id = text.closest("g[id]").id;
    out[id] = getComputedStyle(text).visibility !== "hidden" &&
      getComputedStyle(text).display !== "none";
  }
  return out;
}"""

# Click a control and wait for the next frame: what a lecturer waits for after a click.
TIMED_CLICK = """async ([root, selector]) => {
  const t0 = performance.now();
  root.querySelector(selector).click();
  await new Promise((resolve) => requestAnimationFrame(() => resolve()));
  return performance.now() - t0;
}"""


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


def report_latency(where: str, samples: list[float]) -> None:
    """Print the per-step latency (a figure for the log, never an assertion)."""
    print(
        f"\n[{where}] per-step latency, click to next frame: median "
        f"{statistics.median(samples):.1f} ms, max {max(samples):.1f} ms over {len(samples)} steps"
    )


# -- 1. the standalone page ------------------------------------------------------------------
@pytest.fixture(scope="module")
def ten_ops() -> Recording:
    built = lesson("ten-ops").build()
    return gradviz.record(*built.roots, names=built.names)


@pytest.mark.browser
@pytest.mark.needs_dot
def test_standalone_replay(ten_ops: Recording, tmp_path: Path) -> None:
    page_file = ten_ops.save(tmp_path / "replay.html")
    data = replay_data(ten_ops)
    schedule, prefix, last = data["schedule"], data["prefix"], len(ten_ops.steps)
    ids = [*schedule["nodes"], *schedule["edges"], *schedule["links"]]
    requests: list[str] = []
    errors: list[str] = []
    with chromium(tmp_path / "profile") as context:
        page = context.new_page()
        page.on("request", lambda request: requests.append(request.url))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(page_file.as_uri())
        root = page.wait_for_selector(".gv-stepper")

        def check(index: int) -> None:
            assert root.get_attribute("data-step") == str(index)
            assert page.evaluate(READ_CLASSES, [root, ids]) == classes_at(schedule, index)
            labels = page.evaluate(READ_LABELS, root)
            flowed = {**schedule["edges"], **schedule["links"]}
            assert labels == {k: at <= index for k, at in flowed.items()}, index
            assert root.query_selector(".gv-counter").inner_text() == f"step {index} / {last}"

        check(0)
        timings = []
        for index, node_id in enumerate(ten_ops.order, start=1):
            timings.append(page.evaluate(TIMED_CLICK, [root, ".gv-next"]))
            active = root.query_selector_all("svg .gv_active")
            assert [a.get_attribute("id") for a in active] == [f"{prefix}_{node_id}"]
            assert (
                ten_ops.steps[index - 1].type_name in root.query_selector(".gv-panel").inner_text()
            )
            check(index)
        assert root.query_selector(".gv-next").is_disabled()
        for index in range(last - 1, -1, -1):  # Prev undoes, step by step
            timings.append(page.evaluate(TIMED_CLICK, [root, ".gv-prev"]))
            check(index)
        root.focus()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        check(3)

        with page.expect_download() as download:
            root.query_selector(".gv-download").click()
        svg = Path(download.value.path()).read_text(encoding="utf-8")
        active_id = f"{prefix}_{ten_ops.order[2]}"
        assert re.search(rf'id="{active_id}" class="[^"]*\bgv_active\b', svg)
        assert ".gv_active" in svg and svg.lstrip().startswith("<svg")

        root.query_selector(".gv-view").select_option("combined")
        check(3)
        assert [a.get_attribute("id") for a in root.query_selector_all("svg .gv_active")] == [
            active_id
        ]
    assert not errors
    local = ("file:", "data:", "blob:")  # blob: is the download, made in the page itself
    assert [url for url in requests if not url.startswith(local)] == []
    report_latency("standalone page", timings)
