"""trace + DOT against torchviz on the bench's models, best of N runs in one process.

    PYTHONPATH=$PWD python tests/bench/trace_dot.py [runs]

The bench row ``trace_dot_vs_torchviz`` takes medians over a few runs; on a shared machine
the best of many runs is steadier. Each call does its own work: ``trace`` alone, one graph's
``to_dot(values=False)`` alone, both on a fresh graph, and torchviz's ``make_dot(loss).source``;
"cold" runs ``gc.collect()`` before each call, as the bench does.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

import torchviz

import gradviz
from tests.support import workloads


def best(run: Callable[[], object], runs: int, collect: bool) -> float:
    """The shortest of ``runs`` wall times of ``run()``, in ms."""
    times = []
    for _ in range(runs):
        if collect:
            gc.collect()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def measure(name: str, loss: torch.Tensor, runs: int) -> None:
    graph = gradviz.trace(loss)
    for collect in (False, True):
        viz = best(lambda: torchviz.make_dot(loss).source, runs, collect)
        walk = best(lambda: gradviz.trace(loss), runs, collect)
        dot = best(lambda: graph.to_dot(values=False), runs, collect)
        both = best(lambda: gradviz.trace(loss).to_dot(values=False), runs, collect)
        print(
            f"{name[:16]:16} {'cold' if collect else 'warm'}: torchviz {viz:.2f} ms | "
            f"trace {walk:.2f} + DOT {dot:.2f} ({viz / (walk + dot):.2f}x) | "
            f"fresh trace+DOT {both:.2f} ({viz / both:.2f}x)"
        )


def main(runs: int) -> None:
    torch.set_num_threads(1)
    for work in workloads.build("ResNet,GPT,MLP"):
        measure(work.name, work.forward(), runs)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 51)
