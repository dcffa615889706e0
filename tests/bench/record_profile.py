"""Where ``record()``'s time goes, against its floor: a profile of one workload.

    python tests/bench/record_profile.py [--only MLP,GPT] [--repeat 15]

CPU time of this thread (``time.thread_time``: on a shared machine another process's load
stretches wall time, not this), medians over interleaved rounds, torch on one thread and
glibc as users run it (as ``bench.py`` times). The floor is what any hook-based recorder
pays: a bare walk over ``next_functions``, one no-op hook registered per node, the backward
calling them, and their removal. The phases are ``record()``'s own, timed by wrapping its functions.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import gradviz  # noqa: E402
from gradviz.analysis import recorded as recorded_module  # noqa: E402
from gradviz.capture import record as record_module  # noqa: E402
from gradviz.errors import GradvizWarning  # noqa: E402
from tests.support.workloads import Workload, build  # noqa: E402

clock = time.thread_time
marks: list[tuple[str, float]] = []
PHASES = [  # (name, first mark, last mark)
    ("trace (walk + tensor records)", "trace", "/trace"),
    ("graph objects + seeds", "set_seeds", "/set_seeds"),
    ("saved values read", "run", "settle_grads"),
    ("hook registration", "_register", "/_register"),
    ("backward with gradviz's hooks", "backward", "/backward"),
    ("hook removal", "remove_all", "/remove_all"),
    ("copies .grad took (keep=all)", "/remove_all", "check_flow"),
    ("flow check", "check_flow", "/check_flow"),
    ("NaN/Inf origins", "find_origins", "/find_origins"),
    ("the rest", "/find_origins", "end"),
]


def _mark_calls(owner: Any, name: str) -> None:
    original = getattr(owner, name)

    def marked(*args: Any, **kwargs: Any) -> Any:
        marks.append((name, clock()))
        try:
            return original(*args, **kwargs)
        finally:
            marks.append(("/" + name, clock()))

    setattr(owner, name, marked)


for _owner, _name in [
    (record_module, "trace"),
    (record_module._Recorder, "set_seeds"),
    (record_module._Recorder, "run"),
    (record_module, "settle_grads"),
    (record_module._Recorder, "_register"),
    (torch.autograd, "backward"),
    (record_module.HookHandles, "remove_all"),
    (recorded_module, "check_flow"),  # the analyses run after the capture
    (recorded_module, "find_origins"),
]:
    _mark_calls(_owner, _name)


def _nodes(root: torch.Tensor) -> list[Any]:
    assert root.grad_fn is not None
    seen, stack = {root.grad_fn}, [root.grad_fn]
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return list(seen)


def _no_op(grad_inputs: object, grad_outputs: object) -> None:
    return None


def _hook_all(nodes: list[Any]) -> list[Any]:
    return [node.register_hook(_no_op) for node in nodes]


def profile(work: Workload, repeat: int) -> dict[str, float]:
    times: dict[str, list[float]] = defaultdict(list)

    def timed(name: str, run: Callable[[], Any]) -> Any:
        start = clock()
        result = run()
        times[name].append(clock() - start)
        return result

    for round_ in range(repeat + 1):
        work.zero_grad()
        gc.collect()
        loss = timed("forward", work.forward)
        timed("plain backward", loss.backward)
        work.zero_grad()
        loss = work.forward()
        nodes = timed("floor: bare walk", lambda loss=loss: _nodes(loss))
        handles = timed("floor: no-op hooks registered", lambda nodes=nodes: _hook_all(nodes))
        timed("floor: backward with no-op hooks", loss.backward)
        timed("floor: hooks removed", lambda handles=handles: [h.remove() for h in handles])
        for keep in ("summary", "all"):
            work.zero_grad()
            gc.collect()
            loss = work.forward()
            marks.clear()
            marks.append(("start", clock()))
            gradviz.record(loss, keep=keep)  # type: ignore[arg-type]
            marks.append(("end", clock()))
            at = dict(marks)
            for name, first, last in PHASES:
                times[f"{keep}: {name}"].append(at[last] - at[first])
            times[f"{keep}: TOTAL (without the forward)"].append(at["end"] - at["start"])
        if round_ == 0:
            times.clear()  # warm-up
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="MLP,GPT,ResNet")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore", GradvizWarning)
    for work in build(args.only):
        row = profile(work, args.repeat)
        plain = row["forward"] + row["plain backward"]
        floor = row["forward"] + sum(v for k, v in row.items() if k.startswith("floor"))
        nodes = len(_nodes(work.forward()))
        print(f"\n{work.name}: {nodes} nodes, forward+backward {plain * 1e3:.2f} ms")
        print(f"  floor (forward, walk, no-op hooks): {floor * 1e3:.2f} ms = {floor / plain:.2f}x")
        for name, value in row.items():
            print(f"  {name:48s} {value * 1e3:8.2f} ms")
        for keep in ("summary", "all"):
            total = row["forward"] + row[f"{keep}: TOTAL (without the forward)"]
            print(f"  record(keep={keep!r}) with its forward: {total / plain:.2f}x f+b")


if __name__ == "__main__":
    main()
