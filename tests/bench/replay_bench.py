"""``make bench``'s replay table: watch + record + save("replay.html") on real models, each
as a ratio to one plain ``dot -Tsvg`` of torchviz's DOT of the same backward graph (the
issue's target: at most 15x), the page's weight per 1,000 backward nodes (target: 1.5 MB),
torchlens' equivalent (trace, log the backward pass, draw it) where installed, and the
stepper in headless Chromium: time until a page is interactive, median step latency
(target: 16 ms at 3,000 and 10,000 nodes) and frame times while panning and zooming.
"Ready" is the page's own data-ready (the first frame with the graph painted). A step's
latency is judged on the step's own frame: clicked inside a frame's requestAnimationFrame,
until that frame is rendered (handler, style, layout, paint). "Click to the step's frame
rendered" adds the wait for the next frame, up to 16.7 ms at 60 Hz on any page (a page that
changes one class measures the same), so it is printed, not judged; the handler figure
leaves out style, layout and paint.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import gradviz  # noqa: E402
from gradviz.errors import GradvizWarning  # noqa: E402
from gradviz.stepper.page import unpack_state  # noqa: E402
from tests.support.workloads import ReplayWorkload, replay_workloads, synthetic  # noqa: E402

DOT_LIMIT_S = 900  # a plain dot run longer than this is reported as "> limit"
RATIO_TARGET = 15.0
PAGE_TARGET_MB_PER_1000 = 1.5
STEP_TARGET_MS = 16.0
READY_TARGET_S = 2.0  # a 3,000-node page is interactive within this


def _loss(work: ReplayWorkload) -> torch.Tensor:
    return work.model(work.inputs).square().mean()


def plain_dot_seconds(work: ReplayWorkload) -> tuple[float | None, str]:
    """One ``dot -Tsvg`` of torchviz's DOT of the same graph (gradviz's own plain DOT when
    torchviz is missing or cannot walk the graph: the note says which)."""
    loss = _loss(work)
    try:
        import torchviz

        source, what = (
            torchviz.make_dot(loss, params=dict(work.model.named_parameters())).source,
            "torchviz",
        )
    except ImportError:
        source, what = gradviz.trace(loss).to_dot(), "gradviz plain DOT (torchviz missing)"
    except RecursionError:  # torchviz walks the graph recursively: a 10,000-deep chain fails
        source = gradviz.trace(loss).to_dot(values=False)
        what = "gradviz DOT without values (torchviz's recursive walk fails at this depth)"
    work.model.zero_grad(set_to_none=True)
    start = time.perf_counter()
    try:
        subprocess.run(
            ["dot", "-Tsvg", "-o", os.devnull],
            input=source.encode("utf-8"),
            check=True,
            timeout=DOT_LIMIT_S,
            capture_output=True,
        )
    except subprocess.TimeoutExpired:
        return None, f"{what}: dot did not finish in {DOT_LIMIT_S} s"
    return time.perf_counter() - start, what


def replay_seconds(work: ReplayWorkload, folder: Path) -> dict[str, Any]:
    """watch + record + save("replay.html"), once, timed end to end."""
    path = folder / f"{work.name.split()[0]}.html"
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GradvizWarning)
        with gradviz.watch(work.model) as w:
            loss = _loss(work)
        recording = w.record(loss)
        recording.save(path)
    seconds = time.perf_counter() - start
    work.model.zero_grad(set_to_none=True)
    nodes = len(recording.graph.nodes)
    size = path.stat().st_size
    return {
        "nodes": nodes,
        "forward_ops": len(recording.forward_ops),
        "replay_s": seconds,
        "page_bytes": size,
        "page_mb_per_1000": size / 1e6 / nodes * 1000,
        "page": str(path),
        "page_parts": page_parts(path),
    }


def page_parts(path: Path) -> dict[str, int]:
    """What a page's bytes are: the front end and markup outside the data script (as they
    are), and each part of the data (each view's SVG, the steps, the schedule, the rest)
    gzip-compressed on its own (the page packs them together, 7 bits a character)."""
    page = path.read_text(encoding="utf-8")
    state = unpack_state(page)
    data = re.search(r'class="gv-replay-data"[^>]*>(.*?)</script>', page, re.DOTALL)
    packed = len(data.group(1).encode("utf-8")) if data else 0

    def gz(value: Any) -> int:
        return len(gzip.compress(json.dumps(value, ensure_ascii=False).encode(), 9, mtime=0))

    parts = {"front end": len(page.encode("utf-8")) - packed, "packed data": packed}
    for view, svg in state["svgs"].items():
        parts[f"gz {view}"] = gz(svg)
    for key in ("steps", "schedule"):
        parts[f"gz {key}"] = gz(state["data"].get(key))
    rest = {k: v for k, v in state["data"].items() if k not in ("steps", "schedule")}
    parts["gz other data"] = gz(rest) + gz(state["css"])
    return parts


def torchlens_seconds(work: ReplayWorkload, folder: Path) -> float | None:
    try:
        import torchlens
        from torchlens.options import CaptureOptions
    except Exception:
        return None
    start = time.perf_counter()
    try:
        log = torchlens.trace(
            work.model, [work.inputs], capture=CaptureOptions(save_grads=True, backward_ready=True)
        )
        loss = log[log.output_layers[0]].out.square().mean()
        log.log_backward(loss)
        log.draw_backward(
            vis_outpath=str(folder / "torchlens"), vis_fileformat="svg", vis_save_only=True
        )
        log.cleanup()
    except Exception:
        return None
    return time.perf_counter() - start


# -- the stepper in Chromium ---------------------------------------------------------------------
STEPS = """async (count) => {
  const root = document.querySelector('.gv-stepper');
  const slider = root.querySelector('.gv-slider');
  slider.value = '0'; slider.dispatchEvent(new Event('input'));
  const out = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    root.querySelector('.gv-next').click();
    // the frame that shows the step has been rendered (style, layout, paint) once a task
    // queued from its requestAnimationFrame callback runs
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
    out.push(performance.now() - t);
  }
  return out;
}"""

# The step's frame without the wait for it: the click happens inside a requestAnimationFrame
# callback, so the frame being made shows the step; the time runs until that frame has been
# rendered (handler, style, layout, paint). STEPS above also waits for the next frame, which
# takes up to 16.7 ms at 60 Hz however little a step costs: FLOOR measures that wait alone.
IN_FRAME = """async (count) => {
  const root = document.querySelector('.gv-stepper');
  const slider = root.querySelector('.gv-slider');
  slider.value = '0'; slider.dispatchEvent(new Event('input'));
  const out = [];
  for (let i = 0; i < count; i++) {
    await new Promise((resolve) => requestAnimationFrame(() => {
      const t = performance.now();
      root.querySelector('.gv-next').click();
      setTimeout(() => { out.push(performance.now() - t); resolve(); }, 0);
    }));
  }
  return out;
}"""

# STEPS on a page whose "next" changes one class: the wait for the next frame alone.
FLOOR_PAGE = (
    '<div class="gv-stepper"><input class="gv-slider" type="range">'
    '<button class="gv-next" onclick="this.classList.toggle(\'on\')">next</button></div>'
)

# Handler time alone: the click and the style it invalidates, no wait for the next frame.
HANDLER = """(count) => {
  const root = document.querySelector('.gv-stepper');
  const out = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    root.querySelector('.gv-next').click();
    void getComputedStyle(root.querySelector('svg .gv_active') || root).opacity;
    out.push(performance.now() - t);
  }
  return out;
}"""

# Frame times while the view pans (drag) and zooms (Ctrl + wheel), one move per frame.
FRAMES = """async () => {
  const canvas = document.querySelector('.gv-canvas');
  const r = canvas.getBoundingClientRect();
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const frames = [];
  let last = performance.now();
  const tick = () => new Promise((resolve) => requestAnimationFrame((t) => {
    frames.push(t - last); last = t; resolve(); }));
  const pointer = (type, dx, dy) => canvas.dispatchEvent(new PointerEvent(type,
    {clientX: x + dx, clientY: y + dy, button: 0, pointerId: 1, bubbles: true}));
  pointer('pointerdown', 0, 0);
  for (let i = 1; i <= 40; i++) { pointer('pointermove', i * 6, i * 3); await tick(); }
  pointer('pointerup', 240, 120);
  for (let i = 0; i < 40; i++) {
    canvas.dispatchEvent(new WheelEvent('wheel', {deltaY: i < 20 ? -40 : 40, ctrlKey: true,
      clientX: x, clientY: y, bubbles: true, cancelable: true}));
    await tick();
  }
  return frames.slice(1);
}"""


# Where the start-up time goes: the page's own marks (ms since navigation started).
MARKS = """() => Object.fromEntries(['gv-data', 'gv-mounted', 'gv-ready'].map((name) => {
  const m = performance.getEntriesByName(name)[0];
  return [name, m ? Math.round(m.startTime) : null];
}))"""


def browser_figures(path: Path, profile: Path) -> dict[str, Any]:
    from browser_support_bench import chromium

    with chromium(profile) as context:
        page = context.new_page()
        page.set_viewport_size({"width": 1600, "height": 900})
        start = time.perf_counter()
        page.goto(path.as_uri(), wait_until="load")
        page.wait_for_selector('.gv-stepper[data-ready="1"]', timeout=600_000)
        ready = time.perf_counter() - start
        marks = page.evaluate(MARKS)
        handler = page.evaluate(HANDLER, 30)
        steps = page.evaluate(STEPS, 30)
        in_frame = page.evaluate(IN_FRAME, 30)
        frames = page.evaluate(FRAMES)
        page.set_content(FLOOR_PAGE)
        floor = page.evaluate(STEPS, 30)
        page.close()
    frames.sort()
    return {
        "interactive_s": ready,
        "marks_ms": marks,
        "step_handler_median_ms": statistics.median(handler),
        "step_to_frame_median_ms": statistics.median(steps),
        "step_in_frame_median_ms": statistics.median(in_frame),
        "next_frame_floor_median_ms": statistics.median(floor),
        "frame_median_ms": statistics.median(frames),
        "frame_p95_ms": frames[int(len(frames) * 0.95) - 1],
    }


def run(only: str = "all") -> dict[str, Any]:
    """Every replay workload, then the stepper at 3,000 and 10,000 nodes in Chromium."""
    torch.set_num_threads(1)
    folder = Path(tempfile.mkdtemp(prefix="gradviz-replay-bench-"))
    rows: list[dict[str, Any]] = []
    for work in replay_workloads(only):
        print(f"-- replay: {work.name}", file=sys.stderr, flush=True)
        row: dict[str, Any] = {"workload": work.name}
        row["dot_s"], row["dot_of"] = plain_dot_seconds(work)
        row.update(replay_seconds(work, folder))
        row["ratio"] = None if row["dot_s"] is None else row["replay_s"] / row["dot_s"]
        rows.append(row)
    for row, work in zip(rows, replay_workloads(only), strict=True):  # torchlens last
        row["torchlens_s"] = torchlens_seconds(work, folder)
    browser: list[dict[str, Any]] = []
    for size in (3000, 10000):
        print(f"-- stepper in Chromium: {size} nodes", file=sys.stderr, flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", GradvizWarning)
            recording = gradviz.record(synthetic(size)())
            path = recording.save(folder / f"synthetic-{size}.html")
        try:
            figures = browser_figures(path, folder / f"profile-{size}")
        except Exception as error:  # no Chromium or Playwright: a note, not a crash
            figures = {"error": f"{type(error).__name__}: {str(error)[:200]}"}
        browser.append(
            {"nodes": len(recording.graph.nodes), "page_bytes": path.stat().st_size, **figures}
        )
    return {"rows": rows, "browser": browser}


def report(result: dict[str, Any]) -> str:
    lines = [
        "replay: watch + record + save('replay.html') vs one plain dot -Tsvg of the same graph",
        f"{'workload':30} {'nodes':>6} {'replay s':>9} {'dot s':>8} {'ratio':>7} "
        f"{'MB/1000':>8} {'torchlens s':>11}",
    ]
    for row in result["rows"]:
        dot = "-" if row["dot_s"] is None else f"{row['dot_s']:.2f}"
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.1f}x"
        lens = "-" if row.get("torchlens_s") is None else f"{row['torchlens_s']:.1f}"
        lines.append(
            f"{row['workload']:30} {row['nodes']:>6} {row['replay_s']:>9.1f} {dot:>8} "
            f"{ratio:>7} {row['page_mb_per_1000']:>8.2f} {lens:>11}"
        )
    for row in result["rows"]:
        met = row["ratio"] is not None and row["ratio"] <= RATIO_TARGET
        lines.append(
            f"{'met' if met else 'MISSED':6} replay <= {RATIO_TARGET:.0f}x dot [{row['workload']}]"
        )
        page_met = row["page_mb_per_1000"] <= PAGE_TARGET_MB_PER_1000
        lines.append(
            f"{'met' if page_met else 'MISSED':6} page <= {PAGE_TARGET_MB_PER_1000} MB per "
            f"1,000 nodes [{row['workload']}]"
        )
    for row in result["rows"]:
        parts = ", ".join(f"{k} {v / 1e3:.0f}" for k, v in row["page_parts"].items())
        lines.append(f"  page kB [{row['workload']}]: {parts}")
    lines.append("stepper in headless Chromium (1600x900):")
    for row in result["browser"]:
        if "error" in row:
            lines.append(f"  {row['nodes']} nodes: not measured ({row['error']})")
            continue
        lines.append(
            f"  {row['nodes']} nodes, {row['page_bytes'] / 1e6:.1f} MB: ready (first frame "
            f"painted) after {row['interactive_s']:.1f} s (page marks, ms since navigation: "
            f"{row['marks_ms']}); step handler median {row['step_handler_median_ms']:.1f} ms, "
            f"click to the step's frame rendered {row['step_to_frame_median_ms']:.1f} ms "
            f"(the same on a page that changes one class: {row['next_frame_floor_median_ms']:.1f}"
            f" ms; the step's frame without the wait for it: "
            f"{row['step_in_frame_median_ms']:.1f} ms); "
            f"pan/zoom frames median {row['frame_median_ms']:.1f} ms, "
            f"p95 {row['frame_p95_ms']:.1f} ms"
        )
        # Judged on the step's own frame (handler, style, layout, paint): a step that fits
        # in one 60 Hz frame. Click-to-next-frame cannot go under the frame interval on any
        # page (the one-class page above shows it), so it is printed, not judged.
        step = row["step_in_frame_median_ms"]
        lines.append(
            f"{'met' if step <= STEP_TARGET_MS else 'MISSED':6} step's frame <= "
            f"{STEP_TARGET_MS:.0f} ms [{row['nodes']} nodes]: {step / STEP_TARGET_MS:.1f}x the "
            "target"
        )
        if row["nodes"] <= 3500:
            ready = row["interactive_s"]
            lines.append(
                f"{'met' if ready <= READY_TARGET_S else 'MISSED':6} interactive <= "
                f"{READY_TARGET_S:.0f} s [{row['nodes']} nodes]: {ready / READY_TARGET_S:.1f}x"
            )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines.append(f"  (load average {load:.1f} on {os.cpu_count()} cores when this was printed)")
    return "\n".join(lines)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    json_path = None
    if "--json" in arguments:  # make bench runs this table in a fresh process and reads it
        at = arguments.index("--json")
        json_path = Path(arguments[at + 1])
        del arguments[at : at + 2]
    outcome = run(arguments[0] if arguments else "all")
    print(report(outcome), flush=True)
    if json_path is not None:
        json_path.write_text(json.dumps(outcome, default=str), encoding="utf-8")
