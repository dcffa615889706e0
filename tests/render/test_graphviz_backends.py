"""Running Graphviz: both backends, time limits, failures, checked output, the layout plan by
cost, PNG/PDF without system programs, and atomic writes.

A fake ``dot`` (a shell script first on PATH) plays a Graphviz that hangs, fails or prints
garbage; the real embedded Graphviz plays a runaway backend. No timings are asserted.
"""

from __future__ import annotations

import errno
import os
import struct
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import gradviz
from gradviz import (
    GradvizWarning,
    GraphvizFailed,
    GraphvizNotFound,
    GraphvizTimeout,
)
from gradviz import atomic as atomic_module
from gradviz.render import backend, layered, raster
from gradviz.teaching.lessons import lesson

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fake dot is a shell script")


@pytest.fixture(autouse=True)
def _backend_follows_the_environment() -> Iterator[None]:
    gradviz.use_graphviz(None)
    yield
    gradviz.use_graphviz(None)


def lesson_graph(slug: str = "ten-ops") -> gradviz.Graph:
    built = lesson(slug).build()
    return gradviz.trace(*built.roots, names=built.names)


def fake_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> Path:
    """A ``dot`` first on PATH that runs ``body``, chosen as the system backend."""
    folder = tmp_path / "fakebin"
    folder.mkdir(exist_ok=True)
    script = folder / "dot"
    script.write_text(f"#!/bin/sh\ncat > /dev/null\n{body}\n", encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("GRADVIZ_GRAPHVIZ", "system")
    return script


def svg_ids(svg: bytes | str) -> set[str]:
    return {el.attrib["id"] for el in ET.fromstring(svg).iter() if "id" in el.attrib}


# -- choosing the backend ----------------------------------------------------------------------
def test_embedded_is_the_default_and_system_is_chosen_by_option_or_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("GRADVIZ_GRAPHVIZ", raising=False)
    assert backend.backend_name() == "embedded"
    fake_dot(tmp_path, monkeypatch, "exit 0")
    assert backend.backend_name() == "system"  # GRADVIZ_GRAPHVIZ=system
    gradviz.use_graphviz("embedded")  # the option wins over the environment
    assert backend.backend_name() == "embedded"
    with pytest.raises(ValueError, match="backend must be one of"):
        gradviz.use_graphviz("cairo")


def test_system_falls_back_to_nothing_without_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("GRADVIZ_GRAPHVIZ", "system")
    with pytest.raises(GraphvizNotFound, match="not on PATH"):
        lesson_graph().svg()
    monkeypatch.setenv("GRADVIZ_GRAPHVIZ", "auto")  # the embedded one needs nothing on PATH
    assert "MulBackward0" in lesson_graph().svg()


def test_auto_uses_the_system_dot_where_the_embedded_one_cannot_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(backend, "_embedded_program", lambda: None)
    fake_dot(tmp_path, monkeypatch, "exit 0")
    monkeypatch.setenv("GRADVIZ_GRAPHVIZ", "auto")
    assert backend.backend_name() == "system"
    monkeypatch.setenv("GRADVIZ_GRAPHVIZ", "embedded")
    with pytest.raises(GraphvizNotFound, match="pip install graphviz-pure"):
        backend.backend_name()


# -- bounded in time -----------------------------------------------------------------------------
def test_a_dot_that_never_returns_is_stopped_at_the_limit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_dot(tmp_path, monkeypatch, "exec sleep 600")
    with pytest.raises(GraphvizTimeout, match=r"did not finish within 0\.5 s"):
        backend.run_graphviz("digraph { a -> b }", seconds=0.5)


def test_a_runaway_embedded_layout_is_stopped_and_the_next_call_works() -> None:
    # a dense graph: dot's crossing minimisation on it runs for minutes
    edges = "; ".join(f"n{i} -> n{(i * 7 + k * 13) % 400}" for i in range(400) for k in range(12))
    with pytest.raises(GraphvizTimeout, match="embedded"):
        backend.run_graphviz(f"digraph {{ {edges} }}", seconds=0.5)
    assert b"</svg>" in backend.run_graphviz("digraph { a -> b }")


def test_a_view_dot_cannot_lay_out_in_time_gets_the_layered_layout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    graph = lesson_graph()
    real = backend.run_graphviz

    def slow_dot(text: str, fmt: str = "svg", engine: str = "dot", seconds: Any = None) -> bytes:
        if engine == "dot":
            raise GraphvizTimeout("stopped")
        return real(text, fmt, engine, seconds)

    monkeypatch.setattr(backend, "run_graphviz", slow_dot)
    with pytest.warns(GradvizWarning, match="did not finish within the 3 s budget") as told:
        svg = backend.run_dot(graph.to_dot(), seconds=3)
    assert len(told) == 1  # told once
    assert svg_ids(svg) >= {f"{graph.prefix}_{node.id}" for node in graph.nodes}


# -- failures are Graphviz's, and said so ------------------------------------------------------
def test_a_dot_that_exits_1_is_reported_as_graphviz_failing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_dot(tmp_path, monkeypatch, "echo 'Error: <stdin>: syntax error in line 3' >&2; exit 1")
    with pytest.raises(GraphvizFailed) as raised:
        lesson_graph().svg()
    message = str(raised.value)
    assert "exited with status 1" in message and "syntax error in line 3" in message
    assert "gradviz bug" not in message and "GRADVIZ_GRAPHVIZ=embedded" in message


@pytest.mark.parametrize("output", ["", "garbage, not a drawing", "<svg width='1'>"])
def test_empty_or_garbage_output_is_refused_and_never_cached(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, output: str
) -> None:
    built = lesson("ten-ops").build()
    recording = gradviz.record(*built.roots, names=built.names)
    fake_dot(tmp_path, monkeypatch, f"printf '%s' \"{output}\"")
    with pytest.raises(GraphvizFailed, match="returned no valid svg output"):
        recording.save(tmp_path / "replay.html")
    with pytest.raises(GraphvizFailed):
        lesson_graph().save(tmp_path / "graph.png")
    assert not (tmp_path / "replay.html").exists() and not (tmp_path / "graph.png").exists()
    monkeypatch.setenv("GRADVIZ_GRAPHVIZ", "embedded")  # a working Graphviz is back
    page = recording.save(tmp_path / "replay.html").read_text(encoding="utf-8")
    assert "<svg" in page and "MulBackward0" in page


# -- the layout plan by cost -------------------------------------------------------------------
def recurrent(steps: int) -> torch.Tensor:
    """One weight shared by every time step: long edges from it to each step, as in a GRU."""
    torch.manual_seed(0)
    weight = torch.randn(3, 3, requires_grad=True)
    h, outputs = torch.zeros(1, 3), []
    for _ in range(steps):
        h = torch.tanh(h @ weight + 0.1)
        outputs.append(h.sum())
    return torch.stack(outputs).sum()


def test_the_plan_weighs_long_edges_not_only_nodes() -> None:
    short = layered.estimate(lesson_graph().to_dot())
    assert backend.layout_plan(short) == "dot"
    rnn = layered.estimate(gradviz.trace(recurrent(60)).to_dot())
    assert rnn.nodes < layered.LARGE_GRAPH_NODES // 4  # few nodes ...
    assert rnn.span > rnn.nodes  # ... but many segments of long edges
    assert backend.layout_plan(rnn) in ("cheap", "layered")
    bigger = layered.estimate(gradviz.trace(recurrent(400)).to_dot())
    assert backend.layout_plan(bigger) == "layered"
    flat = layered.LayoutCost(rnn.nodes, rnn.edges, 0, rnn.span)
    clustered = layered.LayoutCost(rnn.nodes, rnn.edges, 3, rnn.span)
    assert clustered.work == 2 * flat.work  # (the legend is a cluster of its own)


def boxed_dot() -> str:
    """A small watched model's view in module boxes (clusters)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    with gradviz.watch(model) as w:
        value = model(torch.ones(2, 3)).sum()
    return w.trace(value).to_dot(modules=True)


def test_a_costly_view_gets_cheaper_dot_settings_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str] = []
    real = backend.run_graphviz

    def spy(text: str, fmt: str = "svg", engine: str = "dot", seconds: Any = None) -> bytes:
        seen.append(text)
        return real(text, fmt, engine, seconds)

    monkeypatch.setattr(backend, "run_graphviz", spy)
    monkeypatch.setattr(backend, "LAYOUT_WORK", 1)
    with pytest.warns(GradvizWarning, match="fewer optimisation rounds"):
        backend.run_dot(boxed_dot())
    assert backend.CHEAP_DOT in seen[0]
    monkeypatch.setattr(backend, "LAYERED_WORK", 2)
    seen.clear()
    with pytest.warns(GradvizWarning, match="placed the nodes in layers itself without its"):
        backend.run_dot(boxed_dot())  # the layered layout leaves the module boxes out
    assert [backend.CHEAP_DOT in text for text in seen] == [False]  # only the drawing call
    assert "pos=" in seen[0]


def test_a_costly_view_without_boxes_goes_to_the_layered_layout_silently(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The layered layout draws such a view whole (edges routed between the nodes), so
    it is chosen as soon as dot would be slow, and nothing needs saying."""
    seen: list[str] = []
    real = backend.run_graphviz

    def spy(text: str, fmt: str = "svg", engine: str = "dot", seconds: Any = None) -> bytes:
        seen.append(engine)
        return real(text, fmt, engine, seconds)

    monkeypatch.setattr(backend, "run_graphviz", spy)
    monkeypatch.setattr(backend, "LAYOUT_WORK", 1)
    backend.run_dot(lesson_graph().to_dot())  # warnings are errors here
    assert seen == ["nop"]


# -- PNG and PDF without system programs ------------------------------------------------------
def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_png_and_pdf_are_drawn_without_any_program_on_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    graph = lesson_graph()
    normal = png_size(graph.save(tmp_path / "g.png").read_bytes())
    sharp = png_size(graph.save(tmp_path / "g2.png", dpi=192).read_bytes())
    assert sharp[0] == pytest.approx(2 * normal[0], abs=2)
    assert sharp[1] == pytest.approx(2 * normal[1], abs=2)
    pdf = graph.save(tmp_path / "g.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and pdf.rstrip().endswith(b"%%EOF")
    assert b"/Helvetica" in pdf  # the labels are text in a font, not dropped
    with pytest.raises(TypeError, match=r"dpi= applies to \.png"):
        graph.save(tmp_path / "g.svg", dpi=100)
    with pytest.raises(ValueError, match="dpi must be"):
        graph.save(tmp_path / "g3.png", dpi=-1)


def test_png_text_is_drawn(tmp_path: Path) -> None:
    """The labels reach the pixels: a label-free copy of the drawing has fewer dark pixels."""
    graph = lesson_graph()
    svg = graph.svg().encode()
    with_text = raster.svg_to(svg, "png")
    without_text = raster.svg_to(svg.replace(b"<text", b"<text display='none'"), "png")
    assert png_size(with_text) == png_size(without_text)
    assert with_text != without_text


# -- atomic writes ---------------------------------------------------------------------------
class DiskFull:
    """A stream that writes half of what it is given, then fails as a full disk would."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __enter__(self) -> DiskFull:
        return self

    def __exit__(self, *args: object) -> None:
        self.stream.close()

    def write(self, data: bytes) -> int:
        self.stream.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("name", ["graph.svg", "graph.png", "graph.dot", "graph.json"])
def test_a_failing_graph_save_keeps_the_previous_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str
) -> None:
    graph = lesson_graph()
    good = graph.save(tmp_path / name).read_bytes()
    real_fdopen = os.fdopen
    monkeypatch.setattr(atomic_module.os, "fdopen", lambda *a, **k: DiskFull(real_fdopen(*a, **k)))
    with pytest.raises(OSError, match="No space left"):
        graph.save(tmp_path / name)
    assert (tmp_path / name).read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary file left


def test_a_failing_replay_save_keeps_the_previous_page(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    built = lesson("ten-ops").build()
    recording = gradviz.record(*built.roots, names=built.names)
    page = recording.save(tmp_path / "replay.html").read_bytes()
    steps = recording.save_steps(tmp_path / "steps")
    real_fdopen = os.fdopen
    monkeypatch.setattr(atomic_module.os, "fdopen", lambda *a, **k: DiskFull(real_fdopen(*a, **k)))
    with pytest.raises(OSError):
        recording.save(tmp_path / "replay.html")
    with pytest.raises(OSError):
        recording.save_steps(tmp_path / "steps")
    assert (tmp_path / "replay.html").read_bytes() == page
    assert sorted(p.name for p in (tmp_path / "steps").iterdir()) == [p.name for p in steps]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_saved_files_get_the_usual_permissions(tmp_path: Path) -> None:
    path = lesson_graph().save(tmp_path / "g.dot")
    mask = os.umask(0o022)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask


def test_a_png_too_big_for_viewers_is_scaled_down_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(raster, "MAX_PNG_PIXELS", 300)
    with pytest.warns(GradvizWarning, match="more than the 300 px PNG viewers accept"):
        data = lesson_graph().save(tmp_path / "g.png", dpi=600).read_bytes()
    assert max(png_size(data)) <= 301
