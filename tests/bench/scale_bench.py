"""``make bench``'s scale figures: a 100,000-node backward graph against the 10,000-node
case, for a deep, narrow network and a GRU cell unrolled over time.

    PYTHONPATH=$PWD python tests/bench/scale_bench.py [--sizes 10000,100000] [--kinds deep,gru]
        [--no-browser] [--json out/scale.json]

Per graph: ``record`` and ``save("replay.html")`` (the save judged: at most 12× the
10,000-node case, i.e. cost linear in size), the page's size, and in headless Chromium at
1600×900 (``replay_bench.browser_figures``): the time until the page is interactive (target
≤ 3 s), a step's handler and its own frame (target ≤ 16 ms) and the frame times while
panning and zooming (target: 60 frames a second, 16.7 ms).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import gradviz  # noqa: E402
from gradviz.errors import GradvizError, GradvizWarning  # noqa: E402
from tests.support.workloads import GRUUnrolled, synthetic  # noqa: E402

SAVE_RATIO = 12.0
OPEN_S = 3.0
STEP_MS = 16.0
FRAME_MS = 1000 / 60
GRU_NODES_PER_STEP = 16  # nn.GRUCell's backward nodes per time step, measured


def deep_narrow(nodes: int) -> Callable[[], torch.Tensor]:
    return synthetic(nodes)


def gru(nodes: int) -> Callable[[], torch.Tensor]:
    steps = max(1, nodes // GRU_NODES_PER_STEP)
    torch.manual_seed(0)
    model = GRUUnrolled(steps=steps)
    inputs = torch.randn(2, steps, 16)
    return lambda: model(inputs).square().mean()


def measure(kind: str, make: Callable[[int], Callable[[], torch.Tensor]], nodes: int,
            folder: Path, browser: bool) -> dict[str, Any]:  # fmt: skip
    forward = make(nodes)
    loss = forward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GradvizWarning)
        start = time.perf_counter()
        recording = gradviz.record(loss)
        record_s = time.perf_counter() - start
        path = folder / f"{kind.split()[0]}-{nodes}.html"
        start = time.perf_counter()
        try:
            recording.save(path)
        except GradvizError as error:  # the figure is that it failed, and after how long
            return {
                "kind": kind,
                "nodes": len(recording.graph.nodes),
                "record_s": record_s,
                "save_s": time.perf_counter() - start,
                "error": f"save failed: {type(error).__name__}: {str(error)[:200]}",
            }
        save_s = time.perf_counter() - start
    row: dict[str, Any] = {
        "kind": kind,
        "nodes": len(recording.graph.nodes),
        "record_s": record_s,
        "save_s": save_s,
        "page_mb": path.stat().st_size / 1e6,
    }
    if browser:
        from replay_bench import browser_figures

        try:
            row.update(browser_figures(path, folder / f"profile-{kind.split()[0]}-{nodes}"))
        except Exception as error:  # no Chromium or Playwright: a note, not a crash
            row["error"] = f"{type(error).__name__}: {str(error)[:200]}"
    return row


def report(rows: list[dict[str, Any]]) -> str:
    lines = [
        "scale: a 100,000-node backward graph against the 10,000-node case",
        f"(targets: save ≤ {SAVE_RATIO:.0f}× the 10k case, open ≤ {OPEN_S:.0f} s, "
        f"a step's frame ≤ {STEP_MS:.0f} ms, pan/zoom frames ≤ {FRAME_MS:.1f} ms)",
    ]
    base: dict[str, float] = {}
    for row in rows:
        text = (
            f"  {row['kind']}: {row['nodes']} nodes, record {row['record_s']:.1f} s, "
            f"save {row['save_s']:.1f} s"
        )
        if "page_mb" not in row:
            lines.append(f"{text} MISSED: {row['error']}")
            continue
        if row["kind"] in base:
            ratio = row["save_s"] / base[row["kind"]]
            text += f" ({ratio:.1f}× the smaller{'' if ratio <= SAVE_RATIO else ' MISSED'})"
        else:
            base[row["kind"]] = row["save_s"]
        text += f", page {row['page_mb']:.1f} MB"
        if "interactive_s" in row:
            opened, step = row["interactive_s"], row["step_in_frame_median_ms"]
            frame = row["frame_median_ms"]
            text += (
                f"; opens in {opened:.2f} s{'' if opened <= OPEN_S else ' MISSED'}, "
                f"step {step:.1f} ms{'' if step <= STEP_MS else ' MISSED'} (handler "
                f"{row['step_handler_median_ms']:.1f} ms), pan/zoom frames median "
                f"{frame:.1f} ms{'' if frame <= FRAME_MS + 0.5 else ' MISSED'}, "
                f"p95 {row['frame_p95_ms']:.1f} ms"
            )
        elif "error" in row:
            text += f"; browser: {row['error']}"
        lines.append(text)
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    sizes = [10_000, 100_000]
    json_path: Path | None = None
    browser = "--no-browser" not in argv
    if "--sizes" in argv:
        sizes = [int(s) for s in argv[argv.index("--sizes") + 1].split(",")]
    kinds = ["deep", "gru"]
    if "--kinds" in argv:
        kinds = argv[argv.index("--kinds") + 1].split(",")
    if "--json" in argv:
        json_path = Path(argv[argv.index("--json") + 1])
    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory(prefix="gradviz-scale-") as folder:
        graphs = {
            "deep": ("deep narrow (residual blocks)", deep_narrow),
            "gru": ("GRU cell unrolled", gru),
        }
        for kind, make in (graphs[name] for name in kinds):
            for nodes in sizes:
                print(f"-- scale: {kind}, {nodes} nodes", file=sys.stderr, flush=True)
                rows.append(measure(kind, make, nodes, Path(folder), browser))
    print(report(rows))
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
