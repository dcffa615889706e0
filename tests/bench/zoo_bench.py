"""``make bench``'s zoo table: every zoo model (``zoo.py``) against the issue's targets.

    python tests/bench/zoo_bench.py [only] [--json out/zoo.json] [--markdown]

Per model, torch on one thread: backward nodes; the forward under ``watch()`` over a plain
forward (target ≤ 2×); ``record`` and ``watch`` + ``record`` over a plain forward+backward;
watch + record + ``save("x.html")`` against one plain ``dot -Tsvg`` of torchviz's DOT
(``make_dot(loss, params=...)``) of the same graph (target ≤ 15×, or at most 0.5 s beyond
the plain forward+backward where that dot takes under 0.2 s); the page's MB per 1,000
backward nodes, whole and beyond the part every page carries (a one-node page's size; the
target, ≤ 1.5, is on the graph's share); how many things (module boxes, ops, tensors) the page's
first view draws and the biggest box's share of the nodes; whether ``trace(loss).svg()``
waited out Graphviz's budget; and the default drawing a user writes first,
``trace(loss, params=model).to_dot()``, against torchviz's ``make_dot(loss, params=...)``
(target: not slower), with the ``values=False`` variant timed beside it. Ratios are the
median of rounds in which the two runs take turns, so that a change of load hits both.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import gradviz  # noqa: E402
from gradviz.errors import GradvizWarning  # noqa: E402
from gradviz.stepper.page import unpack_state  # noqa: E402
from tests.support.workloads import ResNet50  # noqa: E402
from tests.support.zoo import ZOO, ZooModel, first_view, zoo  # noqa: E402

try:
    import torchviz
except ImportError:  # pragma: no cover - make bench installs it
    torchviz = None

ROUNDS = 5
SAVE_RATIO = 15.0
SAVE_SLACK_S = 0.5  # beyond the plain forward+backward, where the plain dot is quick
QUICK_DOT_S = 0.2
WATCH_RATIO = 2.0
PAGE_MB_PER_1000 = 1.5
# bytes every replay page carries whatever its graph (the viewer's code and styles), measured
# once per run from a one-node recording's page: the weight target is the graph's share
# beyond it, since a 25-node page could not weigh 37 kB with any viewer in it
PAGE_FIXED_BYTES: dict[str, int] = {}
BUDGET_WORDS = "did not finish within"


def _zero(model: nn.Module) -> None:
    for param in model.parameters():
        param.grad = None


def turns(runs: dict[str, Callable[[], Any]], rounds: int, before: Callable[[], Any]) -> dict:
    """Each run once per round, taking turns (after one warm-up each): their times."""
    for run in runs.values():
        before()
        run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            before()
            gc.collect()
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return times


def _ratio(times: dict[str, list[float]], top: str, bottom: str) -> float:
    return statistics.median(t / b for t, b in zip(times[top], times[bottom], strict=True))


def _quiet(run: Callable[[], Any]) -> Callable[[], Any]:
    def quiet() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", GradvizWarning)
            return run()

    return quiet


def _params(model: nn.Module) -> dict[str, torch.Tensor]:
    return dict(model.named_parameters())


def plain_dot_s(model: nn.Module, loss: torch.Tensor) -> tuple[float, str]:
    """One system ``dot -Tsvg`` of torchviz's DOT (gradviz's plain DOT without torchviz)."""
    if torchviz is not None:
        source, what = torchviz.make_dot(loss, params=_params(model)).source, "torchviz"
    else:
        source, what = gradviz.trace(loss).to_dot(values=False), "gradviz DOT (no torchviz)"
    start = time.perf_counter()
    subprocess.run(
        ["dot", "-Tsvg", "-o", os.devnull],
        input=source.encode(),
        check=True,
        capture_output=True,
        timeout=900,
    )
    return time.perf_counter() - start, what


def default_drawing(model: nn.Module, loss_of: Callable[[], torch.Tensor]) -> dict[str, Any]:
    """``trace(loss, params=model).to_dot()`` (the default) and with ``values=False``,
    each over torchviz's ``make_dot(loss, params=...).source``; taking turns."""
    if torchviz is None:
        return {}
    loss = loss_of()
    params = _params(model)
    runs = {
        "torchviz": lambda: torchviz.make_dot(loss, params=params).source,
        "default": lambda: gradviz.trace(loss, params=model).to_dot(),
        "no_values": lambda: gradviz.trace(loss, params=model).to_dot(values=False),
    }
    times = turns(runs, 2 * ROUNDS + 1, lambda: None)
    return {
        "torchviz_dot_s": statistics.median(times["torchviz"]),
        "default_dot_s": statistics.median(times["default"]),
        "default_vs_torchviz": _ratio(times, "default", "torchviz"),
        "no_values_vs_torchviz": _ratio(times, "no_values", "torchviz"),
    }


def measure(entry: ZooModel, folder: Path) -> dict[str, Any]:
    model, loss_of = entry.build()
    row: dict[str, Any] = {"model": entry.name, "what": entry.what, "library": entry.library}
    zero = lambda: _zero(model)  # noqa: E731

    def watched_forward() -> None:
        with gradviz.watch(model):
            loss_of()

    def plain_step() -> None:
        loss_of().backward()

    def recorded() -> None:
        gradviz.record(loss_of())

    def watched_recorded() -> None:
        with gradviz.watch(model) as w:
            loss = loss_of()
        w.record(loss)

    times = turns(
        {
            "forward": loss_of,
            "watched": _quiet(watched_forward),
            "step": plain_step,
            "record": _quiet(recorded),
            "watch_record": _quiet(watched_recorded),
        },
        ROUNDS,
        zero,
    )
    row["forward_s"] = statistics.median(times["forward"])
    row["fwd_bwd_s"] = statistics.median(times["step"])
    row["watch_x"] = _ratio(times, "watched", "forward")
    row["record_x"] = _ratio(times, "record", "step")
    row["watch_record_x"] = _ratio(times, "watch_record", "step")

    # watch + record + save, end to end, once (as a user's first save)
    zero()
    path = folder / f"{entry.name}.html"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GradvizWarning)
        start = time.perf_counter()
        with gradviz.watch(model) as w:
            loss = loss_of()
        rec = w.record(loss)
        rec.save(path)
        row["save_s"] = time.perf_counter() - start
    row["save_budget"] = any(BUDGET_WORDS in str(w.message) for w in caught)
    row["nodes"] = len(rec.graph.nodes)
    row["page_mb_per_1000"] = path.stat().st_size / 1e6 / row["nodes"] * 1000
    row["page_fixed_bytes"] = fixed_page_bytes(folder)
    row["page_graph_mb_per_1000"] = (
        (path.stat().st_size - row["page_fixed_bytes"]) / 1e6 / row["nodes"] * 1000
    )
    state = unpack_state(path.read_text(encoding="utf-8"))
    row["first_view"] = state["view"]
    row["combined_in_page"] = "combined" in state["svgs"] or "combined" in state.get(
        "views", state["data"].get("views", [])
    )
    things, biggest = first_view(rec, state["view"])
    row["first_view_things"] = things
    row["biggest_box_share"] = biggest / row["nodes"]

    zero()
    row["dot_s"], row["dot_of"] = plain_dot_s(model, loss_of())
    row["save_vs_dot"] = row["save_s"] / row["dot_s"]
    row["save_beyond_fwd_bwd_s"] = row["save_s"] - row["fwd_bwd_s"]

    zero()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GradvizWarning)
        start = time.perf_counter()
        gradviz.trace(loss_of()).svg()
        row["trace_svg_s"] = time.perf_counter() - start
    row["svg_budget"] = any(BUDGET_WORDS in str(w.message) for w in caught)
    row.update(default_drawing(model, loss_of))
    zero()
    return row


def fixed_page_bytes(folder: Path) -> int:
    """The size of a replay page whose graph is one node: what every page carries."""
    if "bytes" not in PAGE_FIXED_BYTES:
        leaf = torch.tensor(2.0, requires_grad=True)
        page = gradviz.record(leaf * 3).save(folder / "one-node.html")
        PAGE_FIXED_BYTES["bytes"] = page.stat().st_size
    return PAGE_FIXED_BYTES["bytes"]


def resnet_default_drawing() -> dict[str, Any]:
    torch.manual_seed(0)
    model, image = ResNet50(), torch.randn(1, 3, 64, 64)
    row = {"model": "ResNet-50 (default drawing only)", "what": "", "library": "torch"}
    row.update(default_drawing(model, lambda: model(image).square().mean()))
    return row


# -- verdicts ------------------------------------------------------------------------------------
def checks(row: dict[str, Any]) -> dict[str, bool | None]:
    """Each target of the issue for one row: met (True), missed (False) or not measured."""
    out: dict[str, bool | None] = {}
    if "save_s" in row:
        quick = row["dot_s"] < QUICK_DOT_S
        out["save"] = row["save_vs_dot"] <= SAVE_RATIO or (
            quick and row["save_beyond_fwd_bwd_s"] <= SAVE_SLACK_S
        )
        out["watch"] = row["watch_x"] <= WATCH_RATIO
        out["page"] = row["page_graph_mb_per_1000"] <= PAGE_MB_PER_1000
        out["svg"] = not row["svg_budget"] and not row["save_budget"]
    ratio = row.get("default_vs_torchviz")
    out["default"] = None if ratio is None else ratio <= 1.0
    return out


def _mark(ok: bool | None) -> str:
    return {True: "", False: " MISSED", None: " n/a"}[ok]


def report(rows: list[dict[str, Any]]) -> str:
    header = (
        "model", "nodes", "f+b ms", "watch×", "rec×", "w+rec×", "save s", "dot s", "save/dot",
        "+f+b s", "page kB", "MB/1k", "graph MB/1k", "comb.", "first view", "box %", "svg s",
        "default/tv", "vals=F/tv",
    )  # fmt: skip
    body = []
    for row in rows:
        ok = checks(row)
        if "save_s" not in row:
            cells = ["-"] * (len(header) - 3)
            body.append(
                [row["model"], *cells, _default_cell(row, ok), _x(row.get("no_values_vs_torchviz"))]
            )
            continue
        body.append(
            [
                row["model"],
                str(row["nodes"]),
                f"{row['fwd_bwd_s'] * 1000:.1f}",
                f"{row['watch_x']:.2f}{_mark(ok['watch'])}",
                f"{row['record_x']:.2f}",
                f"{row['watch_record_x']:.2f}",
                f"{row['save_s']:.2f}",
                f"{row['dot_s']:.2f}",
                f"{row['save_vs_dot']:.1f}×{_mark(ok['save'])}",
                f"{row['save_beyond_fwd_bwd_s']:.2f}",
                f"{row['page_mb_per_1000'] * row['nodes']:.0f}",
                f"{row['page_mb_per_1000']:.2f}",
                f"{row['page_graph_mb_per_1000']:.2f}{_mark(ok['page'])}",
                "yes" if row["combined_in_page"] else "no",
                f"{row['first_view_things']} ({row['first_view']})",
                f"{row['biggest_box_share'] * 100:.0f}",
                f"{row['trace_svg_s']:.2f}{' BUDGET' if row['svg_budget'] else ''}",
                _default_cell(row, ok),
                _x(row.get("no_values_vs_torchviz")),
            ]
        )
    widths = [max(len(r[i]) for r in [list(header), *body]) for i in range(len(header))]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for cells in body:
        lines.append(
            "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"
        )
    return "\n".join(lines)


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}×"


def _default_cell(row: dict[str, Any], ok: dict[str, bool | None]) -> str:
    return _x(row.get("default_vs_torchviz")) + ("" if ok["default"] is not False else " MISSED")


def verdict_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per target: met on every model, or the models that missed it and by how much."""
    names = {
        "save": f"watch + record + save ≤ {SAVE_RATIO:.0f}× plain dot (or ≤ {SAVE_SLACK_S} s "
        f"beyond f+b where dot < {QUICK_DOT_S} s)",
        "watch": f"forward under watch() ≤ {WATCH_RATIO:.0f}× a plain forward",
        "page": f"page ≤ {PAGE_MB_PER_1000} MB per 1,000 backward nodes beyond the "
        "fixed part every page carries",
        "svg": "trace(loss).svg() and the save never wait out a budget",
        "default": "trace(loss, params=model).to_dot() not slower than make_dot",
    }
    out = []
    for key, title in names.items():
        judged = [(row, checks(row).get(key)) for row in rows]
        judged = [(row, ok) for row, ok in judged if ok is not None]
        missed = [row["model"] for row, ok in judged if not ok]
        mark = "met" if judged and not missed else ("n/a" if not judged else "MISSED")
        detail = f" on {len(judged)} models" if not missed else f": {', '.join(missed)}"
        out.append(f"{mark:6} {title}{detail}")
    return out


def main(argv: list[str]) -> int:
    only = "all"
    json_path: Path | None = None
    rest = list(argv)
    if "--json" in rest:
        at = rest.index("--json")
        json_path = Path(rest[at + 1])
        del rest[at : at + 2]
    if rest:
        only = rest[0]
    torch.set_num_threads(1)
    try:  # its notes on fallback kernels and configurations are not the bench's
        from transformers.utils import logging as transformers_logging
    except ImportError:
        pass
    else:
        transformers_logging.set_verbosity_error()
    missing = [m.name for m in ZOO if not m.available()]
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gradviz-zoo-") as folder:
        for entry in zoo(only):
            print(
                f"-- zoo: {entry.name} ({time.perf_counter() - started:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
            rows.append(measure(entry, Path(folder)))
    if only == "all" or "resnet" in only.lower():
        rows.append(resnet_default_drawing())
    print("\nzoo: every target of the issue on every model, in one run (torch on one thread)")
    if PAGE_FIXED_BYTES:
        print(
            f"every page's fixed part (a one-node page): {PAGE_FIXED_BYTES['bytes'] / 1e3:.0f} kB"
        )
    print(report(rows))
    for line in verdict_lines(rows):
        print(line)
    if missing:
        print(f"not measured (library missing: make bench installs the bench group): {missing}")
    if torchviz is None:
        print("note: torchviz missing: plain dot of gradviz's DOT; default drawing not compared")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{len(rows)} rows in {time.perf_counter() - started:.0f} s, load average {load:.1f}")
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps({"rows": rows, "missing": missing}), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
