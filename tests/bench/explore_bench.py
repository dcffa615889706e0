"""How long an edit in ``gradviz.explore`` takes on the ten-op lesson, kernel side: the
user's function run again, recorded, the leaves' finite differences, the stepper's new data
(the same layout, new numbers) and the widget's state message serialized.

    python tests/bench/explore_bench.py [--repeat N]

``make bench`` prints it as one line (a figure, not a test: the goal is 100 ms).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

import gradviz  # noqa: E402
from gradviz.teaching.lessons import ten_ops  # noqa: E402

GOAL_MS = 100.0
SENT = ["svgs", "born", "data", "step", "leaves", "values", "notice", "revision", "answered"]


def measure_explore(repeat: int = 20) -> dict[str, Any]:
    """Median milliseconds of an edit of c on the ten-op lesson (after two warm-up edits)."""
    explorer = gradviz.explore(ten_ops, c=4.0, h=2.0)
    explorer.goto(3)
    times: list[float] = []
    kernel: list[float] = []
    for index in range(repeat + 2):
        start = time.perf_counter()
        explorer.set(c=4.0 + 0.25 * (index + 1))
        message = json.dumps(explorer.get_state(SENT))
        took = (time.perf_counter() - start) * 1000
        assert explorer.notice == "" and len(message) > 0
        if index >= 2:
            times.append(took)
            kernel.append(explorer.update_ms)
    median = statistics.median(times)
    return {
        "workload": "explore: ten-op lesson edit",
        "explore_edit_ms": median,
        "explore_rerun_record_data_ms": statistics.median(kernel),
        "explore_edit_range_ms": (min(times), max(times)),
        "explore_goal_ms": GOAL_MS,
    }


def explore_line(row: dict[str, Any]) -> str:
    low, high = row["explore_edit_range_ms"]
    return (
        f"explore: an edit on the ten-op lesson (run fn + record + finite differences + data + "
        f"state message) {row['explore_edit_ms']:.1f} ms median (rounds {low:.1f}–{high:.1f} ms; "
        f"goal {GOAL_MS:.0f} ms)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    print(explore_line(measure_explore(args.repeat)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
