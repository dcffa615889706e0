"""``make bench``: gradviz against torchviz and torchlens on the same workloads, same run.

    python tests/bench/bench.py [--repeat N] [--only NAME] [--json out/bench.json]

Every workload runs gradviz and the peers in this one process, torch on one thread, and
each figure is the median of ``--repeat`` runs (big graphs: fewer). Memory is the peak
resident set size (RSS) above the RSS at the start of the run: Linux's ``VmHWM`` after
resetting it through ``/proc/self/clear_refs`` (tracemalloc cannot see torch's
allocations); where that reset is refused, a thread samples ``VmRSS`` every 0.2 ms.

torchlens wraps torch's functions on its first use and keeps them wrapped, which would
slow every later torch call; it is therefore measured last, after all gradviz and plain
torch figures of every workload.

The replay table (replay_bench.py), the model zoo's table (zoo_bench.py: sixteen
architectures against the targets of watch, record, save, page weight and the default
drawing) and the scale figures (scale_bench.py: 10,000 and 100,000 backward nodes) follow,
each in a child process (``--zoo none`` and ``--scale none`` leave them out).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

from explore_bench import explore_line, measure_explore  # noqa: E402

import gradviz  # noqa: E402
from gradviz.errors import GradvizWarning  # noqa: E402
from gradviz.render.backend import run_dot  # noqa: E402
from tests.support.workloads import TrainingWorkload, Workload, build, training_workloads  # noqa: E402

try:
    import torchviz
except ImportError:  # pragma: no cover - make bench installs it
    torchviz = None

try:
    import torchlens
    from torchlens.options import CaptureOptions
except Exception as error:  # pragma: no cover - depends on the machine
    torchlens = None
    TORCHLENS_MISSING = f"{type(error).__name__}: {error}"
else:
    TORCHLENS_MISSING = ""


# -- measuring -----------------------------------------------------------------------------
def median_time(run: Callable[[], Any], repeat: int, setup: Callable[[], Any] | None = None):
    """Median wall time of ``run(setup())`` (setup not timed) and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        arg = setup() if setup is not None else None
        gc.collect()
        start = time.perf_counter()
        result = run(arg) if setup is not None else run()  # type: ignore[call-arg]
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _can_reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _malloc_gives_back() -> bool:
    """Make glibc serve big blocks with mmap and return them when freed, so that RSS
    follows what is alive (by default its threshold grows and freed memory stays)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    return bool(
        libc.mallopt(m_mmap_threshold, 64 * 1024) and libc.mallopt(m_trim_threshold, 64 * 1024)
    )


# set only in the child process that measures memory (``--memory``): with blocks of 64 KiB
# and more mmapped afresh, every big tensor costs page faults, which made a plain
# forward+backward of ResNet-50 1.6x slower than in a user's process; times are measured
# with glibc as every user runs it
MALLOC_TUNED = False
RESET_PEAK = _can_reset_peak()
MEMORY_METHOD = (
    "peak RSS (VmHWM after a reset through /proc/self/clear_refs) minus RSS at the start;"
    " in a child process whose glibc mmaps blocks of 64 KiB and more, so freed memory"
    " leaves RSS (times are measured with glibc's defaults)"
    if RESET_PEAK
    else "peak of VmRSS sampled every 0.2 ms minus RSS at the start"
)


@contextlib.contextmanager
def peak_rss() -> Iterator[dict[str, float]]:
    """Yields a dict that holds ``mib``: the peak RSS growth inside the block."""
    out: dict[str, float] = {}
    gc.collect()
    if MALLOC_TUNED:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    base = _status_kib("VmRSS")
    stop = threading.Event()
    peak = [base]
    sampler = None
    if RESET_PEAK:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
    else:

        def sample() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], _status_kib("VmRSS"))
                time.sleep(0.0002)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
    try:
        yield out
    finally:
        if sampler is not None:
            stop.set()
            sampler.join()
            top = peak[0]
        else:
            top = _status_kib("VmHWM")
        out["mib"] = max(0, top - base) / 1024


def median_peak(run: Callable[[], Any], repeat: int, setup: Callable[[], Any]) -> float:
    peaks = []
    for _ in range(repeat):
        setup()
        with peak_rss() as out:
            run()
        peaks.append(out["mib"])
    return statistics.median(peaks)


# -- the Graphviz backends on the same DOT ---------------------------------------------------
def backend_layouts(dot: str, repeat: int) -> dict[str, Any]:
    """``run_dot`` to SVG with the embedded Graphviz and with the system ``dot`` (when on
    PATH), same DOT, same layout plan; the ratio is system / embedded."""
    out: dict[str, Any] = {}
    for backend in ("embedded", "system"):
        gradviz.use_graphviz(backend)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", GradvizWarning)
                out[f"layout_{backend}_s"], _ = median_time(lambda: run_dot(dot, "svg"), repeat)
        except gradviz.GraphvizNotFound:
            out[f"layout_{backend}_s"] = None
        finally:
            gradviz.use_graphviz(None)
    embedded = out["layout_embedded_s"]
    out["system_vs_embedded"] = (
        None if embedded is None else _ratio(out["layout_system_s"], embedded)
    )
    return out


def first_svg_in_a_fresh_process() -> dict[str, float]:
    """Seconds to import gradviz, then to draw the first lesson SVG, in a new interpreter."""
    code = (
        "import time; t0 = time.perf_counter(); import gradviz; t1 = time.perf_counter(); "
        "from gradviz.teaching.lessons import lesson; b = lesson('ten-ops').build(); "
        "gradviz.trace(*b.roots, names=b.names).svg(); t2 = time.perf_counter(); "
        "print(t1 - t0, t2 - t1)"
    )
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    import_s, first_s = (float(x) for x in done.stdout.split())
    return {"import_s": import_s, "first_svg_s": first_s}


def backend_table(rows: list[dict[str, Any]]) -> str:
    lines = ["Graphviz backends, run_dot to SVG (s):", f"{'workload':24} embedded   system  ratio"]
    for row in rows:
        emb, sys_ = row.get("layout_embedded_s"), row.get("layout_system_s")
        ratio = row.get("system_vs_embedded")
        lines.append(
            f"{row['workload']:24} {_seconds(emb):>8} {_seconds(sys_):>8} {_seconds(ratio):>6}"
        )
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def in_a_fresh_process(script: str, *arguments: str) -> Any:
    """What ``tests/bench/<script>`` prints, then the JSON it writes (``--json``), run in a
    child process: torchlens keeps torch's functions wrapped after the figures above, and
    under its wrappers ``watch()`` records them as the source line of every op, which
    changes the pages (ResNet-50's weighed 1.58 MB per 1,000 nodes instead of 1.49). The
    replay table (replay_bench.py), the zoo's (zoo_bench.py) and the scale figures
    (scale_bench.py) run this way, with torch's functions as every user has them."""
    path = Path(__file__).resolve().parent / script
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "figures.json"
        print(flush=True)
        subprocess.run([sys.executable, str(path), *arguments, "--json", str(out)], check=True)
        return json.loads(out.read_text(encoding="utf-8"))


# -- one workload ----------------------------------------------------------------------------
# trace + DOT against torchviz: each takes a few ms, so many rounds cost little and steady
# the median where a machine's load comes and goes
TRACE_DOT_ROUNDS = 21


def trace_dot_rounds(loss: torch.Tensor, rounds: int) -> list[float]:
    """The one line a user writes with each: torchviz's ``make_dot(loss).source`` (its walk
    and its DOT in one call) and gradviz's ``trace(loss).to_dot(values=False)``, taking
    turns, ``gc.collect()`` before each as in ``median_time``: one ratio (torchviz's time
    over gradviz's) per round, so that a change in the machine's load hits both alike."""
    ratios = []
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        torchviz.make_dot(loss).source  # noqa: B018 - the text is what is measured
        viz = time.perf_counter() - start
        gc.collect()
        start = time.perf_counter()
        gradviz.trace(loss).to_dot(values=False)
        ratios.append(viz / (time.perf_counter() - start))
    return ratios


def measure(work: Workload, repeat: int) -> dict[str, Any]:
    loss = work.forward()
    graph = gradviz.trace(loss)
    n_nodes = len(graph.nodes)
    big = n_nodes > 2000
    rep = max(1, repeat // 2) if big else repeat
    row: dict[str, Any] = {"workload": work.name, "nodes": n_nodes, "edges": len(graph.edges)}

    row["trace_s"], graph = median_time(lambda: gradviz.trace(loss), rep)
    # shapes without values: what torchviz draws, and no tensor is summarized
    row["dot_s"], _ = median_time(lambda: graph.to_dot(values=False), rep)
    # the default drawing: each leaf's values summarized (on demand, once per trace)
    row["dot_values_s"], dot = median_time(lambda: gradviz.trace(loss).to_dot(), rep)
    row["dot_values_s"] -= row["trace_s"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GradvizWarning)
        row["layout_s"], svg = median_time(lambda: run_dot(dot, "svg"), 1 if big else rep)
    row["layout_fallback"] = any(issubclass(w.category, GradvizWarning) for w in caught)
    row.update(backend_layouts(dot, 1 if big else rep))
    row["svg_bytes"] = len(svg)

    if torchviz is not None:
        try:
            row["torchviz_s"], _ = median_time(lambda: torchviz.make_dot(loss).source, rep)
        except RecursionError:
            row["torchviz_s"] = None
            row["torchviz_error"] = "RecursionError (recursive walk)"
        if row.get("torchviz_s") is not None:
            ratios = trace_dot_rounds(loss, TRACE_DOT_ROUNDS)
            row["trace_dot_vs_torchviz"] = statistics.median(ratios)
            row["trace_dot_range"] = (min(ratios), max(ratios))

    # forward + backward, bare and recorded
    def bare(_: object = None) -> None:
        work.forward().backward()

    def recorded(keep: str) -> Callable[[object], Any]:
        def run(_: object = None) -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", GradvizWarning)
                return gradviz.record(work.forward(), keep=keep)  # type: ignore[arg-type]

        return run

    def zero(_: object = None) -> None:
        work.zero_grad()

    # plain, summary and all take turns, so that a change in the machine's load hits all
    # three alike; each ratio is the median of the rounds' ratios (and its range is kept)
    runs = {"plain": bare, "summary": recorded("summary"), "all": recorded("all")}
    for run in runs.values():
        zero()
        run(None)  # warm up
    times: dict[str, list[float]] = {name: [] for name in runs}
    # glibc's defaults keep or return freed memory by its recent history, so one round may
    # pay page faults that the next does not: more rounds than the other figures take
    for _ in range(max(2 * rep + 1, 3)):
        for name, run in runs.items():
            zero()
            gc.collect()
            start = time.perf_counter()
            run(None)
            times[name].append(time.perf_counter() - start)
    row["plain_fwd_bwd_s"] = statistics.median(times["plain"])
    for keep in ("summary", "all"):
        ratios = [t / p for t, p in zip(times[keep], times["plain"], strict=True)]
        row[f"record_{keep}_s"] = statistics.median(times[keep])
        row[f"record_{keep}_x"] = statistics.median(ratios)
        row[f"record_{keep}_range"] = (min(ratios), max(ratios))

    # end to end: forward, trace + record, render the replay's layout to SVG
    def end_to_end(_: object = None) -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", GradvizWarning)
            recording = gradviz.record(work.forward())
            return recording.svg()

    row["end_to_end_s"], _ = median_time(end_to_end, 1 if big else rep, setup=zero)

    zero()
    return row


def measure_memory(work: Workload) -> dict[str, Any]:
    """Peak memory above the start of the run (model and inputs already exist) of a bare
    forward+backward and of ``record`` with each ``keep``: run by the ``--memory`` child."""
    big = len(gradviz.trace(work.forward()).nodes) > 2000
    mem_rep = 1 if big else 3

    def zero() -> None:
        work.zero_grad()

    def bare() -> None:
        work.forward().backward()

    def recorded(keep: str) -> Callable[[], Any]:
        def run() -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", GradvizWarning)
                return gradviz.record(work.forward(), keep=keep)  # type: ignore[arg-type]

        return run

    zero()
    row: dict[str, Any] = {"peak_bare_mib": median_peak(bare, mem_rep, zero)}
    for keep in ("summary", "all"):
        row[f"peak_{keep}_mib"] = median_peak(recorded(keep), mem_rep, zero)
    base = row["peak_bare_mib"]
    small = base < 1.0  # below RSS resolution (pages, allocator slack): no ratio
    row["peak_summary_x"] = None if small else row["peak_summary_mib"] / base
    row["peak_all_x"] = None if small else row["peak_all_mib"] / base
    zero()
    return row


def memory_rows(only: str) -> dict[str, dict[str, Any]]:
    """``measure_memory`` of each workload, in a child process (``--memory``) whose glibc is
    set so that RSS follows what is alive (``_malloc_gives_back``); by workload name."""
    with tempfile.TemporaryDirectory(prefix="gradviz-bench-") as folder:
        out = Path(folder) / "memory.json"
        command = [sys.executable, str(Path(__file__).resolve()), "--memory", "--only", only]
        subprocess.run([*command, "--json", str(out)], check=True)
        loaded: dict[str, dict[str, Any]] = json.loads(out.read_text(encoding="utf-8"))
    return loaded


def memory_main(only: str, json_path: str) -> int:
    """The ``--memory`` child: glibc tuned first, then each workload's peaks, as JSON."""
    global MALLOC_TUNED
    MALLOC_TUNED = _malloc_gives_back()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    peaks = {}
    for work in build(only):
        print(f"-- memory: {work.name}", file=sys.stderr, flush=True)
        peaks[work.name] = measure_memory(work)
    Path(json_path).write_text(json.dumps(peaks), encoding="utf-8")
    return 0


def measure_torchlens(work: Workload, row: dict[str, Any], repeat: int) -> None:
    """torchlens: trace (forward), log_backward, draw_backward to SVG."""
    if torchlens is None or work.model is None or work.loss_of is None:
        return
    model, inputs, loss_of = work.model, list(work.inputs), work.loss_of
    folder = tempfile.mkdtemp(prefix="gradviz-bench-")

    def traced(_: object = None) -> Any:
        log = torchlens.trace(
            model, inputs, capture=CaptureOptions(save_grads=True, backward_ready=True)
        )
        return log, loss_of(log[log.output_layers[0]].out)

    def trace_backward(_: object = None) -> Any:
        log, loss = traced()
        log.log_backward(loss)
        return log

    def whole(_: object = None) -> None:
        log = trace_backward()
        log.draw_backward(
            vis_outpath=os.path.join(folder, "backward"), vis_fileformat="svg", vis_save_only=True
        )
        log.cleanup()

    try:
        whole()  # warm up: torchlens wraps torch's functions on its first call
        row["torchlens_record_s"], log = median_time(trace_backward, repeat, setup=work.zero_grad)
        log.cleanup()
        row["torchlens_record_x"] = row["torchlens_record_s"] / row["plain_fwd_bwd_s"]
        row["torchlens_end_to_end_s"], _ = median_time(whole, repeat, setup=work.zero_grad)
        row["end_to_end_vs_torchlens"] = _ratio(row["torchlens_end_to_end_s"], row["end_to_end_s"])
    except Exception as error:  # a peer failing is a result, not a crash
        row["torchlens_error"] = f"{type(error).__name__}: {str(error)[:200]}"
    work.zero_grad()


COLD_TORCH = "import torch"
COLD_GRADVIZ = (
    "import gradviz, torch\n"
    "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
    "assert gradviz.trace((x * x).sum()).svg().startswith('<')\n"
)


def measure_cold_start(repeat: int) -> dict[str, Any]:
    """A fresh interpreter: ``import torch`` alone, against ``import gradviz`` plus the
    first rendered SVG (which runs Graphviz ``dot``); the two take turns."""
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(HERE.parents[1])}
    times: dict[str, list[float]] = {"torch": [], "gradviz": []}
    for _ in range(repeat):
        for name, code in (("torch", COLD_TORCH), ("gradviz", COLD_GRADVIZ)):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=300)
            times[name].append(time.perf_counter() - start)
    ratios = [g / t for g, t in zip(times["gradviz"], times["torch"], strict=True)]
    return {
        "workload": "cold start",
        "cold_torch_s": statistics.median(times["torch"]),
        "cold_gradviz_s": statistics.median(times["gradviz"]),
        "cold_start_x": statistics.median(ratios),
        "cold_start_range": (min(ratios), max(ratios)),
    }


# a timed block of ``measure_training`` runs at least this long in plain training (and
# at least ``TRAINING_MIN_STEPS`` steps): a loop, not one step, so the block's one-off
# walk of the graph at its first step counts, as it does for a user, but at its share of
# a short run (it is reported on its own too)
TRAINING_BLOCK_S = 0.5
TRAINING_MIN_STEPS = 20


def measure_training(work: TrainingWorkload, repeat: int) -> dict[str, Any]:
    """``watch_training`` around a plain training loop, as a user enters it: norms only
    (``updates=False``), with ‖Δw‖ (the default) and with per-edge norms (``edges=True``),
    against the bare loop; each block is entered anew (its first step walks the graph)
    and runs ``steps`` steps; the four take turns, each ratio the median of the rounds'
    ratios. Also: the first step's extra time (the one-off walk) and the run's own bytes
    per kept step."""
    work.step()  # warm up
    start = time.perf_counter()
    work.step()
    one = time.perf_counter() - start
    steps = max(TRAINING_MIN_STEPS, math.ceil(TRAINING_BLOCK_S / max(one, 1e-6)))

    def loop() -> None:
        for _ in range(steps):
            work.step()

    def watched(updates: bool, edges: bool = False) -> Callable[[], None]:
        def run() -> None:
            with gradviz.watch_training(work.model, work.optimizer, updates=updates, edges=edges):
                loop()

        return run

    runs = {
        "plain": loop,
        "norms": watched(False),
        "updates": watched(True),
        "edges": watched(False, edges=True),
    }
    for run in runs.values():
        run()  # warm up
    times: dict[str, list[float]] = {name: [] for name in runs}
    firsts: list[float] = []
    for _ in range(max(2 * repeat + 1, 9)):
        for name, run in runs.items():
            gc.collect()
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
        with gradviz.watch_training(work.model, work.optimizer, updates=False):
            start = time.perf_counter()
            work.step()
            firsts.append(time.perf_counter() - start)
    with gradviz.watch_training(work.model, work.optimizer) as kept:
        work.step()
    plain_step = statistics.median(times["plain"]) / steps
    row: dict[str, Any] = {
        "workload": f"training norms overhead: {work.name}",
        "training_step_s": plain_step,
        "training_steps": steps,
        "training_first_extra_s": max(0.0, statistics.median(firsts) - plain_step),
        "training_bytes_per_step": kept.bytes_per_step(),
        "training_params": len(kept.params),
    }
    for name in ("norms", "updates", "edges"):
        ratios = [t / p for t, p in zip(times[name], times["plain"], strict=True)]
        row[f"training_{name}_x"] = statistics.median(ratios)
        row[f"training_{name}_range"] = (min(ratios), max(ratios))
    return row


def training_lines(rows: list[dict[str, Any]]) -> str:
    lines = [
        "watch_training around a plain loop (a block of N steps entered anew each round; "
        "ratios: median of rounds; first step: the one-off graph walk's extra time):"
    ]
    for row in rows:
        (n_lo, n_hi), (u_lo, u_hi) = row["training_norms_range"], row["training_updates_range"]
        lines.append(
            f"  {row['workload']}: step {row['training_step_s'] * 1000:.2f} ms, "
            f"N {row['training_steps']}, "
            f"norms {row['training_norms_x']:.3f}× (rounds {n_lo:.2f}–{n_hi:.2f}), "
            f"norms + ‖Δw‖ {row['training_updates_x']:.3f}× (rounds {u_lo:.2f}–{u_hi:.2f}), "
            f"norms + per-edge norms {row['training_edges_x']:.3f}×, "
            f"first step +{row['training_first_extra_s'] * 1000:.1f} ms, "
            f"{row['training_bytes_per_step']} bytes per kept step "
            f"({row['training_params']} parameter tensors)"
        )
    return "\n".join(lines)


def issue_table(checks: list[dict[str, Any]]) -> str:
    """The performance targets: measure, target, now (per workload)."""
    lines = ["| measure | target | now |", "|---|---|---|"]
    seen: dict[str, list[dict[str, Any]]] = {}
    for check in checks:
        seen.setdefault(check["target"], []).append(check)
    for title, group in seen.items():
        goals = ", ".join(dict.fromkeys(f"{c['goal']} ({c['workload']})" for c in group))
        now = ", ".join(
            "-" if c["value"] is None else f"{c['value']:.2f}× {'met' if c['met'] else 'MISSED'}"
            for c in group
        )
        lines.append(f"| {title} | {goals} | {now} |")
    return "\n".join(lines)


def _ratio(peer: float | None, ours: float) -> float | None:
    return None if peer is None else peer / ours


# -- the report --------------------------------------------------------------------------------
COLUMNS = [
    ("workload", "workload", "{}"),
    ("nodes", "nodes", "{}"),
    ("edges", "edges", "{}"),
    ("trace_s", "trace ms", "ms"),
    ("dot_s", "DOT ms", "ms"),
    ("dot_values_s", "+values ms", "ms"),
    ("layout_s", "layout ms", "ms"),
    ("torchviz_s", "torchviz ms", "ms"),
    ("trace_dot_vs_torchviz", "vs tv", "x"),
    ("plain_fwd_bwd_s", "f+b ms", "ms"),
    ("record_summary_x", "rec sum", "x"),
    ("record_all_x", "rec all", "x"),
    ("end_to_end_s", "e2e ms", "ms"),
    ("torchlens_end_to_end_s", "tl e2e ms", "ms"),
    ("end_to_end_vs_torchlens", "vs tl", "x"),
    ("torchlens_record_x", "tl rec", "x"),
    ("peak_bare_mib", "mem MiB", "mib"),
    ("peak_summary_x", "mem sum", "x"),
    ("peak_all_x", "mem all", "x"),
]


def _cell(value: Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "ms":
        return f"{value * 1000:.1f}"
    if kind == "x":
        return f"{value:.2f}×"
    if kind == "mib":
        return f"{value:.1f}"
    return str(value)


def table(rows: list[dict[str, Any]]) -> str:
    header = [title for _, title, _ in COLUMNS]
    body = [[_cell(row.get(key), kind) for key, _, kind in COLUMNS] for row in rows]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = [" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("-+-".join("-" * w for w in widths))
    for cells in body:
        lines.append(
            " | ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            )
        )
    return "\n".join(lines)


# (key, workloads, op, goal, title): the performance targets, as ratios measured in one run
TARGETS = [
    ("trace_dot_vs_torchviz", ("ResNet", "GPT"), ">=", 5.0, "trace+DOT vs torchviz make_dot"),
    ("record_summary_x", ("ResNet",), "<=", 1.2, 'record(keep="summary") / f+b'),
    ("record_summary_x", ("GPT",), "<=", 1.5, 'record(keep="summary") / f+b'),
    ("record_summary_x", ("MLP",), "<=", 2.5, 'record(keep="summary") / f+b'),
    ("record_all_x", ("ResNet",), "<=", 2.0, 'record(keep="all") / f+b'),
    ("record_all_x", ("GPT",), "<=", 2.5, 'record(keep="all") / f+b'),
    ("record_all_x", ("MLP",), "<=", 3.0, 'record(keep="all") / f+b'),
    ("end_to_end_vs_torchlens", ("ResNet",), ">=", 6.0, "trace+record+render vs torchlens"),
    ("cold_start_x", ("cold start",), "<=", 1.5, "import gradviz + first SVG / import torch"),
    (
        "peak_summary_x",
        ("ResNet", "GPT", "MLP", "memory"),
        "<=",
        1.05,
        "peak memory, summaries / bare",
    ),
    ("training_norms_x", ("training norms",), "<=", 1.1, "watch_training norms / plain loop"),
]


def verdicts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for key, names, op, goal, title in TARGETS:
        for row in rows:
            if not any(row["workload"].startswith(n) for n in names):
                continue
            value = row.get(key)
            met = None if value is None else (value >= goal if op == ">=" else value <= goal)
            out.append(
                {
                    "target": title,
                    "workload": row["workload"],
                    "goal": f"{op} {goal}",
                    "value": value,
                    "met": met,
                }
            )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--only",
        default="all",
        help="run workloads whose name has this (several: separated by commas; 'cold': the "
        "cold start)",
    )
    parser.add_argument("--json", default="out/bench.json")
    parser.add_argument(
        "--replay", default="all", help="replay workloads to run ('none': skip the replay table)"
    )
    parser.add_argument(
        "--zoo", default="all", help="zoo models to run ('none': skip the zoo table)"
    )
    parser.add_argument(
        "--scale", default="deep", help="scale graphs: deep, gru or deep,gru ('none': skip)"
    )
    parser.add_argument(
        "--memory", action="store_true", help="only the peak memory, as JSON (the child's run)"
    )
    args = parser.parse_args(argv)
    if args.memory:
        return memory_main(args.only, args.json)

    torch.set_num_threads(1)
    torch.manual_seed(0)
    started = time.perf_counter()
    works = build(args.only)
    rows = []
    for work in works:
        print(f"-- {work.name}", file=sys.stderr, flush=True)
        rows.append(measure(work, args.repeat))
    peaks = memory_rows(args.only) if rows else {}  # --only cold: no child to start
    for row in rows:
        row.update(peaks.get(row["workload"], {}))
    if torchlens is not None:
        for work, row in zip(works, rows, strict=True):
            if work.model is not None:
                print(f"-- torchlens: {work.name}", file=sys.stderr, flush=True)
                measure_torchlens(work, row, max(3, args.repeat // 2))

    wants_cold = args.only == "all" or "cold" in args.only.lower()
    cold = measure_cold_start(max(3, args.repeat)) if wants_cold else None
    wants_training = args.only == "all" or "training" in args.only.lower()
    training = (
        [measure_training(work, args.repeat) for work in training_workloads()]
        if wants_training
        else []
    )
    print(table(rows))
    if cold is not None:
        low, high = cold["cold_start_range"]
        print(
            f"\ncold start: import torch {cold['cold_torch_s'] * 1000:.0f} ms, import gradviz + "
            f"first SVG {cold['cold_gradviz_s'] * 1000:.0f} ms: {cold['cold_start_x']:.2f}× "
            f"(rounds {low:.2f}–{high:.2f}×)"
        )
    for row in rows:
        if "trace_dot_range" in row:
            low, high = row["trace_dot_range"]
            print(f"  {row['workload']}: trace+DOT vs torchviz rounds {low:.2f}–{high:.2f}×")
        if "record_summary_range" in row:
            (s_lo, s_hi), (a_lo, a_hi) = row["record_summary_range"], row["record_all_range"]
            print(
                f"  {row['workload']}: rec sum rounds {s_lo:.2f}–{s_hi:.2f}×, "
                f"rec all rounds {a_lo:.2f}–{a_hi:.2f}×"
            )
    if training:
        print(training_lines(training))
    explore = measure_explore(max(10, args.repeat)) if args.only == "all" else None
    if explore is not None:
        print(explore_line(explore))
    print()
    print(backend_table(rows))
    fresh = first_svg_in_a_fresh_process()
    print(
        f"fresh process: import gradviz {fresh['import_s']:.3f} s, "
        f"then the first SVG {fresh['first_svg_s']:.3f} s"
    )
    checks = verdicts(rows + ([cold] if cold is not None else []) + training)
    print()
    print(issue_table(checks))
    print()
    for check in checks:
        mark = {True: "met", False: "MISSED", None: "n/a"}[check["met"]]
        value = "-" if check["value"] is None else f"{check['value']:.2f}"
        print(f"{mark:6} {check['target']} [{check['workload']}]: {value} (goal {check['goal']})")
    for row in rows:
        for key in ("torchviz_error", "torchlens_error"):
            if key in row:
                print(f"note: {row['workload']}: {key.split('_')[0]} failed: {row[key]}")
    if torchlens is None:
        print(f"note: torchlens not measured: {TORCHLENS_MISSING}")
    replay: dict[str, Any] = {}
    if args.replay != "none":
        replay = in_a_fresh_process("replay_bench.py", args.replay)
    zoo: dict[str, Any] = {}
    if args.zoo != "none":
        zoo = in_a_fresh_process("zoo_bench.py", args.zoo)
    scale: list[dict[str, Any]] = []
    if args.scale != "none":
        # the GRU's layout outgrows memory at 10,000 nodes (its shared weights' edges span
        # the whole graph): it runs when asked for by name
        scale = in_a_fresh_process("scale_bench.py", "--kinds", args.scale)
    elapsed = time.perf_counter() - started
    print(f"\n{len(rows)} workloads in {elapsed:.0f} s; memory: {MEMORY_METHOD}")

    machine = {
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": _cpu_model(),
        "graphviz_dot": _dot_version(),
        "torchviz": _version("torchviz"),
        "torchlens": _version("torchlens") if torchlens is not None else None,
        "torchlens_missing": TORCHLENS_MISSING or None,
    }
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "machine": machine,
                "repeat": args.repeat,
                "seconds": elapsed,
                "memory_method": MEMORY_METHOD,
                "rows": rows,
                "cold_start": cold,
                "training": training,
                "explore": explore,
                "fresh_process": fresh,
                "targets": checks,
                "replay": replay,
                "zoo": zoo,
                "scale": scale,
            },
            indent=1,
        )
    )
    print(f"wrote {path}")
    return 0


def _version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _dot_version() -> str | None:
    import subprocess

    try:
        done = subprocess.run(["dot", "-V"], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return (done.stderr or done.stdout).strip()


if __name__ == "__main__":
    raise SystemExit(main())
